/*
 * lib/engines/swap/swap.c - swap-reduce: the public entry (bpc_swap), its
 * argument checks and the agreement on them, the algorithm table
 * {id, name, desc}, the choice behind "auto" (BPC_SWAP_ALGORITHM, the
 * tuning file, the built-in rule), piece ownership (bpc_swap_piece_of) and
 * the operator/tree helpers the schedules share.
 *
 * One call: check every argument (also the global ones, so a rank whose
 * arguments differ cannot leave early), agree on the outcome with one
 * MPI_Allreduce that also compares count and a hash of the schedule (order,
 * algorithm, k-vector, rounds) between ranks, open one exchange, run the
 * schedule, close the exchange, and agree on the final code (an operator
 * failure anywhere is BPC_ECALLBACK everywhere).
 */
#include "engines/swap/swap_internal.h"

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "datatype/datatype.h"
#include "decomp/decomp.h"

/* ----------------------------------------------------------- the table */

static const bpc_swap_algo_info_t swap_table[] = {
    {BPC_SWAP_RADIXK, "radixk",
     "rounds of direct sends in groups of k[r] (k all 2: binary swap; one round: direct send)"},
    {BPC_SWAP_SHIFT, "shift",
     "n-1 shift-permutation stages; reduces stage s-1 while stage s is in flight"},
    {BPC_SWAP_RING, "ring",
     "parallel pipeline: partial pieces travel along a ring (two-way line if not commutative)"},
};
#define NTABLE ((int)(sizeof swap_table / sizeof swap_table[0]))

int bpc_swap_algorithms(const bpc_swap_algo_info_t **table, int *n)
{
  if (table == NULL || n == NULL)
    return BPC_ENULL;
  *table = swap_table;
  *n = NTABLE;
  return BPC_OK;
}

static const bpc_swap_algo_info_t *find_algo(const char *name)
{
  for (int i = 0; i < NTABLE; i++)
    if (strcmp(swap_table[i].name, name) == 0)
      return &swap_table[i];
  return NULL;
}

static const char *algo_name(int id)
{
  for (int i = 0; i < NTABLE; i++)
    if (swap_table[i].id == id)
      return swap_table[i].name;
  return "?";
}

bpc_swap_params_t bpc_swap_params_default(void)
{
  bpc_swap_params_t p;
  memset(&p, 0, sizeof p);
  p.algorithm = "auto";
  return p;
}

/* ------------------------------------------------------ shared helpers */

int bpc__swap_op(bpc__swap_call_t *c, void *inout, const void *in, size_t count, int in_first,
                 int gid)
{
  if (c->err != BPC_OK || count == 0)
    return c->err;
  int rc = c->op->fn(inout, in, count, in_first, c->op->user);
  bpc__stats_ops(c->ctx, 1);
  if (rc != 0)
    c->err = bpc__err(c->ctx, BPC_ECALLBACK,
                      "swap operator returned %d on block %d (round/stage %d, %zu elements)", rc,
                      gid, c->cur_round, count);
  return c->err;
}

int bpc__swap_trees(bpc__swap_call_t *c, bpc__tree_job_t *jobs, int njobs)
{
  for (int i = 0; i < njobs; i++)
    jobs[i].holder = jobs[i].home >= 0 ? jobs[i].home : 0;
  if (c->err != BPC_OK || njobs == 0)
    return c->err;
  int rc = bpc__tree_reduce_many(&c->tree, jobs, njobs);
  uint64_t done = 0;
  for (int i = 0; i < njobs; i++)
    done += (uint64_t)jobs[i].nmerges;
  bpc__stats_ops(c->ctx, done);
  if (rc != 0)
    c->err = bpc__err(c->ctx, BPC_ECALLBACK,
                      "swap operator returned %d (round %d, a batch of %d reduction tree(s) of "
                      "%d local block(s))", rc, c->cur_round, njobs, c->nlocal);
  return c->err;
}

