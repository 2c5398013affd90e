/*
 * lib/engines/merge/merge_executor.c - the task executor of merge-reduce,
 * the same for every variant: it runs the schedule of P->variant (distance
 * doubling or halving) for the first P->rounds rounds on the exchange the
 * entry opened.
 *
 * Per local block at position p, the variant's role function says in which
 * rounds p is the root of its group (it merges the other k[r]-1 members'
 * items into its own) and in which round it sends its item to which root;
 * after that it is done. A block that never sends is a root of the result.
 *
 * Tasks. An item is one segment (whole items) or nseg segments (element-wise
 * contiguous items of one agreed count). A block works through the tasks
 * (segment s, round r) for s = 0..nseg-1 and, within a segment, for the
 * rounds in which it is a root; once segment s has been merged in all of
 * them it is final and is sent on at once. So a large item flows up the
 * tree segment by segment: a root merges segment s while segment s+1 is
 * still travelling, and its own parent starts on segment s before the root
 * has finished (the pipeline).
 *
 * Driving. Nothing waits for a whole round: the loop pulls in arrivals,
 * runs every task whose messages are all there (in parallel with OpenMP,
 * whole tasks or, for element-wise merges, slices of one), sends what
 * became final, and only when nothing is ready blocks on the missing message
 * of the lowest task (s, r) in lexicographic order. Blocking on the lowest
 * one is what keeps it deadlock-free: every task a message of (s, r) depends
 * on is a (s, r' < r) task of another block, lower in that order, so it is
 * never held back by a rank that blocks on (s, r).
 *
 * Messages: (src gid, dst gid, seq = segment index); a block sends to one
 * destination once, so the address is unique. Same-process sends are
 * borrowed (no copy: the root reads the sender's memory in place; the
 * sender's item is not touched again before the call returns); contiguous
 * items cross processes straight from the user's memory; custom items are
 * packed into pooled buffers.
 *
 * Errors: the first error on this rank is recorded and, unless it is
 * another rank's (BPC__EPEER), told to every other rank at once
 * (bpc__exch_abort), whose waits then stop; the schedule stops here too and
 * the entry's bpc__exch_end agrees and drains what is still on its way. (A
 * first version kept the schedule going with empty items instead: their
 * receivers reported those as malformed, and that error, not the first,
 * became the call's.) Argument errors never get here: the entry agrees on
 * them first.
 */
#include "engines/merge/merge_internal.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

typedef struct mblk {
  int gid, li, pos;
  int m;           /* rounds 0..m-1: this block is a root */
  int send_round;  /* round it sends in; -1: a root of the result */
  int parent;      /* gid it sends to */
  size_t moff;     /* members of round r: members[moff + kpre[r] .. + k[r]) */
  size_t goff;     /* got slots: got[goff .. goff + kmax - 1) */
  int r, s;        /* current task */
  int done;
} mblk_t;

/* One unit of parallel work: a slice [lo, hi) (elements; whole item when
 * not element-wise) of the current task of block b. */
typedef struct munit {
  int b;
  size_t lo, hi;
  /* outcome */
  int rc, cbval, kind;
} munit_t;

typedef struct mstate {
  bpc__merge_plan_t *P;
  bpc__exch_t *ex;
  mblk_t *blk;
  int nl;
  int *members;
  bpc__msg_t **got;
  int kpre[BPC__MAX_ROUNDS + 1];
  int kmax;
  int *ready;
  munit_t *units;
  int capunits;
  /* per-thread scratch of run_unit, kmax entries per thread, made once */
  void **scr_items;
  bpc_buf_t *scr_views;
  int *scr_owned;
  void **sendbuf; /* custom: pooled packed items, one per block */
  size_t *sendcap;
  int err; /* first error on this rank: no more callbacks, the schedule stops */
} mstate_t;

static size_t esz_of(const bpc__merge_plan_t *P) { return P->type->elem_size; }

