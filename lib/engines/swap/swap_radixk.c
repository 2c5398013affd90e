/*
 * lib/engines/swap/swap_radixk.c - radix-k swap-reduce (Radix-k paper; DIY
 * paper, Algorithm 2).
 *
 * Schedule. n blocks at positions 0..n-1 of the visibility order, a
 * k-vector k[0..R-1] with product n, distance doubling (patterns.h): in
 * round r the group of position p is the k[r] positions that differ from p
 * only in mixed-radix digit r, listed by that digit; groups of round 0 are
 * runs of consecutive positions, and every later group joins runs that are
 * consecutive in the order, so combining a group by digit keeps the order
 * for non-commutative operators. Each block holds a current range of its
 * buffer (initially all of it) that its group members share; it cuts the
 * range into k[r] pieces (floor split), sends piece i to member i (straight
 * from its buffer, no copy) and receives its own piece j from the k[r]-1
 * others; the reduced piece j is the next round's range. k all 2 is binary
 * swap; one round k = [n] is direct send. A partial swap stops after
 * `rounds` rounds: each group of k[0]*...*k[rounds-1] consecutive positions
 * then holds its own reduction, spread over its members.
 *
 * Order and overlap. A piece is reduced as soon as it is adjacent, in the
 * order, to what has accumulated (or to another arrived piece): arrived
 * pieces form runs of consecutive group indices; whenever a message lands,
 * every stretch of adjacent runs is merged with the ordered tree of
 * lib/threads; the stretches of all local blocks found in one sweep of the
 * mailbox form one batch (one OpenMP region; threads take element chunks of
 * every tree, so several pieces ready at once - many local blocks, or
 * pieces that arrived together - are reduced in parallel and in order).
 * The accumulation lives in the block's own buffer; a run that does not
 * contain it lives in the receive buffer of one of its pieces; waiting
 * pieces stay in their receive buffers (no copy).
 * With `deterministic`, a round's k[r] pieces are reduced in one fixed tree
 * once all have arrived.
 * With sparse hooks (swap_common.h; compositing's active pixels) encoded
 * pieces stay encoded and every piece is folded straight into the block's
 * own buffer as soon as it is adjacent to the run held there, nearest first
 * on each side (rk_fold_queue); pieces never merge with each other, and
 * each round's sends are encoded from the hooks' knowledge of the block.
 *
 * Scale. A round's bookkeeping has one row of k[r] entries per local block
 * whose own piece is non-empty (a block that receives nothing costs none);
 * an arrival looks only at the runs it touches, and the receive loop visits
 * only blocks still waiting, so thousands of local blocks and a one-round
 * k = n (direct send with most pieces empty) cost time linear in the
 * pieces sent and received plus one pass of k[r] per block to find them.
 *
 * Cost (alpha latency per message, beta per byte, gamma per reduced byte,
 * buffer of N bytes): latency alpha * sum_r (k[r] - 1) messages per block,
 * bandwidth beta * N * (n-1)/n, computation gamma * N * (n-1)/n: the
 * bandwidth and computation terms of binary swap and direct send alike
 * (sum_r (k[r]-1)/(k[0]...k[r]) = (n-1)/n), the latency between log2(n)
 * (all 2) and n-1 (one round).
 *
 * Non-power-of-two counts: any n works - the k-vector is any factorisation
 * of n (an automatic one packs the prime factors; a prime n is one round of
 * direct send). Uneven buffers: floor splits give pieces that differ by at
 * most one element; pieces of length 0 (count < n, or 0) are neither sent
 * nor expected on either side.
 */
#include "engines/swap/swap_common.h"
#include "engines/swap/swap_internal.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "decomp/decomp.h"

/* Bundles: a round's pieces from this process to another one travel as one
 * message (seq RK_BUNDLE + round) when there are RK_BUNDLE_MIN or more of
 * them; fewer go as they are. A bundle is a row of records, a header and the
 * piece's bytes (encoded or dense), each padded to 16 bytes. It is
 * addressed to the lowest receiving gid of the pairs it carries, which both
 * sides compute from the schedule alone. */
