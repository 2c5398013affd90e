/*
 * lib/comm/coll_self.c - the in-process implementation of the collectives table of
 * coll.h (bpc__coll_self): one process, every collective a copy.
 */
#include "comm/coll.h"

#include <string.h>

static int self_allreduce(bpc_ctx_t *ctx, const long long *in, long long *out, int n,
                          bpc__redop_t op)
{
  (void)ctx;
  (void)op;
  if (in != out)
    memmove(out, in, sizeof(long long) * (size_t)n);
  return BPC_OK;
}

static int self_iallreduce(bpc_ctx_t *ctx, const long long *in, long long *out, int n,
                           bpc__redop_t op, bpc__coll_req_t *req)
{
  req->active = 1;
  return self_allreduce(ctx, in, out, n, op);
}

static int self_test(bpc_ctx_t *ctx, bpc__coll_req_t *req, int *done)
{
  (void)ctx;
  req->active = 0;
  *done = 1;
  return BPC_OK;
}

static int self_cancel(bpc_ctx_t *ctx, bpc__coll_req_t *req)
{
  (void)ctx;
  req->active = 0;
  return BPC_OK;
}

static int self_alltoall_int(bpc_ctx_t *ctx, const int *in, int *out)
{
  (void)ctx;
  out[0] = in[0];
  return BPC_OK;
}

static int self_bcast(bpc_ctx_t *ctx, void *buf, size_t bytes, int root)
{
  (void)ctx;
  (void)buf;
  (void)bytes;
  (void)root;
  return BPC_OK;
}

static int self_allgatherv(bpc_ctx_t *ctx, const void *in, size_t bytes, void *out,
                           const size_t *counts)
{
  (void)ctx;
  (void)counts;
  if (bytes > 0 && in != out)
    memmove(out, in, bytes);
  return BPC_OK;
}

static int self_minloc(bpc_ctx_t *ctx, int code, int loc, int *min_code, int *min_loc)
{
  (void)ctx;
  *min_code = code;
  *min_loc = loc;
  return BPC_OK;
}

static int self_scan_user(bpc_ctx_t *ctx, const void *in, void *out, size_t bytes, int exclusive,
                          void (*fn)(const void *in, void *inout, void *arg), void *arg)
{
  (void)ctx;
  (void)fn;
  (void)arg;
  if (!exclusive && bytes > 0 && in != out)
    memmove(out, in, bytes);
  return BPC_OK;
}

const bpc__coll_ops_t bpc__coll_self = {
    "self",     self_allreduce, self_iallreduce, self_test,     self_cancel, self_alltoall_int,
    self_bcast, self_minloc,    self_allgatherv, self_scan_user};
