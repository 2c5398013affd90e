/*
 * lib/engines/bcast/bcast_exec.c - what every s-to-p algorithm shares: the
 * schedule (transfers per step), the linear building blocks (br_lin's
 * recursive halving, a binomial tree, rows-then-columns), and the executor.
 *
 * Executor. An algorithm's schedule is over blocks (the paper's
 * processors). It is run per process: a transfer from -> to in step t
 * carries the items process(from) had when step t began that
 * process(to) neither has nor gets from an earlier transfer of the same
 * step. Which items those are comes from the plan (bcast_plan.c: cones of
 * processes, computed only for this rank's own messages; both sides
 * compute the same). Transfers inside one process and transfers that
 * would carry nothing are dropped; both sides know without a message.
 * With one block per process this is the paper's combining schedule
 * exactly (a processor sends all it has, the partner lacks all of it);
 * with many, a process receives each item at most once.
 *
 * Message: a head (per item: source gid and byte count, 16 bytes) with
 * seq 2t, then every non-empty item as a part with seq 2t+1 (one group,
 * bpc__exch_send_parts: one MPI header, the parts sent straight from where
 * the items are: the user's memory, a packed custom item, or the buffer
 * it arrived in). Received items stay in their receive buffers; at the
 * end every local block is handed views into them (contiguous) or one
 * unpacked item per source (custom).
 */
#include "engines/bcast/bcast_internal.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "datatype/datatype.h"
#include "decomp/decomp.h"

void bpc__bcast_add(bpc__bcast_sched_t *S, int step, int from, int to)
{
  if (S->err != BPC_OK)
    return;
  step += S->base;
  if (S->map != NULL) {
    from = S->map[from];
    to = S->map[to];
  }
  if (step + 1 > S->nsteps)
    S->nsteps = step + 1;
  if (S->rk != NULL && S->rk[from] == S->rk[to])
    return; /* inside one process: costs nothing, carries nothing */
  if (S->n == S->cap) {
    int nc = S->cap ? 2 * S->cap : 64;
    int *a = realloc(S->step, sizeof(int) * (size_t)nc);
    if (a != NULL)
      S->step = a;
    int *b = realloc(S->from, sizeof(int) * (size_t)nc);
    if (b != NULL)
      S->from = b;
    int *c = realloc(S->to, sizeof(int) * (size_t)nc);
    if (c != NULL)
      S->to = c;
    if (a == NULL || b == NULL || c == NULL) {
      S->err = BPC_ENOMEM;
      return;
    }
    S->cap = nc;
  }
  S->step[S->n] = step;
  S->from[S->n] = from;
  S->to[S->n] = to;
  S->n++;
}

/* With S->rk set: 1 when the segment's blocks o[0..n) all sit on one
 * process (its transfers would all be dropped); the steps it takes are
 * then counted in S->nsteps without walking it. */
static int seg_local(bpc__bcast_sched_t *S, int step, const int *o, int n)
{
  if (S->rk == NULL || n <= 1)
    return 0;
  const int r = S->rk[S->map != NULL ? S->map[o[0]] : o[0]];
  for (int i = 1; i < n; i++)
    if (S->rk[S->map != NULL ? S->map[o[i]] : o[i]] != r)
      return 0;
  const int end = S->base + step + bpc__log2_ceil(n);
  if (end > S->nsteps)
    S->nsteps = end;
  return 1;
}

void bpc__bcast_xchg(bpc__bcast_sched_t *S, int step, int a, int b)
{
  bpc__bcast_add(S, step, a, b);
  bpc__bcast_add(S, step, b, a);
}

static int lin_seg(bpc__bcast_sched_t *S, int step, const int *o, int n)
{
  if (n <= 1)
    return 0;
  if (seg_local(S, step, o, n))
    return bpc__log2_ceil(n);
  const int h = n / 2;
  for (int i = 0; i < h; i++)
    bpc__bcast_xchg(S, step, o[i], o[h + i]);
  if (n - h > h) /* odd: the last one also exchanges with the first half's last */
    bpc__bcast_xchg(S, step, o[h - 1], o[n - 1]);
  int d1 = lin_seg(S, step + 1, o, h);
  int d2 = lin_seg(S, step + 1, o + h, n - h);
  return 1 + (d1 > d2 ? d1 : d2);
}