#define RK_BUNDLE (1 << 20)
/* Pieces for one other process in a round from which they are bundled: 2,
 * so that test_swap's small cases bundle at every process count and keep
 * the bundled path tested. */
#define RK_BUNDLE_MIN 2
typedef struct rk_rec {
  int32_t src_gid, dst_gid;
  uint64_t bytes;
} rk_rec_t;
static size_t rk_pad(size_t bytes) { return (bytes + 15u) & ~(size_t)15u; }

/* Per other process, for one round. */
typedef struct rk_peer {
  int npieces_out, npieces_in; /* pieces to / from it */
  int rep_out, rep_in;         /* the lowest receiving gid of those pairs */
  int src_out;                 /* a local gid sending to it (the bundle's source) */
  size_t bytes_out, used_out;
  char *buf_out;
} rk_peer_t;

/* Per local block, per round. */
typedef struct rk_block {
  size_t lo, len; /* current range (elements) */
  size_t plen;    /* own piece length this round */
  int j;          /* own index in the group */
  int remaining;  /* pieces still to arrive this round */
  int slot;       /* its row of the round's slot arrays (-1: receives nothing) */
  int hlo, hhi;   /* sparse: the run of group indices merged into its buffer */
  int fstamp;     /* sparse: batch in which its fold was queued */
} rk_block_t;

/*
 * The round's slot arrays: one row of k entries per local block that
 * receives this round (own piece non-empty), so memory follows the pieces
 * that arrive, not (local blocks) x k. Arrived pieces form runs of
 * consecutive group indices; a run [a..e] has rend[a] = e and rstart[e] =
 * a, its result in rdata[a] (owned by rmsg[a], or the block's buffer).
 * Arrivals are collected incrementally: each new piece looks only at the
 * runs it touches (no scan of the k entries per arrival).
 */
typedef struct rk_state {
  bpc__swap_call_t *c;
  const bpc__rounds_t *R;
  int r, k;
  rk_block_t *blk;
  size_t nslot;        /* rows * k this round */
  unsigned char *present;
  int *rend, *rstart, *stamp;
  void **rdata;        /* at a run's first index: where the run's result lives */
  bpc__msg_t **rmsg;   /* at a run's first index: the message owning rdata, or NULL */
  void **tb;           /* tree operands, at their stretch's first index */
  bpc__msg_t **tm;     /* their messages */
  bpc__tree_job_t *jobs; /* trees ready to run (all blocks), one batch */
  int *jblock, *jfirst, *jlast; /* per job: block, stretch [first, last] */
  int njobs;
  int *newb, *newi;    /* arrivals since the last collect (block, index) */
  int nnew, batch;
  char *mem;           /* the round's slot arrays (one allocation) */
  rk_peer_t *peer;     /* per process */
  size_t *rbytes;      /* sparse: at a piece's index: its encoding's size (0: dense) */
  bpc__swap_fold_t *fjobs; /* sparse: folds ready to run (all blocks), one batch */
  bpc__swap_fold_op_t *fops; /* their pieces, k - 1 at most per block row */
  int nfjobs;
  int *bwait;          /* processes whose bundle has not arrived yet */
  int nbwait;
  bpc__msg_t **bmsg;   /* the bundles taken this round (released at its end) */
  int nbmsg;
} rk_state_t;

static size_t rk_base(const rk_state_t *s, int b) { return (size_t)s->blk[b].slot * (size_t)s->k; }

/* Queue the tree of the stretch of adjacent runs that contains index i of
 * block b, if it has two runs or more and is not queued yet. */