static int record(mstate_t *S, int rc)
{
  if (rc != BPC_OK && S->err == BPC_OK) {
    S->err = rc;
    if (rc != BPC__EPEER && S->ex != NULL)
      bpc__exch_abort(S->ex, rc); /* before any later (empty) send of ours */
  }
  return rc;
}

/* Element range of segment s (element-wise items). */
static void seg_range(const bpc__merge_plan_t *P, int s, size_t *t0, size_t *t1)
{
  *t0 = (size_t)s * P->seg_elems;
  *t1 = *t0 + P->seg_elems < P->count ? *t0 + P->seg_elems : P->count;
  if (*t0 > P->count)
    *t0 = P->count;
}

/* ------------------------------------------------------------- sending */

static int send_custom(mstate_t *S, mblk_t *b)
{
  bpc__merge_plan_t *P = S->P;
  bpc_ctx_t *ctx = P->ctx;
  void *item = (S->err != BPC_OK || P->items == NULL) ? NULL : ((void **)P->items)[b->li];
  size_t bytes = 0;
  int rc = BPC_OK, flags = 0;
  const void *data = NULL;
  if (S->err == BPC_OK && P->items != NULL) {
    rc = bpc_type_size(ctx, P->type, item, &bytes);
    if (rc == BPC_OK && bytes > 0) {
      S->sendbuf[b->li] = bpc__pool_get(ctx, bytes, &S->sendcap[b->li]);
      if (S->sendbuf[b->li] == NULL)
        rc = bpc__err(ctx, BPC_ENOMEM, "merge: no memory to pack the %zu-byte item of gid %d",
                      bytes, b->gid);
      else
        rc = bpc__type_pack_exact(ctx, P->type, item, S->sendbuf[b->li], bytes);
    }
    if (rc != BPC_OK) {
      record(S, rc);
      bytes = 0; /* an empty item keeps the schedule going */
    } else if (bytes > 0) {
      data = S->sendbuf[b->li];
      flags = BPC__SEND_BORROW; /* the pooled buffer lives until the end */
    }
  }
  bpc__stats_set_round(ctx, b->send_round);
  int src = bpc__exch_send(S->ex, b->gid, b->parent, 0, data, bytes, flags);
  return record(S, src) != BPC_OK ? src : rc;
}

/* Send segment s of block b's item to its parent. */
static int send_segment(mstate_t *S, mblk_t *b, int s)
{
  bpc__merge_plan_t *P = S->P;
  if (P->type->kind == BPC_TYPE_CUSTOM)
    return send_custom(S, b);
  const size_t esz = esz_of(P);
  const void *data = NULL;
  size_t bytes = 0;
  if (P->items != NULL) {
    const bpc_buf_t *buf = &((const bpc_buf_t *)P->items)[b->li];
    if (P->segmented) {
      size_t t0, t1;
      seg_range(P, s, &t0, &t1);
      data = (const char *)buf->data + t0 * esz;
      bytes = (t1 - t0) * esz;
    } else {
      data = buf->data;
      bytes = buf->count * esz;
    }
    if (bytes == 0)
      data = NULL;
  }
  bpc__stats_set_round(P->ctx, b->send_round);
  /* Borrowed: a local root reads it in place; nothing writes to this range
   * again during the call (the block, or this segment of it, is final). */
  return record(S, bpc__exch_send(S->ex, b->gid, b->parent, s, data, bytes, BPC__SEND_BORROW));
}

/* ------------------------------------------------------------ merging */

/* Are all messages of b's current task there? Takes what has arrived. */
static int task_ready(mstate_t *S, mblk_t *b)
{
  bpc__merge_plan_t *P = S->P;
  const int k = P->R.k[b->r];
  const int *mem = S->members + b->moff + S->kpre[b->r];
  bpc__msg_t **got = S->got + b->goff;
  int have = 1;
  for (int j = 1; j < k; j++) {
    if (got[j - 1] == NULL)
      bpc__exch_take(S->ex, b->gid, mem[j], b->s, &got[j - 1]);
    if (got[j - 1] == NULL)
      have = 0;
  }
  return have;
}

