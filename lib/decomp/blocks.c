/*
 * lib/decomp/blocks.c - the local block store: one user object per local gid
 * of an assignment (made by the user's create callback in gid order, freed by
 * its destroy callback), lookup by index or gid, and a foreach that runs a
 * callback over the local blocks, in parallel with OpenMP (dynamic schedule)
 * when more than one thread is asked for. Nothing here sends a message.
 */
#include "decomp/decomp.h"

#include <stdlib.h>

#ifdef _OPENMP
#include <omp.h>
#endif

int bpc_blocks_create(const bpc_assign_t *a, bpc_block_create_fn create,
                      bpc_block_destroy_fn destroy, void *user, bpc_blocks_t **out)
{
  int rc = BPC_OK;
  bpc_blocks_t *b = NULL;
  bpc_ctx_t *ctx = a ? a->ctx : NULL;
  if (out != NULL) /* a caller's cleanup after any failure is safe */
    *out = NULL;
  if (a == NULL || create == NULL || out == NULL)
    return bpc__err(ctx, BPC_ENULL, "bpc_blocks_create: %s is NULL",
                    a == NULL ? "the assignment" : (create == NULL ? "create" : "out"));
  b = bpc__calloc(1, sizeof *b);
  if (b == NULL) {
    rc = bpc__err(ctx, BPC_ENOMEM, "bpc_blocks_create: out of memory");
    goto cleanup;
  }
  b->assign = a;
  b->destroy = destroy;
  b->user = user;
  b->n = 0; /* blocks made so far */
  b->data = bpc__calloc((size_t)a->nlocal, sizeof *b->data);
  if (b->data == NULL) {
    rc = bpc__err(ctx, BPC_ENOMEM, "bpc_blocks_create: out of memory for %d blocks", a->nlocal);
    goto cleanup;
  }
  for (int i = 0; i < a->nlocal; i++) {
    void *p = create(a->local[i], user);
    if (p == NULL) {
      rc = bpc__err(ctx, BPC_ECALLBACK, "the create callback returned NULL for gid %d",
                    a->local[i]);
      goto cleanup;
    }
    b->data[i] = p;
    b->n = i + 1;
  }
cleanup:
  if (rc != BPC_OK) {
    bpc_blocks_destroy(&b); /* destroys the b->n blocks made so far */
    return rc;
  }
  *out = b;
  return BPC_OK;
}

int bpc_blocks_destroy(bpc_blocks_t **pb)
{
  if (pb == NULL || *pb == NULL)
    return BPC_OK;
  bpc_blocks_t *b = *pb;
  if (b->destroy != NULL && b->data != NULL)
    for (int i = 0; i < b->n; i++)
      b->destroy(b->data[i], b->assign->local[i], b->user);
  free(b->data);
  free(b);
  *pb = NULL;
  return BPC_OK;
}

int bpc_blocks_count(const bpc_blocks_t *b, int *n)
{
  if (b == NULL || n == NULL)
    return bpc__err(b ? b->assign->ctx : NULL, BPC_ENULL, "bpc_blocks_count: %s is NULL",
                    b ? "n" : "the store");
  *n = b->n;
  return BPC_OK;
}

int bpc_blocks_at(const bpc_blocks_t *b, int i, void **block, int *gid)
{
  if (b == NULL)
    return BPC_ENULL;
  if (i < 0 || i >= b->n)
    return bpc__err(b->assign->ctx, BPC_ERANGE, "local block index %d is not in [0, %d)", i,
                    b->n);
  if (block != NULL)
    *block = b->data[i];
  if (gid != NULL)
    *gid = b->assign->local[i];
  return BPC_OK;
}

int bpc_blocks_get(const bpc_blocks_t *b, int gid, void **block)
{
  if (b == NULL || block == NULL)
    return bpc__err(b ? b->assign->ctx : NULL, BPC_ENULL, "bpc_blocks_get: %s is NULL",
                    b ? "block" : "the store");
  int i = bpc__assign_local_index(b->assign, gid);
  if (i < 0)
    return bpc__err(b->assign->ctx, BPC_ENOTFOUND, "gid %d is not a local block of rank %d",
                    gid, b->assign->rank);
  *block = b->data[i];
  return BPC_OK;
}

int bpc_blocks_foreach(bpc_blocks_t *b, bpc_block_fn fn, void *user, int nthreads)
{
  int rc = BPC_OK;
  int *res = NULL;
  if (b == NULL || fn == NULL)
    return bpc__err(b ? b->assign->ctx : NULL, BPC_ENULL, "bpc_blocks_foreach: %s is NULL",
                    b ? "fn" : "the store");
  bpc_ctx_t *ctx = b->assign->ctx;
  if (nthreads < 0) {
    rc = bpc__err(ctx, BPC_EINVAL, "nthreads is %d; use 0 (OpenMP default), 1 (serial) or more",
                  nthreads);
    goto cleanup;
  }
  int n = b->n;
  if (n == 0)
    goto cleanup;
  res = bpc__calloc((size_t)n, sizeof *res);
  if (res == NULL) {
    rc = bpc__err(ctx, BPC_ENOMEM, "bpc_blocks_foreach: out of memory");
    goto cleanup;
  }
  void **data = b->data;
  const int *gids = b->assign->local;
#ifdef _OPENMP
  /* a team of one still costs ~0.3 us: only a real team */
  const int nt = nthreads > 0 ? nthreads : omp_get_max_threads();
  if (nt > 1 && n > 1) {
#pragma omp parallel for schedule(dynamic) num_threads(nt)
    for (int i = 0; i < n; i++)
      res[i] = fn(data[i], gids[i], user);
  } else
#endif
  {
    for (int i = 0; i < n; i++)
      res[i] = fn(data[i], gids[i], user);
  }
  for (int i = 0; i < n; i++) {
    if (res[i] != 0) {
      int nfail = 0;
      for (int j = i; j < n; j++)
        nfail += res[j] != 0;
      rc = bpc__err(ctx, BPC_ECALLBACK,
                    "the callback returned %d for gid %d (%d of %d local blocks failed)", res[i],
                    gids[i], nfail, n);
      break;
    }
  }
cleanup:
  free(res);
  return rc;
}
