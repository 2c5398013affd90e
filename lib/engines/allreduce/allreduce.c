/*
 * lib/engines/allreduce/allreduce.c - the all-reduce engine: its algorithm
 * table and registry entry, params, the cost rule of "auto", the public
 * entry bpc_allreduce, and the helpers its schedules share (positions,
 * sending part or all of an item, combining and storing what arrived).
 *
 * One call (the engine frame of doc/design.md): check every argument on
 * this rank, pick the algorithm (argument, BPC_ALLREDUCE_ALGORITHM, else
 * the cost rule after the agreement), ONE bpc__agree_args on the rank's
 * code and the signature (algorithm, block count, assignment, order, type,
 * item count, commutativity; the largest custom item as a maximum), open
 * one exchange, run the row, close the exchange and agree on the outcome.
 */
#include "engines/allreduce/allreduce_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/coll.h"
#include "datatype/datatype.h"
#include "decomp/decomp.h"
#include "patterns/patterns.h"
#include "threads/threads.h"

static const bpc__algo_t allreduce_rows[] = {
    {{BPC_ALLREDUCE_DOUBLING, "doubling",
      "recursive doubling over m = 2^floor(log2 n): log2 m rounds of whole items (+2 off powers of "
      "2)"},
     bpc__allreduce_doubling,
     &(const bpc__allreduce_row_t){0, bpc__allreduce_model_doubling,
                                   bpc__allreduce_rounds_doubling}},
    {{BPC_ALLREDUCE_REDUCE_BCAST, "reduce-bcast",
      "binomial reduce to position 0, then binomial broadcast: 2 ceil(log2 n) rounds"},
     bpc__allreduce_reduce_bcast,
     &(const bpc__allreduce_row_t){0, bpc__allreduce_model_reduce_bcast,
                                   bpc__allreduce_rounds_reduce_bcast}},
    {{BPC_ALLREDUCE_SWAP_ALLGATHER, "swap-allgather",
      "reduce-scatter by halves, then allgather (contiguous): 2 log2 m rounds (+2), 2 (m-1)/m of "
      "an item"},
     bpc__allreduce_swap_allgather,
     &(const bpc__allreduce_row_t){1, bpc__allreduce_model_swap_allgather,
                                   bpc__allreduce_rounds_swap_allgather}},
};

const bpc__engine_t bpc__engine_allreduce = {"allreduce", "BPC_ALLREDUCE_ALGORITHM", allreduce_rows,
                                             BPC__NROWS(allreduce_rows), NULL};

bpc_allreduce_params_t bpc_allreduce_params_default(void)
{
  bpc_allreduce_params_t p;
  memset(&p, 0, sizeof p);
  p.algorithm = "auto";
  return p;
}

/* ------------------------------------------------------------- positions */

int bpc__allreduce_gid(const bpc__allreduce_call_t *C, int p)
{
  return C->order != NULL ? C->order[p] : p;
}

int bpc__allreduce_pow2(int n)
{
  int m = 1;
  while (m <= n / 2)
    m *= 2;
  return m;
}

int bpc__allreduce_virt(int n, int p)
{
  const int r = n - bpc__allreduce_pow2(n);
  if (p < 2 * r)
    return p % 2 == 0 ? p / 2 : -1;
  return p - r;
}

int bpc__allreduce_vpos(int n, int v)
{
  const int r = n - bpc__allreduce_pow2(n);
  return v < r ? 2 * v : v + r;
}

/* ------------------------------------------------------------- messages */

/* Record this rank's first non-fatal failure: `what` failed (a callback:
 * with its value), or what == NULL: the callee recorded the message. */
static void fail(bpc__allreduce_call_t *C, int code, int cbval, const char *what)
{
  if (C->err != BPC_OK)
    return;
  C->err = code;
  if (what != NULL && code == BPC_ECALLBACK)
    bpc__err(C->ctx, code, "bpc_allreduce: %s returned %d", what, cbval);
  else if (what != NULL)
    bpc__err(C->ctx, code, "bpc_allreduce: %s", what);
}

static void *item_at(const bpc__allreduce_call_t *C, int l)
{
  return C->contig ? ((bpc_buf_t *)C->items)[l].data : ((void **)C->items)[l];
}

