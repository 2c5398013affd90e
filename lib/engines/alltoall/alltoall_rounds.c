/*
 * lib/engines/alltoall/alltoall_rounds.c - the "rounds" routing of the
 * all-to-all engine: items of any bpc type over k-ary swap rounds (DIY's
 * all_to_all). Runs after the entry (alltoall.c) has agreed on the
 * arguments and opened the exchange.
 *
 * Schedule. Blocks at positions = gids 0..n-1, a k-vector k[0..R-1] with
 * product n, distance doubling (patterns.h). Before round r a block holds
 * items whose destination agrees with it in digits 0..r-1. In round r it
 * sorts them by the destination's digit r into k[r] bundles (bpc__pack_many:
 * one message per group member, keys = src * n + dst), keeps its own bundle
 * and sends the others - always k[r]-1 messages, an empty bundle being 8
 * bytes, so a receiver knows how many to expect. After R rounds every item
 * sits at its destination; items are then delivered (recv callback) in
 * ascending source order. Round 0 packs the user's items (pack callbacks
 * for custom types, one copy for contiguous ones); later rounds forward the
 * packed bytes without unpacking them; only delivery unpacks (a view, no
 * copy, for contiguous types). Local bundles are lent to the receiver
 * (BPC__SEND_BORROW). A round's bundles live in pool buffers until the
 * next round has forwarded their items and its sends have completed; then
 * they go back to the pool, so a rank holds at most two rounds' bundles at
 * once (info.peak_bundle_bytes), never all rounds'. Bundling is a counting
 * sort by digit: a block's work per round is linear in the items it holds
 * plus k[r] (plus n send callbacks in round 0).
 *
 * Cost: latency alpha * sum_r (k[r]-1) messages per block (n-1 for one
 * round = direct exchange; log2 n for all 2), bandwidth: an item crosses
 * at most R links (as many as its destination's digits that differ from
 * its source's), so between beta * V (one round) and beta * V * R, with V
 * the bytes a block sends; fewer rounds trade latency for volume.
 *
 * Non-power-of-two counts: any n (any factorisation; a prime is one round).
 * Empty items (non-NULL, 0 bytes) are delivered; NULL items are not sent.
 */
#include "engines/alltoall/alltoall_internal.h"

#include <stdlib.h>
#include <string.h>

#include "datatype/datatype.h"
#include "decomp/decomp.h"

typedef struct alltoall_state {
  bpc_ctx_t *ctx;
  bpc__exch_t *ex;
  const bpc_type_t *type;
  bpc_type_t bytes_type; /* forwarding: bpc_buf_t of bytes */
  bpc__rounds_t R;
  int n, nl;
  const int *gids;
  int err; /* first non-messaging failure (callbacks, sizes) */
  bpc__alltoall_call_t *call; /* every bundle buffer is lent to it (bpc__alltoall_lend) */
  /* per local block: what it holds between rounds */
  bpc__msg_t **msgs; /* nl * (kmax - 1) */
  int *nmsgs;
  void **self;       /* kept bundle */
  size_t *self_bytes;
  int kmax;
} alltoall_state_t;

static int alltoall_record(alltoall_state_t *s, int rc)
{
  if (rc != BPC_OK && s->err == BPC_OK)
    s->err = rc;
  return rc;
}

/* Pack `m` items (of type t) with keys into a new pool buffer (kept until
 * the exchange is closed). On a failure an empty bundle is made instead, so the schedule
 * goes on. */
static int alltoall_bundle(alltoall_state_t *s, const bpc_type_t *t, int m,
                           const void *const *items, const int64_t *keys, void **out,
                           size_t *out_bytes)
{
  size_t bytes = 0, cap = 0, used = 0;
  int rc = bpc__pack_many_size(s->ctx, t, m, items, &bytes);
  if (rc != BPC_OK) {
    alltoall_record(s, rc);
    m = 0;
    bpc__pack_many_size(s->ctx, t, 0, NULL, &bytes);
  }
  void *buf = bpc__pool_get(s->ctx, bytes, &cap);
  if (buf == NULL)
    return bpc__err(s->ctx, BPC_ENOMEM, "all-to-all: out of memory for a %zu-byte bundle", bytes);
  rc = bpc__alltoall_lend(s->call, buf, cap);
  if (rc != BPC_OK) {
    bpc__pool_put(s->ctx, buf, cap);
    return bpc__err(s->ctx, rc, "all-to-all: out of memory");
  }
  rc = bpc__pack_many(s->ctx, t, m, items, keys, buf, cap, &used);
  if (rc != BPC_OK) {
    alltoall_record(s, rc);
    bpc__pack_many(s->ctx, t, 0, NULL, NULL, buf, cap, &used);
  }
  *out = buf;
  *out_bytes = used;
  return BPC_OK;
}