int bpc__bcast_lin(bpc__bcast_sched_t *S, int base, const int *order, int n)
{
  return lin_seg(S, base, order, n);
}

static int tree_seg(bpc__bcast_sched_t *S, int step, const int *o, int n)
{
  if (n <= 1)
    return 0;
  if (seg_local(S, step, o, n))
    return bpc__log2_ceil(n);
  const int h = (n + 1) / 2;
  bpc__bcast_add(S, step, o[0], o[h]);
  int d1 = tree_seg(S, step + 1, o, h);
  int d2 = tree_seg(S, step + 1, o + h, n - h);
  return 1 + (d1 > d2 ? d1 : d2);
}

int bpc__bcast_tree(bpc__bcast_sched_t *S, int base, const int *order, int n)
{
  return tree_seg(S, base, order, n);
}

int bpc__bcast_xy(bpc__bcast_call_t *C, int rows_first)
{
  const int R = C->rows, Cc = C->cols;
  const int m = R > Cc ? R : Cc;
  int *line = malloc(sizeof(int) * (size_t)(m > 0 ? m : 1));
  if (line == NULL)
    return BPC_ENOMEM;
  int base = 0;
  for (int phase = 0; phase < 2; phase++) {
    const int by_rows = (phase == 0) == (rows_first != 0);
    const int nlines = by_rows ? R : Cc, len = by_rows ? Cc : R;
    int depth = 0;
    for (int l = 0; l < nlines; l++) {
      for (int j = 0; j < len; j++)
        line[j] = by_rows ? l * Cc + j : j * Cc + l;
      int d = bpc__bcast_lin(&C->S, base, line, len);
      if (d > depth)
        depth = d;
    }
    base += depth;
  }
  free(line);
  return BPC_OK;
}

/* --------------------------------------------------------------- executor */


static inline int bit_get(const uint64_t *b, int i) { return (int)((b[i >> 6] >> (i & 63)) & 1u); }

int bpc__bcast_item_bytes(bpc__bcast_call_t *C, int i, bpc__bcast_item_t *it, void **packed)
{
  const void *item = C->items[i];
  if (C->type->kind == BPC_TYPE_CONTIGUOUS) {
    const bpc_buf_t *b = item;
    if (b != NULL && b->count > 0) {
      it->data = b->data;
      it->bytes = b->count * C->type->elem_size;
    }
    return BPC_OK;
  }
  size_t bytes = 0;
  int rc = bpc_type_size(C->ctx, C->type, item, &bytes);
  if (rc != BPC_OK || bytes == 0)
    return rc;
  *packed = malloc(bytes);
  if (*packed == NULL)
    return bpc__err(C->ctx, BPC_ENOMEM, "bpc_bcast: out of memory packing an item of %zu bytes",
                    bytes);
  rc = bpc_type_pack(C->ctx, C->type, item, *packed, bytes);
  if (rc == BPC_OK) {
    it->data = *packed;
    it->bytes = bytes;
  }
  return rc;
}

/* Hand every item to every local block (after the schedule): views into
 * where the items lie (contiguous) or one unpacked item per source
 * (custom). Returns BPC_ESTATE when an item is missing; callback failures
 * go to *cb_rc (unless it already holds one). */
