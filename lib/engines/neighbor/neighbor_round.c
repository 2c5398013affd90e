/*
 * lib/engines/neighbor/neighbor_round.c - one round of the neighbour
 * exchange ("packed", DIY Algorithm 3 generalised: the run of its row in
 * neighbor.c's table), the round driver with callbacks and its entry frame,
 * and the drain that ends a sequence of rounds.
 *
 * Schedule of round r on a process with O out-processes and I in-processes
 * (processes owning a block linked from / to one of its blocks):
 *   1. finish the bundle of every out-process (index written in front of the
 *      payloads packed by enqueue) and post it: one bpc message (src = this
 *      rank, dst = that rank, seq = r), also when empty (8 bytes), so every
 *      receiver knows that round r owes it exactly one message per
 *      in-process; items enqueued by reference follow as parts of the
 *      bundle's message (bpc__exch_send_parts); the local bundle is handed
 *      over in memory (its large items by reference are copied only now,
 *      after the sends are posted, so the copies overlap the transfers);
 *   2. wait, by the synchrony fraction f: let need = ceil(f I) (at least 1)
 *      and allow = I - need. Messages from each in-process are taken in
 *      round order (seq), and only those of rounds <= r. The wait ends when
 *      at most `allow` of the messages of rounds <= r are still missing.
 *      f = 1 gives allow = 0: every message of round r is delivered in round
 *      r. With f < 1 a late message stays in the comm mailbox (or in
 *      flight) and is taken by a later round, before any later message of
 *      the same sender: nothing is lost, duplicated or reordered per source.
 *      Deadlock-free: a process in the lowest round r among all has every
 *      message of rounds <= r sent to it already (senders post before they
 *      wait), so its wait ends; by induction every process advances.
 *      The lag is bounded: a process can be at most `allow` rounds ahead of
 *      an in-neighbour, so buffered late messages are bounded too.
 *      A taken bundle's parts are taken as they arrive, into slots kept
 *      after it; the round also waits for all of them. The wait polls the
 *      comm layer (no blocking MPI call per message, see neighbor_wait).
 *   3. deliver: split the local bundle and the taken messages (views, no
 *      copy) into per-block entries sorted by (source gid, round, position).
 * Cost per round and process (alpha-beta): O alpha + (bytes to other
 * processes) beta for sending, the same for receiving, one memcpy of every
 * item at enqueue (none for items by reference to other processes, and for
 * large ones to this process in step 1 instead); no collective. With f = 1
 * a round also costs the latency of the slowest in-neighbour; with f < 1
 * only that of the need-th fastest.
 * Any process count works: processes without blocks (or links) have no
 * messages and their rounds return at once.
 */
#include "engines/neighbor/neighbor_internal.h"

#include <math.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void bpc__neighbor_reclaim(bpc_neighbor_t *nb, int force)
{
  int j = 0;
  for (int i = 0; i < nb->nretired; i++) {
    bpc__neighbor_retired_t *r = &nb->retired[i];
    if (!force && nb->ex != NULL && bpc__exch_send_pending(nb->ex, r->rank, r->seq))
      nb->retired[j++] = *r;
    else
      bpc__pool_put(nb->ctx, r->buf, r->cap);
  }
  nb->nretired = j;
}

/* Room for this round's retired buffers (one per out-process), made
 * before any send: a buffer under a send is never given back early. */
static int reserve_retired(bpc_neighbor_t *nb)
{
  if (nb->nretired + nb->nout <= nb->capretired)
    return BPC_OK;
  int ncap = nb->capretired ? 2 * nb->capretired : 16;
  if (ncap < nb->nretired + nb->nout)
    ncap = nb->nretired + nb->nout;
  bpc__neighbor_retired_t *r = realloc(nb->retired, sizeof *r * (size_t)ncap);
  if (r == NULL)
    return bpc__err(nb->ctx, BPC_ENOMEM, "neighbour exchange: out of memory for send buffers");
  nb->retired = r;
  nb->capretired = ncap;
  return BPC_OK;
}

/* Keep a sent bundle's buffer until its send has completed (room reserved
 * by reserve_retired). */
static void retire(bpc_neighbor_t *nb, void *buf, size_t cap, int rank, int seq)
{
  bpc__neighbor_retired_t *e = &nb->retired[nb->nretired++];
  e->buf = buf;
  e->cap = cap;
  e->rank = rank;
  e->seq = seq;
}