/* The parts block b holds (its self bundle and the messages of the last
 * round), as one array (malloc'd; *np entries). */
static int alltoall_parts(alltoall_state_t *s, int b, bpc__part_t **out, int *np)
{
  int total = 0, rc = BPC_OK;
  bpc__part_t *all = NULL;
  const int nm = s->nmsgs[b];
  *out = NULL;
  *np = 0;
  for (int x = -1; x < nm && rc == BPC_OK; x++) {
    void *data = x < 0 ? s->self[b] : s->msgs[(size_t)b * (size_t)(s->kmax - 1) + (size_t)x]->data;
    size_t bytes = x < 0 ? s->self_bytes[b]
                         : s->msgs[(size_t)b * (size_t)(s->kmax - 1) + (size_t)x]->bytes;
    if (data == NULL)
      continue;
    int m = 0;
    bpc__part_t *p = NULL;
    rc = bpc__unpack_many(s->ctx, data, bytes, &m, &p);
    if (rc != BPC_OK) {
      alltoall_record(s, rc);
      rc = BPC_OK;
      continue;
    }
    if (m > 0) {
      bpc__part_t *na = realloc(all, sizeof *na * (size_t)(total + m));
      if (na == NULL) {
        free(p);
        rc = bpc__err(s->ctx, BPC_ENOMEM, "all-to-all: out of memory");
        break;
      }
      all = na;
      memcpy(all + total, p, sizeof *p * (size_t)m);
      total += m;
    }
    free(p);
  }
  if (rc != BPC_OK) {
    free(all);
    return rc;
  }
  *out = all;
  *np = total;
  return BPC_OK;
}

/* Give back what block b held from the previous round. */
static void alltoall_drop(alltoall_state_t *s, int b)
{
  for (int x = 0; x < s->nmsgs[b]; x++) {
    bpc__msg_t **m = &s->msgs[(size_t)b * (size_t)(s->kmax - 1) + (size_t)x];
    bpc__msg_release(s->ex, *m);
    *m = NULL;
  }
  s->nmsgs[b] = 0;
  s->self[b] = NULL; /* its buffer is lent to the call until the end */
  s->self_bytes[b] = 0;
}

/* Round r for local block b: bundle what it holds by destination digit
 * (one counting sort: time linear in its items plus k), send k-1 bundles,
 * keep one. */