int bpc__swap_bad_size(bpc__swap_call_t *c, const bpc__msg_t *m, size_t expected)
{
  int rc = bpc__err(c->ctx, BPC_ETRUNC,
                    "swap: block %d got %zu bytes from block %d in round/stage %d, expected %zu "
                    "(is count the same on every rank?)", m->dst_gid, m->bytes, m->src_gid,
                    c->cur_round, expected);
  if (c->err == BPC_OK)
    c->err = rc;
  return rc;
}

int bpc__swap_send(bpc__swap_call_t *c, int b, int dst_gid, int seq, const void *data, size_t len)
{
  const size_t bytes = len * c->es;
  if (c->codec != NULL && c->codec->encode != NULL && bytes > 0) {
    if (c->nscratch == c->scratch_max) {
      int nm = c->scratch_max > 0 ? 2 * c->scratch_max : 16;
      void **ns = realloc(c->scratch, sizeof(void *) * (size_t)nm);
      if (ns == NULL)
        return bpc__err(c->ctx, BPC_ENOMEM, "swap: out of memory for the codec's buffers");
      c->scratch = ns;
      size_t *nc = realloc(c->scratch_cap, sizeof(size_t) * (size_t)nm);
      if (nc == NULL)
        return bpc__err(c->ctx, BPC_ENOMEM, "swap: out of memory for the codec's buffers");
      c->scratch_cap = nc;
      c->scratch_max = nm;
    }
    size_t cap = 0;
    void *buf = bpc__pool_get(c->ctx, bytes, &cap);
    if (buf == NULL)
      return bpc__err(c->ctx, BPC_ENOMEM, "swap: out of memory for an encoded piece of %zu bytes",
                      bytes);
    const size_t eb = c->codec->encode(buf, bytes, data, len, c->codec->user);
    if (eb > 0 && eb < bytes) {
      c->scratch[c->nscratch] = buf;
      c->scratch_cap[c->nscratch] = cap;
      c->nscratch++;
      return bpc__exch_send(c->ex, c->gids[b], dst_gid, seq, buf, eb, 0);
    }
    bpc__pool_put(c->ctx, buf, cap);
  }
  return bpc__exch_send(c->ex, c->gids[b], dst_gid, seq, data, bytes, BPC__SEND_BORROW);
}

int bpc__swap_accept(bpc__swap_call_t *c, bpc__msg_t *m, size_t len)
{
  const size_t bytes = len * c->es;
  if (m->bytes == bytes)
    return BPC_OK;
  if (c->codec != NULL && c->codec->decode != NULL && m->bytes < bytes) {
    size_t cap = 0;
    void *buf = bpc__pool_get(c->ctx, bytes, &cap);
    if (buf == NULL) {
      int rc = bpc__err(c->ctx, BPC_ENOMEM, "swap: out of memory decoding a piece of %zu bytes",
                        bytes);
      if (c->err == BPC_OK)
        c->err = rc;
      return rc;
    }
    int urc = c->codec->decode(buf, len, m->data, m->bytes, c->codec->user);
    if (urc == 0) {
      if (m->buf != NULL)
        bpc__pool_put(c->ctx, m->buf, m->cap);
      m->buf = buf;
      m->cap = cap;
      m->data = buf;
      m->bytes = bytes;
      m->borrowed = 0;
      return BPC_OK;
    }
    bpc__pool_put(c->ctx, buf, cap);
    int rc = bpc__err(c->ctx, BPC_ETRUNC,
                      "swap: block %d could not decode the %zu-byte piece from block %d in "
                      "round/stage %d (codec returned %d; expected %zu elements)", m->dst_gid,
                      m->bytes, m->src_gid, c->cur_round, urc, len);
    if (c->err == BPC_OK)
      c->err = rc;
    return rc;
  }
  return bpc__swap_bad_size(c, m, bytes);
}

void bpc__swap_scratch_free(bpc__swap_call_t *c)
{
  for (int i = 0; i < c->nscratch; i++)
    bpc__pool_put(c->ctx, c->scratch[i], c->scratch_cap[i]);
  free(c->scratch);
  free(c->scratch_cap);
  c->scratch = NULL;
  c->scratch_cap = NULL;
  c->nscratch = c->scratch_max = 0;
}