static int push_msg(bpc_neighbor_t *nb, bpc__msg_t *m)
{
  if (nb->nmsgs == nb->capmsgs) {
    int ncap = nb->capmsgs ? 2 * nb->capmsgs : 16;
    bpc__msg_t **v = realloc(nb->msgs, sizeof *v * (size_t)ncap);
    if (v == NULL) {
      bpc__msg_release(nb->ex, m);
      return bpc__err(nb->ctx, BPC_ENOMEM, "neighbour exchange: out of memory for messages");
    }
    nb->msgs = v;
    nb->capmsgs = ncap;
  }
  nb->msgs[nb->nmsgs++] = m;
  return BPC_OK;
}

/* Take the parts by reference of in-process q's last bundle that have
 * arrived (its sender sent them with it, in order); counts them in *took. */
static void take_parts(bpc_neighbor_t *nb, int q, int *took)
{
  while (nb->ref_left[q] > 0) {
    bpc__msg_t *x = NULL;
    bpc__exch_take(nb->ex, nb->ctx->rank, nb->in_ranks[q], bpc__neighbor_ext_seq(nb->ext_next[q]),
                   &x);
    if (x == NULL)
      return;
    (*took)++;
    nb->ext_next[q]++;
    nb->msgs[nb->ref_slot[q]++] = x;
    nb->ref_left[q]--;
    nb->refs_missing--;
  }
}

/* Record bundle m (of in-process q) as taken in round r, with an empty
 * slot after it for each of its parts by reference. */
static int took_msg(bpc_neighbor_t *nb, int q, int r, bpc__msg_t *m)
{
  nb->next_seq[q]++;
  nb->bundles_recv++;
  if (m->seq < r)
    nb->bundles_late++;
  int k = bpc__neighbor_count_refs(m->data, m->bytes);
  int rc = push_msg(nb, m);
  nb->ref_slot[q] = nb->nmsgs;
  for (int i = 0; i < k && rc == BPC_OK; i++)
    rc = push_msg(nb, NULL);
  if (rc == BPC_OK) {
    nb->ref_left[q] = k;
    nb->refs_missing += k;
  }
  return rc;
}

/* Take every arrived message of rounds <= r, in round order per sender,
 * each bundle's parts before the sender's next bundle. */
static int take_available(bpc_neighbor_t *nb, int r, int *took)
{
  int rc = bpc__exch_progress(nb->ex);
  int me = nb->ctx->rank;
  for (int q = 0; q < nb->nin && rc == BPC_OK; q++) {
    take_parts(nb, q, took);
    while (nb->ref_left[q] == 0 && nb->next_seq[q] <= r && rc == BPC_OK) {
      bpc__msg_t *m = NULL;
      bpc__exch_take(nb->ex, me, nb->in_ranks[q], nb->next_seq[q], &m);
      if (m == NULL)
        break;
      rc = took_msg(nb, q, r, m);
      (*took)++;
      take_parts(nb, q, took);
    }
  }
  return rc;
}

static long long outstanding(const bpc_neighbor_t *nb, int r)
{
  long long o = 0;
  for (int q = 0; q < nb->nin; q++)
    o += (long long)r + 1 - nb->next_seq[q];
  return o;
}

/* Polling waits (partial synchrony, termination tests) back off: spin a
 * little, then yield the core, then sleep briefly, so that idle processes
 * leave the cores to busy ones when processes outnumber cores. */
static void neighbor_backoff(int idle)
{
  if (idle < 32)
    return;
  if (idle < 256) {
    sched_yield();
    return;
  }
  struct timespec ts = {0, idle < 1024 ? 5000 : 50000};
  nanosleep(&ts, NULL);
}

/* Step 2 of the round: wait by the synchrony fraction. */
static int neighbor_wait(bpc_neighbor_t *nb, int r, bpc__neighbor_wave_t *wave)
{
  const int E = nb->nin;
  if (E == 0)
    return BPC_OK;
  int need = (int)ceil(nb->synchrony * E - 1e-9);
  if (need < 1)
    need = 1;
  if (need > E)
    need = E;
  const long long allow = E - need;
  int rc = BPC_OK, idle = 0;
  for (;;) {
    int took = 0;
    rc = take_available(nb, r, &took);
    /* a round ends with every part of the bundles it took */
    if (rc != BPC_OK || (outstanding(nb, r) <= allow && nb->refs_missing == 0))
      break;
    if (wave != NULL) {
      int wrc = BPC_OK;
      if (bpc__neighbor_wave_test(wave, &wrc)) {
        rc = wrc;
        break;
      }
    }
    /* Fully synchronous rounds poll too, rather than sleeping in a blocking
     * MPI call per message: with 8 processes on 2 cores that measured 5-10 %
     * faster (doc/neighbor.md). They never sleep, only yield now and then;
     * partial ones back off further. */
    if (took > 0)
      idle = 0;
    else if (allow == 0 && wave == NULL) {
      if (++idle >= 1024) {
        sched_yield();
        idle = 0;
      }
    } else
      neighbor_backoff(++idle);
  }
  return rc;
}