static void rk_stretch(rk_state_t *s, int b, int i)
{
  const rk_block_t *B = &s->blk[b];
  const int k = s->k;
  const size_t base = rk_base(s, b);
  int a = i;
  while (a > 0 && s->present[base + a - 1])
    a = s->rstart[base + a - 1];
  if (s->stamp[base + a] == s->batch)
    return;
  s->stamp[base + a] = s->batch;
  void **tb = s->tb + base + a;
  bpc__msg_t **tm = s->tm + base + a;
  int h = a, nr = 0, home = -1;
  while (h < k && s->present[base + h]) {
    tb[nr] = s->rdata[base + h];
    tm[nr] = s->rmsg[base + h];
    if (B->j >= h && B->j <= s->rend[base + h])
      home = nr;
    nr++;
    h = s->rend[base + h] + 1;
  }
  if (nr >= 2) {
    bpc__tree_job_t *J = &s->jobs[s->njobs];
    J->bufs = tb;
    J->m = nr;
    J->home = home;
    J->count = B->plen;
    s->jblock[s->njobs] = b;
    s->jfirst[s->njobs] = a;
    s->jlast[s->njobs] = h - 1;
    s->njobs++;
  }
}

/* Queue a tree for every stretch of two or more adjacent runs that an
 * arrival since the last call touches (rk_run_jobs runs them). With
 * `deterministic`, a block's pieces wait until all have arrived and are
 * then reduced in one tree. */
static void rk_fold_queue(rk_state_t *s, int b);

static void rk_collect(rk_state_t *s)
{
  s->batch++;
  for (int x = 0; x < s->nnew; x++) {
    const int b = s->newb[x];
    if (s->c->sparse != NULL) {
      if (!s->c->deterministic || s->blk[b].remaining == 0)
        rk_fold_queue(s, b);
    } else if (s->c->deterministic) {
      if (s->blk[b].remaining == 0)
        rk_stretch(s, b, 0);
    } else {
      rk_stretch(s, b, s->newi[x]);
    }
  }
  s->nnew = 0;
}

/* Sparse pieces: every arrived piece adjacent to the run held in block b's
 * own buffer is merged straight into it, nearest first on each side (left
 * pieces in front, right pieces behind); pieces never merge with each other,
 * so an encoded one is never decoded. With `deterministic` the block waits
 * for all its pieces (a fixed order: left side, then right side). */
static void rk_fold_queue(rk_state_t *s, int b)
{
  rk_block_t *B = &s->blk[b];
  if (B->slot < 0 || B->fstamp == s->batch)
    return;
  B->fstamp = s->batch;
  const size_t base = rk_base(s, b);
  bpc__swap_fold_op_t *ops = s->fops + base;
  int n = 0;
  while (B->hlo > 0 && s->present[base + B->hlo - 1]) {
    const int i = --B->hlo;
    ops[n].data = s->rdata[base + i];
    ops[n].bytes = s->rbytes[base + i];
    ops[n].in_first = 1;
    n++;
  }
  while (B->hhi < s->k - 1 && s->present[base + B->hhi + 1]) {
    const int i = ++B->hhi;
    ops[n].data = s->rdata[base + i];
    ops[n].bytes = s->rbytes[base + i];
    ops[n].in_first = 0;
    n++;
  }
  if (n == 0)
    return;
  bpc__swap_fold_t *J = &s->fjobs[s->nfjobs++];
  J->b = b;
  J->off = B->lo;
  J->count = B->plen;
  J->ops = ops;
  J->nops = n;
}

/* Run the queued folds (one OpenMP region), release their pieces and make
 * the block's run cover them. */
static void rk_run_folds(rk_state_t *s)
{
  bpc__swap_call_t *c = s->c;
  if (s->nfjobs == 0)
    return;
  bpc__swap_fold(c, s->fjobs, s->nfjobs);
  for (int x = 0; x < s->nfjobs; x++) {
    const int b = s->fjobs[x].b;
    const rk_block_t *B = &s->blk[b];
    const size_t base = rk_base(s, b);
    for (int i = B->hlo; i <= B->hhi; i++) {
      if (i != B->j && s->rmsg[base + i] != NULL)
        bpc__msg_release(c->ex, s->rmsg[base + i]);
      s->rmsg[base + i] = NULL;
    }
    s->rend[base + B->hlo] = B->hhi;
    s->rstart[base + B->hhi] = B->hlo;
    s->rdata[base + B->hlo] = s->rdata[base + B->j];
  }
  s->nfjobs = 0;
}

/* Run the queued trees in one batch (one OpenMP region for all blocks) and
 * turn each stretch into one run held where its tree left the result. */
