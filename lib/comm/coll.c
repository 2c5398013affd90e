/*
 * lib/comm/coll.c - the collectives of coll.h: the MPI implementation, the
 * in-process one, the wrappers engines call (they pick the table from the
 * context and count every collective), error agreement and argument
 * agreement.
 */
#include "comm/coll.h"

#include "decomp/decomp.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sched.h>
#include <string.h>

/* ------------------------------------------------------------------ MPI */

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
  snprintf(why, sizeof why, "no memory for %s (%zu bytes) in a collective under way", what,
           bytes);
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
  int mrc = MPI_Allreduce(in == out ? MPI_IN_PLACE : in, out, n, MPI_LONG_LONG, mpi_op(op),
                          ctx->comm);
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
  return mrc == MPI_SUCCESS ? BPC_OK : bpc__err_mpi(ctx, mrc, "MPI_Wait (a non-blocking reduction)");
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

static int mpi_scan_user(bpc_ctx_t *ctx, const void *in, void *out, size_t bytes,
                         int exclusive, void (*fn)(const void *in, void *inout, void *arg),
                         void *arg)
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

const bpc__coll_ops_t bpc__coll_mpi = {"mpi",       mpi_allreduce,    mpi_iallreduce,
                                       mpi_test,    mpi_cancel,       mpi_alltoall_int,
                                       mpi_bcast,   mpi_minloc,       mpi_allgatherv,
                                       mpi_scan_user};

/* ----------------------------------------------------------- in-process */

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

static int self_scan_user(bpc_ctx_t *ctx, const void *in, void *out, size_t bytes,
                          int exclusive, void (*fn)(const void *in, void *inout, void *arg),
                          void *arg)
{
  (void)ctx;
  (void)fn;
  (void)arg;
  if (!exclusive && bytes > 0 && in != out)
    memmove(out, in, bytes);
  return BPC_OK;
}

const bpc__coll_ops_t bpc__coll_self = {"self",      self_allreduce,    self_iallreduce,
                                        self_test,   self_cancel,       self_alltoall_int,
                                        self_bcast,  self_minloc,       self_allgatherv,
                                        self_scan_user};

/* ------------------------------------------------------------- wrappers */

static const bpc__coll_ops_t *ops_of(const bpc_ctx_t *ctx)
{
  return (ctx->serial || ctx->size == 1) ? &bpc__coll_self : &bpc__coll_mpi;
}

int bpc__allreduce_ll(bpc_ctx_t *ctx, const long long *in, long long *out, int n,
                      bpc__redop_t op)
{
  bpc__stats_coll(ctx);
  return ops_of(ctx)->allreduce(ctx, in, out, n, op);
}

int bpc__iallreduce_ll(bpc_ctx_t *ctx, const long long *in, long long *out, int n,
                       bpc__redop_t op, bpc__coll_req_t *req)
{
  if (req->active)
    return bpc__err(ctx, BPC_ESTATE, "a non-blocking reduction is already in flight");
  bpc__stats_coll(ctx);
  return ops_of(ctx)->iallreduce(ctx, in, out, n, op, req);
}

int bpc__coll_test(bpc_ctx_t *ctx, bpc__coll_req_t *req, int *done)
{
  if (!req->active) {
    *done = 1;
    return BPC_OK;
  }
  return ops_of(ctx)->test(ctx, req, done);
}

int bpc__coll_cancel(bpc_ctx_t *ctx, bpc__coll_req_t *req)
{
  if (!req->active)
    return BPC_OK;
  return ops_of(ctx)->cancel(ctx, req);
}

int bpc__alltoall_int(bpc_ctx_t *ctx, const int *in, int *out)
{
  bpc__stats_coll(ctx);
  return ops_of(ctx)->alltoall_int(ctx, in, out);
}

int bpc__bcast(bpc_ctx_t *ctx, void *buf, size_t bytes, int root)
{
  bpc__stats_coll(ctx);
  return ops_of(ctx)->bcast(ctx, buf, bytes, root);
}

int bpc__allgatherv(bpc_ctx_t *ctx, const void *in, size_t bytes, void *out,
                    const size_t *counts)
{
  bpc__stats_coll(ctx);
  if (counts[ctx->rank] != bytes)
    return bpc__err(ctx, BPC_EINVAL, "allgatherv: %zu bytes given, counts[%d] = %zu", bytes,
                    ctx->rank, counts[ctx->rank]);
  return ops_of(ctx)->allgatherv(ctx, in, bytes, out, counts);
}

