/*
 * lib/comm/coll.c - the collectives engines call (coll.h): the wrappers
 * pick the table from the context (coll_mpi.c or coll_self.c) and count
 * every collective, and the point-to-point minimum reduction
 * (bpc__minred_*). Agreement is in agree.c.
 */
#include "comm/coll.h"

#include <string.h>

const bpc__coll_ops_t *bpc__coll_ops(const bpc_ctx_t *ctx)
{
  return (ctx->serial || ctx->size == 1) ? &bpc__coll_self : &bpc__coll_mpi;
}

int bpc__allreduce_ll(bpc_ctx_t *ctx, const long long *in, long long *out, int n,
                      bpc__redop_t op)
{
  bpc__stats_coll(ctx);
  return bpc__coll_ops(ctx)->allreduce(ctx, in, out, n, op);
}

int bpc__iallreduce_ll(bpc_ctx_t *ctx, const long long *in, long long *out, int n,
                       bpc__redop_t op, bpc__coll_req_t *req)
{
  if (req->active)
    return bpc__err(ctx, BPC_ESTATE, "a non-blocking reduction is already in flight");
  bpc__stats_coll(ctx);
  return bpc__coll_ops(ctx)->iallreduce(ctx, in, out, n, op, req);
}

int bpc__coll_test(bpc_ctx_t *ctx, bpc__coll_req_t *req, int *done)
{
  if (!req->active) {
    *done = 1;
    return BPC_OK;
  }
  return bpc__coll_ops(ctx)->test(ctx, req, done);
}

int bpc__coll_cancel(bpc_ctx_t *ctx, bpc__coll_req_t *req)
{
  if (!req->active)
    return BPC_OK;
  return bpc__coll_ops(ctx)->cancel(ctx, req);
}

int bpc__alltoall_int(bpc_ctx_t *ctx, const int *in, int *out)
{
  bpc__stats_coll(ctx);
  return bpc__coll_ops(ctx)->alltoall_int(ctx, in, out);
}

int bpc__bcast(bpc_ctx_t *ctx, void *buf, size_t bytes, int root)
{
  bpc__stats_coll(ctx);
  return bpc__coll_ops(ctx)->bcast(ctx, buf, bytes, root);
}

int bpc__allgatherv(bpc_ctx_t *ctx, const void *in, size_t bytes, void *out,
                    const size_t *counts)
{
  bpc__stats_coll(ctx);
  if (counts[ctx->rank] != bytes)
    return bpc__err(ctx, BPC_EINVAL, "allgatherv: %zu bytes given, counts[%d] = %zu", bytes,
                    ctx->rank, counts[ctx->rank]);
  return bpc__coll_ops(ctx)->allgatherv(ctx, in, bytes, out, counts);
}

int bpc__scan_user(bpc_ctx_t *ctx, const void *in, void *out, size_t bytes, int exclusive,
                   void (*fn)(const void *in, void *inout, void *arg), void *arg)
{
  bpc__stats_coll(ctx);
  return bpc__coll_ops(ctx)->scan_user(ctx, in, out, bytes, exclusive, fn, arg);
}

/* ------------------------------------------- point-to-point minimum */

/* Rank of participant `id` of the doubling (ranks below 2 rem fold in
 * pairs: the odd one takes part). */
static int minred_rank(const bpc__minred_t *r, int id)
{
  return id < r->rem ? 2 * id + 1 : id + r->rem;
}

static int minred_post(bpc_ctx_t *ctx, bpc__minred_t *r, int to, int from)
{
  int mrc = MPI_SUCCESS;
  r->posted = 0;
  if (from >= 0) {
    mrc = MPI_Irecv(r->tmp, r->n, MPI_LONG_LONG, from, BPC__TAG_RED, ctx->comm, &r->rq[0]);
    r->posted |= 1;
  }
  if (mrc == MPI_SUCCESS && to >= 0) {
    memcpy(r->snd, r->acc, sizeof(long long) * (size_t)r->n);
    mrc = MPI_Isend(r->snd, r->n, MPI_LONG_LONG, to, BPC__TAG_RED, ctx->comm, &r->rq[1]);
    r->posted |= 2;
  }
  return mrc == MPI_SUCCESS ? BPC_OK : bpc__err_mpi(ctx, mrc, "MPI_Isend/MPI_Irecv (minimum)");
}