int bpc__allreduce_send(bpc__allreduce_call_t *C, int l, int p, int q, int seq, size_t lo,
                        size_t len)
{
  const int src = bpc__allreduce_gid(C, p), dst = bpc__allreduce_gid(C, q);
  if (C->contig)
    return bpc__exch_send(C->ex, src, dst, seq, (const char *)item_at(C, l) + lo * C->es,
                          len * C->es, 0);
  const void *bytes = NULL;
  size_t nbytes = 0;
  void *owned = NULL;
  int rc = C->err == BPC_OK ? bpc__type_msg(C->ctx, C->type, item_at(C, l), &bytes, &nbytes, &owned)
                            : BPC_OK;
  if (rc != BPC_OK) { /* the peer still gets a message: an empty one */
    fail(C, rc, 0, NULL);
    bytes = NULL;
    nbytes = 0;
  }
  if (owned != NULL) {
    if (C->ntmp == C->captmp) {
      const int nc = C->captmp ? 2 * C->captmp : 8;
      void **t = realloc(C->tmp, sizeof *t * (size_t)nc);
      if (t == NULL) {
        free(owned);
        fail(C, BPC_ENOMEM, 0, "out of memory for a send");
        return bpc__exch_send(C->ex, src, dst, seq, NULL, 0, 0);
      }
      C->tmp = t;
      C->captmp = nc;
    }
    C->tmp[C->ntmp++] = owned;
  }
  return bpc__exch_send(C->ex, src, dst, seq, bytes, nbytes, 0);
}

int bpc__allreduce_recv(bpc__allreduce_call_t *C, int p, int q, int seq, bpc__msg_t **m)
{
  return bpc__exch_wait(C->ex, bpc__allreduce_gid(C, p), bpc__allreduce_gid(C, q), seq, m);
}

/* The operator on [lo, lo + len) of a contiguous item, cut over threads
 * when the range is large (the operator acts element by element). */
typedef struct op_range {
  const bpc_op_t *op;
  const char *in;
  char *io;
  size_t es;
  int in_left;
} op_range_t;

static int op_chunk(const op_range_t *R, size_t lo, size_t len)
{
  return R->op->fn(R->in + lo * R->es, R->io + lo * R->es, len, R->in_left, R->op->user);
}

static int op_apply(const bpc__allreduce_call_t *C, const void *in, void *io, size_t len,
                    int in_left)
{
  const op_range_t R = {C->op, in, io, C->es, in_left};
  const size_t min_chunk = (size_t)1 << 16; /* bytes a thread takes at least */
  const size_t per = C->es > 0 ? (min_chunk + C->es - 1) / C->es : len;
  const int nt = C->nthreads;
  if (nt <= 1 || len < 2 * per)
    return op_chunk(&R, 0, len);
  const size_t nchunks = len / per < (size_t)nt * 4 ? len / per : (size_t)nt * 4;
  int rc = 0;
#pragma omp parallel for num_threads(nt) schedule(static)
  for (long long c = 0; c < (long long)nchunks; c++) {
    const size_t a = len * (size_t)c / nchunks, b = len * (size_t)(c + 1) / nchunks;
    const int v = op_chunk(&R, a, b - a);
    if (v != 0) {
#pragma omp atomic write
      rc = v;
    }
  }
  return rc;
}

/* A contiguous message of the expected len elements? (ETRUNC recorded if
 * not.) */
static int msg_fits(bpc__allreduce_call_t *C, const bpc__msg_t *m, size_t len)
{
  if (m->bytes == len * C->es)
    return 1;
  bpc__err(C->ctx, BPC_ETRUNC, "bpc_allreduce: a message of %zu bytes where %zu were due", m->bytes,
           len * C->es);
  fail(C, BPC_ETRUNC, 0, NULL);
  return 0;
}

/* A custom message's item, made by the type's unpack (NULL after a
 * failure, recorded). */
static void *msg_item(bpc__allreduce_call_t *C, const bpc__msg_t *m)
{
  void *item = NULL;
  const int v = C->type->ops.unpack(m->data, m->bytes, &item, C->type->user);
  if (v != 0)
    fail(C, BPC_ECALLBACK, v, "the type's unpack");
  else if (item == NULL)
    fail(C, BPC_ECALLBACK, 0, "the type's unpack (it made no item)");
  return v != 0 ? NULL : item;
}