int bpc__bcast_deliver(bpc__bcast_call_t *C, const bpc__bcast_item_t *it, int *cb_rc_)
{
  bpc_ctx_t *ctx = C->ctx;
  const int s = C->s;
  int rc = BPC_OK, cb_rc = *cb_rc_;
  const int *loc = NULL;
  int nl = 0;
  bpc_assign_local(C->assign, &loc, &nl);
  for (int i = 0; i < s && nl > 0; i++)
    if (!it[i].have) {
      rc = bpc__err(ctx, BPC_ESTATE, "bpc_bcast: schedule left source %d's item out of rank %d",
                    C->ids[i], C->ctx->rank);
      return rc;
    }
  if (nl > 0 && cb_rc == BPC_OK) {
    void **obj = calloc((size_t)(s > 0 ? s : 1), sizeof(void *));
    bpc_buf_t *view = calloc((size_t)(s > 0 ? s : 1), sizeof *view);
    if (obj == NULL || view == NULL)
      cb_rc = bpc__err(ctx, BPC_ENOMEM, "bpc_bcast: out of memory");
    for (int i = 0; i < s && cb_rc == BPC_OK; i++) {
      if (C->type->kind == BPC_TYPE_CONTIGUOUS) {
        if (it[i].bytes % C->type->elem_size != 0)
          cb_rc = bpc__err(ctx, BPC_ETRUNC, "bpc_bcast: item of source %d: %zu bytes, not a "
                           "multiple of the element size %zu", C->ids[i], it[i].bytes,
                           C->type->elem_size);
        view[i].data = (void *)it[i].data;
        view[i].count = it[i].bytes / C->type->elem_size;
        obj[i] = &view[i];
      } else {
        cb_rc = bpc_type_unpack(ctx, C->type, it[i].data, it[i].bytes, &obj[i]);
      }
    }
    for (int l = 0; l < nl && cb_rc == BPC_OK; l++)
      for (int i = 0; i < s && cb_rc == BPC_OK; i++) {
        int u = C->recv(loc[l], C->ids[i], obj[i], C->user);
        if (u != 0)
          cb_rc = bpc__err(ctx, BPC_ECALLBACK, "bpc_bcast: recv callback for block %d, "
                           "source %d returned %d", loc[l], C->ids[i], u);
      }
    if (C->type->kind == BPC_TYPE_CUSTOM && obj != NULL)
      for (int i = 0; i < s; i++)
        if (obj[i] != NULL)
          bpc_type_item_destroy(C->type, obj[i]);
    free(obj);
    free(view);
  }
  *cb_rc_ = cb_rc;
  return BPC_OK;
}

/* Send this rank's message of edge e (step t, into process B): the head
 * and every non-empty item as a part. */
static int bcast_send(bpc__bcast_call_t *C, bpc__bcast_plan_t *P, int t, int B, int e,
                      const bpc__bcast_item_t *it, int *idx, bpc__msgpart_t *parts, void ***heads,
                      int *nheads, int *capheads)
{
  long long n = 0;
  bpc__bcast_plan_carry(P, t, B, e, idx, &n);
  if (n == 0)
    return BPC_OK;
  int64_t *head = malloc(sizeof(int64_t) * 2 * (size_t)n);
  if (head == NULL)
    return bpc__err(C->ctx, BPC_ENOMEM, "bpc_bcast: out of memory");
  if (*nheads == *capheads) {
    int nc = *capheads ? 2 * *capheads : 16;
    void **nh = realloc(*heads, sizeof(void *) * (size_t)nc);
    if (nh == NULL) {
      free(head);
      return bpc__err(C->ctx, BPC_ENOMEM, "bpc_bcast: out of memory");
    }
    *heads = nh;
    *capheads = nc;
  }
  (*heads)[(*nheads)++] = head;
  int np = 0;
  for (long long j = 0; j < n; j++) {
    const bpc__bcast_item_t *x = &it[idx[j]];
    head[2 * j] = C->ids[idx[j]];
    head[2 * j + 1] = (int64_t)x->bytes;
    if (x->bytes > 0) {
      parts[np].data = x->data;
      parts[np].bytes = x->bytes;
      parts[np].seq = 2 * t + 1;
      np++;
    }
    C->bytes += (long long)x->bytes;
  }
  C->msgs++;
  return bpc__exch_send_parts(C->ex, P->in_a[e], P->in_b[e], 2 * t, head,
                              sizeof(int64_t) * 2 * (size_t)n, parts, np);
}

/* Receive this rank's message of edge e (step t): check the head, keep
 * the parts (items stay in them). */
