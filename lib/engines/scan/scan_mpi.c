/*
 * lib/engines/scan/scan_mpi.c - global stage "mpi": one MPI_Exscan over
 * the ranks with a user MPI_Op.
 *
 * Schedule: each rank combines its own blocks' totals in position order
 * into its rank total T (k - 1 calls for k non-empty blocks, keeping the
 * running prefixes u_1..u_k); then one exclusive scan over the ranks
 * (bpc__scan_user: MPI_Exscan with a non-commutative MPI_Op whose function
 * calls the user operator once per element, `in` from lower ranks on the
 * left) gives the rank's prefix E; then a block's exclusive prefix is E op
 * u_{j-1} (E for the rank's first non-empty block) and, for the
 * inclusive-global strategy, its inclusive prefix E op u_j. The element
 * reduced carries a presence flag (ranks without blocks or with only
 * empty blocks add nothing), the depth of its dependency chain and a
 * failure flag (a failing operator inside MPI_Exscan is recorded and the
 * call finishes; the flag reaches the higher ranks, which then make no
 * more calls and leave the report to the failing rank: the outcome
 * agreement gives its BPC_ECALLBACK and message to every rank). Operator calls: k - 1 per rank plus whatever the MPI
 * library's scan makes (Open MPI's default chain: R - 2 for R ranks with
 * values; recursive doubling about R log2 R), plus up to 2k per rank for
 * the prefixes; depth: that of the MPI algorithm plus the local chains.
 * Cost: the MPI library's, e.g. (R - 1)(alpha + beta m + gamma) for a
 * chain.
 *
 * It applies only when positions map to ranks: every rank's blocks form
 * one contiguous run of positions and the runs ascend with rank (else
 * BPC_EINVAL, the same on every rank: each rank checks the whole map), and
 * only to contiguous item types (else BPC_ETYPE: MPI cannot reduce
 * user-serialised items of varying size). The association follows the
 * ranks, not only the blocks: results are not bit-identical across
 * process counts (the one exception, doc/scan.md), and "auto" never
 * picks it.
 */
#include "engines/scan/scan_internal.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "comm/coll.h"
#include "decomp/decomp.h"

/* The element reduced over the ranks: this header, then the value. */
typedef struct mpi_hdr {
  int64_t present;
  int64_t depth;
  int64_t failed;
} mpi_hdr_t;

typedef struct mpi_arg {
  bpc__scan_call_t *C;
  void *a, *b; /* aligned copies of the operands */
} mpi_arg_t;

/* inout = in op inout (in covers lower ranks). */
static void mpi_combine(const void *in, void *inout, void *arg)
{
  mpi_arg_t *A = arg;
  bpc__scan_call_t *C = A->C;
  const size_t es = C->type->elem_size;
  mpi_hdr_t x, y;
  memcpy(&x, in, sizeof x);
  memcpy(&y, inout, sizeof y);
  if (x.failed || y.failed || bpc__scan_failed(C)) {
    y.failed = 1;
    y.present = 0;
  } else if (!x.present) {
    return;
  } else if (!y.present) {
    memcpy(inout, in, sizeof x + es);
    return;
  } else {
    memcpy(A->a, (const char *)in + sizeof x, es);
    memcpy(A->b, (const char *)inout + sizeof y, es);
    bpc__scan_val_t va = {A->a, 1, x.depth}, vb = {A->b, 1, y.depth}, r = {NULL, 0, 0};
    bpc__scan_combine(C, &va, &vb, &r, 1);
    if (r.present) {
      memcpy((char *)inout + sizeof y, r.v, es);
      y.depth = r.depth;
    } else {
      y.failed = 1;
      y.present = 0;
    }
    bpc__scan_val_free(C, &r);
  }
  memcpy(inout, &y, sizeof y);
}

int bpc__scan_mpi_check(bpc_ctx_t *ctx, const bpc_assign_t *assign, const bpc_type_t *type,
                        const int *pos_of)
{
  if (type->kind != BPC_TYPE_CONTIGUOUS)
    return bpc__err(ctx, BPC_ETYPE, "bpc_scan: algorithm \"mpi\" needs a contiguous item type "
                                    "(MPI_Exscan cannot reduce user-serialised items)");
  const int nb = assign->nblocks;
  int prev = -1, at = -1;
  /* the rank of every position must not decrease */
  int *order = malloc(sizeof(int) * (size_t)(nb > 0 ? nb : 1));
  if (order == NULL)
    return bpc__err(ctx, BPC_ENOMEM, "bpc_scan: no memory for %d positions", nb);
  for (int g = 0; g < nb; g++)
    order[pos_of[g]] = g;
  for (int p = 0; p < nb && at < 0; p++) {
    int r = bpc__assign_rank(assign, order[p]);
    if (r < prev)
      at = p;
    prev = r;
  }
  int rc = BPC_OK;
  if (at >= 0)
    rc = bpc__err(ctx, BPC_EINVAL,
                  "bpc_scan: algorithm \"mpi\" needs every rank's blocks at one run of "
                  "positions, ascending with rank, but position %d (gid %d, rank %d) follows "
                  "rank %d", at, order[at], bpc__assign_rank(assign, order[at]),
                  bpc__assign_rank(assign, order[at - 1]));
  free(order);
  return rc;
}