void bpc__allreduce_combine(bpc__allreduce_call_t *C, int l, bpc__msg_t *m, size_t lo, size_t len,
                            int in_left)
{
  if (C->err == BPC_OK && C->contig) {
    if (msg_fits(C, m, len) && len > 0) {
      const int v = op_apply(C, m->data, (char *)item_at(C, l) + lo * C->es, len, in_left);
      bpc__stats_ops(C->ctx, 1);
      if (v != 0)
        fail(C, BPC_ECALLBACK, v, "the operator");
    }
  } else if (C->err == BPC_OK) {
    void *in = msg_item(C, m);
    if (in != NULL) {
      const int w = C->op->fn(in, item_at(C, l), 1, in_left, C->op->user);
      bpc__stats_ops(C->ctx, 1);
      if (w != 0)
        fail(C, BPC_ECALLBACK, w, "the operator");
      bpc_type_item_destroy(C->type, in);
    }
  }
  bpc__msg_release(C->ex, m);
}

void bpc__allreduce_store(bpc__allreduce_call_t *C, int l, bpc__msg_t *m, size_t lo, size_t len)
{
  if (C->err == BPC_OK && C->contig) {
    if (msg_fits(C, m, len) && len > 0)
      memcpy((char *)item_at(C, l) + lo * C->es, m->data, len * C->es);
  } else if (C->err == BPC_OK) {
    void *item = msg_item(C, m);
    if (item != NULL) {
      void **slot = &((void **)C->items)[l];
      bpc_type_item_destroy(C->type, *slot);
      *slot = item;
    }
  }
  bpc__msg_release(C->ex, m);
}

int bpc__allreduce_step_end(bpc__allreduce_call_t *C)
{
  const int rc = bpc__exch_flush(C->ex);
  if (rc != BPC_OK) /* sends may still read them: the entry frees them after the end */
    return rc;
  for (int i = 0; i < C->ntmp; i++)
    free(C->tmp[i]);
  C->ntmp = 0;
  return rc;
}

int bpc__allreduce_pairs(bpc__allreduce_call_t *C, int seq, int pre)
{
  const int n = C->n, r = n - bpc__allreduce_pow2(n), nl = C->assign->nlocal;
  int rc = BPC_OK;
  for (int l = 0; l < nl && rc == BPC_OK; l++) {
    const int p = C->lpos[l];
    if (p < 2 * r && p % 2 == (pre ? 1 : 0))
      rc = bpc__allreduce_send(C, l, p, pre ? p - 1 : p + 1, seq, 0, C->count);
  }
  for (int l = 0; l < nl && rc == BPC_OK; l++) {
    const int p = C->lpos[l];
    if (p >= 2 * r || p % 2 == (pre ? 1 : 0))
      continue;
    bpc__msg_t *m = NULL;
    rc = bpc__allreduce_recv(C, p, pre ? p + 1 : p - 1, seq, &m);
    if (rc != BPC_OK)
      break;
    if (pre)
      bpc__allreduce_combine(C, l, m, 0, C->count, 0);
    else
      bpc__allreduce_store(C, l, m, 0, C->count);
  }
  const int rc2 = bpc__allreduce_step_end(C);
  return rc != BPC_OK ? rc : rc2;
}

/* ------------------------------------------------------------- auto */

/* The cost rule's machine constants (doc/allreduce.md): a message's
 * latency, the time per byte moved and per byte combined. */
#define AR_ALPHA 2e-6
#define AR_BETA 2e-10
#define AR_GAMMA 2e-10

/* The row with the smallest modelled time for n blocks and items of L
 * bytes (ties: the first in the table); contiguous-only rows only for
 * contiguous types. */
static const bpc__algo_t *allreduce_auto(int n, double L, int contig)
{
  const bpc__algo_t *best = NULL;
  double tbest = 0.0;
  for (int i = 0; i < bpc__engine_allreduce.nrows; i++) {
    const bpc__algo_t *r = &bpc__engine_allreduce.rows[i];
    const bpc__allreduce_row_t *t = bpc__allreduce_row(r);
    if (t->model == NULL || (t->contiguous_only && !contig))
      continue;
    const double v = t->model(n, L, AR_ALPHA, AR_BETA, AR_GAMMA);
    if (best == NULL || v < tbest) {
      best = r;
      tbest = v;
    }
  }
  return best;
}

/* ------------------------------------------------------------- entry */

/* This rank's checks and the pick (first error; the caller agrees on the
 * code). *count: contiguous items' count (-1: no local block); *maxbytes:
 * the largest local custom item packed (auto only, else 0). */
