/*
 * lib/decomp/assign.c - assignment of gids to ranks: contiguous (rank r owns
 * [floor(r*n/P), floor((r+1)*n/P))), round-robin (g mod P) or a user map.
 * Validation uses only the arguments, so every rank finds the same error.
 */
#include "decomp/decomp.h"

#include <stdlib.h>
#include <string.h>

static int64_t contig_start(int64_t r, int64_t n, int64_t P) { return r * n / P; }

static int contig_rank(int64_t g, int64_t n, int64_t P)
{
  /* smallest r with start(r+1) > g: start(r) = floor(r n / P) */
  int64_t r = g * P / n;
  while (r > 0 && contig_start(r, n, P) > g)
    r--;
  while (r + 1 < P && contig_start(r + 1, n, P) <= g)
    r++;
  return (int)r;
}

/* FNV-1a over the relation's defining values (63 bits). */
static uint64_t fnv_step(uint64_t h, long long v)
{
  for (int i = 0; i < 8; i++) {
    h ^= (uint64_t)((unsigned long long)v >> (8 * i)) & 0xffu;
    h *= 0x100000001b3ull;
  }
  return h;
}

static long long fingerprint(const bpc_assign_t *a)
{
  uint64_t h = 0xcbf29ce484222325ull;
  h = fnv_step(h, a->nblocks);
  h = fnv_step(h, a->nranks);
  h = fnv_step(h, (long long)a->mode);
  for (int g = 0; a->map != NULL && g < a->nblocks; g++)
    h = fnv_step(h, a->map[g]);
  return (long long)(h >> 1);
}

int bpc__assign_make(bpc_ctx_t *ctx, int nblocks, bpc_assign_mode_t mode, const int *map,
                     bpc_assign_t **out)
{
  int rc = BPC_OK;
  bpc_assign_t *a = NULL;
  if (out != NULL)
    *out = NULL;
  if (ctx == NULL || out == NULL)
    return bpc__err(ctx, BPC_ENULL, "bpc_assign_create: %s is NULL", ctx ? "out" : "ctx");
  if (nblocks < 1) {
    rc = bpc__err(ctx, BPC_ENBLOCKS, "nblocks is %d; it must be at least 1", nblocks);
    goto cleanup;
  }
  if (mode != BPC_ASSIGN_CONTIGUOUS && mode != BPC_ASSIGN_ROUND_ROBIN && mode != BPC_ASSIGN_USER) {
    rc = bpc__err(ctx, BPC_EASSIGN, "unknown assignment mode %d", (int)mode);
    goto cleanup;
  }
  if (mode == BPC_ASSIGN_USER && map == NULL) {
    rc = bpc__err(ctx, BPC_EASSIGN, "a user assignment needs a map of %d ranks", nblocks);
    goto cleanup;
  }
  if (mode != BPC_ASSIGN_USER && map != NULL) {
    rc = bpc__err(ctx, BPC_EASSIGN, "a map was given but the mode is not BPC_ASSIGN_USER");
    goto cleanup;
  }
  if (mode == BPC_ASSIGN_USER) {
    for (int g = 0; g < nblocks; g++) {
      if (map[g] < 0 || map[g] >= ctx->size) {
        rc = bpc__err(ctx, BPC_EASSIGN, "map[%d] = %d is not a rank of this context (0..%d)", g,
                      map[g], ctx->size - 1);
        goto cleanup;
      }
    }
  }
  a = bpc__calloc(1, sizeof *a);
  if (a == NULL) {
    rc = bpc__err(ctx, BPC_ENOMEM, "bpc_assign_create: out of memory");
    goto cleanup;
  }
  a->ctx = ctx;
  a->nblocks = nblocks;
  a->nranks = ctx->size;
  a->rank = ctx->rank;
  a->mode = mode;
  if (mode == BPC_ASSIGN_USER) {
    a->map = bpc__malloc(sizeof(int) * (size_t)nblocks);
    if (a->map == NULL) {
      rc = bpc__err(ctx, BPC_ENOMEM, "bpc_assign_create: out of memory");
      goto cleanup;
    }
    memcpy(a->map, map, sizeof(int) * (size_t)nblocks);
  }
  /* local gids, ascending (direct for contiguous and round-robin: no loop
   * over all nblocks) */
  int64_t first = 0, step = 1, nlocal = 0;
  if (mode == BPC_ASSIGN_CONTIGUOUS) {
    first = contig_start(a->rank, nblocks, a->nranks);
    nlocal = contig_start(a->rank + 1, nblocks, a->nranks) - first;
  } else if (mode == BPC_ASSIGN_ROUND_ROBIN) {
    first = a->rank;
    step = a->nranks;
    nlocal = a->rank < nblocks ? (nblocks - 1 - a->rank) / a->nranks + 1 : 0;
  } else {
    for (int g = 0; g < nblocks; g++)
      nlocal += map[g] == a->rank;
  }
  a->local = bpc__malloc(sizeof(int) * (size_t)nlocal);
  if (a->local == NULL) {
    rc = bpc__err(ctx, BPC_ENOMEM, "bpc_assign_create: out of memory");
    goto cleanup;
  }
  a->nlocal = 0;
  if (mode == BPC_ASSIGN_USER) {
    for (int g = 0; g < nblocks; g++)
      if (map[g] == a->rank)
        a->local[a->nlocal++] = g;
  } else {
    for (int64_t i = 0; i < nlocal; i++)
      a->local[a->nlocal++] = (int)(first + i * step);
  }
  a->fingerprint = fingerprint(a);
cleanup:
  if (rc != BPC_OK) {
    bpc_assign_destroy(&a);
    return rc;
  }
  *out = a;
  return BPC_OK;
}