void bpc__swap_flat_piece(size_t count, int n, int p, size_t *off, size_t *len)
{
  int64_t o = 0, l = 0;
  bpc__piece_range((int64_t)count, n, p, &o, &l);
  *off = (size_t)o;
  *len = (size_t)l;
}

void bpc__swap_radixk_piece(const bpc__rounds_t *R, int rounds, size_t count, int p, size_t *off,
                            size_t *len)
{
  size_t lo = 0, n = count;
  for (int r = 0; r < rounds; r++) {
    int64_t o = 0, l = 0;
    bpc__piece_range((int64_t)n, R->k[r], bpc__round_index(R, r, p), &o, &l);
    lo += (size_t)o;
    n = (size_t)l;
  }
  *off = lo;
  *len = n;
}

int bpc_swap_piece_of(const bpc_swap_info_t *info, size_t count, int pos, bpc_swap_piece_t *piece)
{
  if (info == NULL || piece == NULL)
    return BPC_ENULL;
  if (info->nblocks < 1)
    return BPC_EINVAL;
  if (pos < 0 || pos >= info->nblocks)
    return BPC_ERANGE;
  if (info->algorithm == BPC_SWAP_RADIXK) {
    bpc__rounds_t R;
    if (info->rounds < 0 || info->rounds > info->nk ||
        bpc__rounds_init(&R, info->nblocks, info->k, info->nk, 0, NULL, 0) != BPC_OK)
      return BPC_EINVAL;
    bpc__swap_radixk_piece(&R, info->rounds, count, pos, &piece->offset, &piece->count);
    return BPC_OK;
  }
  if (info->algorithm != BPC_SWAP_SHIFT && info->algorithm != BPC_SWAP_RING)
    return BPC_EINVAL;
  bpc__swap_flat_piece(count, info->nblocks, pos, &piece->offset, &piece->count);
  return BPC_OK;
}

/* ------------------------------------------------------- the choice */

/* Built-in rule for "auto": radix-k, with rounds of at most 8 members (the
 * Radix-k paper found k around 8 best at scale; on the 2-core test machine
 * every k-vector and schedule is within noise of the others, doc/swap.md).
 * bpc-tune finds the best choice for a given machine (BPC_TUNING_FILE). */
#define BUILTIN_K_TARGET 8

typedef struct choice {
  int algo;
  int k[BPC_SWAP_MAX_K];
  int nk;
  int source;
} choice_t;

/* Resolve the schedule and k-vector. Returns BPC_OK or an error recorded
 * with a message (identical on every rank given identical arguments and
 * environment). */