int bpc__scan_user(bpc_ctx_t *ctx, const void *in, void *out, size_t bytes, int exclusive,
                   void (*fn)(const void *in, void *inout, void *arg), void *arg)
{
  bpc__stats_coll(ctx);
  return ops_of(ctx)->scan_user(ctx, in, out, bytes, exclusive, fn, arg);
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

/* ------------------------------------------------------ error agreement */

/* After the minimum (code, rank) was found: every rank learns the failing
 * rank's message (one broadcast) and returns its own code, or that one. */
static int agree_message(bpc_ctx_t *ctx, const bpc__coll_ops_t *ops, int rc, int code, int at);

int bpc__agree(bpc_ctx_t *ctx, int rc) { return bpc__agree_ex(ctx, rc, 0, NULL, NULL); }

int bpc__agree_ex(bpc_ctx_t *ctx, int rc, int followon, void (*poll)(void *arg), void *arg)
{
  if (ctx == NULL)
    return rc;
  const bpc__coll_ops_t *ops = ops_of(ctx);
  if (ops == &bpc__coll_self)
    return rc;
  /* the location: this rank, after every rank when its failure only
   * follows another's (so one failing on its own is the lowest) */
  followon = followon && rc != BPC_OK;
  const int loc = ctx->rank + (followon ? ctx->size : 0);
  int code = BPC_OK, at = 0, mrc = BPC_OK;
  bpc__stats_coll(ctx);
  if (poll == NULL) {
    mrc = ops->minloc(ctx, rc, loc, &code, &at);
  } else {
    /* (code, location) in one long long: the minimum is the most negative
     * code at the lowest location, as MPI_MINLOC gives it */
    long long v = (long long)rc * (1LL << 32) + loc, m = 0;
    bpc__coll_req_t req = BPC__COLL_REQ_INIT;
    mrc = ops->iallreduce(ctx, &v, &m, 1, BPC__RED_MIN, &req);
    /* poll now and then: the reduction's own test is the common case (a
     * poll per test made a small round 10-25% slower at 8 processes) */
    for (int done = 0, idle = 0; mrc == BPC_OK && !done;) {
      mrc = ops->test(ctx, &req, &done);
      if (mrc == BPC_OK && !done) {
        if ((++idle & 63) == 0)
          poll(arg);
        if (idle >= 1024) {
          sched_yield();
          idle = 0;
        }
      }
    }
    at = (int)(m & 0xffffffffLL);
    code = (int)((m - at) / (1LL << 32));
  }
  if (mrc != BPC_OK)
    return mrc;
  return agree_message(ctx, ops, followon ? BPC_OK : rc, code, at % ctx->size);
}

static int agree_message(bpc_ctx_t *ctx, const bpc__coll_ops_t *ops, int rc, int code, int at)
{
  int mrc = BPC_OK;
  if (code == BPC_OK)
    return BPC_OK;
  /* every rank learns the failing rank's own message */
  char msg[BPC__ERRMSG_LEN];
  if (ctx->rank == at)
    memcpy(msg, ctx->errmsg, sizeof msg);
  bpc__stats_coll(ctx);
  mrc = ops->bcast(ctx, msg, sizeof msg, at);
  if (rc != BPC_OK)
    return rc;
  if (mrc != BPC_OK)
    return bpc__err(ctx, code, "rank %d failed (%s)", at, bpc_strerror(code));
  msg[sizeof msg - 1] = '\0';
  /* drop the "BPC_EXXX: " prefix the failing rank's message starts with */
  const char *name = bpc_err_name(code), *text = msg;
  size_t nl = strlen(name);
  if (strncmp(msg, name, nl) == 0 && msg[nl] == ':' && msg[nl + 1] == ' ')
    text = msg + nl + 2;
  return bpc__err(ctx, code, "on rank %d: %s", at, *text ? text : bpc_strerror(code));
}

/* --------------------------------------------------- argument agreement */

#define SIG_SMALL (1LL << 61)

static long long fnv63(const void *data, size_t len, uint64_t h)
{
  const unsigned char *b = data;
  for (size_t i = 0; i < len; i++) {
    h ^= b[i];
    h *= 0x100000001b3ull;
  }
  return (long long)(h >> 1); /* 63 bits: its negation never overflows */
}

void bpc__sig_init(bpc__sig_t *s) { memset(s, 0, sizeof *s); }

static void sig_put(bpc__sig_t *s, const char *name, long long v, int hashed)
{
  if (s->n >= BPC__SIG_MAX) { /* a bug in the caller: bpc__agree_args fails */
    s->overflow = 1;
    return;
  }
  s->name[s->n] = name;
  s->val[s->n] = v;
  s->hashed[s->n] = hashed;
  s->n++;
}

void bpc__sig_int(bpc__sig_t *s, const char *name, long long v)
{
  if (v > -SIG_SMALL && v < SIG_SMALL)
    sig_put(s, name, v, 0);
  else
    sig_put(s, name, fnv63(&v, sizeof v, 0xcbf29ce484222325ull), 1);
}

void bpc__sig_bytes(bpc__sig_t *s, const char *name, const void *data, size_t len)
{
  if (data == NULL)
    sig_put(s, name, -1, 1);
  else
    sig_put(s, name, fnv63(data, len, 0xcbf29ce484222325ull ^ (uint64_t)len), 1);
}

void bpc__sig_type(bpc__sig_t *s, const bpc_type_t *type)
{
  bpc__sig_int(s, "type kind", type != NULL ? (long long)type->kind : -1);
  bpc__sig_int(s, "element size",
               type == NULL ? -1
               : type->kind == BPC_TYPE_CONTIGUOUS ? (long long)type->elem_size
                                                   : 0);
}

void bpc__sig_assign(bpc__sig_t *s, const bpc_assign_t *a)
{
  bpc__sig_int(s, "assignment mode", a != NULL ? (long long)a->mode : -1);
  if (a != NULL)
    sig_put(s, "assignment map", a->fingerprint, 1);
  else
    sig_put(s, "assignment map", -1, 1);
}

void bpc__sig_decomp(bpc__sig_t *s, const bpc_decomp_t *d)
{
  const size_t n = d != NULL ? (size_t)d->dim : 0;
  const void *src[5] = {NULL, NULL, NULL, NULL, NULL};
  if (d != NULL) {
    src[0] = d->divs;
    src[1] = d->share_face;
    src[2] = d->wrap;
    src[3] = d->ghost;
  }
  bpc__sig_int(s, "dim", d != NULL ? d->dim : -1);
  long long dom[2 * BPC_MAX_DIM];
  for (size_t i = 0; i < n; i++) {
    dom[i] = (long long)d->dmin[i];
    dom[n + i] = (long long)d->dmax[i];
  }
  bpc__sig_bytes(s, "domain", d != NULL ? dom : NULL, sizeof(long long) * 2 * n);
  static const char *const names[4] = {"divisions", "share_face", "wrap", "ghost"};
  for (int f = 0; f < 4; f++)
    bpc__sig_bytes(s, names[f], src[f], sizeof(int) * n);
}

void bpc__sig_str(bpc__sig_t *s, const char *name, const char *str)
{
  bpc__sig_bytes(s, name, str, str ? strlen(str) : 0);
}

void bpc__sig_open(bpc__sig_t *s, const char *name)
{
  sig_put(s, name, 0, 0);
  if (!s->overflow)
    s->kind[s->n - 1] = BPC__SIG_OPEN;
}

void bpc__sig_max(bpc__sig_t *s, const char *name, long long v)
{
  sig_put(s, name, v, 0);
  if (!s->overflow)
    s->kind[s->n - 1] = BPC__SIG_MAXED;
}

/* The agreed values from a reduced buffer (min, -max per field). */
static void sig_vals(const bpc__sig_t *sig, const long long *buf, long long *vals)
{
  for (int i = 0; vals != NULL && i < sig->n; i++) {
    if (sig->kind[i] == BPC__SIG_MAXED)
      vals[i] = -buf[2 + 2 * i];
    else
      vals[i] = buf[1 + 2 * i] == LLONG_MAX ? BPC__SIG_NONE : buf[1 + 2 * i];
  }
}

static int agree_args_run(bpc_ctx_t *ctx, const char *engine, int rc, const bpc__sig_t *sig,
                          long long *vals);

int bpc__agree_args(bpc_ctx_t *ctx, const char *engine, int rc, const bpc__sig_t *sig)
{
  return bpc__agree_args_vals(ctx, engine, rc, sig, NULL);
}

int bpc__agree_args_vals(bpc_ctx_t *ctx, const char *engine, int rc, const bpc__sig_t *sig,
                         long long *vals)
{
  if (ctx == NULL)
    return rc;
  /* the call's statistics record starts here, so its agreement is in it;
   * the call's exchange (bpc__exch_open with the same engine) continues it */
  if (engine != NULL)
    bpc__stats_begin_call(ctx, engine);
  ctx->stats_agreed = 0;
  bpc__phase(ctx, BPC__PH_ARGS0);
  rc = agree_args_run(ctx, engine, rc, sig, vals);
  bpc__phase(ctx, BPC__PH_ARGS1);
  ctx->stats_agreed = rc == BPC_OK && engine != NULL;
  return rc;
}

static int agree_args_run(bpc_ctx_t *ctx, const char *engine, int rc, const bpc__sig_t *sig,
                          long long *vals)
{
  /* every rank builds its signature with the same fields, so an overflow
   * happens on every rank alike (and is still agreed below) */
  if (rc == BPC_OK && sig != NULL && sig->overflow)
    rc = bpc__err(ctx, BPC_ESTATE, "%s: the argument signature has more than %d fields",
                  engine != NULL ? engine : "bpc", BPC__SIG_MAX);
  const int nf = sig != NULL ? sig->n : 0;
  long long buf[1 + 2 * BPC__SIG_MAX];
  /* the lowest code (0 = BPC_OK is the largest), then min and -max of each
   * field, all in one MIN reduction (open fields: +inf both, so they never
   * decide; max fields: only the -max slot counts) */
  buf[0] = rc;
  for (int i = 0; i < nf; i++) {
    const int open = sig->kind[i] == BPC__SIG_OPEN;
    buf[1 + 2 * i] = open ? LLONG_MAX : sig->val[i];
    buf[2 + 2 * i] = open ? LLONG_MAX : -sig->val[i];
  }
  if (ops_of(ctx) == &bpc__coll_self) {
    if (rc == BPC_OK && sig != NULL)
      sig_vals(sig, buf, vals);
    return rc;
  }
  int mrc = bpc__allreduce_ll(ctx, buf, buf, 1 + 2 * nf, BPC__RED_MIN);
  if (mrc != BPC_OK)
    return mrc;
  if (buf[0] != BPC_OK) /* every rank sees it: agree again to learn who and why */
    return bpc__agree(ctx, rc);
  int f = -1;
  for (int i = 0; i < nf && f < 0; i++)
    if (sig->kind[i] != BPC__SIG_MAXED && buf[1 + 2 * i] != LLONG_MAX &&
        buf[1 + 2 * i] != -buf[2 + 2 * i])
      f = i;
  if (f < 0) {
    if (sig != NULL)
      sig_vals(sig, buf, vals);
    return BPC_OK;
  }
  /* the lowest rank that states field f, and the lowest that differs from it */
  const int stated = sig->kind[f] != BPC__SIG_OPEN;
  long long ref = stated ? ctx->rank : LLONG_MAX;
  mrc = bpc__allreduce_ll(ctx, &ref, &ref, 1, BPC__RED_MIN);
  long long v0 = sig->val[f];
  if (mrc == BPC_OK)
    mrc = bpc__bcast(ctx, &v0, sizeof v0, (int)ref);
  long long who = stated && sig->val[f] != v0 ? ctx->rank : LLONG_MAX;
  if (mrc == BPC_OK)
    mrc = bpc__allreduce_ll(ctx, &who, &who, 1, BPC__RED_MIN);
  if (mrc != BPC_OK)
    return mrc;
  long long vw = sig->val[f];
  mrc = bpc__bcast(ctx, &vw, sizeof vw, who == LLONG_MAX ? 0 : (int)who);
  if (mrc != BPC_OK)
    return mrc;
  const char *e = engine != NULL ? engine : "bpc";
  if (sig->hashed[f])
    return bpc__err(ctx, BPC_EMISMATCH,
                    "%s: ranks disagree on %s (rank %lld differs from rank %lld); pass the same "
                    "value on every rank", e, sig->name[f], who, ref);
  return bpc__err(ctx, BPC_EMISMATCH,
                  "%s: ranks disagree on %s (%lld on rank %lld, %lld on rank %lld); pass the "
                  "same value on every rank", e, sig->name[f], v0, ref, vw, who);
}