static void rk_run_jobs(rk_state_t *s)
{
  bpc__swap_call_t *c = s->c;
  if (c->sparse != NULL) {
    rk_run_folds(s);
    return;
  }
  if (s->njobs == 0)
    return;
  bpc__swap_trees(c, s->jobs, s->njobs);
  for (int x = 0; x < s->njobs; x++) {
    const bpc__tree_job_t *J = &s->jobs[x];
    const size_t base = rk_base(s, s->jblock[x]);
    const size_t at = base + (size_t)s->jfirst[x];
    bpc__msg_t **tm = s->tm + at;
    s->rend[at] = s->jlast[x];
    s->rstart[base + (size_t)s->jlast[x]] = s->jfirst[x];
    s->rdata[at] = J->bufs[J->holder];
    s->rmsg[at] = tm[J->holder];
    for (int y = 0; y < J->m; y++)
      if (y != J->holder)
        bpc__msg_release(c->ex, tm[y]);
  }
  s->njobs = 0;
}

/* A message for block b in this round: validate and record it. The sender
 * must be a member of b's group: position p + (i - j) * stride. */
static void rk_arrival(rk_state_t *s, int b, bpc__msg_t *m)
{
  bpc__swap_call_t *c = s->c;
  rk_block_t *B = &s->blk[b];
  const int q = (m->src_gid >= 0 && m->src_gid < c->n) ? c->pos_of[m->src_gid] : -1;
  const int i = q >= 0 ? bpc__round_index(s->R, s->r, q) : -1;
  const size_t base = B->slot >= 0 ? rk_base(s, b) : 0;
  B->remaining--;
  if (B->slot < 0 || i < 0 || i == B->j ||
      q != c->lpos[b] + (i - B->j) * bpc__round_stride(s->R, s->r) || s->present[base + i]) {
    int rc = bpc__err(c->ctx, BPC_ESTATE,
                      "swap radixk: block %d got an unexpected message from block %d in round %d",
                      c->gids[b], m->src_gid, s->r);
    if (c->err == BPC_OK)
      c->err = rc;
    bpc__msg_release(c->ex, m);
    return;
  }
  s->present[base + i] = 1;
  s->rend[base + i] = i;
  s->rstart[base + i] = i;
  s->rmsg[base + i] = m;
  s->rbytes[base + i] = 0;
  if (c->sparse != NULL) {
    int enc = 0;
    s->rdata[base + i] = bpc__swap_accept_sparse(c, m, B->plen, &enc) == BPC_OK ? m->data : NULL;
    s->rbytes[base + i] = enc ? m->bytes : 0;
  } else if (bpc__swap_accept(c, m, B->plen) != BPC_OK) {
    s->rdata[base + i] = NULL;
  } else {
    s->rdata[base + i] = m->data;
  }
  s->newb[s->nnew] = b;
  s->newi[s->nnew] = i;
  s->nnew++;
}

/* The slot arrays of a round with `rows` receiving blocks of k entries. */
static int rk_slots(rk_state_t *s, int rows, int k)
{
  free(s->mem);
  s->mem = NULL;
  s->k = k;
  s->nslot = (size_t)rows * (size_t)k;
  const size_t ns = s->nslot > 0 ? s->nslot : 1;
  const size_t bytes = ns * (sizeof(bpc__tree_job_t) + sizeof(bpc__swap_fold_t) +
                             sizeof(bpc__swap_fold_op_t) + sizeof(size_t) + sizeof(int) * 8 +
                             2 * (sizeof(void *) + sizeof(bpc__msg_t *)) + 1) + 64;
  char *p = bpc__calloc(1, bytes);
  if (p == NULL)
    return BPC_ENOMEM;
  s->mem = p;
  s->jobs = (bpc__tree_job_t *)p;
  p += ns * sizeof(bpc__tree_job_t);
  s->fjobs = (bpc__swap_fold_t *)p;
  p += ns * sizeof(bpc__swap_fold_t);
  s->fops = (bpc__swap_fold_op_t *)p;
  p += ns * sizeof(bpc__swap_fold_op_t);
  s->rbytes = (size_t *)p;
  p += ns * sizeof(size_t);
  s->rdata = (void **)p;
  p += ns * sizeof(void *);
  s->rmsg = (bpc__msg_t **)p;
  p += ns * sizeof(bpc__msg_t *);
  s->tb = (void **)p;
  p += ns * sizeof(void *);
  s->tm = (bpc__msg_t **)p;
  p += ns * sizeof(bpc__msg_t *);
  int **ints[] = {&s->jblock, &s->jfirst, &s->jlast, &s->rend, &s->rstart, &s->stamp, &s->newb,
                  &s->newi};
  for (int x = 0; x < 8; x++) {
    *ints[x] = (int *)p;
    p += ns * sizeof(int);
  }
  s->present = (unsigned char *)p;
  s->nnew = s->njobs = s->nfjobs = 0;
  s->batch = 0;
  return BPC_OK;
}