/* Checks on the master before a task runs: sizes of received data. */
static int task_check(mstate_t *S, mblk_t *b)
{
  bpc__merge_plan_t *P = S->P;
  if (P->type->kind != BPC_TYPE_CONTIGUOUS)
    return BPC_OK;
  const int k = P->R.k[b->r];
  const int *mem = S->members + b->moff + S->kpre[b->r];
  bpc__msg_t **got = S->got + b->goff;
  const size_t esz = esz_of(P);
  for (int j = 1; j < k; j++) {
    const bpc__msg_t *m = got[j - 1];
    if (P->op.elementwise) {
      size_t t0 = 0, t1 = P->count;
      if (P->segmented)
        seg_range(P, b->s, &t0, &t1);
      if (m->bytes != (t1 - t0) * esz)
        return bpc__err(P->ctx, BPC_ETRUNC,
                        "merge: gid %d got %zu bytes from gid %d in round %d (segment %d), "
                        "expected %zu (%zu elements)",
                        b->gid, m->bytes, mem[j], b->r, b->s, (t1 - t0) * esz, t1 - t0);
    } else if (m->bytes % esz != 0) {
      return bpc__err(P->ctx, BPC_ETRUNC,
                      "merge: gid %d got %zu bytes from gid %d in round %d, not a whole number "
                      "of %zu-byte elements",
                      b->gid, m->bytes, mem[j], b->r, esz);
    }
  }
  return BPC_OK;
}

/* Run one unit (any thread). Scratch: items, views and gids of kmax. */
/* A group's merge: the user's callback, or (op.fn NULL) the fold with the
 * binary operator in position order: the root's item becomes items[0] o
 * items[1] o ... (later items folded in from the right, then earlier ones
 * from the left, which associativity makes the same). Contiguous items
 * have one count here (binary implies elementwise); a custom item is
 * passed whole with count 1. Returns the callback's or the operator's
 * value. */
static int merge_call(const bpc__merge_plan_t *P, bpc_merge_group_t *g)
{
  if (P->op.fn != NULL)
    return P->op.fn(g, P->op.user);
  const bpc_op_t *op = &P->op.binary;
  const int contig = P->type->kind == BPC_TYPE_CONTIGUOUS;
  const int r = g->root;
  void *root = contig ? ((bpc_buf_t *)g->items[r])->data : g->items[r];
  const size_t count = contig ? ((bpc_buf_t *)g->items[r])->count : 1;
  if (count == 0)
    return 0;
  for (int i = r + 1; i < g->nitems; i++) {
    const void *in = contig ? ((const bpc_buf_t *)g->items[i])->data : g->items[i];
    int v = op->fn(in, root, count, 0, op->user);
    if (v != 0)
      return v;
  }
  for (int i = r - 1; i >= 0; i--) {
    const void *in = contig ? ((const bpc_buf_t *)g->items[i])->data : g->items[i];
    int v = op->fn(in, root, count, 1, op->user);
    if (v != 0)
      return v;
  }
  return 0;
}