static int choose(bpc_ctx_t *ctx, const bpc_swap_params_t *P, int n, size_t bytes,
                  int commutative, choice_t *ch)
{
  char msg[256];
  const char *name = P->algorithm != NULL ? P->algorithm : "auto";
  memset(ch, 0, sizeof *ch);
  ch->source = 0;
  if (strcmp(name, "auto") == 0) {
    const char *env = getenv("BPC_SWAP_ALGORITHM");
    if (env != NULL && env[0] != '\0' && strcmp(env, "auto") != 0) {
      if (find_algo(env) == NULL)
        return bpc__err(ctx, BPC_EALGO,
                        "BPC_SWAP_ALGORITHM=%s is not a swap algorithm (known: auto radixk "
                        "shift ring)", env);
      name = env;
      ch->source = 1;
    }
  } else if (find_algo(name) == NULL) {
    return bpc__err(ctx, BPC_EALGO, "'%s' is not a swap algorithm (known: auto radixk shift ring)",
                    name);
  }

  const int user_k = P->k != NULL && P->nk > 0;
  if (strcmp(name, "auto") == 0) {
    if (user_k || P->rounds != 0) {
      ch->algo = BPC_SWAP_RADIXK; /* a k-vector or a partial swap means radix-k */
      ch->source = 0;
    } else {
      int a = 0, kk[BPC_SWAP_MAX_K], nk = 0;
      if (bpc__swap_tuning_lookup(ctx, n, ctx->size, bytes, commutative, &a, kk, &nk)) {
        ch->algo = a;
        ch->source = 2;
        if (a == BPC_SWAP_RADIXK && bpc__kvec_check(n, kk, nk, NULL, 0) == BPC_OK) {
          memcpy(ch->k, kk, sizeof(int) * (size_t)nk);
          ch->nk = nk;
          return BPC_OK;
        }
        if (a != BPC_SWAP_RADIXK)
          return BPC_OK;
      } else {
        ch->algo = BPC_SWAP_RADIXK;
        ch->source = 3;
      }
    }
  } else {
    ch->algo = find_algo(name)->id;
  }

  if (ch->algo != BPC_SWAP_RADIXK)
    return BPC_OK;
  if (user_k) {
    if (P->nk > BPC_SWAP_MAX_K)
      return bpc__err(ctx, BPC_EKVEC, "k-vector of %d rounds: at most %d are allowed", P->nk,
                      BPC_SWAP_MAX_K);
    if (bpc__kvec_check(n, P->k, P->nk, msg, sizeof msg) != BPC_OK)
      return bpc__err(ctx, BPC_EKVEC, "%s", msg);
    memcpy(ch->k, P->k, sizeof(int) * (size_t)P->nk);
    ch->nk = P->nk;
    return BPC_OK;
  }
  if (bpc__kvec_auto(n, BUILTIN_K_TARGET, ch->k, BPC_SWAP_MAX_K, &ch->nk) != BPC_OK)
    return bpc__err(ctx, BPC_EKVEC, "no automatic k-vector for %d blocks", n);
  return BPC_OK;
}

/* ----------------------------------------------------------- agreement */

