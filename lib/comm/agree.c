/*
 * lib/comm/agree.c - agreement across ranks: on errors (bpc__agree, the failing
 * rank's message to every rank) and on arguments (the call signature
 * bpc__sig_t and bpc__agree_args, before any message).
 */
#include "comm/coll.h"

#include "decomp/decomp.h"

#include <limits.h>
#include <sched.h>
#include <string.h>

/* After the minimum (code, rank) was found: every rank learns the failing
 * rank's message (one broadcast) and returns its own code, or that one. */
static int agree_message(bpc_ctx_t *ctx, const bpc__coll_ops_t *ops, int rc, int code, int at);

int bpc__agree(bpc_ctx_t *ctx, int rc) { return bpc__agree_ex(ctx, rc, 0, NULL, NULL); }

int bpc__agree_ex(bpc_ctx_t *ctx, int rc, int followon, void (*poll)(void *arg), void *arg)
{
  if (ctx == NULL)
    return rc;
  const bpc__coll_ops_t *ops = bpc__coll_ops(ctx);
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
               type == NULL                        ? -1
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
  if (bpc__coll_ops(ctx) == &bpc__coll_self) {
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
                    "value on every rank",
                    e, sig->name[f], who, ref);
  return bpc__err(ctx, BPC_EMISMATCH,
                  "%s: ranks disagree on %s (%lld on rank %lld, %lld on rank %lld); pass the "
                  "same value on every rank",
                  e, sig->name[f], v0, ref, vw, who);
}