static void run_unit(mstate_t *S, munit_t *u, void **items, bpc_buf_t *views, int *owned)
{
  bpc__merge_plan_t *P = S->P;
  mblk_t *b = &S->blk[u->b];
  const int k = P->R.k[b->r];
  const int *mem = S->members + b->moff + S->kpre[b->r];
  bpc__msg_t **got = S->got + b->goff;
  bpc_merge_group_t g;
  memset(&g, 0, sizeof g);
  g.round = b->r;
  g.nitems = k;
  g.root = 0;
  g.gids = mem;
  g.items = items;
  g.segment = b->s;
  g.nsegments = P->nseg;
  u->rc = BPC_OK;

  if (P->type->kind == BPC_TYPE_CONTIGUOUS) {
    const size_t esz = esz_of(P);
    bpc_buf_t *root = &((bpc_buf_t *)P->items)[b->li];
    if (P->op.elementwise) {
      size_t t0 = 0, t1 = P->count;
      if (P->segmented)
        seg_range(P, b->s, &t0, &t1);
      (void)t1;
      const size_t len = u->hi - u->lo;
      views[0].data = len ? (char *)root->data + u->lo * esz : NULL;
      views[0].count = len;
      items[0] = &views[0];
      for (int j = 1; j < k; j++) {
        views[j].data = len ? (char *)got[j - 1]->data + (u->lo - t0) * esz : NULL;
        views[j].count = len;
        items[j] = &views[j];
      }
      g.offset = u->lo;
    } else {
      items[0] = root;
      for (int j = 1; j < k; j++) {
        views[j].data = got[j - 1]->bytes ? got[j - 1]->data : NULL;
        views[j].count = got[j - 1]->bytes / esz;
        items[j] = &views[j];
      }
    }
    int v = merge_call(P, &g);
    bpc__stats_ops(P->ctx, 1);
    if (v != 0) {
      u->rc = BPC_ECALLBACK;
      u->cbval = v;
      u->kind = BPC__MERGE_CB_MERGE;
    }
    return;
  }

  /* custom: unpack the received items (they belong to the engine) */
  void **uitems = (void **)P->items;
  int j, v = 0;
  items[0] = uitems[b->li];
  owned[0] = 0;
  for (j = 1; j < k; j++) {
    void *it = NULL;
    v = P->type->ops.unpack(got[j - 1]->data, got[j - 1]->bytes, &it, P->type->user);
    if (v != 0)
      break;
    items[j] = it;
    owned[j] = 1;
  }
  if (j < k) {
    u->rc = BPC_ECALLBACK;
    u->cbval = v;
    u->kind = BPC__MERGE_CB_UNPACK;
    for (int i = 1; i < j; i++)
      bpc_type_item_destroy(P->type, items[i]);
    return;
  }
  v = merge_call(P, &g);
  bpc__stats_ops(P->ctx, 1);
  uitems[b->li] = items[0];
  for (int i = 1; i < k; i++)
    if (items[i] != NULL)
      bpc_type_item_destroy(P->type, items[i]);
  if (v != 0) {
    u->rc = BPC_ECALLBACK;
    u->cbval = v;
    u->kind = BPC__MERGE_CB_MERGE;
  }
}

static int grow_units(mstate_t *S, int need)
{
  if (need <= S->capunits)
    return BPC_OK;
  int ncap = S->capunits ? S->capunits : 16;
  while (ncap < need)
    ncap *= 2;
  /* the units are filled after each growth: nothing to keep */
  munit_t *nu = bpc__scratch(S->P->ctx, BPC__SCR_MERGE_UNITS, sizeof *nu * (size_t)ncap);
  if (nu == NULL)
    return bpc__err(S->P->ctx, BPC_ENOMEM, "merge: out of memory");
  S->units = nu;
  S->capunits = ncap;
  return BPC_OK;
}