int bpc_assign_destroy(bpc_assign_t **pa)
{
  if (pa == NULL || *pa == NULL)
    return BPC_OK;
  free((*pa)->map);
  free((*pa)->local);
  free(*pa);
  *pa = NULL;
  return BPC_OK;
}

int bpc__assign_rank(const bpc_assign_t *a, int gid)
{
  switch (a->mode) {
  case BPC_ASSIGN_ROUND_ROBIN:
    return gid % a->nranks;
  case BPC_ASSIGN_USER:
    return a->map[gid];
  case BPC_ASSIGN_CONTIGUOUS:
  default:
    return contig_rank(gid, a->nblocks, a->nranks);
  }
}

int bpc__assign_rank_cb(const void *a, int gid) { return bpc__assign_rank(a, gid); }

int bpc_assign_nblocks(const bpc_assign_t *a, int *nblocks)
{
  if (a == NULL || nblocks == NULL)
    return BPC_ENULL;
  *nblocks = a->nblocks;
  return BPC_OK;
}

int bpc_assign_rank(const bpc_assign_t *a, int gid, int *rank)
{
  if (a == NULL || rank == NULL)
    return BPC_ENULL;
  if (gid < 0 || gid >= a->nblocks)
    return bpc__err(a->ctx, BPC_ERANGE, "gid %d is not in [0, %d)", gid, a->nblocks);
  *rank = bpc__assign_rank(a, gid);
  return BPC_OK;
}

int bpc_assign_local(const bpc_assign_t *a, const int **gids, int *n)
{
  if (a == NULL || gids == NULL || n == NULL)
    return BPC_ENULL;
  *gids = a->nlocal ? a->local : NULL;
  *n = a->nlocal;
  return BPC_OK;
}

int bpc_assign_local_index(const bpc_assign_t *a, int gid, int *index)
{
  if (a == NULL || index == NULL)
    return BPC_ENULL;
  *index = bpc__assign_local_index(a, gid);
  return BPC_OK;
}

int bpc__assign_local_index(const bpc_assign_t *a, int gid)
{
  /* local gids are ascending: binary search */
  int lo = 0, hi = a->nlocal - 1;
  while (lo <= hi) {
    int mid = lo + (hi - lo) / 2;
    if (a->local[mid] == gid)
      return mid;
    if (a->local[mid] < gid)
      lo = mid + 1;
    else
      hi = mid - 1;
  }
  return -1;
}

bpc_ctx_t *bpc_assign_ctx(const bpc_assign_t *a) { return a ? a->ctx : NULL; }
