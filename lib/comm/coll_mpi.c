/*
 * lib/comm/coll_mpi.c - the MPI implementation of the collectives table
 * of coll.h (bpc__coll_mpi), the job-wide abort and the must-have
 * allocation that goes with it, and the world size.
 */
#include "comm/coll.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

void bpc__abort_job(const bpc_ctx_t *ctx, const char *why)
{
  bpc__log(ctx, BPC_LOG_ERROR, "%s: aborting the job", why);
  MPI_Abort(ctx != NULL ? ctx->comm : MPI_COMM_WORLD, 1);
}

void *bpc__must_alloc(const bpc_ctx_t *ctx, size_t bytes, int *paged, const char *what)
{
  void *p = bpc__big_alloc(bytes, paged);
  if (p != NULL)
    return p;
  char why[160];
  snprintf(why, sizeof why, "no memory for %s (%zu bytes) in a collective under way", what, bytes);
  bpc__abort_job(ctx, why);
  return NULL; /* not reached */
}

int bpc__world_size(void)
{
  int n = 0;
  return MPI_Comm_size(MPI_COMM_WORLD, &n) == MPI_SUCCESS ? n : 0;
}

static MPI_Op mpi_op(bpc__redop_t op)
{
  return op == BPC__RED_MIN ? MPI_MIN : op == BPC__RED_MAX ? MPI_MAX : MPI_SUM;
}

static int mpi_allreduce(bpc_ctx_t *ctx, const long long *in, long long *out, int n,
                         bpc__redop_t op)
{
  int mrc =
      MPI_Allreduce(in == out ? MPI_IN_PLACE : in, out, n, MPI_LONG_LONG, mpi_op(op), ctx->comm);
  return mrc == MPI_SUCCESS ? BPC_OK : bpc__err_mpi(ctx, mrc, "MPI_Allreduce");
}

static int mpi_iallreduce(bpc_ctx_t *ctx, const long long *in, long long *out, int n,
                          bpc__redop_t op, bpc__coll_req_t *req)
{
  int mrc = MPI_Iallreduce(in == out ? MPI_IN_PLACE : in, out, n, MPI_LONG_LONG, mpi_op(op),
                           ctx->comm, &req->req);
  if (mrc != MPI_SUCCESS)
    return bpc__err_mpi(ctx, mrc, "MPI_Iallreduce");
  req->active = 1;
  return BPC_OK;
}

static int mpi_test(bpc_ctx_t *ctx, bpc__coll_req_t *req, int *done)
{
  int flag = 0;
  int mrc = MPI_Test(&req->req, &flag, MPI_STATUS_IGNORE);
  if (mrc != MPI_SUCCESS)
    return bpc__err_mpi(ctx, mrc, "MPI_Test (a non-blocking reduction)");
  *done = flag != 0;
  if (flag)
    req->active = 0;
  return BPC_OK;
}

static int mpi_cancel(bpc_ctx_t *ctx, bpc__coll_req_t *req)
{
  int mrc = MPI_Wait(&req->req, MPI_STATUS_IGNORE);
  req->active = 0;
  return mrc == MPI_SUCCESS ? BPC_OK
                            : bpc__err_mpi(ctx, mrc, "MPI_Wait (a non-blocking reduction)");
}

static int mpi_alltoall_int(bpc_ctx_t *ctx, const int *in, int *out)
{
  int mrc = MPI_Alltoall(in, 1, MPI_INT, out, 1, MPI_INT, ctx->comm);
  return mrc == MPI_SUCCESS ? BPC_OK : bpc__err_mpi(ctx, mrc, "MPI_Alltoall");
}

static int mpi_bcast(bpc_ctx_t *ctx, void *buf, size_t bytes, int root)
{
  while (bytes > 0) { /* MPI counts are int */
    int chunk = bytes > (size_t)INT_MAX ? INT_MAX : (int)bytes;
    int mrc = MPI_Bcast(buf, chunk, MPI_BYTE, root, ctx->comm);
    if (mrc != MPI_SUCCESS)
      return bpc__err_mpi(ctx, mrc, "MPI_Bcast");
    buf = (char *)buf + chunk;
    bytes -= (size_t)chunk;
  }
  return BPC_OK;
}