/* Run the current tasks of the nready blocks in S->ready. */
static int run_tasks(mstate_t *S, int nready)
{
  bpc__merge_plan_t *P = S->P;
  int nunits = 0, rc = BPC_OK;
  const int nt = P->nthreads;
  const int ew = P->type->kind == BPC_TYPE_CONTIGUOUS && (P->op.elementwise);
  /* Element-wise tasks are cut into slices when there are fewer tasks than
   * threads (at least 64 KiB per slice). */
  int per = 1;
  if (ew && nt > 1 && nready < nt)
    per = (nt + nready - 1) / nready;
  rc = grow_units(S, nready * per);
  if (rc != BPC_OK)
    return rc;
  for (int i = 0; i < nready; i++) {
    mblk_t *b = &S->blk[S->ready[i]];
    size_t t0 = 0, t1 = 0;
    if (ew) {
      t0 = 0;
      t1 = P->count;
      if (P->segmented)
        seg_range(P, b->s, &t0, &t1);
    }
    int np = 1;
    if (ew && per > 1) {
      size_t bytes = (t1 - t0) * esz_of(P);
      size_t maxp = bytes / ((size_t)64 << 10);
      np = maxp < (size_t)per ? (int)(maxp ? maxp : 1) : per;
    }
    for (int q = 0; q < np; q++) {
      munit_t *u = &S->units[nunits++];
      u->b = S->ready[i];
      u->lo = t0 + (t1 - t0) * (size_t)q / (size_t)np;
      u->hi = t0 + (t1 - t0) * (size_t)(q + 1) / (size_t)np;
      u->rc = BPC_OK;
      u->cbval = 0;
      u->kind = 0;
    }
  }
  bpc__stats_set_round(P->ctx, S->blk[S->ready[0]].r);
  const size_t kmax = (size_t)S->kmax;
  if (nt > 1 && nunits > 1) {
#pragma omp parallel num_threads(nt)
    {
      size_t t = 0;
#ifdef _OPENMP
      t = (size_t)omp_get_thread_num();
#endif
#pragma omp for schedule(dynamic, 1)
      for (int i = 0; i < nunits; i++)
        run_unit(S, &S->units[i], S->scr_items + t * kmax, S->scr_views + t * kmax,
                 S->scr_owned + t * kmax);
    }
  } else { /* no team: even a parallel region with if(0) costs ~0.3 us */
    for (int i = 0; i < nunits; i++)
      run_unit(S, &S->units[i], S->scr_items, S->scr_views, S->scr_owned);
  }
  /* the first failure, in unit order */
  for (int i = 0; i < nunits && rc == BPC_OK; i++) {
    munit_t *u = &S->units[i];
    if (u->rc == BPC_OK)
      continue;
    mblk_t *b = &S->blk[u->b];
    if (u->rc == BPC_ENOMEM) {
      rc = bpc__err(P->ctx, BPC_ENOMEM, "merge: out of memory for a merge");
    } else {
      const char *what = u->kind == BPC__MERGE_CB_UNPACK ? "unpack" : "merge";
      rc = bpc__err(P->ctx, BPC_ECALLBACK, "%s callback returned %d (root gid %d, round %d%s)",
                    what, u->cbval, b->gid, b->r, P->nseg > 1 ? ", segmented" : "");
    }
  }
  return rc;
}

/* After b's current task: release its messages, advance, send if final. */
static void finish_task(mstate_t *S, mblk_t *b)
{
  bpc__merge_plan_t *P = S->P;
  const int k = P->R.k[b->r];
  bpc__msg_t **got = S->got + b->goff;
  for (int j = 1; j < k; j++) {
    bpc__msg_release(S->ex, got[j - 1]);
    got[j - 1] = NULL;
  }
  if (b->r + 1 < b->m) {
    b->r++;
    return;
  }
  if (b->send_round >= 0)
    send_segment(S, b, b->s);
  b->r = 0;
  if (++b->s == P->nseg)
    b->done = 1;
}

/* ------------------------------------------------------------- setup */

/* Fill m, send_round, parent of a block from the variant's role; count its
 * member slots and write them (gids) to members, if not NULL. */
static void block_role(const bpc__merge_plan_t *P, mblk_t *b, int *members, size_t *nmem)
{
  bpc__merge_role_t role;
  P->variant->role(P, b->pos, &role);
  b->m = role.m;
  b->send_round = role.send_round;
  b->parent = role.parent >= 0 ? bpc__merge_gid(P, role.parent) : -1;
  *nmem = 0;
  for (int r = 0; r < role.m; r++) {
    if (members != NULL)
      for (int j = 0; j < P->R.k[r]; j++)
        members[*nmem + (size_t)j] = bpc__merge_gid(P, b->pos + j * role.stride[r]);
    *nmem += (size_t)P->R.k[r];
  }
}

/* Room for n items of `size` bytes at *off in a carved block (16-byte
 * aligned); returns the offset of the array. */
static size_t carve(size_t *off, size_t n, size_t size)
{
  const size_t at = (*off + 15u) & ~(size_t)15u;
  *off = at + n * size;
  return at;
}

