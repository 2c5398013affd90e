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

#include <stdlib.h>
#include <string.h>

/* Per local block, per round: the runs of arrived pieces. */
typedef struct rk_block {
  size_t lo, len; /* current range (elements) */
  size_t plen;    /* own piece length this round */
  int j;          /* own index in the group */
  int remaining;  /* pieces still to arrive this round */
} rk_block_t;

typedef struct rk_state {
  bpc__swap_call_t *c;
  const bpc__rounds_t *R;
  int r, kmax;
  rk_block_t *blk;
  int *members;        /* nlocal * kmax positions */
  unsigned char *present;
  int *rend;           /* at a run's first index: its last index */
  void **rdata;        /* at a run's first index: where the run's result lives */
  bpc__msg_t **rmsg;   /* at a run's first index: the message owning rdata, or NULL */
  void **tb;           /* nlocal * kmax: tree operands, at their stretch's first index */
  bpc__msg_t **tm;     /* nlocal * kmax: their messages */
  bpc__tree_job_t *jobs; /* trees ready to run (all blocks), one batch */
  int *jblock, *jfirst, *jlast; /* per job: block, stretch [first, last] */
  int njobs;
} rk_state_t;

/* Queue a tree for every stretch of two or more adjacent runs of block b
 * (rk_run_jobs runs them). */
static void rk_collect(rk_state_t *s, int b)
{
  rk_block_t *B = &s->blk[b];
  const int k = s->R->k[s->r];
  const size_t base = (size_t)b * (size_t)s->kmax;
  if (s->c->deterministic && B->remaining > 0)
    return;
  int i = 0;
  while (i < k) {
    if (!s->present[base + i]) {
      i++;
      continue;
    }
    const int a = i;
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
    i = h;
  }
}

/* Run the queued trees in one batch (one OpenMP region for all blocks) and
 * turn each stretch into one run held where its tree left the result. */
static void rk_run_jobs(rk_state_t *s)
{
  bpc__swap_call_t *c = s->c;
  if (s->njobs == 0)
    return;
  bpc__swap_trees(c, s->jobs, s->njobs);
  for (int x = 0; x < s->njobs; x++) {
    const bpc__tree_job_t *J = &s->jobs[x];
    const size_t at = (size_t)s->jblock[x] * (size_t)s->kmax + (size_t)s->jfirst[x];
    bpc__msg_t **tm = s->tm + at;
    s->rend[at] = s->jlast[x];
    s->rdata[at] = J->bufs[J->holder];
    s->rmsg[at] = tm[J->holder];
    for (int y = 0; y < J->m; y++)
      if (y != J->holder)
        bpc__msg_release(c->ex, tm[y]);
  }
  s->njobs = 0;
}