static int allreduce_check(bpc_ctx_t *ctx, const bpc_assign_t *assign, const bpc_type_t *type,
                           void *items, const bpc_op_t *op, const bpc_allreduce_params_t *P,
                           const bpc__algo_t **row, bpc_algo_source_t *source, long long *count,
                           long long *maxbytes)
{
  char msg[128];
  *count = -1;
  *maxbytes = 0;
  if (assign == NULL || type == NULL || op == NULL || op->fn == NULL)
    return bpc__err(ctx, BPC_ENULL, "bpc_allreduce: %s is NULL",
                    assign == NULL ? "assign"
                    : type == NULL ? "type"
                    : op == NULL   ? "op"
                                   : "op->fn");
  if (assign->ctx != ctx)
    return bpc__err(ctx, BPC_EINVAL, "bpc_allreduce: the assignment belongs to another context");
  int rc = bpc_type_check(ctx, type);
  if (rc != BPC_OK)
    return rc;
  if (P->nthreads < 0)
    return bpc__err(ctx, BPC_EINVAL, "bpc_allreduce: nthreads %d is negative (0 = OpenMP default)",
                    P->nthreads);
  if (P->order != NULL && bpc__perm_check(P->order, assign->nblocks, msg, sizeof msg) != BPC_OK)
    return bpc__err(ctx, BPC_EPERM, "bpc_allreduce: order: %s", msg);
  const int nl = assign->nlocal;
  if (nl > 0 && items == NULL)
    return bpc__err(ctx, BPC_ENULL, "bpc_allreduce: items is NULL but this rank has %d block(s)",
                    nl);
  rc = bpc__algo_pick(ctx, &bpc__engine_allreduce, P->algorithm, NULL, row, source);
  if (rc != BPC_OK)
    return rc;
  const int contig = type->kind == BPC_TYPE_CONTIGUOUS;
  if (*row != NULL && bpc__allreduce_row(*row)->contiguous_only && !contig)
    return bpc__err(ctx, BPC_ETYPE, "bpc_allreduce: %s takes contiguous types only",
                    (*row)->info.name);
  for (int l = 0; l < nl; l++) {
    if (contig) {
      const bpc_buf_t *b = &((const bpc_buf_t *)items)[l];
      if (b->data == NULL && b->count > 0)
        return bpc__err(ctx, BPC_ENULL, "bpc_allreduce: data of gid %d is NULL (count %zu)",
                        assign->local[l], b->count);
      if (l > 0 && (long long)b->count != *count)
        return bpc__err(ctx, BPC_EINVAL,
                        "bpc_allreduce: items of one count are needed, but gid %d has %zu "
                        "elements and gid %d %lld",
                        assign->local[l], b->count, assign->local[0], *count);
      *count = (long long)b->count;
    } else {
      const void *it = ((void *const *)items)[l];
      if (it == NULL)
        return bpc__err(ctx, BPC_ENULL,
                        "bpc_allreduce: the item of gid %d is NULL (custom items are combined "
                        "in place)",
                        assign->local[l]);
      if (*row == NULL) { /* auto weighs the largest item */
        size_t bytes = 0;
        rc = bpc_type_size(ctx, type, it, &bytes);
        if (rc != BPC_OK)
          return rc;
        *maxbytes = (long long)bytes > *maxbytes ? (long long)bytes : *maxbytes;
      }
    }
  }
  return BPC_OK;
}

