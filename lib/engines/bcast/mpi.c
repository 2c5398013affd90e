/*
 * lib/engines/bcast/mpi.c - mpi: the baseline users write by hand, one
 * MPI_Allgatherv over ranks (through lib/comm's bpc__allgatherv) in which
 * every rank gives the items of its local sources, concatenated in gid
 * order, and ranks without sources give nothing. The item sizes travel
 * first, in one sum-reduction of s long longs (every rank fills its own
 * sources' sizes), so the receivers know every offset. The block mesh and
 * source positions play no part: MPI picks its allgatherv algorithm from
 * the process count and total size only (Open MPI: Bruck, ring, neighbour
 * exchange, ...; MPICH: recursive doubling, Bruck, ring).
 *
 * Non-powers of two: MPI's business. Cost: one reduction of s long longs
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

int bpc__bc_mpi(void *call)
{
  bpc__bc_call_t *C = call;
  if (C->plan_only)
    return BPC_OK;
  bpc_ctx_t *ctx = C->ctx;
  const int s = C->s, nr = ctx->size, me = ctx->rank;
  int rc = BPC_OK, cb_rc = BPC_OK;
  C->steps = 1;
  if (s == 0)
    return BPC_OK;
  bpc__bc_item_t *it = calloc((size_t)s, sizeof *it);
  void **packed = calloc((size_t)s, sizeof(void *));
  long long *sz = calloc((size_t)s, sizeof(long long));
  size_t *counts = calloc((size_t)nr, sizeof(size_t));
  int *rk = malloc(sizeof(int) * (size_t)s);
  char *mine = NULL, *all = NULL; /* pool buffers: reused across calls */
  size_t mine_cap = 0, all_cap = 0;
  if (it == NULL || packed == NULL || sz == NULL || counts == NULL || rk == NULL) {
    rc = bpc__err(ctx, BPC_ENOMEM, "bpc_bcast: out of memory");
    goto out;
  }
  for (int i = 0; i < s; i++) {
    const int g = C->ids[i];
    rk[i] = bpc__assign_rank(C->assign, g);
    if (rk[i] != me)
      continue;
    int r2 = bpc__bc_item_bytes(C, i, &it[i], &packed[i]);
    if (r2 != BPC_OK && cb_rc == BPC_OK)
      cb_rc = r2;
    sz[i] = (long long)it[i].bytes;
  }
  rc = bpc__allreduce_ll(ctx, sz, sz, s, BPC__RED_SUM);
  if (rc != BPC_OK)
    goto out;
  for (int i = 0; i < s; i++)
    counts[rk[i]] += (size_t)sz[i];
  size_t total = 0;
  for (int r = 0; r < nr; r++)
    total += counts[r];
  mine = bpc__pool_get(ctx, counts[me] > 0 ? counts[me] : 1, &mine_cap);
  all = bpc__pool_get(ctx, total > 0 ? total : 1, &all_cap);
  if (mine == NULL || all == NULL) {
    rc = bpc__err(ctx, BPC_ENOMEM, "bpc_bcast: out of memory");
    goto out;
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
  /* item i lies after the items of lower ranks and its own rank's
   * lower sources */
  {
    size_t *base = calloc((size_t)nr, sizeof(size_t));
    if (base == NULL) {
      rc = bpc__err(ctx, BPC_ENOMEM, "bpc_bcast: out of memory");
      goto out;
    }
    for (int r = 1; r < nr; r++)
      base[r] = base[r - 1] + counts[r - 1];
    for (int i = 0; i < s; i++) {
      it[i].data = all + base[rk[i]];
      it[i].bytes = (size_t)sz[i];
      it[i].have = 1;
      base[rk[i]] += (size_t)sz[i];
    }
    free(base);
  }
  rc = bpc__bc_deliver(C, it, &cb_rc);
out:
  if (packed != NULL)
    for (int i = 0; i < s; i++)
      free(packed[i]);
  free(packed);
  free(it);
  free(sz);
  free(counts);
  free(rk);
  if (mine != NULL)
    bpc__pool_put(ctx, mine, mine_cap);
  if (all != NULL)
    bpc__pool_put(ctx, all, all_cap);
  return rc != BPC_OK ? rc : cb_rc;
}