static int clamp_count(long long v) { return v < (1 << 24) ? (int)v : 1 << 24; }

/* Room for everything this call may hold at once, before any message
 * (bpc__exch_reserve): the messages its blocks receive and send, per
 * segment, and for contiguous items the buffers of their payloads (the
 * sizes of the segments, or of whole items: this rank's largest, a
 * sender's being unknown here). A call in steady state then allocates
 * nothing whatever order its messages arrive in. */
static void reserve(mstate_t *S)
{
  bpc__merge_plan_t *P = S->P;
  const int me = P->ctx->rank;
  long long nrecv = 0, nremote = 0, nsend = 0;
  for (int i = 0; i < S->nl; i++) {
    const mblk_t *b = &S->blk[i];
    for (int r = 0; r < b->m; r++) {
      const int *mem = S->members + b->moff + S->kpre[r];
      for (int j = 1; j < P->R.k[r]; j++) {
        nrecv++;
        nremote += bpc__assign_rank(P->a, mem[j]) != me;
      }
    }
    if (b->send_round >= 0 && bpc__assign_rank(P->a, b->parent) != me)
      nsend++;
  }
  /* per segment, in long long (up to 2^24 segments), clamped */
  const long long nseg = P->nseg;
  bpc__exch_reserve(S->ex, clamp_count(nrecv * nseg), clamp_count(nremote * nseg),
                    clamp_count(nsend * nseg));
  if (P->type->kind != BPC_TYPE_CONTIGUOUS || (nremote == 0 && nsend == 0))
    return;
  const size_t esz = esz_of(P);
  size_t bytes[2] = {0, 0};
  int nr[2] = {0, 0}, ns[2] = {0, 0}, n = 1;
  if (P->segmented) { /* full segments, and the last one */
    size_t t0, t1;
    seg_range(P, P->nseg - 1, &t0, &t1);
    bytes[0] = P->seg_elems * esz;
    bytes[1] = (t1 - t0) * esz;
    nr[0] = clamp_count(nremote * (nseg - 1));
    ns[0] = clamp_count(nsend * (nseg - 1));
    nr[1] = clamp_count(nremote);
    ns[1] = clamp_count(nsend);
    n = 2;
  } else {
    const bpc_buf_t *it = P->items;
    for (int i = 0; it != NULL && i < S->nl; i++)
      if (it[i].count * esz > bytes[0])
        bytes[0] = it[i].count * esz;
    nr[0] = clamp_count(nremote);
    ns[0] = clamp_count(nsend);
  }
  bpc__exch_reserve_payload(S->ex, bytes, nr, ns, n);
}

/* The executor's arrays, all carved from the context's scratch (kept
 * between calls: a call in steady state allocates nothing here) and
 * zeroed. */