int bpc__neighbor_fail(bpc_neighbor_t *nb, int rc)
{
  bpc_ctx_t *ctx = nb->ctx;
  if (rc == BPC_OK || nb->failed != BPC_OK) /* never the internal code outside */
    return rc == BPC__EPEER ? nb->failed : rc;
  int prank = -1, pcode = BPC_ESTATE;
  if (rc == BPC__EPEER) {
    if (nb->ex != NULL)
      bpc__exch_peer_failure(nb->ex, &prank, &pcode);
    rc = bpc__err(ctx, pcode, "neighbour exchange: rank %d failed with %s in a round (its "
                              "message says why); the neighbourhood can only be destroyed",
                  prank, bpc_err_name(pcode));
    nb->fail_followon = 1;
  } else if (nb->ex != NULL) {
    bpc__exch_abort(nb->ex, rc); /* its peers stop waiting for it */
  }
  nb->failed = rc;
  nb->fail_round = nb->round > 0 ? nb->round - 1 : 0;
  memcpy(nb->failmsg, ctx->errmsg, sizeof nb->failmsg);
  return rc;
}

void bpc__neighbor_keep_first(bpc_neighbor_t *nb, bpc__neighbor_first_t *f, int e, int from_comm)
{
  if (f->err != BPC_OK || e == BPC_OK)
    return;
  f->err = e;
  f->follow = from_comm && e == nb->failed && nb->fail_followon;
  memcpy(f->msg, nb->ctx->errmsg, sizeof f->msg);
}

int bpc__neighbor_agree_first(bpc_neighbor_t *nb, const bpc__neighbor_first_t *f,
                              void (*poll)(void *arg))
{
  if (f->err != BPC_OK)
    memcpy(nb->ctx->errmsg, f->msg, sizeof f->msg);
  return bpc__agree_ex(nb->ctx, f->err, f->follow, poll, nb);
}

int bpc__neighbor_failed_err(bpc_neighbor_t *nb, const char *who)
{
  return bpc__err(nb->ctx, BPC_ESTATE, "%s: the neighbourhood failed in round %d (%s); it can "
                                       "only be destroyed",
                  who, nb->fail_round, nb->failmsg);
}

int bpc__neighbor_round_comm(bpc_neighbor_t *nb, bpc__neighbor_wave_t *wave)
{
  if (nb->failed != BPC_OK || nb->round >= BPC__NB_MAX_ROUND) {
    if (wave != NULL)
      bpc__neighbor_wave_contribute(wave); /* the termination waves go on */
    if (nb->failed != BPC_OK)
      return bpc__neighbor_failed_err(nb, "neighbour exchange");
    /* 2^30 rounds without a drain: seqs would collide. The same round on
     * every process, nothing sent: the object stays whole */
    return bpc__err(nb->ctx, BPC_ERANGE,
                    "neighbour exchange: %d rounds since the last drain, the most one object "
                    "can run (destroy it, or end with bpc_neighbor_iterate, to start afresh)",
                    nb->round);
  }
  bpc__neighbor_call_t call = {nb, wave};
  return bpc__neighbor_fail(nb, nb->row->run(&call));
}