/* Post the step of the current stage (or finish). */
static int minred_step(bpc_ctx_t *ctx, bpc__minred_t *r)
{
  const int me = ctx->rank;
  for (;;) {
    if (r->stage == 0) { /* folding in: even ranks below 2 rem give, odd ones take */
      r->stage = 1;
      if (me < 2 * r->rem)
        return me % 2 == 0 ? minred_post(ctx, r, me + 1, me + 1) /* and wait for the result */
                           : minred_post(ctx, r, -1, me - 1);
      continue;
    }
    if (r->stage == 1) {
      if (r->id < 0) { /* a folded rank: its result came back */
        memcpy(r->acc, r->tmp, sizeof(long long) * (size_t)r->n);
        r->stage = 3;
        return BPC_OK;
      }
      if (r->mask < r->p2) {
        const int partner = minred_rank(r, r->id ^ r->mask);
        r->mask <<= 1;
        return minred_post(ctx, r, partner, partner);
      }
      r->stage = 2;
      if (me < 2 * r->rem) /* hand the result back to the folded partner */
        return minred_post(ctx, r, me - 1, -1);
      continue;
    }
    r->stage = 3;
    return BPC_OK;
  }
}

int bpc__minred_start(bpc_ctx_t *ctx, const long long *in, int n, bpc__minred_t *r)
{
  memset(r, 0, sizeof *r);
  r->n = n;
  memcpy(r->acc, in, sizeof(long long) * (size_t)n);
  bpc__stats_coll(ctx);
  if (ctx->serial || ctx->size == 1) {
    r->stage = 3;
    return BPC_OK;
  }
  r->p2 = 1;
  while (2 * r->p2 <= ctx->size)
    r->p2 *= 2;
  r->rem = ctx->size - r->p2;
  const int me = ctx->rank;
  r->id = me < 2 * r->rem ? (me % 2 ? me / 2 : -1) : me - r->rem;
  r->mask = 1;
  return minred_step(ctx, r);
}

/* Advance r: test its step (or, with `wait`, wait for the step in flight
 * first) and post the next ones that can be; *done once finished. */
static int minred_advance(bpc_ctx_t *ctx, bpc__minred_t *r, int *done, int wait)
{
  for (;;) {
    if (r->stage == 3) {
      *done = 1;
      return BPC_OK;
    }
    *done = 0;
    int flag = 1, mrc = MPI_SUCCESS;
    if (r->posted == 3)
      mrc = wait ? MPI_Waitall(2, r->rq, MPI_STATUSES_IGNORE)
                 : MPI_Testall(2, r->rq, &flag, MPI_STATUSES_IGNORE);
    else if (r->posted != 0)
      mrc = wait ? MPI_Wait(&r->rq[r->posted == 1 ? 0 : 1], MPI_STATUS_IGNORE)
                 : MPI_Test(&r->rq[r->posted == 1 ? 0 : 1], &flag, MPI_STATUS_IGNORE);
    wait = 0; /* one step at most */
    if (mrc != MPI_SUCCESS)
      return bpc__err_mpi(ctx, mrc, "MPI_Test/MPI_Wait (minimum)");
    if (!flag)
      return BPC_OK;
    /* a step done: take in what came (the doubling and the fold) */
    if ((r->posted & 1) && r->id >= 0)
      for (int i = 0; i < r->n; i++)
        if (r->tmp[i] < r->acc[i])
          r->acc[i] = r->tmp[i];
    const int rc = minred_step(ctx, r);
    if (rc != BPC_OK)
      return rc;
  }
}

int bpc__minred_test(bpc_ctx_t *ctx, bpc__minred_t *r, int *done)
{
  return minred_advance(ctx, r, done, 0);
}

int bpc__minred_wait_step(bpc_ctx_t *ctx, bpc__minred_t *r, int *done)
{
  return minred_advance(ctx, r, done, 1);
}