static int state_init(mstate_t *S)
{
  bpc__merge_plan_t *P = S->P;
  const int *gids = NULL;
  int rc = bpc_assign_local(P->a, &gids, &S->nl);
  if (rc != BPC_OK)
    return rc;
  S->kpre[0] = 0;
  S->kmax = 1;
  for (int r = 0; r < P->rounds; r++) {
    S->kpre[r + 1] = S->kpre[r] + P->R.k[r];
    if (P->R.k[r] > S->kmax)
      S->kmax = P->R.k[r];
  }
  const size_t nscr = (size_t)P->nthreads * (size_t)S->kmax;
  const size_t nb = S->nl > 0 ? (size_t)S->nl : 1;
  /* the member and got slots need the roles: count them first */
  size_t totmem = 0, totgot = 0;
  for (int i = 0; i < S->nl; i++) {
    mblk_t b;
    size_t nmem = 0;
    memset(&b, 0, sizeof b);
    b.pos = bpc__merge_pos(P, gids[i]);
    block_role(P, &b, NULL, &nmem);
    totmem += nmem;
    if (b.m > 0)
      totgot += (size_t)S->kmax;
  }
  size_t off = 0;
  const size_t o_items = carve(&off, nscr, sizeof *S->scr_items);
  const size_t o_views = carve(&off, nscr, sizeof *S->scr_views);
  const size_t o_owned = carve(&off, nscr, sizeof *S->scr_owned);
  const size_t o_blk = carve(&off, nb, sizeof *S->blk);
  const size_t o_ready = carve(&off, nb, sizeof *S->ready);
  const size_t o_sbuf = carve(&off, nb, sizeof *S->sendbuf);
  const size_t o_scap = carve(&off, nb, sizeof *S->sendcap);
  const size_t o_mem = carve(&off, totmem ? totmem : 1, sizeof *S->members);
  const size_t o_got = carve(&off, totgot ? totgot : 1, sizeof *S->got);
  char *base = bpc__scratch(P->ctx, BPC__SCR_MERGE, off);
  if (base == NULL)
    return BPC_ENOMEM;
  memset(base, 0, off);
  S->scr_items = (void **)(base + o_items);
  S->scr_views = (bpc_buf_t *)(base + o_views);
  S->scr_owned = (int *)(base + o_owned);
  S->blk = (mblk_t *)(base + o_blk);
  S->ready = (int *)(base + o_ready);
  S->sendbuf = (void **)(base + o_sbuf);
  S->sendcap = (size_t *)(base + o_scap);
  S->members = (int *)(base + o_mem);
  S->got = (bpc__msg_t **)(base + o_got);
  size_t moff = 0, goff = 0;
  for (int i = 0; i < S->nl; i++) {
    mblk_t *b = &S->blk[i];
    size_t nmem = 0;
    b->gid = gids[i];
    b->li = i;
    b->pos = bpc__merge_pos(P, gids[i]);
    b->moff = moff;
    b->goff = goff;
    block_role(P, b, S->members + moff, &nmem);
    moff += nmem;
    if (b->m > 0)
      goff += (size_t)S->kmax;
  }
  reserve(S);
  return BPC_OK;
}

/* --------------------------------------------------------------- run */

