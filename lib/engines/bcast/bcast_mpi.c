/*
 * lib/engines/bcast/bcast_mpi.c - mpi: the baseline users write by hand, one
 * MPI_Allgatherv over ranks (through lib/comm's bpc__allgatherv) in which
 * every rank gives the items of its local sources, concatenated in gid
 * order, and ranks without sources give nothing. The item sizes travel
 * first, in one sum-reduction of s + 1 long longs (every rank fills its own
 * sources' sizes), so the receivers know every offset. The block mesh and
 * source positions play no part: MPI picks its allgatherv algorithm from
 * the process count and total size only (Open MPI: Bruck, ring, neighbour
 * exchange, ...; MPICH: recursive doubling, Bruck, ring).
 *
 * A rank that fails (out of memory, an item callback) still takes part in
 * the size reduction, whose last element counts such ranks: then every
 * rank skips the allgatherv (a rank that failed before the row joins the
 * reduction alone, bpc__bcast_mpi_join); what a rank needs for the two
 * collectives comes from bpc__must_alloc. The outcome agreement after the
 * row gives every rank the failing rank's code (doc/comm.md).
 *
 * Non-powers of two: MPI's business. Cost: one reduction of s + 1 long longs
 * plus the library's allgatherv of s L bytes, e.g. for recursive doubling
 * log2 P alpha + (P - 1)/P s L beta over P processes (not blocks); every
 * process receives every item once, ranks without blocks included.
 */
#include "engines/bcast/bcast_internal.h"

#include <stdlib.h>
#include <string.h>

#include "comm/coll.h"
#include "comm/comm.h"
#include "datatype/datatype.h"
#include "decomp/decomp.h"

/* The row on every rank; `failed`: this rank failed before the row (its
 * code), it only joins the size reduction with its failure. */