static int allreduce_entry(bpc_ctx_t *ctx, const bpc_assign_t *assign, const bpc_type_t *type,
                           void *items, const bpc_op_t *op, const bpc_allreduce_params_t *params,
                           bpc_allreduce_info_t *info)
{
  if (ctx == NULL)
    return BPC_ENULL;
  const bpc_allreduce_params_t P = params != NULL ? *params : bpc_allreduce_params_default();
  const bpc__algo_t *row = NULL;
  bpc_algo_source_t source = BPC_SOURCE_BUILTIN;
  long long count = -1, maxbytes = 0;
  int rc = allreduce_check(ctx, assign, type, items, op, &P, &row, &source, &count, &maxbytes);
  /* the local blocks' positions (through the inverse order when there is
   * one: a pass over the blocks, as the order's check made), before the
   * agreement, so that running out of memory here is agreed on too */
  const int nl = rc == BPC_OK ? assign->nlocal : 0, n = rc == BPC_OK ? assign->nblocks : 0;
  int *lpos = NULL;
  if (rc == BPC_OK) {
    lpos = malloc(sizeof(int) * (size_t)(nl > 0 ? nl : 1));
    int *pos_of = P.order != NULL ? malloc(sizeof(int) * (size_t)n) : NULL;
    if (lpos == NULL || (P.order != NULL && pos_of == NULL)) {
      rc = bpc__err(ctx, BPC_ENOMEM, "bpc_allreduce: out of memory for %d positions", n);
    } else {
      if (pos_of != NULL)
        bpc__perm_invert(P.order, n, pos_of);
      for (int l = 0; l < nl; l++)
        lpos[l] = pos_of != NULL ? pos_of[assign->local[l]] : assign->local[l];
    }
    free(pos_of);
  }

  enum { F_COUNT = 6 }; /* the index of "item count" below */
  bpc__sig_t sig;
  long long vals[BPC__SIG_MAX];
  bpc__sig_init(&sig);
  const int ok = rc == BPC_OK;
  bpc__sig_int(&sig, "algorithm", ok && row != NULL ? row->info.id : 0); /* 0 */
  bpc__sig_int(&sig, "block count", ok ? assign->nblocks : 0);           /* 1 */
  bpc__sig_assign(&sig, ok ? assign : NULL);                             /* 2, 3 */
  bpc__sig_bytes(&sig, "order", ok ? P.order : NULL,
                 sizeof(int) * (size_t)(ok && P.order != NULL ? assign->nblocks : 0)); /* 4 */
  bpc__sig_int(&sig, "commutative", ok && op->commutative != 0);                       /* 5 */
  if (ok && type->kind == BPC_TYPE_CONTIGUOUS && count >= 0)
    bpc__sig_int(&sig, "item count", count); /* 6 */
  else
    bpc__sig_open(&sig, "item count");
  bpc__sig_type(&sig, ok ? type : NULL);        /* 7, 8 */
  bpc__sig_max(&sig, "largest item", maxbytes); /* 9, the last */
  rc = bpc__agree_args_vals(ctx, "allreduce", rc, &sig, vals);
  if (rc != BPC_OK) {
    free(lpos);
    return rc;
  }
  const long long agreed_count = vals[F_COUNT] != BPC__SIG_NONE ? vals[F_COUNT] : 0;
  const int contig = type->kind == BPC_TYPE_CONTIGUOUS;
  if (row == NULL) {
    const double L =
        contig ? (double)agreed_count * (double)type->elem_size : (double)vals[sig.n - 1];
    row = allreduce_auto(assign->nblocks, L, contig);
  }

  bpc__allreduce_call_t C;
  memset(&C, 0, sizeof C);
  C.ctx = ctx;
  C.assign = assign;
  C.type = type;
  C.items = items;
  C.op = op;
  C.n = assign->nblocks;
  C.order = P.order;
  C.contig = contig;
  C.count = contig ? (size_t)agreed_count : 1;
  C.es = contig ? type->elem_size : 0;
  C.nthreads = bpc__threads_resolve(P.nthreads);
  C.lpos = lpos;
  rc = bpc__exch_open(ctx, "allreduce", bpc__assign_rank_cb, assign, &C.ex);
  if (rc == BPC_OK)
    rc = row->run(&C);
  if (rc == BPC_OK)
    rc = C.err;
  rc = bpc__exch_end(ctx, &C.ex, rc);
  for (int i = 0; i < C.ntmp; i++)
    free(C.tmp[i]);
  free(C.tmp);
  free(lpos);
  if (rc == BPC_OK && info != NULL) {
    memset(info, 0, sizeof *info);
    info->algorithm = (bpc_allreduce_algorithm_t)row->info.id;
    snprintf(info->name, sizeof info->name, "%s", row->info.name);
    info->source = source;
    info->rounds = bpc__allreduce_row(row)->rounds(C.n);
  }
  return rc;
}

/* The public entry: the re-entrancy guard (bpc__enter) around the call. */
int bpc_allreduce(bpc_ctx_t *ctx, const bpc_assign_t *assign, const bpc_type_t *type, void *items,
                  const bpc_op_t *op, const bpc_allreduce_params_t *params,
                  bpc_allreduce_info_t *info)
{
  BPC__GUARDED_RETURN(ctx, "bpc_allreduce",
                      allreduce_entry(ctx, assign, type, items, op, params, info));
}