static int alltoall_send_round(alltoall_state_t *s, int b, int r, const void *const *items0)
{
  const int n = s->n, k = s->R.k[r], gid = s->gids[b];
  int rc = BPC_OK, np = 0, m = 0;
  int *mem = malloc(sizeof(int) * (size_t)k);
  int *start = calloc((size_t)k + 1, sizeof(int));
  const void **items = NULL;
  int64_t *keys = NULL;
  int *digit = NULL;
  bpc_buf_t *views = NULL;
  bpc__part_t *parts = NULL;
  if (mem == NULL || start == NULL) {
    rc = bpc__err(s->ctx, BPC_ENOMEM, "all-to-all: out of memory");
    goto cleanup;
  }
  bpc__round_group(&s->R, r, gid, mem);
  const int j = bpc__round_index(&s->R, r, gid);
  if (r == 0) {
    for (int dst = 0; dst < n; dst++)
      m += items0[dst] != NULL;
  } else {
    rc = alltoall_parts(s, b, &parts, &np);
    if (rc != BPC_OK)
      goto cleanup;
    m = np;
  }
  items = malloc(sizeof(void *) * (size_t)(m > 0 ? m : 1));
  keys = malloc(sizeof(int64_t) * (size_t)(m > 0 ? m : 1));
  digit = malloc(sizeof(int) * (size_t)(m > 0 ? m : 1));
  views = r > 0 ? malloc(sizeof *views * (size_t)(m > 0 ? m : 1)) : NULL;
  if (items == NULL || keys == NULL || digit == NULL || (r > 0 && views == NULL)) {
    rc = bpc__err(s->ctx, BPC_ENOMEM, "all-to-all: out of memory");
    goto cleanup;
  }
  /* count per digit, then place (stable: ascending destination in round 0,
   * the arrival order of parts after) */
  if (r == 0) {
    for (int dst = 0, x = 0; dst < n; dst++)
      if (items0[dst] != NULL) {
        digit[x] = bpc__round_index(&s->R, 0, dst);
        start[digit[x] + 1]++;
        x++;
      }
  } else {
    for (int x = 0; x < np; x++) {
      digit[x] = bpc__round_index(&s->R, r, (int)(parts[x].key % n));
      start[digit[x] + 1]++;
    }
  }
  for (int i = 0; i < k; i++)
    start[i + 1] += start[i];
  if (r == 0) {
    for (int dst = 0, x = 0; dst < n; dst++)
      if (items0[dst] != NULL) {
        const int at = start[digit[x++]]++;
        items[at] = items0[dst];
        keys[at] = (int64_t)gid * n + dst;
      }
  } else {
    for (int x = 0; x < np; x++) {
      const int at = start[digit[x]]++;
      views[at].data = parts[x].data;
      views[at].count = parts[x].bytes;
      items[at] = &views[at];
      keys[at] = parts[x].key;
    }
  }
  /* start[i] is now the end of bucket i (the start of bucket i + 1) */
  void *self = NULL;
  size_t self_bytes = 0;
  for (int i = 0; i < k && rc == BPC_OK; i++) {
    const int lo = i > 0 ? start[i - 1] : 0, cnt = start[i] - lo;
    void *bundle = NULL;
    size_t bytes = 0;
    rc = alltoall_bundle(s, r == 0 ? s->type : &s->bytes_type, cnt, items + lo, keys + lo, &bundle,
                         &bytes);
    if (rc != BPC_OK)
      break;
    if (i == j) {
      self = bundle;
      self_bytes = bytes;
    } else {
      rc = bpc__exch_send(s->ex, gid, mem[i], r, bundle, bytes, BPC__SEND_BORROW);
    }
  }
  if (r > 0)
    alltoall_drop(s, b);
  s->self[b] = self;
  s->self_bytes[b] = self_bytes;

cleanup:
  free(mem);
  free(start);
  free(items);
  free(keys);
  free(digit);
  free(views);
  free(parts);
  return rc;
}

static int cmp_part(const void *a, const void *b)
{
  const bpc__part_t *x = a, *y = b;
  return (x->key > y->key) - (x->key < y->key);
}

/* Deliver what block b holds after the last round. */
static int alltoall_deliver(alltoall_state_t *s, int b, bpc_a2a_recv_fn recv, void *user)
{
  bpc__part_t *parts = NULL;
  int np = 0;
  int rc = alltoall_parts(s, b, &parts, &np);
  if (rc != BPC_OK)
    return rc;
  if (np > 1)
    qsort(parts, (size_t)np, sizeof *parts, cmp_part);
  for (int x = 0; x < np && s->err == BPC_OK; x++) {
    const int src = (int)(parts[x].key / s->n), dst = (int)(parts[x].key % s->n);
    if (dst != s->gids[b]) {
      alltoall_record(s, bpc__err(s->ctx, BPC_ESTATE,
                                  "all-to-all: block %d holds an item for block "
                                  "%d at the end",
                                  s->gids[b], dst));
      break;
    }
    bpc_buf_t view;
    void *item = NULL;
    int owned = 0;
    int vrc = bpc__type_view(s->ctx, s->type, parts[x].data, parts[x].bytes, &view, &item, &owned);
    if (vrc != BPC_OK) {
      alltoall_record(s, vrc);
      break;
    }
    int urc = recv(dst, src, item, user);
    bpc__type_release(s->type, item, owned);
    if (urc != 0)
      alltoall_record(s, bpc__err(s->ctx, BPC_ECALLBACK,
                                  "all-to-all: recv callback returned %d for item %d -> %d", urc,
                                  src, dst));
  }
  free(parts);
  return BPC_OK;
}