static int mpi_allgatherv(bpc_ctx_t *ctx, const void *in, size_t bytes, void *out,
                          const size_t *counts)
{
  /* every rank must make the call (the counts are the same everywhere, so
   * the range check fails everywhere or nowhere) */
  const size_t cb = sizeof(int) * 2 * (size_t)ctx->size;
  int paged = 0;
  int *cnt = bpc__must_alloc(ctx, cb, &paged, "allgatherv's counts");
  int *dsp = cnt + ctx->size;
  size_t off = 0;
  for (int r = 0; r < ctx->size; r++) {
    if (counts[r] > (size_t)INT_MAX || off > (size_t)INT_MAX) {
      bpc__must_free(cnt, cb, paged);
      return bpc__err(ctx, BPC_ERANGE, "allgatherv: more than INT_MAX bytes");
    }
    cnt[r] = (int)counts[r];
    dsp[r] = (int)off;
    off += counts[r];
  }
  (void)bytes;
  int mrc = MPI_Allgatherv(in, cnt[ctx->rank], MPI_BYTE, out, cnt, dsp, MPI_BYTE, ctx->comm);
  bpc__must_free(cnt, cb, paged);
  return mrc == MPI_SUCCESS ? BPC_OK : bpc__err_mpi(ctx, mrc, "MPI_Allgatherv");
}

static int mpi_minloc(bpc_ctx_t *ctx, int code, int loc, int *min_code, int *min_loc)
{
  struct {
    int code;
    int loc;
  } in = {code, loc}, out = {0, 0};
  int mrc = MPI_Allreduce(&in, &out, 1, MPI_2INT, MPI_MINLOC, ctx->comm);
  if (mrc != MPI_SUCCESS)
    return bpc__err_mpi(ctx, mrc, "MPI_Allreduce (error agreement)");
  *min_code = out.code;
  *min_loc = out.loc;
  return BPC_OK;
}

/* MPI user operations get no argument: the caller's function for the
 * call in flight on this thread (set and cleared around the MPI call). */
typedef struct mpi_scan_fn {
  void (*fn)(const void *in, void *inout, void *arg);
  void *arg;
  size_t bytes;
} mpi_scan_fn_t;

static _Thread_local const mpi_scan_fn_t *mpi_scan_cur;

static void mpi_scan_tramp(void *invec, void *inoutvec, int *len, MPI_Datatype *dt)
{
  (void)dt;
  const mpi_scan_fn_t *f = mpi_scan_cur;
  for (int i = 0; f != NULL && i < *len; i++)
    f->fn((const char *)invec + (size_t)i * f->bytes, (char *)inoutvec + (size_t)i * f->bytes,
          f->arg);
}

static int mpi_scan_user(bpc_ctx_t *ctx, const void *in, void *out, size_t bytes, int exclusive,
                         void (*fn)(const void *in, void *inout, void *arg), void *arg)
{
  if (bytes > (size_t)INT_MAX)
    return bpc__err(ctx, BPC_ERANGE, "scan over ranks: an element of %zu bytes", bytes);
  /* MPI_Exscan may write rank 0's receive buffer: give it scratch there
   * (every rank must make the call) */
  void *scratch = NULL;
  int paged = 0;
  if (exclusive && ctx->rank == 0)
    scratch = bpc__must_alloc(ctx, bytes, &paged, "the scan's scratch");
  MPI_Datatype dt = MPI_DATATYPE_NULL;
  MPI_Op op = MPI_OP_NULL;
  const mpi_scan_fn_t f = {fn, arg, bytes};
  const char *what = "MPI_Type_contiguous";
  int mrc = MPI_Type_contiguous((int)bytes, MPI_BYTE, &dt);
  if (mrc == MPI_SUCCESS && (what = "MPI_Type_commit", mrc = MPI_Type_commit(&dt)) == MPI_SUCCESS)
    what = "MPI_Op_create", mrc = MPI_Op_create(mpi_scan_tramp, 0, &op);
  if (mrc == MPI_SUCCESS) {
    mpi_scan_cur = &f;
    what = exclusive ? "MPI_Exscan" : "MPI_Scan";
    mrc = exclusive ? MPI_Exscan(in, scratch != NULL ? scratch : out, 1, dt, op, ctx->comm)
                    : MPI_Scan(in, out, 1, dt, op, ctx->comm);
    mpi_scan_cur = NULL;
  }
  if (op != MPI_OP_NULL)
    MPI_Op_free(&op);
  if (dt != MPI_DATATYPE_NULL)
    MPI_Type_free(&dt);
  if (scratch != NULL)
    bpc__must_free(scratch, bytes, paged);
  return mrc == MPI_SUCCESS ? BPC_OK : bpc__err_mpi(ctx, mrc, what);
}

const bpc__coll_ops_t bpc__coll_mpi = {"mpi",          mpi_allreduce,    mpi_iallreduce, mpi_test,
                                       mpi_cancel,     mpi_alltoall_int, mpi_bcast,      mpi_minloc,
                                       mpi_allgatherv, mpi_scan_user};
