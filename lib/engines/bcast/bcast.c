/*
 * lib/engines/bcast/bcast.c - the s-to-p broadcast engine: its algorithm
 * table and registry entry, params, and the public entry bpc_bcast.
 *
 * One call (the engine frame of doc/design.md): check every argument on
 * this rank, pick the algorithm (argument, BPC_BCAST_ALGORITHM, built-in
 * rule), choose the mesh view, then ONE bpc__agree_args on the rank's code
 * and the signature (algorithm, block count, mesh, number of sources,
 * source list, type kind and element size) before any message; open one
 * exchange, run the row (it builds its schedule and runs the shared
 * executor, bcast_exec.c), close the exchange, agree on the outcome.
 */
#include "engines/bcast/bcast_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/coll.h"
#include "datatype/datatype.h"
#include "decomp/decomp.h"

static const bpc__algo_t bc_rows[] = {
    {{BPC_BCAST_BR_LIN, "br_lin",
      "recursive halving along the snake order of the mesh, messages combined"},
     bpc__bc_br_lin, NULL},
    {{BPC_BCAST_BR_XY_SOURCE, "br_xy_source",
      "br_lin in rows then columns, the dimension with fewer sources per line first"},
     bpc__bc_br_xy_source, NULL},
    {{BPC_BCAST_BR_XY_DIM, "br_xy_dim", "br_lin in rows then columns, the longer lines first"},
     bpc__bc_br_xy_dim, NULL},
    {{BPC_BCAST_2STEP, "2step", "gather at the first source, then a binomial broadcast"},
     bpc__bc_2step, NULL},
    {{BPC_BCAST_XOR, "xor", "recursive doubling with partner id xor 2^i, messages combined"},
     bpc__bc_xor, NULL},
    {{BPC_BCAST_MPI, "mpi", "baseline: one MPI_Allgatherv over ranks (sizes by one reduction)"},
     bpc__bc_mpi, NULL},
};

const bpc__engine_t bpc__engine_bcast = {"bcast", "BPC_BCAST_ALGORITHM", bc_rows,
                                         BPC__NROWS(bc_rows), NULL};

bpc_bcast_params_t bpc_bcast_params_default(void)
{
  bpc_bcast_params_t p;
  memset(&p, 0, sizeof p);
  p.algorithm = "auto";
  return p;
}

/* The built-in rule (doc/bcast.md "Choosing"): br_xy_source on a real 2-D
 * mesh (the paper's best all-round algorithm), br_lin on a line. */
static int bc_builtin(int rows, int cols)
{
  return rows > 1 && cols > 1 ? BPC_BCAST_BR_XY_SOURCE : BPC_BCAST_BR_LIN;
}

static int bc_check(bpc_ctx_t *ctx, const bpc_assign_t *assign, const bpc_type_t *type,
                    const int *sources, int ns, bpc_bcast_item_fn item_of, bpc_bcast_recv_fn recv,
                    const bpc_bcast_params_t *P, const bpc__algo_t **row,
                    bpc_algo_source_t *source, int *rows, int *cols)
{
  if (assign == NULL || type == NULL || item_of == NULL || recv == NULL ||
      (sources == NULL && ns > 0))
    return bpc__err(ctx, BPC_ENULL, "bpc_bcast: %s is NULL",
                    assign == NULL    ? "assign"
                    : type == NULL    ? "type"
                    : item_of == NULL ? "item_of"
                    : recv == NULL    ? "recv"
                                      : "sources");
  if (assign->ctx != ctx)
    return bpc__err(ctx, BPC_EINVAL, "bpc_bcast: the assignment belongs to another context");
  int rc = bpc_type_check(ctx, type);
  if (rc != BPC_OK)
    return rc;
  const int n = assign->nblocks;
  if (ns < 0 || ns > n)
    return bpc__err(ctx, BPC_EINVAL, "bpc_bcast: %d sources for %d blocks", ns, n);
  for (int i = 0; i < ns; i++)
    if (sources[i] < 0 || sources[i] >= n || (i > 0 && sources[i] <= sources[i - 1]))
      return bpc__err(ctx, BPC_EINVAL,
                      "bpc_bcast: sources[%d] = %d: sources must be ascending gids in [0, %d)", i,
                      sources[i], n);
  if (P->nthreads < 0)
    return bpc__err(ctx, BPC_EINVAL, "bpc_bcast: nthreads %d is negative (0 = OpenMP default)",
                    P->nthreads);
  if (P->rows == 0 && P->cols == 0) {
    int r = 1;
    for (int d = 1; (long long)d * d <= n; d++)
      if (n % d == 0)
        r = d;
    *rows = r;
    *cols = n / r;
  } else if (P->rows <= 0 || P->cols <= 0 || (long long)P->rows * P->cols != n) {
    return bpc__err(ctx, BPC_EDIVS, "bpc_bcast: a %d x %d mesh for %d blocks", P->rows, P->cols,
                    n);
  } else {
    *rows = P->rows;
    *cols = P->cols;
  }
  rc = bpc__algo_pick(ctx, &bpc__engine_bcast, P->algorithm, NULL, row, source);
  if (rc != BPC_OK)
    return rc;
  if (*row == NULL)
    *row = bpc__algo_by_id(&bpc__engine_bcast, bc_builtin(*rows, *cols));
  return BPC_OK;
}