int bpc__merge_execute(bpc__merge_plan_t *P)
{
  bpc_ctx_t *ctx = P->ctx;
  mstate_t S;
  memset(&S, 0, sizeof S);
  S.P = P;
  int rc = BPC_OK;
  S.ex = P->ex;
  if (P->rounds > 0) { /* the record shows every round, even on idle ranks */
    bpc__stats_set_round(ctx, P->rounds - 1);
    bpc__stats_set_round(ctx, 0);
  }

  rc = state_init(&S);
  if (rc != BPC_OK) {
    rc = record(&S, bpc__err(ctx, rc, "merge: out of memory setting up %d local blocks", S.nl));
    goto cleanup;
  }

  /* leaves send at once; blocks with nothing to do are done */
  int nactive = 0;
  for (int i = 0; i < S.nl; i++) {
    mblk_t *b = &S.blk[i];
    if (b->m > 0) {
      nactive++;
      continue;
    }
    if (b->send_round >= 0)
      for (int s = 0; s < P->nseg; s++)
        send_segment(&S, b, s);
    b->done = 1;
  }

  while (nactive > 0 && S.err == BPC_OK) { /* a failure stops the schedule (above) */
    int prc = bpc__exch_progress(S.ex);
    if (prc != BPC_OK) {
      record(&S, prc);
      break; /* the transport failed: nothing sensible can follow */
    }
    int nready = 0;
    for (int i = 0; i < S.nl; i++) {
      mblk_t *b = &S.blk[i];
      if (!b->done && b->m > 0 && task_ready(&S, b))
        S.ready[nready++] = i;
    }
    if (nready > 0) {
      /* nothing a message brought reaches a check or callback before a
       * persistent plan's start agreement has said yes (comm.h) */
      if (S.err == BPC_OK)
        record(&S, bpc__exch_guard_wait(S.ex));
      if (S.err == BPC_OK) {
        /* checks on the master; a bad message stops the merging here */
        for (int i = 0; i < nready && S.err == BPC_OK; i++)
          record(&S, task_check(&S, &S.blk[S.ready[i]]));
      }
      if (S.err == BPC_OK)
        record(&S, run_tasks(&S, nready));
      for (int i = 0; i < nready; i++) {
        mblk_t *b = &S.blk[S.ready[i]];
        finish_task(&S, b);
        if (b->done)
          nactive--;
      }
      continue;
    }
    /* nothing ready: block on the lowest missing message */
    mblk_t *lo = NULL;
    for (int i = 0; i < S.nl; i++) {
      mblk_t *b = &S.blk[i];
      if (b->done || b->m == 0)
        continue;
      if (lo == NULL || b->s < lo->s || (b->s == lo->s && b->r < lo->r))
        lo = b;
    }
    const int *mem = S.members + lo->moff + S.kpre[lo->r];
    bpc__msg_t **got = S.got + lo->goff;
    int j = 1;
    while (j < P->R.k[lo->r] && got[j - 1] != NULL)
      j++;
    int wrc = bpc__exch_wait(S.ex, lo->gid, mem[j], lo->s, &got[j - 1]);
    if (wrc != BPC_OK) {
      record(&S, wrc);
      break;
    }
  }

cleanup:
  /* messages still held after a failure */
  if (S.got != NULL) {
    for (int i = 0; i < S.nl; i++) {
      if (S.blk[i].m == 0)
        continue;
      for (int j = 0; j < S.kmax - 1; j++) {
        bpc__msg_release(S.ex, S.got[S.blk[i].goff + (size_t)j]);
        S.got[S.blk[i].goff + (size_t)j] = NULL;
      }
    }
  }
  if (rc == BPC_OK)
    rc = S.err;
  /* packed custom items were sent borrowed from pooled buffers: the sends
   * must complete before the buffers go back to the pool (whose free list
   * writes into them; a large message may still be read by MPI) */
  const int packed = P->type->kind == BPC_TYPE_CUSTOM; /* contiguous: exch_end flushes */
  if (packed && S.ex != NULL && S.sendbuf != NULL && rc == BPC_OK) {
    rc = bpc__exch_flush(S.ex);
  } else if (S.ex != NULL && S.sendbuf != NULL) {
    /* failed: the exchange's end completes the sends (after telling the
     * other ranks, which may be waiting for this one) and then returns the
     * buffers to the pool; it takes arrays of its own (these are scratch) */
    int n = 0;
    for (int i = 0; i < S.nl; i++)
      n += S.sendbuf[i] != NULL;
    if (n > 0) {
      void **bufs = malloc(sizeof *bufs * (size_t)n);
      size_t *caps = malloc(sizeof *caps * (size_t)n);
      if (bufs != NULL && caps != NULL) {
        for (int i = 0, j = 0; i < S.nl; i++)
          if (S.sendbuf[i] != NULL) {
            bufs[j] = S.sendbuf[i];
            caps[j++] = S.sendcap[i];
          }
        bpc__exch_adopt(S.ex, bufs, caps, n);
      } else {
        free(bufs);
        free(caps);
        bpc__log(ctx, BPC_LOG_WARN, "merge: out of memory after a failure: %d packed send "
                                    "buffer(s) stay out of the pool", n);
      }
    }
    S.sendbuf = NULL;
  }
  for (int i = 0; S.sendbuf != NULL && i < S.nl; i++)
    if (S.sendbuf[i] != NULL)
      bpc__pool_put(ctx, S.sendbuf[i], S.sendcap[i]);
  return rc;
}

/* --------------------------------------------------- automatic choices */

long long bpc__merge_remote_msgs(const bpc__merge_plan_t *P, const bpc__merge_variant_t *v)
{
  long long cnt = 0;
  bpc__merge_role_t role;
  for (int p = 0; p < P->n; p++) {
    v->role(P, p, &role);
    if (role.send_round >= 0 && bpc__assign_rank(P->a, bpc__merge_gid(P, p)) !=
                                    bpc__assign_rank(P->a, bpc__merge_gid(P, role.parent)))
      cnt++;
  }
  return cnt;
}