int bpc__neighbor_run_packed(void *callp)
{
  const bpc__neighbor_call_t *call = callp;
  bpc_neighbor_t *nb = call->nb;
  bpc__neighbor_wave_t *wave = call->wave;
  bpc_ctx_t *ctx = nb->ctx;
  int rc = BPC_OK;
  const int r = nb->round;
  bpc__neighbor_release_incoming(nb);

  /* 1. one bundle per out-process, empty ones too */
  rc = reserve_retired(nb);
  for (int i = 0; i < nb->nout && rc == BPC_OK; i++) {
    const void *bundle = NULL;
    size_t bytes = 0, cap = 0;
    void *buf = NULL;
    rc = bpc__neighbor_chan_finish(nb, &nb->chans[i], &bundle, &bytes, &buf, &cap);
    if (rc != BPC_OK) { /* nothing is sent in its place: the receiver waits for */
      bpc__pool_put(ctx, buf, cap); /* this rank's bundle and takes its abort */
      break;                        /* (bpc__neighbor_fail) instead */
    }
    bpc__neighbor_chan_t *c = &nb->chans[i];
    /* items by reference go as parts of the bundle's message, straight from
     * the caller's memory */
    const int nparts = c->next;
    for (int e = 0; e < nparts; e++)
      c->ext[e].seq = bpc__neighbor_ext_seq(c->ext_count++);
    int src = bpc__exch_send_parts(nb->ex, ctx->rank, c->rank, r, bundle, bytes, c->ext, nparts);
    if (src != BPC_OK && rc == BPC_OK)
      rc = src;
    nb->bundles_sent++;
    if (nparts > 0)
      nb->sent_refs = 1;
    c->next = 0;
    if (buf != NULL)
      retire(nb, buf, cap, nb->chans[i].rank, r);
  }
  /* the local bundle: no message at all; its items by reference are copied
   * now, while the messages above are on their way */
  {
    const void *bundle = NULL;
    size_t bytes = 0, cap = 0;
    void *buf = NULL;
    int frc = bpc__neighbor_chan_finish(nb, &nb->local, &bundle, &bytes, &buf, &cap);
    if (frc == BPC_OK)
      frc = bpc__neighbor_copy_local_refs(nb);
    nb->local.next = 0;
    if (frc != BPC_OK) {
      /* the local items are lost (reported) */
      if (rc == BPC_OK)
        rc = frc;
      bpc__pool_put(ctx, buf, cap);
      buf = NULL;
    }
    if (buf != NULL) {
      nb->lbuf = buf;
      nb->lcap = cap;
      nb->lbundle = (void *)bundle;
      nb->llen = bytes;
      bpc__stats_sent(ctx, bytes, 1);
      bpc__stats_recv(ctx, bytes, 1);
    }
  }
  nb->round = r + 1;
  nb->rounds_total++;
  if (wave != NULL)
    bpc__neighbor_wave_contribute(wave);
  if (rc != BPC_OK)
    return rc; /* the object fails (bpc__neighbor_fail): its peers stop waiting for it */

  /* 2. wait by the synchrony fraction */
  rc = neighbor_wait(nb, r, wave);
  if (rc != BPC_OK)
    return rc; /* the object fails; nothing is delivered, its message stays */

  /* 3. deliver; not when the iteration ends because a process failed: the
   * wait stopped with bundles maybe taken only in part, which the drain
   * finishes (nothing is delivered any more) */
  rc = wave != NULL && bpc__neighbor_wave_failed(wave) ? BPC_OK : bpc__neighbor_deliver(nb);
  if (rc != BPC_OK)
    return rc;
  if (nb->sent_refs) {
    /* the caller may change referenced data once this call returns */
    rc = bpc__exch_flush(nb->ex);
    if (rc != BPC_OK)
      return rc; /* the buffers stay until the exchange ends (destroy) */
    nb->sent_refs = 0;
    bpc__neighbor_reclaim(nb, 1);
  } else if (nb->nretired > 0) {
    rc = bpc__exch_progress(nb->ex);
    bpc__neighbor_reclaim(nb, 0);
  }
  return rc;
}

static int neighbor_exchange_entry(bpc_neighbor_t *nb)
{
  if (nb == NULL)
    return BPC_ENULL;
  bpc__stats_begin_call(nb->ctx, "neighbor");
  bpc__stats_set_round(nb->ctx, 0);
  return bpc__neighbor_round_comm(nb, NULL);
}

int bpc__neighbor_enter(bpc_neighbor_t *nb, bpc_blocks_t *blocks, bpc_neighbor_fn fn,
                        const char *who)
{
  int rc = BPC_OK;
  if (fn == NULL)
    rc = bpc__err(nb->ctx, BPC_ENULL, "%s: the callback is NULL", who);
  if (rc == BPC_OK && nb->failed != BPC_OK)
    rc = bpc__neighbor_failed_err(nb, who);
  if (rc == BPC_OK && blocks != NULL) {
    const bpc_assign_t *a = blocks->assign;
    int same = blocks->n == nb->nlocal && a != NULL && a->nlocal == nb->nlocal;
    for (int i = 0; same && i < nb->nlocal; i++)
      same = a->local[i] == nb->assign->local[i];
    if (!same)
      rc = bpc__err(nb->ctx, BPC_EINVAL,
                    "%s: the block store holds %d blocks on rank %d, not the %d blocks of the "
                    "neighbourhood (made from another assignment)",
                    who, blocks->n, nb->ctx->rank, nb->nlocal);
  }
  bpc__sig_t s;
  bpc__neighbor_sig(&s, who, nb->assign, &nb->type, nb->row->info.id, nb->max_rounds);
  /* whether any process runs below synchrony 1 (no extra collective): the
   * closing agreement of bpc_neighbor_round must then take messages */
  bpc__sig_max(&s, "partial synchrony", nb->synchrony < 1.0);
  long long vals[BPC__SIG_MAX];
  rc = bpc__agree_args_vals(nb->ctx, "neighbor", rc, &s, vals);
  nb->any_partial = rc == BPC_OK && vals[s.n - 1] != 0;
  return rc;
}