int bpc__alltoall_rounds(void *call)
{
  bpc__alltoall_call_t *C = call;
  bpc_ctx_t *ctx = C->ctx;
  const bpc_type_t *type = C->type;
  bpc_a2a_send_fn send = C->send;
  void *user = C->user;
  alltoall_state_t s;
  int rc = BPC_OK;
  const void **items0 = NULL;
  memset(&s, 0, sizeof s);
  s.ctx = ctx;
  s.ex = C->ex;
  s.call = C;
  s.R = *C->R;
  s.n = C->assign->nblocks;
  const int nk = s.R.nrounds;
  s.type = type;
  s.bytes_type = bpc_type_contiguous(1, MPI_BYTE);
  s.nl = C->assign->nlocal;
  s.gids = C->assign->local;
  s.kmax = 2;
  for (int r = 0; r < nk; r++)
    if (s.R.k[r] > s.kmax)
      s.kmax = s.R.k[r];
  {
    const size_t nl1 = (size_t)(s.nl > 0 ? s.nl : 1);
    s.msgs = calloc(nl1 * (size_t)(s.kmax - 1), sizeof *s.msgs);
    s.nmsgs = calloc(nl1, sizeof *s.nmsgs);
    s.self = calloc(nl1, sizeof *s.self);
    s.self_bytes = calloc(nl1, sizeof *s.self_bytes);
    items0 = calloc((size_t)(s.n > 0 ? s.n : 1), sizeof *items0);
    if (s.msgs == NULL || s.nmsgs == NULL || s.self == NULL || s.self_bytes == NULL ||
        items0 == NULL) {
      rc = bpc__err(ctx, BPC_ENOMEM, "bpc_alltoall: out of memory for %d blocks", s.n);
      goto cleanup;
    }
  }

  for (int r = 0; r < nk && rc == BPC_OK; r++) {
    /* lent[0 .. prev) are the bundles of round r - 1 */
    const int prev = C->nlent;
    bpc__stats_set_round(ctx, r);
    for (int b = 0; b < s.nl && rc == BPC_OK; b++) {
      if (r == 0) {
        for (int dst = 0; dst < s.n; dst++) {
          items0[dst] = NULL;
          if (s.err != BPC_OK)
            continue;
          int urc = send(s.gids[b], dst, &items0[dst], user);
          if (urc != 0) {
            alltoall_record(&s, bpc__err(ctx, BPC_ECALLBACK,
                                         "all-to-all: send callback returned %d for item %d -> %d",
                                         urc, s.gids[b], dst));
            items0[dst] = NULL;
          }
        }
      }
      rc = alltoall_send_round(&s, b, r, items0);
    }
    for (int b = 0; b < s.nl && rc == BPC_OK; b++) {
      const int k = s.R.k[r];
      const int j = bpc__round_index(&s.R, r, s.gids[b]);
      const int stride = bpc__round_stride(&s.R, r);
      for (int i = 0; i < k && rc == BPC_OK; i++) {
        if (i == j)
          continue;
        const int src = s.gids[b] + (i - j) * stride;
        bpc__msg_t *m = NULL;
        rc = bpc__exch_wait(s.ex, s.gids[b], src, r, &m);
        if (rc == BPC_OK)
          s.msgs[(size_t)b * (size_t)(s.kmax - 1) + (size_t)s.nmsgs[b]++] = m;
      }
    }
    /* round r has forwarded every item of round r - 1 (its messages were
     * dropped, their data copied into round r's bundles): once its sends
     * have completed, round r - 1's bundles go back to the pool, so at most
     * two rounds' bundles are held at once */
    if (rc == BPC_OK && prev > 0)
      rc = bpc__exch_flush(s.ex);
    if (rc == BPC_OK)
      bpc__alltoall_unlend(C, 0, prev);
  }
  /* n == 1: no round; the block still sends to itself */
  if (rc == BPC_OK && nk == 0) {
    for (int b = 0; b < s.nl && rc == BPC_OK; b++) {
      int urc = send(s.gids[b], s.gids[b], &items0[0], user);
      if (urc != 0) {
        alltoall_record(&s, bpc__err(ctx, BPC_ECALLBACK,
                                     "all-to-all: send callback returned %d for item %d -> %d", urc,
                                     s.gids[b], s.gids[b]));
        items0[0] = NULL;
      }
      int64_t key = (int64_t)s.gids[b] * s.n + s.gids[b];
      void *bundle = NULL;
      size_t bytes = 0;
      rc = alltoall_bundle(&s, type, items0[0] != NULL ? 1 : 0, items0, &key, &bundle, &bytes);
      s.self[b] = bundle;
      s.self_bytes[b] = bytes;
    }
  }
  for (int b = 0; b < s.nl && rc == BPC_OK; b++)
    rc = alltoall_deliver(&s, b, C->recv, user);
  for (int b = 0; b < s.nl; b++)
    alltoall_drop(&s, b);
  if (rc == BPC_OK)
    rc = s.err;

cleanup:
  free(s.msgs);
  free(s.nmsgs);
  free(s.self);
  free(s.self_bytes);
  free(items0);
  return rc;
}