/* A message for block b in this round: validate and record it. */
static void rk_arrival(rk_state_t *s, int b, bpc__msg_t *m)
{
  bpc__swap_call_t *c = s->c;
  rk_block_t *B = &s->blk[b];
  const size_t base = (size_t)b * (size_t)s->kmax;
  const int q = (m->src_gid >= 0 && m->src_gid < c->n) ? c->pos_of[m->src_gid] : -1;
  const int i = q >= 0 ? bpc__round_index(s->R, s->r, q) : -1;
  B->remaining--;
  if (i < 0 || i == B->j || s->members[base + i] != q || s->present[base + i]) {
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
  s->rmsg[base + i] = m;
  s->rdata[base + i] = m->data;
  if (bpc__swap_accept(c, m, B->plen) != BPC_OK)
    s->rdata[base + i] = NULL;
  else
    s->rdata[base + i] = m->data;
}

int bpc__swap_radixk(void *call)
{
  bpc__swap_call_t *c = call;
  const bpc__rounds_t *R = c->R;
  const int nrounds = c->nrounds;
  const int nl = c->nlocal;
  const size_t es = c->es;
  int rc = BPC_OK, kmax = 1;
  rk_state_t s;
  memset(&s, 0, sizeof s);
  for (int r = 0; r < nrounds; r++)
    if (R->k[r] > kmax)
      kmax = R->k[r];
  s.c = c;
  s.R = R;
  s.kmax = kmax;

  /* all scratch for the call in one allocation (none per round) */
  const size_t nslot = (size_t)(nl > 0 ? nl : 1) * (size_t)kmax;
  const size_t bytes = sizeof(rk_block_t) * (size_t)(nl > 0 ? nl : 1) +
                       nslot * sizeof(bpc__tree_job_t) + nslot * sizeof(int) * 5 +
                       nslot * 2 * (sizeof(void *) + sizeof(bpc__msg_t *)) + nslot + 64;
  char *mem = bpc__calloc(1, bytes);
  if (mem == NULL)
    return bpc__err(c->ctx, BPC_ENOMEM, "swap radixk: out of memory for %d blocks", nl);
  {
    char *p = mem;
    s.blk = (rk_block_t *)p;
    p += sizeof(rk_block_t) * (size_t)(nl > 0 ? nl : 1);
    s.rdata = (void **)p;
    p += nslot * sizeof(void *);
    s.rmsg = (bpc__msg_t **)p;
    p += nslot * sizeof(bpc__msg_t *);
    s.tb = (void **)p;
    p += nslot * sizeof(void *);
    s.tm = (bpc__msg_t **)p;
    p += nslot * sizeof(bpc__msg_t *);
    s.jobs = (bpc__tree_job_t *)p;
    p += nslot * sizeof(bpc__tree_job_t);
    s.jblock = (int *)p;
    p += nslot * sizeof(int);
    s.jfirst = (int *)p;
    p += nslot * sizeof(int);
    s.jlast = (int *)p;
    p += nslot * sizeof(int);
    s.members = (int *)p;
    p += nslot * sizeof(int);
    s.rend = (int *)p;
    p += nslot * sizeof(int);
    s.present = (unsigned char *)p;
  }
  for (int b = 0; b < nl; b++) {
    s.blk[b].lo = 0;
    s.blk[b].len = c->count;
  }

  for (int r = 0; r < nrounds && rc == BPC_OK; r++) {
    const int k = R->k[r];
    long long total = 0;
    s.r = r;
    c->cur_round = r;
    bpc__stats_set_round(c->ctx, r);

    /* post this round's sends of every local block */
    for (int b = 0; b < nl && rc == BPC_OK; b++) {
      rk_block_t *B = &s.blk[b];
      const size_t base = (size_t)b * (size_t)kmax;
      int *mem_b = s.members + base;
      const int p = c->lpos[b];
      B->j = bpc__round_index(R, r, p);
      bpc__round_group(R, r, p, mem_b);
      for (int i = 0; i < k && rc == BPC_OK; i++) {
        if (i == B->j)
          continue;
        int64_t o = 0, l = 0;
        bpc__piece_range((int64_t)B->len, k, i, &o, &l);
        if (l > 0)
          rc = bpc__swap_send(c, b, c->order[mem_b[i]], r, c->buf[b] + (B->lo + (size_t)o) * es,
                              (size_t)l);
      }
      int64_t oj = 0, lj = 0;
      bpc__piece_range((int64_t)B->len, k, B->j, &oj, &lj);
      B->lo += (size_t)oj;
      B->len = (size_t)lj;
      B->plen = (size_t)lj;
      memset(s.present + base, 0, (size_t)k);
      s.present[base + B->j] = 1;
      s.rend[base + B->j] = B->j;
      s.rdata[base + B->j] = c->buf != NULL && c->buf[b] != NULL ? c->buf[b] + B->lo * es : NULL;
      s.rmsg[base + B->j] = NULL;
      B->remaining = lj > 0 ? k - 1 : 0;
      total += B->remaining;
    }
    /* Receive and reduce in arrival order until every piece is in. No
     * non-blocking progress calls here: when MPI runs oversubscribed it
     * yields the processor in every progress call that finds nothing, so
     * this loop only makes MPI calls when it has nothing else to do (the
     * blocking wait; it pulls in whatever else has arrived meanwhile). */
    while (rc == BPC_OK && total > 0) {
      for (int b = 0; b < nl && rc == BPC_OK; b++) {
        int tb = 0;
        while (s.blk[b].remaining > 0) {
          bpc__msg_t *m = NULL;
          bpc__exch_take(c->ex, c->gids[b], -1, r, &m);
          if (m == NULL)
            break;
          rk_arrival(&s, b, m);
          tb++;
          total--;
        }
        if (tb > 0)
          rk_collect(&s, b);
      }
      rk_run_jobs(&s);
      if (rc != BPC_OK || total == 0)
        break;
      /* block on the first block still waiting */
      for (int b = 0; b < nl; b++) {
        if (s.blk[b].remaining == 0)
          continue;
        bpc__msg_t *m = NULL;
        rc = bpc__exch_wait(c->ex, c->gids[b], -1, r, &m);
        if (rc == BPC_OK && m != NULL) {
          rk_arrival(&s, b, m);
          total--;
          rk_collect(&s, b);
          rk_run_jobs(&s);
        }
        break;
      }
    }
    /* normally every block now has one run, held in its own buffer; after a
     * failure, release whatever runs are still held in receive buffers */
    for (int b = 0; b < nl; b++) {
      const size_t base = (size_t)b * (size_t)kmax;
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
  }

  for (int b = 0; b < nl; b++) {
    c->pieces[b].offset = s.blk[b].lo;
    c->pieces[b].count = s.blk[b].len;
  }
  free(mem);
  return rc;
}