static int callback_error(bpc_neighbor_t *nb, const int *rcs);

int bpc__neighbor_callbacks(bpc_neighbor_t *nb, bpc_blocks_t *blocks, bpc_neighbor_fn fn,
                            void *user)
{
  const int n = nb->nlocal;
  int *rcs = nb->cb_rc, *more = nb->cb_more;
  void **data = blocks != NULL ? blocks->data : NULL;
#ifdef _OPENMP
  const int nt = nb->nthreads > 0 ? nb->nthreads : omp_get_max_threads();
  if (nt > 1 && n > 1) {
#pragma omp parallel for schedule(dynamic) num_threads(nt)
    for (int i = 0; i < n; i++) {
      more[i] = 0;
      rcs[i] = fn(data ? data[i] : NULL, nb->blocks[i].gid, nb, user, &more[i]);
    }
    return callback_error(nb, rcs);
  }
#endif
  for (int i = 0; i < n; i++) {
    more[i] = 0;
    rcs[i] = fn(data ? data[i] : NULL, nb->blocks[i].gid, nb, user, &more[i]);
  }
  return callback_error(nb, rcs);
}

/* First failing callback -> BPC_ECALLBACK with a message; BPC_OK if none. */
static int callback_error(bpc_neighbor_t *nb, const int *rcs)
{
  for (int i = 0; i < nb->nlocal; i++) {
    if (rcs[i] != 0) {
      int nfail = 0;
      for (int j = i; j < nb->nlocal; j++)
        nfail += rcs[j] != 0;
      return bpc__err(nb->ctx, BPC_ECALLBACK,
                      "neighbour callback for block %d returned %d (%d block(s) of rank %d failed "
                      "in this round)",
                      nb->blocks[i].gid, rcs[i], nfail, nb->ctx->rank);
    }
  }
  return BPC_OK;
}

static void round_poll(void *arg)
{
  bpc_neighbor_t *nb = arg;
  if (nb->ex != NULL)
    (void)bpc__exch_progress(nb->ex); /* a failure shows in the next round */
}

static int neighbor_round_entry(bpc_neighbor_t *nb, bpc_blocks_t *blocks, bpc_neighbor_fn fn, void *user)
{
  if (nb == NULL)
    return BPC_ENULL;
  int rc = bpc__neighbor_enter(nb, blocks, fn, "bpc_neighbor_round"); /* begins the record */
  if (rc != BPC_OK)
    return rc; /* the same code on every rank: no round anywhere */
  bpc__neighbor_first_t F;
  memset(&F, 0, sizeof F);
  bpc__neighbor_keep_first(nb, &F, bpc__neighbor_callbacks(nb, blocks, fn, user), 0);
  /* the round runs even after a callback failure, so no peer waits in vain
   * (a peer's failure it takes there must not replace the callback's
   * message) */
  bpc__neighbor_keep_first(nb, &F, bpc__neighbor_round_comm(nb, NULL), 1);
  /* with a process below synchrony 1 anywhere (agreed at the entry: the
   * same choice on every rank), agreed while taking messages: a process at
   * synchrony 1 flushes its items by reference before it gets here, and a
   * receiver that left the round early must take them meanwhile. Else the
   * plain agreement (the polling one measured 4-10% slower on small rounds).
   * A failure that only follows a peer's gives way to that peer's message */
  return bpc__neighbor_agree_first(nb, &F, nb->any_partial ? round_poll : NULL);
}