static int mpi_run(bpc__bcast_call_t *C, int failed)
{
  bpc_ctx_t *ctx = C->ctx;
  const int s = C->s, nr = ctx->size, me = ctx->rank;
  int rc = failed, cb_rc = BPC_OK;
  C->steps = 1;
  if (s == 0)
    return rc;
  /* What the two collectives need, which every rank must join also when it
   * has run out of memory (bpc__must_alloc): the sizes with a failure count
   * after them (sz[s]: ranks that cannot go on, summed by the same
   * reduction, so that then every rank skips the allgatherv), the owners
   * and the counts. */
  const size_t need = sizeof(long long) * ((size_t)s + 1) + sizeof(size_t) * (size_t)nr +
                      sizeof(int) * (size_t)s;
  int need_paged = 0;
  long long *sz = bpc__must_alloc(ctx, need, &need_paged, "bpc_bcast's sizes");
  size_t *counts = (size_t *)(sz + s + 1);
  int *rk = (int *)(counts + nr);
  memset(sz, 0, need);
  bpc__bcast_item_t *it = rc == BPC_OK ? calloc((size_t)s, sizeof *it) : NULL;
  void **packed = rc == BPC_OK ? calloc((size_t)s, sizeof(void *)) : NULL;
  char *mine = NULL, *all = NULL; /* pool buffers: reused across calls */
  size_t mine_cap = 0, all_cap = 0;
  int mine_paged = -1, all_paged = -1; /* >= 0: from bpc__must_alloc, not the pool */
  if (rc == BPC_OK && (it == NULL || packed == NULL))
    rc = bpc__err(ctx, BPC_ENOMEM, "bpc_bcast: out of memory");
  for (int i = 0; i < s; i++) {
    const int g = C->ids[i];
    rk[i] = bpc__assign_rank(C->assign, g);
    if (rk[i] != me || rc != BPC_OK)
      continue;
    int r2 = bpc__bcast_item_bytes(C, i, &it[i], &packed[i]);
    if (r2 != BPC_OK && cb_rc == BPC_OK)
      cb_rc = r2;
    sz[i] = (long long)it[i].bytes;
  }
  /* a rank without its items (out of memory, a failed callback) stops
   * every rank before the allgatherv: nobody delivers a wrong item */
  sz[s] = rc != BPC_OK || cb_rc != BPC_OK;
  const int arc = bpc__allreduce_ll(ctx, sz, sz, s + 1, BPC__RED_SUM);
  if (rc == BPC_OK)
    rc = arc;
  if (rc == BPC_OK && sz[s] > 0) /* this rank's callback, or another rank, failed: */
    rc = cb_rc != BPC_OK ? cb_rc : BPC__EPEER; /* no allgatherv anywhere */
  if (rc != BPC_OK)
    goto out;
  for (int i = 0; i < s; i++)
    counts[rk[i]] += (size_t)sz[i];
  size_t total = 0;
  for (int r = 0; r < nr; r++)
    total += counts[r];
  mine = bpc__pool_get(ctx, counts[me] > 0 ? counts[me] : 1, &mine_cap);
  if (mine == NULL) {
    mine_cap = counts[me];
    mine = bpc__must_alloc(ctx, mine_cap, &mine_paged, "bpc_bcast's items");
  }
  all = bpc__pool_get(ctx, total > 0 ? total : 1, &all_cap);
  if (all == NULL) {
    all_cap = total;
    all = bpc__must_alloc(ctx, all_cap, &all_paged, "bpc_bcast's items");
  }
  size_t off = 0;
  for (int i = 0; i < s; i++)
    if (rk[i] == me && sz[i] > 0) {
      memcpy(mine + off, it[i].data, (size_t)sz[i]);
      off += (size_t)sz[i];
    }
  rc = bpc__allgatherv(ctx, mine, counts[me], all, counts);
  if (rc != BPC_OK)
    goto out;
  C->msgs = nr > 1 && counts[me] > 0 ? 1 : 0;
  C->bytes = (long long)counts[me] * (nr - 1);
  /* item i lies after the items of lower ranks and its own rank's lower
   * sources (counts[] becomes each rank's next offset) */
  {
    size_t base = 0;
    for (int r = 0; r < nr; r++) {
      const size_t c = counts[r];
      counts[r] = base;
      base += c;
    }
    for (int i = 0; i < s; i++) {
      it[i].data = all + counts[rk[i]];
      it[i].bytes = (size_t)sz[i];
      it[i].have = 1;
      counts[rk[i]] += (size_t)sz[i];
    }
  }
  rc = bpc__bcast_deliver(C, it, &cb_rc);
out:
  if (packed != NULL)
    for (int i = 0; i < s; i++)
      free(packed[i]);
  free(packed);
  free(it);
  if (mine != NULL && mine_paged < 0)
    bpc__pool_put(ctx, mine, mine_cap);
  else if (mine != NULL)
    bpc__must_free(mine, mine_cap, mine_paged);
  if (all != NULL && all_paged < 0)
    bpc__pool_put(ctx, all, all_cap);
  else if (all != NULL)
    bpc__must_free(all, all_cap, all_paged);
  bpc__must_free(sz, need, need_paged);
  return rc != BPC_OK ? rc : cb_rc;
}

int bpc__bcast_mpi(void *call)
{
  bpc__bcast_call_t *C = call;
  if (C->plan_only)
    return BPC_OK;
  return mpi_run(C, BPC_OK);
}

int bpc__bcast_mpi_join(bpc__bcast_call_t *C, int rc) { return mpi_run(C, rc); }

double bpc__bcast_mpi_model(const bpc__bcast_call_t *C, double L)
{
  const int nr = C->ctx->size, s = C->s;
  const int lg = bpc__log2_ceil(nr);
  /* the size reduction and a recursive-doubling allgatherv */
  return 2.0 * lg * C->alpha + (nr > 1 ? (double)(nr - 1) / nr : 0.0) * s * L * C->beta;
}