static int bcast_recv(bpc__bcast_call_t *C, bpc__bcast_plan_t *P, int t, int e,
                      bpc__bcast_item_t *it, int *idx, bpc__msg_t ***kept, int *nkept, int *capkept)
{
  bpc_ctx_t *ctx = C->ctx;
  long long n = 0;
  bpc__bcast_plan_carry(P, t, ctx->rank, e, idx, &n);
  if (n == 0)
    return BPC_OK;
  const int from = P->in_a[e], to = P->in_b[e];
  bpc__msg_t *m = NULL;
  int rc = bpc__exch_wait(C->ex, to, from, 2 * t, &m);
  if (rc != BPC_OK)
    return rc;
  const int64_t *head = m->data;
  int ok = m->bytes == sizeof(int64_t) * 2 * (size_t)n;
  for (long long j = 0; ok && j < n; j++)
    ok = head[2 * j] == C->ids[idx[j]] && head[2 * j + 1] >= 0;
  if (!ok) {
    bpc__msg_release(C->ex, m);
    return bpc__err(ctx, BPC_ETRUNC, "bpc_bcast: malformed message from block %d to %d", from,
                    to);
  }
  for (long long j = 0; j < n && rc == BPC_OK; j++) {
    bpc__bcast_item_t *x = &it[idx[j]];
    x->have = 1;
    x->bytes = (size_t)head[2 * j + 1];
    x->data = NULL;
    if (x->bytes == 0)
      continue;
    bpc__msg_t *pm = NULL;
    rc = bpc__exch_wait(C->ex, to, from, 2 * t + 1, &pm);
    if (rc != BPC_OK)
      break;
    if (*nkept == *capkept) {
      int nc = *capkept ? 2 * *capkept : 16;
      bpc__msg_t **nk = realloc(*kept, sizeof *nk * (size_t)nc);
      if (nk == NULL) {
        bpc__msg_release(C->ex, pm);
        rc = bpc__err(ctx, BPC_ENOMEM, "bpc_bcast: out of memory");
        break;
      }
      *kept = nk;
      *capkept = nc;
    }
    (*kept)[(*nkept)++] = pm;
    if (pm->bytes != x->bytes)
      rc = bpc__err(ctx, BPC_ETRUNC, "bpc_bcast: item of source %d: %zu bytes, head says %zu",
                    C->ids[idx[j]], pm->bytes, x->bytes);
    x->data = pm->data;
  }
  bpc__msg_release(C->ex, m);
  return rc;
}

int bpc__bcast_exec(bpc__bcast_call_t *C)
{
  if (C->plan_only)
    return BPC_OK;
  bpc_ctx_t *ctx = C->ctx;
  bpc__bcast_sched_t *S = &C->S;
  const int s = C->s, nr = ctx->size, me = ctx->rank;
  int rc = S->err, cb_rc = BPC_OK;
  if (rc != BPC_OK)
    return bpc__err(ctx, rc, "bpc_bcast: out of memory building the schedule");
  C->steps = S->nsteps;

  /* the plan: auto's cached one (C->plan), or built now (and handed to
   * C->keep_plan when asked, else freed) */
  bpc__bcast_plan_t own, *P = C->plan != NULL ? C->plan : &own;
  memset(&own, 0, sizeof own);
  if (C->plan == NULL)
    rc = bpc__bcast_plan_init(&own, S, nr, C->ids, s);
  bpc__bcast_item_t *it = calloc((size_t)(s > 0 ? s : 1), sizeof *it);
  void **packed = calloc((size_t)(s > 0 ? s : 1), sizeof(void *));
  int *idx = malloc(sizeof(int) * (size_t)(s > 0 ? s : 1));
  bpc__msgpart_t *parts = malloc(sizeof *parts * (size_t)(s > 0 ? s : 1));
  /* messages kept until the end (items live in them) */
  bpc__msg_t **kept = NULL;
  int nkept = 0, capkept = 0;
  /* heads this rank sent (freed after the flush) */
  void **heads = NULL;
  int nheads = 0, capheads = 0;
  if (rc != BPC_OK || it == NULL || packed == NULL || idx == NULL || parts == NULL) {
    rc = bpc__err(ctx, BPC_ENOMEM, "bpc_bcast: out of memory");
    goto out;
  }
  /* this rank's own items */
  for (int q = P->it_start[me]; q < P->it_start[me + 1]; q++) {
    const int i = P->it_idx[q];
    it[i].have = 1;
    int r2 = bpc__bcast_item_bytes(C, i, &it[i], &packed[i]);
    if (r2 != BPC_OK && cb_rc == BPC_OK)
      cb_rc = r2;
  }
  for (int t = 0; t < S->nsteps; t++) {
    /* sends first (every edge out of this process in step t), then receives */
    for (int B = 0; B < nr; B++) {
      const size_t g = (size_t)t * nr + B;
      for (int e = P->in_start[g]; e < P->in_start[g + 1] && B != me; e++)
        if (P->in_from[e] == me) {
          rc = bcast_send(C, P, t, B, e, it, idx, parts, &heads, &nheads, &capheads);
          if (rc != BPC_OK)
            goto out;
        }
    }
    const size_t g = (size_t)t * nr + me;
    for (int e = P->in_start[g]; e < P->in_start[g + 1]; e++) {
      rc = bcast_recv(C, P, t, e, it, idx, &kept, &nkept, &capkept);
      if (rc != BPC_OK)
        goto out;
    }
  }

  rc = bpc__bcast_deliver(C, it, &cb_rc);

out:
  if (C->ex != NULL) {
    int r2 = bpc__exch_flush(C->ex);
    if (rc == BPC_OK)
      rc = r2;
  }
  for (int i = 0; i < nkept; i++)
    bpc__msg_release(C->ex, kept[i]);
  free(kept);
  for (int i = 0; i < nheads; i++)
    free(heads[i]);
  free(heads);
  if (packed != NULL)
    for (int i = 0; i < s; i++)
      free(packed[i]);
  free(packed);
  free(parts);
  free(idx);
  free(it);
  if (C->plan == NULL) {
    if (rc == BPC_OK && C->keep_plan != NULL)
      *C->keep_plan = own; /* the caller owns it now */
    else
      bpc__bcast_plan_free(&own);
  }
  return rc != BPC_OK ? rc : cb_rc;
}