static int mpi_stage(bpc__scan_call_t *C, bpc__scan_val_t *tot, bpc__scan_val_t *incl)
{
  const int n = C->assign->nlocal;
  const size_t es = C->type->elem_size;
  const size_t eb = sizeof(mpi_hdr_t) + es;
  int rc = BPC_OK;
  /* the scan's element: every rank must take part in the MPI scan, also
   * one that has run out of memory (it then adds a failure) */
  int paged = 0;
  char *ein = bpc__must_alloc(C->ctx, 2 * eb, &paged, "the mpi scan's element");
  char *eout = ein + eb;
  /* local blocks in position order (the local gids ascend, positions need not) */
  int *ord = malloc(sizeof(int) * (size_t)(n > 0 ? n : 1));
  bpc__scan_val_t *u = calloc((size_t)(n > 0 ? n : 1), sizeof *u);
  mpi_arg_t A = {C, malloc(es ? es : 1), malloc(es ? es : 1)};
  const int have = tot != NULL && ord != NULL && u != NULL && A.a != NULL && A.b != NULL;
  if (!have) /* recorded before the scan: mpi_combine makes no call here */
    bpc__scan_fail(C, BPC_ENOMEM);
  /* the row runs only where a rank's positions are one run (scan_check):
   * each block's place is its position less the first (linear, whatever
   * the order within the run) */
  int first = INT_MAX;
  for (int l = 0; have && l < n; l++) {
    const int q = C->pos_of[C->assign->local[l]];
    first = q < first ? q : first;
  }
  for (int l = 0; have && l < n; l++)
    ord[C->pos_of[C->assign->local[l]] - first] = l;
  /* (a) running prefixes of this rank's totals: u[j] = t_0 op ... op t_j */
  for (int j = 0; have && j < n; j++) {
    const bpc__scan_val_t none = {NULL, 0, 0};
    bpc__scan_combine(C, j > 0 ? &u[j - 1] : &none, &tot[ord[j]], &u[j], 1);
  }
  /* (b) the exclusive scan of the rank totals */
  mpi_hdr_t h = {have && n > 0 && u[n - 1].present, have && n > 0 ? u[n - 1].depth : 0,
                 bpc__scan_failed(C)};
  memcpy(ein, &h, sizeof h);
  if (h.present)
    memcpy(ein + sizeof h, u[n - 1].v, es);
  else
    memset(ein + sizeof h, 0, es);
  mpi_hdr_t none = {0, 0, 0};
  memcpy(eout, &none, sizeof none);
  memset(eout + sizeof none, 0, es);
  rc = bpc__scan_user(C->ctx, ein, eout, eb, 1, mpi_combine, &A);
  if (rc != BPC_OK || !have)
    goto cleanup;
  memcpy(&h, eout, sizeof h);
  if (h.failed) /* it failed on a lower rank: no more calls here; that rank
                 * reports (its code and message reach every rank) */
    bpc__scan_fail(C, BPC_OK);
  bpc__scan_val_t E = {NULL, 0, h.depth};
  if (h.present && !h.failed) {
    if ((E.v = malloc(es)) == NULL) {
      rc = bpc__err(C->ctx, BPC_ENOMEM, "bpc_scan: out of memory (mpi stage)");
      goto cleanup;
    }
    memcpy(E.v, eout + sizeof h, es);
    E.present = 1;
  }
  /* (c) each block's exclusive prefix E op u_{j-1}, inclusive E op u_j */
  for (int j = 0; j < n; j++) {
    const int l = ord[j];
    const int has = C->in[l].count > 0;
    bpc__scan_val_t ex = {NULL, 0, 0}, in = {NULL, 0, 0};
    const bpc__scan_val_t none0 = {NULL, 0, 0};
    bpc__scan_combine(C, &E, j > 0 ? &u[j - 1] : &none0, &ex, 1);
    if (incl != NULL && has)
      bpc__scan_combine(C, &E, &u[j], &in, 1);
    bpc__scan_val_free(C, &tot[l]);
    tot[l] = ex;
    if (incl != NULL) {
      bpc__scan_val_free(C, &incl[l]);
      incl[l] = in;
    }
  }
  bpc__scan_val_free(C, &E);
cleanup:
  for (int j = 0; u != NULL && j < n; j++)
    bpc__scan_val_free(C, &u[j]);
  free(u);
  free(ord);
  bpc__must_free(ein, 2 * eb, paged);
  free(A.a);
  free(A.b);
  return rc;
}

int bpc__scan_mpi_join(bpc__scan_call_t *C) { return mpi_stage(C, NULL, NULL); }

int bpc__scan_mpi(void *call)
{
  static const bpc__scan_sched_t S = {NULL, NULL, NULL, NULL, 0, mpi_stage};
  return bpc__scan_run((bpc__scan_call_t *)call, &S);
}