/* Wait for the next k parts by reference from in-process q and drop them. */
static int drop_parts(bpc_neighbor_t *nb, int q, int k)
{
  int rc = BPC_OK;
  for (int i = 0; i < k && rc == BPC_OK; i++) {
    bpc__msg_t *x = NULL;
    rc = bpc__exch_wait(nb->ex, nb->ctx->rank, nb->in_ranks[q],
                        bpc__neighbor_ext_seq(nb->ext_next[q]++), &x);
    bpc__msg_release(nb->ex, x);
  }
  return rc;
}

int bpc__neighbor_drain(bpc_neighbor_t *nb, long long *undelivered)
{
  *undelivered = 0;
  if (nb->ex == NULL || nb->failed != BPC_OK)
    return nb->failed; /* a failed object's messages go in bpc_neighbor_destroy */
  const int round = nb->round; /* for a failure's message */
  bpc_ctx_t *ctx = nb->ctx;
  const int me = ctx->rank;
  int rc = BPC_OK;
  /* items enqueued after the last round were never sent */
  for (int i = 0; i < nb->nout; i++)
    *undelivered += nb->chans[i].n;
  *undelivered += nb->local.n;
  nb->mark_val = (int64_t)nb->round;
  for (int i = 0; i < nb->nout; i++) {
    int src = bpc__exch_send(nb->ex, me, nb->chans[i].rank, BPC__NB_MARK_SEQ, &nb->mark_val,
                             sizeof nb->mark_val, 0);
    if (src != BPC_OK && rc == BPC_OK)
      rc = src;
  }
  for (int q = 0; q < nb->nin; q++) {
    bpc__msg_t *m = NULL;
    int64_t count = 0;
    int wrc = bpc__exch_wait(nb->ex, me, nb->in_ranks[q], BPC__NB_MARK_SEQ, &m);
    if (wrc == BPC_OK && (m == NULL || m->bytes != sizeof count))
      wrc = bpc__err(ctx, BPC_ETRUNC, "neighbour exchange: malformed drain marker from rank %d",
                     nb->in_ranks[q]);
    if (wrc == BPC_OK)
      memcpy(&count, m->data, sizeof count);
    bpc__msg_release(nb->ex, m);
    if (wrc != BPC_OK) {
      if (rc == BPC_OK)
        rc = wrc;
      continue;
    }
    /* parts still owed by the last bundle taken (only after a failed round),
     * then the bundles never taken and their parts */
    wrc = drop_parts(nb, q, nb->ref_left[q]);
    for (int64_t s = nb->next_seq[q]; s < count && wrc == BPC_OK; s++) {
      bpc__msg_t *b = NULL;
      wrc = bpc__exch_wait(nb->ex, me, nb->in_ranks[q], (int)s, &b);
      if (wrc == BPC_OK && b != NULL && b->bytes >= sizeof(uint64_t)) {
        uint64_t n = 0;
        memcpy(&n, b->data, sizeof n);
        *undelivered += (long long)n;
      }
      int k = wrc == BPC_OK ? bpc__neighbor_count_refs(b->data, b->bytes) : 0;
      bpc__msg_release(nb->ex, b);
      if (wrc == BPC_OK)
        wrc = drop_parts(nb, q, k);
    }
    if (wrc != BPC_OK && rc == BPC_OK)
      rc = wrc;
    nb->next_seq[q] = 0;
    nb->ext_next[q] = 0;
    nb->ref_left[q] = 0;
  }
  nb->refs_missing = 0;
  for (int i = 0; i < nb->nout; i++)
    nb->chans[i].ext_count = 0;
  nb->round = 0;
  int frc = bpc__exch_flush(nb->ex);
  if (rc == BPC_OK)
    rc = frc;
  bpc__neighbor_reclaim(nb, frc == BPC_OK);
  if (rc != BPC_OK)
    nb->round = round; /* the object fails: its message names the round */
  return bpc__neighbor_fail(nb, rc);
}

/* The public entry: the re-entrancy guard (bpc__enter) around the call. */
int bpc_neighbor_exchange(bpc_neighbor_t *nb)
{
  BPC__GUARDED_RETURN(nb != NULL ? nb->ctx : NULL, "bpc_neighbor_exchange",
      neighbor_exchange_entry(nb));
}

/* The public entry: the re-entrancy guard (bpc__enter) around the call. */
int bpc_neighbor_round(bpc_neighbor_t *nb, bpc_blocks_t *blocks, bpc_neighbor_fn fn, void *user)
{
  BPC__GUARDED_RETURN(nb != NULL ? nb->ctx : NULL, "bpc_neighbor_round",
      neighbor_round_entry(nb, blocks, fn, user));
}
