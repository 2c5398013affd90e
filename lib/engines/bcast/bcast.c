/*
 * lib/engines/bcast/bcast.c - the s-to-p broadcast engine: its algorithm
 * table and registry entry, params, running a row (with repositioning and
 * partitioning) and the public entry bpc_bcast. auto's cost model is in
 * bcast_model.c, its decision cache in bcast_cache.c.
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
#include "patterns/patterns.h"

static const bpc__algo_t bcast_rows[] = {
    {{BPC_BCAST_BR_LIN, "br_lin",
      "recursive halving along the snake order of the mesh, messages combined"},
     bpc__bcast_br_lin,
     &(const bpc__bcast_row_t){BPC__BDIST_LDIAG, 1, NULL, NULL}},
    {{BPC_BCAST_BR_XY_SOURCE, "br_xy_source",
      "br_lin in rows then columns, the dimension with fewer sources per line first"},
     bpc__bcast_br_xy_source,
     &(const bpc__bcast_row_t){BPC__BDIST_ROW, 1, NULL, NULL}},
    {{BPC_BCAST_BR_XY_DIM, "br_xy_dim", "br_lin in rows then columns, the longer lines first"},
     bpc__bcast_br_xy_dim,
     &(const bpc__bcast_row_t){BPC__BC_DIST_LONGER, 1, NULL, NULL}},
    {{BPC_BCAST_2STEP, "2step", "gather at the first source, then a binomial broadcast"},
     bpc__bcast_2step,
     &(const bpc__bcast_row_t){BPC__BC_DIST_NONE, 1, NULL, NULL}},
    {{BPC_BCAST_XOR, "xor", "recursive doubling with partner id xor 2^i, messages combined"},
     bpc__bcast_xor,
     &(const bpc__bcast_row_t){BPC__BDIST_EQUAL, 1, NULL, NULL}},
    {{BPC_BCAST_MPI, "mpi", "baseline: one MPI_Allgatherv over ranks (sizes by one reduction)"},
     bpc__bcast_mpi,
     &(const bpc__bcast_row_t){BPC__BC_DIST_NONE, 0, bpc__bcast_mpi_model, bpc__bcast_mpi_join}},
};

const bpc__engine_t bpc__engine_bcast = {"bcast", "BPC_BCAST_ALGORITHM", bcast_rows,
                                         BPC__NROWS(bcast_rows), NULL};

bpc_bcast_params_t bpc_bcast_params_default(void)
{
  bpc_bcast_params_t p;
  memset(&p, 0, sizeof p);
  p.algorithm = "auto";
  return p;
}

/* The row's schedule in two halves plus the final exchange, built only
 * (C->S); positions = where the sources start (ascending). */