static uint64_t fnv(uint64_t h, const void *p, size_t len)
{
  const unsigned char *b = p;
  for (size_t i = 0; i < len; i++) {
    h ^= b[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

/* One allreduce: the lowest error code, and min/max of count and of the
 * schedule hash. Returns the agreed code (with a message on ranks that did
 * not fail themselves). */
static int agree_args(bpc_ctx_t *ctx, int rc, size_t count, uint64_t hash)
{
  if (ctx->serial || ctx->size == 1)
    return rc;
  const long long cnt = count > (size_t)LLONG_MAX ? LLONG_MAX : (long long)count;
  const long long h = (long long)(hash >> 1);
  long long in[5] = {rc, cnt, -cnt, h, -h}, out[5];
  int mrc = MPI_Allreduce(in, out, 5, MPI_LONG_LONG, MPI_MIN, ctx->comm);
  if (mrc != MPI_SUCCESS)
    return bpc__err_mpi(ctx, mrc, "MPI_Allreduce (swap argument agreement)");
  if (out[0] != BPC_OK) /* every rank sees it: agree again to learn who and why */
    return bpc__agree(ctx, rc);
  if (out[1] != -out[2])
    return bpc__err(ctx, BPC_EINVAL, "swap: count differs between ranks (from %lld to %lld)",
                    out[1], -out[2]);
  if (out[3] != -out[4])
    return bpc__err(ctx, BPC_EINVAL,
                    "swap: ranks disagree on the schedule (algorithm, k-vector, rounds, order, "
                    "element size or mode); pass the same parameters on every rank and the "
                    "same BPC_SWAP_ALGORITHM / BPC_TUNING_FILE");
  return BPC_OK;
}

/* -------------------------------------------------------------- entry */

int bpc_swap(bpc_ctx_t *ctx, const bpc_assign_t *assign, const bpc_type_t *type,
             void *const *bufs, size_t count, const bpc_swap_op_t *op,
             const bpc_swap_params_t *params, bpc_swap_piece_t *pieces, bpc_swap_info_t *info)
{
  if (ctx == NULL)
    return BPC_ENULL;
  int rc = BPC_OK;
  char msg[256];
  bpc_swap_params_t P = params != NULL ? *params : bpc_swap_params_default();
  bpc__swap_call_t c;
  choice_t ch;
  bpc__rounds_t R;
  int *order = NULL, *pos_of = NULL, *lpos = NULL;
  int n = 0, nrounds = 0;
  uint64_t hash = 0xcbf29ce484222325ull;
  memset(&c, 0, sizeof c);
  memset(&ch, 0, sizeof ch);
  memset(&R, 0, sizeof R);

  /* ---- checks: every one on every rank, then one agreement */
  if (assign == NULL || type == NULL || op == NULL || op->fn == NULL) {
    rc = bpc__err(ctx, BPC_ENULL, "bpc_swap: %s is NULL",
                  assign == NULL ? "assign" : type == NULL ? "type" : op == NULL ? "op" : "op->fn");
    goto agree;
  }
  if (assign->ctx != ctx) {
    rc = bpc__err(ctx, BPC_EINVAL, "bpc_swap: the assignment belongs to another context");
    goto agree;
  }
  n = assign->nblocks;
  rc = bpc_type_check(ctx, type);
  if (rc == BPC_OK && type->kind != BPC_TYPE_CONTIGUOUS)
    rc = bpc__err(ctx, BPC_ETYPE, "bpc_swap reduces contiguous buffers: the type must be "
                                  "contiguous (bpc_type_contiguous), not custom");
  if (rc != BPC_OK)
    goto agree;
  if (count > (size_t)INT64_MAX / type->elem_size) {
    rc = bpc__err(ctx, BPC_ERANGE, "bpc_swap: count %zu of %zu-byte elements overflows", count,
                  type->elem_size);
    goto agree;
  }
  if (P.nthreads < 0) {
    rc = bpc__err(ctx, BPC_EINVAL, "bpc_swap: nthreads %d is negative (0 = OpenMP default)",
                  P.nthreads);
    goto agree;
  }
  if (P.k != NULL && P.nk < 0) {
    rc = bpc__err(ctx, BPC_EKVEC, "bpc_swap: k-vector length %d is negative", P.nk);
    goto agree;
  }
  rc = choose(ctx, &P, n, count * type->elem_size, op->commutative != 0, &ch);
  if (rc != BPC_OK)
    goto agree;
  if (ch.algo == BPC_SWAP_RADIXK) {
    if (bpc__rounds_init(&R, n, ch.k, ch.nk, 0, msg, sizeof msg) != BPC_OK) {
      rc = bpc__err(ctx, BPC_EKVEC, "%s", msg);
      goto agree;
    }
    if (P.rounds < 0 || P.rounds > ch.nk) {
      rc = bpc__err(ctx, BPC_ERANGE, "bpc_swap: rounds %d is outside 0..%d (k-vector of %d "
                                     "rounds; 0 = all)", P.rounds, ch.nk, ch.nk);
      goto agree;
    }
    nrounds = P.rounds == 0 ? ch.nk : P.rounds;
  } else if (P.rounds != 0) {
    rc = bpc__err(ctx, BPC_EINVAL, "bpc_swap: a partial swap (rounds %d) needs radixk, not %s",
                  P.rounds, algo_name(ch.algo));
    goto agree;
  }

  order = bpc__malloc(sizeof(int) * (size_t)n);
  pos_of = bpc__malloc(sizeof(int) * (size_t)n);
  lpos = bpc__malloc(sizeof(int) * (size_t)(assign->nlocal > 0 ? assign->nlocal : 1));
  if (order == NULL || pos_of == NULL || lpos == NULL) {
    rc = bpc__err(ctx, BPC_ENOMEM, "bpc_swap: out of memory for %d blocks", n);
    goto agree;
  }
  if (P.order != NULL) {
    rc = bpc__perm_check(P.order, n, msg, sizeof msg);
    if (rc != BPC_OK) {
      rc = bpc__err(ctx, rc, "bpc_swap: visibility order: %s", msg);
      goto agree;
    }
    memcpy(order, P.order, sizeof(int) * (size_t)n);
  } else {
    for (int i = 0; i < n; i++)
      order[i] = i;
  }
  bpc__perm_invert(order, n, pos_of);
  for (int i = 0; i < assign->nlocal; i++)
    lpos[i] = pos_of[assign->local[i]];

  if (assign->nlocal > 0) {
    if (pieces == NULL) {
      rc = bpc__err(ctx, BPC_ENULL, "bpc_swap: pieces is NULL but this rank has %d block(s)",
                    assign->nlocal);
      goto agree;
    }
    if (count > 0 && bufs == NULL) {
      rc = bpc__err(ctx, BPC_ENULL, "bpc_swap: bufs is NULL but this rank has %d block(s)",
                    assign->nlocal);
      goto agree;
    }
    for (int i = 0; i < assign->nlocal && count > 0; i++)
      if (bufs[i] == NULL) {
        rc = bpc__err(ctx, BPC_ENULL, "bpc_swap: the buffer of block %d (local %d) is NULL",
                      assign->local[i], i);
        goto agree;
      }
  }

  /* what every rank must agree on */
  {
    int v[6] = {ch.algo, ch.nk, nrounds, P.deterministic != 0, op->commutative != 0, n};
    hash = fnv(hash, v, sizeof v);
    hash = fnv(hash, ch.k, sizeof(int) * (size_t)ch.nk);
    hash = fnv(hash, &type->elem_size, sizeof type->elem_size);
    hash = fnv(hash, order, sizeof(int) * (size_t)n);
  }

agree:
  rc = agree_args(ctx, rc, count, hash);
  if (rc != BPC_OK)
    goto cleanup;

  /* ---- run */
  c.ctx = ctx;
  c.n = n;
  c.order = order;
  c.pos_of = pos_of;
  c.nlocal = assign->nlocal;
  c.gids = assign->local;
  c.lpos = lpos;
  c.buf = (char *const *)bufs;
  c.count = count;
  c.es = type->elem_size;
  c.op = op;
  c.deterministic = P.deterministic != 0;
  c.tree.fn = op->fn;
  c.tree.arg = op->user;
  c.tree.elem_size = type->elem_size;
  c.tree.nthreads = bpc__threads_resolve(P.nthreads);
  {
    /* least elements per thread chunk; BPC_TREE_MIN_CHUNK tunes it (tests
     * lower it to exercise threads on small buffers) */
    long long mc = bpc__env_ll("BPC_TREE_MIN_CHUNK", (long long)BPC__TREE_MIN_CHUNK);
    c.tree.min_chunk = mc >= 1 ? (size_t)mc : 1;
  }
  c.pieces = pieces;
  c.err = BPC_OK;
  c.codec = P.codec;
  c.scratch = NULL;
  c.scratch_cap = NULL;
  c.nscratch = c.scratch_max = 0;

  rc = bpc__exch_open(ctx, "swap", bpc__assign_rank_cb, assign, &c.ex);
  if (rc == BPC_OK) {
    if (ch.algo == BPC_SWAP_RADIXK)
      rc = bpc__swap_radixk(&c, &R, nrounds);
    else if (ch.algo == BPC_SWAP_SHIFT)
      rc = bpc__swap_shift(&c);
    else
      rc = bpc__swap_ring(&c);
    if (rc == BPC_OK)
      rc = c.err;
    int rc2 = bpc__exch_close(&c.ex);
    if (rc == BPC_OK)
      rc = rc2;
    bpc__swap_scratch_free(&c);
  }
  rc = bpc__agree(ctx, rc);

  if (info != NULL) {
    memset(info, 0, sizeof *info);
    info->algorithm = ch.algo;
    snprintf(info->name, sizeof info->name, "%s", algo_name(ch.algo));
    info->nblocks = n;
    info->source = ch.source;
    if (ch.algo == BPC_SWAP_RADIXK) {
      info->nk = ch.nk;
      memcpy(info->k, ch.k, sizeof(int) * (size_t)ch.nk);
      info->rounds = nrounds;
      info->group = 1;
      for (int r = 0; r < nrounds; r++)
        info->group *= ch.k[r];
    } else {
      info->rounds = 1;
      info->group = n;
    }
  }

cleanup:
  free(order);
  free(pos_of);
  free(lpos);
  return rc;
}