/* Unpack a bundle: every record becomes a message of its own for its
 * block (a view into the bundle, which is released at the round's end). */
static void rk_unbundle(rk_state_t *s, bpc__msg_t *bm, long long *total)
{
  bpc__swap_call_t *c = s->c;
  size_t at = 0;
  s->bmsg[s->nbmsg++] = bm;
  while (at + sizeof(rk_rec_t) <= bm->bytes) {
    rk_rec_t h;
    memcpy(&h, (char *)bm->data + at, sizeof h);
    at += sizeof h;
    const int b = bpc__assign_local_index(c->assign, h.dst_gid);
    const int fits = h.bytes <= bm->bytes - at;
    bpc__msg_t *m = b >= 0 && fits ? bpc__calloc(1, sizeof *m) : NULL;
    if (m == NULL) {
      int rc = b >= 0 && fits
                   ? bpc__err(c->ctx, BPC_ENOMEM, "swap radixk: out of memory unpacking a bundle")
                   : bpc__err(c->ctx, !fits ? BPC_ETRUNC : BPC_ESTATE,
                              "swap radixk: a malformed bundle from block %d in round %d",
                              bm->src_gid, s->r);
      if (c->err == BPC_OK)
        c->err = rc;
      free(m);
      return;
    }
    m->src_gid = h.src_gid;
    m->dst_gid = h.dst_gid;
    m->seq = s->r;
    m->bytes = (size_t)h.bytes;
    m->data = h.bytes > 0 ? (char *)bm->data + at : NULL;
    m->borrowed = 1;
    at += rk_pad((size_t)h.bytes);
    if (s->blk[b].remaining <= 0) {
      int rc = bpc__err(c->ctx, BPC_ESTATE,
                        "swap radixk: block %d got an unexpected piece from block %d in round %d",
                        h.dst_gid, h.src_gid, s->r);
      if (c->err == BPC_OK)
        c->err = rc;
      free(m);
      continue;
    }
    rk_arrival(s, b, m);
    (*total)--;
  }
}

/* Add a piece to the bundle for process R. */
static void rk_append(rk_state_t *s, int R, int b, int dst_gid, const void *data, size_t len,
                      size_t off)
{
  bpc__swap_call_t *c = s->c;
  rk_peer_t *P = &s->peer[R];
  const size_t dense = len * c->es;
  char *at = P->buf_out + P->used_out;
  rk_rec_t h = {c->gids[b], dst_gid, dense};
  int enc = 0;
  if (c->sparse != NULL && dense > 0) {
    const size_t eb = bpc__swap_encode_sparse(c, at + sizeof h, b, off, len);
    if (eb > 0) {
      h.bytes = eb;
      enc = 1;
    }
  } else if (c->codec != NULL && c->codec->encode != NULL && dense > 0) {
    const size_t eb = c->codec->encode(at + sizeof h, dense, data, len, c->codec->user);
    if (eb > 0 && eb < dense) {
      h.bytes = eb;
      enc = 1;
    }
  }
  if (!enc && dense > 0)
    memcpy(at + sizeof h, data, dense);
  memcpy(at, &h, sizeof h);
  c->piece_bytes += h.bytes;
  P->used_out += sizeof h + rk_pad((size_t)h.bytes);
  if (P->src_out < 0)
    P->src_out = c->gids[b];
}