static int bcast_partition(bpc__bcast_call_t *C, const bpc__algo_t *row, const int *pos)
{
  const int R = C->rows, Cc = C->cols, p = C->p, s = C->s;
  const int by_rows = R >= 2;
  const int r1 = by_rows ? R / 2 : 1, c1 = by_rows ? Cc : Cc / 2;
  const int p1 = r1 * c1, p2 = p - p1;
  int *map = malloc(sizeof(int) * (size_t)p), *vs = malloc(sizeof(int) * (size_t)(s + 1));
  int *inv = malloc(sizeof(int) * (size_t)p);
  if (map == NULL || vs == NULL || inv == NULL) {
    free(map);
    free(vs);
    free(inv);
    return bpc__err(C->ctx, BPC_ENOMEM, "bpc_bcast: out of memory");
  }
  /* half 0: gids of rows [0, r1) (or columns [0, c1) of the line), in
   * row-major order; half 1: the rest */
  int k = 0;
  for (int g = 0; g < p; g++)
    if (by_rows ? g / Cc < r1 : g % Cc < c1)
      map[k++] = g;
  for (int g = 0; g < p; g++)
    if (!(by_rows ? g / Cc < r1 : g % Cc < c1))
      map[k++] = g;
  for (int v = 0; v < p; v++)
    inv[map[v]] = v;
  int rc = BPC_OK;
  for (int h = 0; h < 2 && rc == BPC_OK; h++) {
    const int off = h ? p1 : 0, n = h ? p2 : p1;
    bpc__bcast_call_t H = *C;
    H.p = n;
    H.rows = by_rows ? (h ? R - r1 : r1) : 1;
    H.cols = by_rows ? Cc : (h ? Cc - c1 : c1);
    H.plan_only = 1;
    H.reposition = 0;
    H.partition = 0;
    H.s = 0;
    for (int i = 0; i < s; i++) /* virtual index of each source in this half */
      if (inv[pos[i]] >= off && inv[pos[i]] < off + n)
        vs[H.s++] = inv[pos[i]] - off;
    H.sources = vs;
    H.S.map = map + off;
    rc = row->run(&H);
    C->S = H.S;
    C->S.map = NULL;
  }
  if (rc == BPC_OK && p1 > 0 && p2 > 0) {
    const int t = C->S.nsteps - C->S.base;
    for (int v = 0; v < p2; v++) {
      if (v < p1)
        bpc__bcast_xchg(&C->S, t, map[v], map[p1 + v]);
      else
        bpc__bcast_add(&C->S, t, map[v % p1], map[p1 + v]);
    }
  }
  free(map);
  free(vs);
  free(inv);
  return rc;
}

/* The flags that take effect for the row: repositioning needs sources and
 * a schedule that starts from them (the row's dist), partitioning a row
 * that partitions and 2 blocks or more. */
void bpc__bcast_effective(const bpc__bcast_call_t *C, const bpc__algo_t *row, int *rep, int *part)
{
  *rep = C->reposition && C->s > 0 && bpc__bcast_row(row)->dist != BPC__BC_DIST_NONE;
  *part = C->partition && bpc__bcast_row(row)->partitions && C->p >= 2;
}

int bpc__bcast_run_row(bpc__bcast_call_t *C, const bpc__algo_t *row)
{
  const int s = C->s, p = C->p;
  int rep, part;
  bpc__bcast_effective(C, row, &rep, &part);
  if (!rep && !part)
    return row->run(C);
  int *T = malloc(sizeof(int) * (size_t)(s + 1));
  unsigned char *inT = calloc((size_t)p, 1), *used = calloc((size_t)p, 1);
  int rc = BPC_OK;
  if (T == NULL || inT == NULL || used == NULL) {
    rc = bpc__err(C->ctx, BPC_ENOMEM, "bpc_bcast: out of memory");
    goto out;
  }
  if (rep) {
    const int dist = bpc__bcast_row(row)->dist;
    const int kind = dist != BPC__BC_DIST_LONGER     ? dist
                     : C->cols >= C->rows ? BPC__BDIST_COL
                                          : BPC__BDIST_ROW;
    if (bpc__bcast_dist(kind, C->rows, C->cols, s, 0u, T) != BPC_OK) {
      rc = bpc__err(C->ctx, BPC_ENOMEM, "bpc_bcast: out of memory");
      goto out;
    }
    for (int i = 0; i < s; i++)
      inT[T[i]] = 1;
    for (int i = 0; i < s; i++)
      if (inT[C->ids[i]])
        used[C->ids[i]] = 1;
    int j = 0;
    for (int i = 0; i < s; i++)
      if (!inT[C->ids[i]]) {
        while (used[T[j]])
          j++;
        used[T[j]] = 1;
        bpc__bcast_add(&C->S, 0, C->ids[i], T[j]);
      }
    if (C->S.nsteps < 1)
      C->S.nsteps = 1;
    C->S.base = 1;
  } else {
    for (int i = 0; i < s; i++)
      T[i] = C->ids[i];
  }
  if (part) {
    rc = bcast_partition(C, row, T);
    C->S.base = 0;
    if (rc == BPC_OK)
      rc = C->plan_only ? BPC_OK : bpc__bcast_exec(C);
  } else {
    const int *save = C->sources;
    C->sources = T;
    rc = row->run(C);
    C->sources = save;
    C->S.base = 0;
  }
out:
  free(T);
  free(inT);
  free(used);
  return rc;
}