int bpc_bcast(bpc_ctx_t *ctx, const bpc_assign_t *assign, const bpc_type_t *type,
              const int *sources, int nsources, bpc_bcast_item_fn item_of, bpc_bcast_recv_fn recv,
              void *user, const bpc_bcast_params_t *params, bpc_bcast_info_t *info)
{
  if (ctx == NULL)
    return BPC_ENULL;
  const bpc_bcast_params_t P = params != NULL ? *params : bpc_bcast_params_default();
  const bpc__algo_t *row = NULL;
  bpc_algo_source_t source = BPC_SOURCE_BUILTIN;
  int rows = 0, cols = 0;
  bpc__sig_t sig;
  int rc = bc_check(ctx, assign, type, sources, nsources, item_of, recv, &P, &row, &source, &rows,
                    &cols);
  const int ok = rc == BPC_OK;
  bpc__sig_init(&sig);
  bpc__sig_int(&sig, "algorithm", ok ? row->info.id : 0);
  bpc__sig_int(&sig, "nblocks", ok ? assign->nblocks : 0);
  bpc__sig_int(&sig, "mesh rows", ok ? rows : 0);
  bpc__sig_int(&sig, "mesh cols", ok ? cols : 0);
  bpc__sig_int(&sig, "nsources", ok ? nsources : 0);
  bpc__sig_bytes(&sig, "sources", ok ? sources : NULL, ok ? sizeof(int) * (size_t)nsources : 0);
  bpc__sig_type(&sig, ok ? type : NULL);
  rc = bpc__agree_args(ctx, "bcast", rc, &sig);
  if (rc != BPC_OK)
    return rc;

  bpc__bc_call_t C;
  memset(&C, 0, sizeof C);
  C.ctx = ctx;
  C.assign = assign;
  C.type = type;
  C.sources = sources;
  C.s = nsources;
  C.p = assign->nblocks;
  C.rows = rows;
  C.cols = cols;
  C.item_of = item_of;
  C.recv = recv;
  C.user = user;
  rc = bpc__exch_open(ctx, "bcast", bpc__assign_rank_cb, assign, &C.ex);
  if (rc == BPC_OK) {
    rc = row->run(&C);
    int rc2 = bpc__exch_close(&C.ex);
    if (rc == BPC_OK)
      rc = rc2;
  }
  free(C.S.step);
  free(C.S.from);
  free(C.S.to);
  rc = bpc__agree(ctx, rc);
  if (rc == BPC_OK && info != NULL) {
    memset(info, 0, sizeof *info);
    info->algorithm = (bpc_bcast_algorithm_t)row->info.id;
    snprintf(info->name, sizeof info->name, "%s", row->info.name);
    info->source = source;
    info->rows = rows;
    info->cols = cols;
    info->steps = C.steps;
    info->msgs_sent = C.msgs;
    info->bytes_sent = C.bytes;
  }
  return rc;
}
