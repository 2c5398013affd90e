/*
 * lib/engines/creators.c - the public, collective entries of the
 * assignment and decomposition creators. The local work (checks and
 * construction) is lib/decomp's (bpc__assign_make, bpc__decomp_make); the
 * agreement across ranks needs lib/comm, which lib/decomp may not call, so
 * the entries live here, beside the engines that sit above both layers.
 *
 * Each entry checks and builds on every rank, then makes one argument
 * agreement (bpc__agree_args) before returning: a rank's local error is
 * every rank's error (its code and message), and valid values that differ
 * between ranks are BPC_EMISMATCH on every rank, naming the field. On
 * any error no rank keeps an object (*out is NULL everywhere). A NULL ctx
 * is reported by the local work (bpc__agree_args passes it through).
 */
#include "comm/coll.h"
#include "decomp/decomp.h"

/* The signature of an assignment: its block count and the hash of its
 * whole gid -> rank relation (made once by bpc__assign_make). */
static void sig_assignment(bpc__sig_t *s, const bpc_assign_t *a)
{
  bpc__sig_int(s, "nblocks", a != NULL ? a->nblocks : -1);
  bpc__sig_assign(s, a);
}

static int assign_create(bpc_ctx_t *ctx, int nblocks, bpc_assign_mode_t mode, const int *map,
                         bpc_assign_t **out)
{
  bpc_assign_t *a = NULL;
  int rc = bpc__assign_make(ctx, nblocks, mode, map, out != NULL ? &a : NULL);
  bpc__sig_t s;
  bpc__sig_init(&s);
  sig_assignment(&s, a);
  rc = bpc__agree_args(ctx, "bpc_assign_create", rc, &s);
  if (rc != BPC_OK) {
    bpc_assign_destroy(&a);
    return rc;
  }
  *out = a;
  return BPC_OK;
}

int bpc_assign_create(bpc_ctx_t *ctx, int nblocks, bpc_assign_mode_t mode, const int *map,
                      bpc_assign_t **out)
{
  if (out != NULL) /* a caller's cleanup after any failure is safe */
    *out = NULL;
  BPC__GUARDED_RETURN(ctx, "bpc_assign_create", assign_create(ctx, nblocks, mode, map, out));
}

static int decomp_create(bpc_ctx_t *ctx, const bpc_decomp_params_t *params, bpc_decomp_t **out)
{
  bpc_decomp_t *d = NULL;
  int rc = bpc__decomp_make(ctx, params, out != NULL ? &d : NULL);
  bpc__sig_t s;
  bpc__sig_init(&s);
  bpc__sig_decomp(&s, d);
  sig_assignment(&s, d != NULL ? d->assign : NULL);
  rc = bpc__agree_args(ctx, "bpc_decomp_create", rc, &s);
  if (rc != BPC_OK) {
    bpc_decomp_destroy(&d);
    return rc;
  }
  *out = d;
  return BPC_OK;
}

int bpc_decomp_create(bpc_ctx_t *ctx, const bpc_decomp_params_t *params, bpc_decomp_t **out)
{
  if (out != NULL) /* a caller's cleanup after any failure is safe */
    *out = NULL;
  BPC__GUARDED_RETURN(ctx, "bpc_decomp_create", decomp_create(ctx, params, out));
}