int bpc__swap_radixk(void *call)
{
  bpc__swap_call_t *c = call;
  const bpc__rounds_t *R = c->R;
  const int nrounds = c->nrounds;
  const int nl = c->nlocal;
  const size_t es = c->es;
  int rc = BPC_OK;
  rk_state_t s;
  memset(&s, 0, sizeof s);
  s.c = c;
  s.R = R;
  const int np = c->ctx->size, me = c->ctx->rank;
  s.blk = bpc__calloc((size_t)(nl > 0 ? nl : 1), sizeof *s.blk);
  int *waiting = bpc__calloc((size_t)(nl > 0 ? nl : 1), sizeof(int));
  s.peer = bpc__calloc((size_t)np, sizeof *s.peer);
  s.bwait = bpc__calloc((size_t)np, sizeof *s.bwait);
  s.bmsg = bpc__calloc((size_t)np, sizeof *s.bmsg);
  if (s.blk == NULL || waiting == NULL || s.peer == NULL || s.bwait == NULL || s.bmsg == NULL) {
    free(s.blk);
    free(waiting);
    free(s.peer);
    free(s.bwait);
    free(s.bmsg);
    return bpc__err(c->ctx, BPC_ENOMEM, "swap radixk: out of memory for %d blocks", nl);
  }
  for (int b = 0; b < nl; b++) {
    s.blk[b].lo = 0;
    s.blk[b].len = c->count;
    if (c->src != NULL && nrounds == 0 && c->count > 0) /* no round: all of it is kept */
      memcpy(c->buf[b], c->src[b], c->count * es);
  }

  /* a failure here (c->err) ends the rounds: the exchange's end tells the
   * other ranks, whose waits for this rank's pieces then return */
  for (int r = 0; r < nrounds && rc == BPC_OK && c->err == BPC_OK; r++) {
    const int k = R->k[r], stride = bpc__round_stride(R, r);
    long long total = 0;
    int rows = 0, nwait = 0;
    s.r = r;
    c->cur_round = r;
    bpc__stats_set_round(c->ctx, r);
    /* who receives this round (own piece non-empty): one slot row each */
    for (int b = 0; b < nl; b++) {
      rk_block_t *B = &s.blk[b];
      int64_t oj = 0, lj = 0;
      B->j = bpc__round_index(R, r, c->lpos[b]);
      bpc__piece_range((int64_t)B->len, k, B->j, &oj, &lj);
      B->slot = lj > 0 ? rows++ : -1;
    }
    if (rk_slots(&s, rows, k) != BPC_OK) {
      rc = bpc__err(c->ctx, BPC_ENOMEM, "swap radixk: out of memory for %d pieces in flight",
                    rows * k);
      break;
    }

    /* count the pieces to and from every other process (member i of p's
     * group is position p + (i - j) * stride; empty pieces are not sent) */
    for (int R = 0; R < np; R++) {
      rk_peer_t *P = &s.peer[R];
      memset(P, 0, sizeof *P);
      P->rep_out = P->rep_in = c->n;
      P->src_out = -1;
    }
    for (int b = 0; b < nl; b++) {
      const rk_block_t *B = &s.blk[b];
      const int p = c->lpos[b];
      for (int i = 0; i < k; i++) {
        int64_t o = 0, l = 0;
        bpc__piece_range((int64_t)B->len, k, i, &o, &l);
        if (i == B->j || (l == 0 && B->slot < 0))
          continue;
        const int g = c->order[p + (i - B->j) * stride];
        const int R = bpc__assign_rank(c->assign, g);
        if (R == me)
          continue;
        rk_peer_t *P = &s.peer[R];
        if (l > 0) {
          P->npieces_out++;
          P->bytes_out += sizeof(rk_rec_t) + rk_pad(bpc__swap_piece_cap(c, (size_t)l));
          if (g < P->rep_out)
            P->rep_out = g;
        }
        if (B->slot >= 0) { /* g sends its piece j (non-empty) back */
          P->npieces_in++;
          if (c->gids[b] < P->rep_in)
            P->rep_in = c->gids[b];
        }
      }
    }
    s.nbwait = s.nbmsg = 0;
    for (int R = 0; R < np && rc == BPC_OK; R++) {
      rk_peer_t *P = &s.peer[R];
      if (P->npieces_in >= RK_BUNDLE_MIN)
        s.bwait[s.nbwait++] = R;
      if (P->npieces_out >= RK_BUNDLE_MIN) {
        size_t cap = 0;
        P->buf_out = bpc__pool_get(c->ctx, P->bytes_out, &cap);
        if (P->buf_out == NULL)
          rc = bpc__err(c->ctx, BPC_ENOMEM, "swap radixk: out of memory for a %zu-byte bundle",
                        P->bytes_out);
        else
          rc = bpc__swap_keep(c, P->buf_out, cap);
      }
    }
    /* post this round's sends of every local block: pieces for blocks of
     * this process and lone pieces for another one at once, the others
     * into that process's bundle */
    for (int b = 0; b < nl && rc == BPC_OK; b++) {
      rk_block_t *B = &s.blk[b];
      const int p = c->lpos[b];
      for (int i = 0; i < k && rc == BPC_OK; i++) {
        if (i == B->j)
          continue;
        int64_t o = 0, l = 0;
        bpc__piece_range((int64_t)B->len, k, i, &o, &l);
        if (l == 0)
          continue;
        const int g = c->order[p + (i - B->j) * stride];
        const int R = bpc__assign_rank(c->assign, g);
        /* round 0 from the input where the buffer does not hold it
         * (c->src): straight from it to another process; a block of this
         * one may fold into what it borrows, so that piece goes through
         * the buffer (the copy the whole input would have had) */
        const size_t at = (B->lo + (size_t)o) * es;
        if (r == 0 && c->src != NULL && R == me)
          memcpy(c->buf[b] + at, c->src[b] + at, (size_t)l * es);
        const char *data = (r == 0 && c->src != NULL && R != me ? c->src[b] : c->buf[b]) + at;
        if (R != me && s.peer[R].npieces_out >= RK_BUNDLE_MIN)
          rk_append(&s, R, b, g, data, (size_t)l, B->lo + (size_t)o);
        else
          rc = bpc__swap_send(c, b, g, r, data, (size_t)l, B->lo + (size_t)o);
      }
      int64_t oj = 0, lj = 0;
      bpc__piece_range((int64_t)B->len, k, B->j, &oj, &lj);
      B->lo += (size_t)oj;
      B->len = (size_t)lj;
      B->plen = (size_t)lj;
      if (r == 0 && c->src != NULL && lj > 0) /* what it keeps, before any merge into it */
        memcpy(c->buf[b] + B->lo * es, c->src[b] + B->lo * es, B->len * es);
      B->remaining = lj > 0 ? k - 1 : 0;
      B->hlo = B->hhi = B->j;
      B->fstamp = -1;
      if (c->sparse != NULL)
        c->sparse->keep(b, B->lo, B->len, c->sparse->user);
      if (B->slot >= 0) {
        const size_t base = rk_base(&s, b);
        s.present[base + B->j] = 1;
        s.rend[base + B->j] = B->j;
        s.rstart[base + B->j] = B->j;
        s.rdata[base + B->j] =
            c->buf != NULL && c->buf[b] != NULL ? c->buf[b] + B->lo * es : NULL;
        s.rmsg[base + B->j] = NULL;
      }
      if (B->remaining > 0)
        waiting[nwait++] = b;
      total += B->remaining;
    }
    for (int R = 0; R < np && rc == BPC_OK; R++) {
      rk_peer_t *P = &s.peer[R];
      if (P->npieces_out >= RK_BUNDLE_MIN)
        rc = bpc__exch_send(c->ex, P->src_out, P->rep_out, RK_BUNDLE + r, P->buf_out, P->used_out,
                            0);
    }
    /* Receive and reduce in arrival order until every piece is in; only
     * the blocks still waiting are visited. No non-blocking progress calls
     * here: when MPI runs oversubscribed it yields the processor in every
     * progress call that finds nothing, so this loop only makes MPI calls
     * when it has nothing else to do (the blocking wait; it pulls in
     * whatever else has arrived meanwhile). */
    while (rc == BPC_OK && c->err == BPC_OK && total > 0) {
      /* bundles first: a bundle's pieces can complete blocks still on the
       * waiting list, and the sweep of the blocks below must see that, or
       * the blocking wait further down could wait for a block that needs
       * nothing more (a message that never comes: a hang) */
      int w = 0;
      for (int x = 0; x < s.nbwait; x++) {
        const int R = s.bwait[x];
        bpc__msg_t *m = NULL;
        bpc__exch_take(c->ex, s.peer[R].rep_in, -1, RK_BUNDLE + r, &m);
        if (m != NULL)
          rk_unbundle(&s, m, &total);
        else
          s.bwait[w++] = R;
      }
      s.nbwait = w;
      w = 0;
      for (int x = 0; x < nwait; x++) {
        const int b = waiting[x];
        while (s.blk[b].remaining > 0) {
          bpc__msg_t *m = NULL;
          bpc__exch_take(c->ex, c->gids[b], -1, r, &m);
          if (m == NULL)
            break;
          rk_arrival(&s, b, m);
          total--;
        }
        if (s.blk[b].remaining > 0)
          waiting[w++] = b;
      }
      nwait = w;
      rk_collect(&s);
      rk_run_jobs(&s);
      if (total <= 0 || c->err != BPC_OK)
        break; /* done; or failed here: no blocking wait for what may not come */
      /* block on the first bundle still missing, else on the first block
       * still waiting (every block on the list has pieces to come: the
       * sweep above ran after the last bundle was unpacked) */
      bpc__msg_t *m = NULL;
      if (s.nbwait > 0) {
        rc = bpc__exch_wait(c->ex, s.peer[s.bwait[0]].rep_in, -1, RK_BUNDLE + r, &m);
        if (rc == BPC_OK && m != NULL) {
          s.bwait[0] = s.bwait[--s.nbwait];
          rk_unbundle(&s, m, &total);
        }
      } else if (nwait > 0) {
        rc = bpc__exch_wait(c->ex, c->gids[waiting[0]], -1, r, &m);
        if (rc == BPC_OK && m != NULL) {
          rk_arrival(&s, waiting[0], m);
          total--;
        }
      } else {
        break; /* pieces counted but never coming (recorded by rk_unbundle) */
      }
      rk_collect(&s);
      rk_run_jobs(&s);
    }
    /* normally every block now has one run, held in its own buffer; after a
     * failure, release whatever runs are still held in receive buffers */
    for (int b = 0; b < nl; b++) {
      if (s.blk[b].slot < 0)
        continue;
      const size_t base = rk_base(&s, b);
      int i = 0;
      while (i < k) {
        if (!s.present[base + i]) {
          i++;
          continue;
        }
        bpc__msg_release(c->ex, s.rmsg[base + i]);
        s.rmsg[base + i] = NULL;
        i = s.rend[base + i] + 1;
      }
    }
    for (int x = 0; x < s.nbmsg; x++)
      bpc__msg_release(c->ex, s.bmsg[x]);
    s.nbmsg = 0;
  }

  for (int b = 0; b < nl; b++) {
    c->pieces[b].offset = s.blk[b].lo;
    c->pieces[b].count = s.blk[b].len;
  }
  free(s.mem);
  free(s.blk);
  free(waiting);
  free(s.peer);
  free(s.bwait);
  free(s.bmsg);
  return rc;
}

/* The row's piece map (bpc__swap_row_t.piece): the rounds of info's
 * k-vector, of which info->rounds ran. */
int bpc__swap_radixk_piece(const bpc_swap_info_t *info, size_t count, int pos,
                           bpc_swap_piece_t *piece)
{
  bpc__rounds_t R;
  if (info->rounds < 0 || info->rounds > info->nk ||
      bpc__rounds_init(&R, info->nblocks, info->k, info->nk, NULL, 0) != BPC_OK)
    return BPC_EINVAL;
  bpc__radixk_piece(&R, info->rounds, count, pos, &piece->offset, &piece->count);
  return BPC_OK;
}