int bpc__bcast_sched_check(const char *name, int rows, int cols, const int *sources, int s,
                           int reposition, int *missing, int *steps, long long *msgs)
{
  const bpc__algo_t *row = bpc__algo_find(&bpc__engine_bcast, name);
  if (row == NULL)
    return BPC_EALGO;
  if (rows < 1 || cols < 1 || s < 0 || s > rows * cols)
    return BPC_EINVAL;
  bpc__bcast_call_t C;
  memset(&C, 0, sizeof C);
  C.sources = sources;
  C.ids = sources;
  C.s = s;
  C.p = rows * cols;
  C.rows = rows;
  C.cols = cols;
  C.plan_only = 1;
  C.reposition = reposition & 1;
  C.partition = (reposition >> 1) & 1;
  int rc = bpc__bcast_run_row(&C, row);
  const int p = C.p, W = (s + 63) / 64 > 0 ? (s + 63) / 64 : 1;
  uint64_t *K = calloc((size_t)p * (size_t)W, sizeof(uint64_t));
  uint64_t *inc = calloc((size_t)p * (size_t)W, sizeof(uint64_t));
  long long nm = 0;
  int miss = 0;
  if (rc == BPC_OK && (K == NULL || inc == NULL || C.S.err != BPC_OK))
    rc = BPC_ENOMEM;
  if (rc == BPC_OK) {
    for (int i = 0; i < s; i++)
      K[(size_t)sources[i] * W + (i >> 6)] |= (uint64_t)1 << (i & 63);
    for (int t = 0; t < C.S.nsteps; t++) {
      for (int e = 0; e < C.S.n; e++) {
        if (C.S.step[e] != t)
          continue;
        const int a = C.S.from[e], b = C.S.to[e];
        int any = 0;
        for (int w = 0; w < W; w++) {
          uint64_t x = K[(size_t)a * W + w] & ~(K[(size_t)b * W + w] | inc[(size_t)b * W + w]);
          inc[(size_t)b * W + w] |= x;
          any |= x != 0;
        }
        nm += any;
      }
      for (size_t i = 0; i < (size_t)p * (size_t)W; i++) {
        K[i] |= inc[i];
        inc[i] = 0;
      }
    }
    for (int g = 0; g < p; g++)
      for (int i = 0; i < s; i++)
        miss += !bit_get(K + (size_t)g * W, i);
  }
  if (missing != NULL)
    *missing = miss;
  if (steps != NULL)
    *steps = C.S.nsteps;
  if (msgs != NULL)
    *msgs = nm;
  free(K);
  free(inc);
  free(C.S.step);
  free(C.S.from);
  free(C.S.to);
  return rc != BPC_OK ? rc : miss ? BPC_ESTATE : BPC_OK;
}