static int bcast_check(bpc_ctx_t *ctx, const bpc_assign_t *assign, const bpc_type_t *type,
                       const int *sources, int ns, bpc_bcast_item_fn item_of,
                       bpc_bcast_recv_fn recv, const bpc_bcast_params_t *P, const bpc__algo_t **row,
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
  /* *row stays NULL for the built-in rule: the cost model picks after
   * the agreement (it needs the agreed largest item size) */
  return bpc__algo_pick(ctx, &bpc__engine_bcast, P->algorithm, NULL, row, source);
}

static int bcast_entry(bpc_ctx_t *ctx, const bpc_assign_t *assign, const bpc_type_t *type,
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
  int rc = bcast_check(ctx, assign, type, sources, nsources, item_of, recv, &P, &row, &source,
                       &rows, &cols);
  /* the local sources' items, now (their sizes feed the cost model) */
  const void **items = NULL;
  long long maxL = 0;
  if (rc == BPC_OK && nsources > 0) {
    items = calloc((size_t)nsources, sizeof(void *));
    if (items == NULL)
      rc = bpc__err(ctx, BPC_ENOMEM, "bpc_bcast: out of memory");
    for (int i = 0; i < nsources && rc == BPC_OK; i++) {
      if (bpc__assign_rank(assign, sources[i]) != ctx->rank)
        continue;
      int u = item_of(sources[i], &items[i], user);
      if (u != 0) {
        rc = bpc__err(ctx, BPC_ECALLBACK, "bpc_bcast: item callback for source %d returned %d",
                      sources[i], u);
        break;
      }
      size_t b = 0;
      if (type->kind == BPC_TYPE_CONTIGUOUS) {
        const bpc_buf_t *x = items[i];
        b = x != NULL ? x->count * type->elem_size : 0;
      } else {
        rc = bpc_type_size(ctx, type, items[i], &b);
      }
      maxL = (long long)b > maxL ? (long long)b : maxL;
    }
  }
  const int ok = rc == BPC_OK;
  bpc__sig_init(&sig);
  bpc__sig_int(&sig, "algorithm", ok && row != NULL ? row->info.id : 0);
  bpc__sig_int(&sig, "nblocks", ok ? assign->nblocks : 0);
  bpc__sig_assign(&sig, ok ? assign : NULL);
  bpc__sig_int(&sig, "mesh rows", ok ? rows : 0);
  bpc__sig_int(&sig, "mesh cols", ok ? cols : 0);
  bpc__sig_int(&sig, "reposition", ok ? P.reposition != 0 : 0);
  bpc__sig_int(&sig, "partition", ok ? P.partition != 0 : 0);
  bpc__sig_int(&sig, "nsources", ok ? nsources : 0);
  bpc__sig_bytes(&sig, "sources", ok ? sources : NULL, ok ? sizeof(int) * (size_t)nsources : 0);
  bpc__sig_type(&sig, ok ? type : NULL);
  /* auto's model constants (they decide the algorithm: the same everywhere) */
  const double alpha = bpc__bcast_alpha();
  const double beta = bpc__bcast_beta();
  bpc__sig_int(&sig, "model alpha (ps)", ok && row == NULL ? (long long)(alpha * 1e12 + 0.5) : 0);
  bpc__sig_int(&sig, "model beta (1e-18 s/byte)", ok && row == NULL ? (long long)(beta * 1e18 + 0.5) : 0);
  bpc__sig_max(&sig, "largest item", maxL);
  long long vals[BPC__SIG_MAX];
  /* auto's cache exists on every rank or the call fails everywhere */
  if (rc == BPC_OK && row == NULL && bpc__bcast_cache_get(ctx) == NULL)
    rc = bpc__err(ctx, BPC_ENOMEM, "bpc_bcast: no memory for auto's cache");
  rc = bpc__agree_args_vals(ctx, "bcast", rc, &sig, vals);
  if (rc != BPC_OK) {
    free(items);
    return rc;
  }

  bpc__bcast_call_t C;
  bpc__bcast_call_init(&C, ctx, assign, sources, nsources, rows, cols, P.reposition, P.partition,
                       alpha, beta);
  C.type = type;
  C.items = items;
  C.recv = recv;
  C.user = user;
  bcast_choice_t *ce = NULL;
  const int was_auto = rc == BPC_OK && row == NULL;
  if (was_auto) /* auto: the cheapest row and variant by the cost model */
    rc = bpc__bcast_auto(&C, &sig, vals, vals[sig.n - 1], &row, &ce);
  /* auto's cache also keeps the executor's plan of its choice: a repeated
   * call neither builds the schedule nor plans it */
  bpc__bcast_plan_t kept;
  memset(&kept, 0, sizeof kept);
  if (ce != NULL && ce->plan.in_start != NULL)
    C.plan = &ce->plan;
  else if (ce != NULL)
    C.keep_plan = &kept;
  if (rc == BPC_OK && C.plan == NULL && bpc__bcast_ranks(&C) != BPC_OK) /* a schedule is built */
    rc = bpc__err(ctx, BPC_ENOMEM, "bpc_bcast: out of memory");
  /* opened on every rank alike (exchanges are numbered in order) */
  const int rc_open = bpc__exch_open(ctx, "bcast", bpc__assign_rank_cb, assign, &C.ex);
  if (rc == BPC_OK)
    rc = rc_open;
  int ran = 0;
  if (rc_open == BPC_OK) {
    if (rc == BPC_OK && C.plan != NULL) {
      C.S.nsteps = ce->nsteps;
      rc = bpc__bcast_exec(&C);
      ran = 1;
    } else if (rc == BPC_OK) {
      rc = bpc__bcast_run_row(&C, row);
      ran = 1;
    }
  }
  /* the "mpi" row's collectives need every rank, also one that failed
   * before it (the others are in them: no abort message reaches them) */
  if (!ran && row != NULL && bpc__bcast_row(row)->join != NULL)
    rc = bpc__bcast_row(row)->join(&C, rc);
  /* the outcome, the same everywhere (a failure anywhere stops the others'
   * waits) */
  rc = bpc__exch_end(ctx, &C.ex, rc);
  if (rc != BPC_OK && was_auto) /* a rank may have missed storing the choice: */
    bpc__bcast_cache_clear(bpc__bcast_cache_get(ctx)); /* every rank's cache starts afresh, alike */
  free(C.S.step);
  free(C.S.from);
  free(C.S.to);
  free(items);
  if (kept.in_start != NULL) {
    if (rc == BPC_OK) { /* into auto's cache entry */
      ce->plan = kept;
      ce->nsteps = C.S.nsteps;
    } else {
      bpc__bcast_plan_free(&kept);
    }
  }
  free(C.rk);
  if (rc == BPC_OK && info != NULL) {
    memset(info, 0, sizeof *info);
    info->algorithm = (bpc_bcast_algorithm_t)row->info.id;
    snprintf(info->name, sizeof info->name, "%s", row->info.name);
    info->source = source;
    info->rows = rows;
    info->cols = cols;
    bpc__bcast_effective(&C, row, &info->reposition, &info->partition);
    info->steps = C.steps;
    info->msgs_sent = C.msgs;
    info->bytes_sent = C.bytes;
  }
  return rc;
}

/* The public entry: the re-entrancy guard (bpc__enter) around the call. */
int bpc_bcast(bpc_ctx_t *ctx, const bpc_assign_t *assign, const bpc_type_t *type,
              const int *sources, int nsources, bpc_bcast_item_fn item_of, bpc_bcast_recv_fn recv,
              void *user, const bpc_bcast_params_t *params, bpc_bcast_info_t *info)
{
  BPC__GUARDED_RETURN(ctx, "bpc_bcast",
      bcast_entry(ctx, assign, type, sources, nsources, item_of, recv, user, params, info));
}
