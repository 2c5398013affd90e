/*
 * lib/engines/neighbor/neighbor_iterate.c - the iterate-until-done driver
 * of the neighbour exchange and its global termination detection.
 *
 * Each round: callbacks for every local block (compute, dequeue, enqueue,
 * report whether work is left), then the round of neighbor_round.c. No
 * barrier per round: processes run rounds at the pace of their neighbours
 * (and of the synchrony fraction).
 *
 * Termination detection (counting with a double check, in the manner of
 * Mattern's four-counter method), with nonblocking collectives:
 *  - every process counts S (items its blocks enqueued) and R (items
 *    delivered to its blocks); both only grow;
 *  - a "wave" is one non-blocking all-reduction (SUM, bpc__iallreduce_ll)
 *    of (S, R, busy blocks, failed),
 *    contributed by each process at the same point of a round: after the
 *    callbacks (which consumed everything delivered before) and the sends,
 *    before the wait. A process starts a new wave only after its previous
 *    one completed, and tests the one in flight while it waits, so waves
 *    overlap the rounds and nobody blocks on them;
 *  - the iteration ends when two consecutive waves both report no busy block
 *    and the same sums with S == R. Because every process's S and R only
 *    grow, equal sums mean no process sent or received anything between its
 *    two contributions. Take the instant T after the last contribution to
 *    the first wave and before the first contribution to the second (it
 *    exists: a process contributes to wave k+1 only after wave k completed,
 *    which needs every contribution to wave k). At T the counters are those
 *    of both waves, so S == R: every item sent has been delivered; every
 *    process was idle at its first contribution (no busy block, everything
 *    delivered before consumed), received nothing since, so stays idle (the
 *    callback contract: a block that reports no work and receives nothing
 *    does not enqueue). Nothing can happen after T: the computation has
 *    ended. Every process sees the same sums, so all decide in the same wave;
 *  - a failure (callback, enqueue, comm) is a nonzero "failed" sum: every
 *    process stops at that wave, and the error is agreed at the end.
 * After the decision, processes have run different numbers of rounds; the
 * drain (neighbor_round.c) exchanges round counts with neighbours and takes
 * the remaining (empty) messages, so the object can be used again.
 * Cost: one nonblocking all-reduction of 4 integers in flight at a time,
 * log P latency each; termination is detected at most about three wave
 * times after the computation ends. On one process (serial contexts too)
 * the in-process reduction completes at once: the waves cost nothing.
 */
#include "engines/neighbor/neighbor_internal.h"

#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct bpc__neighbor_wave {
  bpc_neighbor_t *nb;
  bpc__coll_req_t req; /* the reduction in flight (req.active) */
  long long in[4], out[4]; /* sent, delivered, busy blocks, failed processes */
  int have_prev;           /* the previous wave was quiet (busy 0, S == R) */
  long long prev_sent, prev_recv;
  int decided; /* the iteration ends */
  int failed;  /* ... because some process failed */
  /* this process's state for its next contribution, set by the driver */
  long long busy;
  int err;
};

static void evaluate(bpc__neighbor_wave_t *w)
{
  w->nb->waves++;
  if (w->out[3] > 0) {
    w->decided = 1;
    w->failed = 1;
    return;
  }
  int quiet = w->out[2] == 0 && w->out[0] == w->out[1];
  if (quiet && w->have_prev && w->prev_sent == w->out[0] && w->prev_recv == w->out[1]) {
    w->decided = 1;
    return;
  }
  w->have_prev = quiet;
  w->prev_sent = w->out[0];
  w->prev_recv = w->out[1];
}

void bpc__neighbor_wave_contribute(bpc__neighbor_wave_t *w)
{
  if (w->req.active || w->decided)
    return;
  bpc_neighbor_t *nb = w->nb;
  bpc_ctx_t *ctx = nb->ctx;
  long long s;
#pragma omp atomic read
  s = nb->items_sent;
  w->in[0] = s;
  w->in[1] = nb->items_recv;
  w->in[2] = w->busy;
  w->in[3] = w->err ? 1 : 0;
  if (bpc__iallreduce_ll(ctx, w->in, w->out, 4, BPC__RED_SUM, &w->req) != BPC_OK) {
    /* nothing sensible is left: stop here (peers may not notice) */
    w->req.active = 0;
    w->decided = 1;
    w->failed = 1;
  }
}

int bpc__neighbor_wave_test(bpc__neighbor_wave_t *w, int *rc)
{
  *rc = BPC_OK;
  if (w->decided)
    return 1;
  if (!w->req.active)
    return 0;
  int done = 0;
  int trc = bpc__coll_test(w->nb->ctx, &w->req, &done);
  if (trc != BPC_OK) {
    *rc = trc;
    w->req.active = 0; /* a failed request is not waited for */
    w->decided = 1;
    w->failed = 1;
    return 1;
  }
  if (!done)
    return 0;
  evaluate(w);
  return w->decided;
}

int bpc__neighbor_wave_failed(const bpc__neighbor_wave_t *w) { return w->decided && w->failed; }

static int neighbor_iterate_entry(bpc_neighbor_t *nb, bpc_blocks_t *blocks, bpc_neighbor_fn fn,
                                  void *user, long long *rounds)
{
  if (nb == NULL)
    return BPC_ENULL;
  bpc_ctx_t *ctx = nb->ctx;
  long long r = 0;
  bpc__neighbor_wave_t w;
  memset(&w, 0, sizeof w);
  w.nb = nb;
  w.req = (bpc__coll_req_t)BPC__COLL_REQ_INIT;
  if (rounds != NULL)
    *rounds = 0;

  /* arguments: agreed before any message */
  int rc = bpc__neighbor_enter(nb, blocks, fn, "bpc_neighbor_iterate"); /* begins the record */
  if (rc != BPC_OK)
    goto cleanup;

  bpc__neighbor_first_t F; /* F.err: the call's first error */
  memset(&F, 0, sizeof F);
  int idle_rounds = 0;
  for (;;) {
    long long busy = 0, s0, r0 = nb->items_recv;
#pragma omp atomic read
    s0 = nb->items_sent;
    if (F.err == BPC_OK && nb->nlocal > 0) {
      bpc__neighbor_keep_first(nb, &F, bpc__neighbor_callbacks(nb, blocks, fn, user), 0);
      for (int i = 0; i < nb->nlocal && F.err == BPC_OK; i++)
        busy += nb->cb_more[i] != 0;
    }
    w.busy = F.err == BPC_OK ? busy : 0;
    w.err = F.err != BPC_OK;
    bpc__stats_set_round(ctx, r < INT_MAX ? (int)r : INT_MAX);
    bpc__neighbor_keep_first(nb, &F, bpc__neighbor_round_comm(nb, &w), 1);
    r++;
    if (F.err == BPC_OK && nb->max_rounds > 0 && r >= nb->max_rounds)
      bpc__neighbor_keep_first(
          nb, &F,
          bpc__err(ctx, BPC_ERANGE,
                   "bpc_neighbor_iterate: rank %d reached max_rounds (%lld) before the "
                   "computation ended",
                   ctx->rank, nb->max_rounds),
          0);
    int wrc = BPC_OK;
    if (bpc__neighbor_wave_test(&w, &wrc)) {
      bpc__neighbor_keep_first(nb, &F, wrc, 0);
      break;
    }
    long long s1;
#pragma omp atomic read
    s1 = nb->items_sent;
    if (busy == 0 && s1 == s0 && nb->items_recv == r0) {
      /* an idle round: let busier processes have the core */
      if (++idle_rounds < 64) {
        sched_yield();
      } else {
        struct timespec ts = {0, idle_rounds < 512 ? 5000 : 50000};
        nanosleep(&ts, NULL);
      }
    } else {
      idle_rounds = 0;
    }
  }

  /* The decision is global, taken when a wave completed, and no wave starts
   * after it: nothing is in flight (finish one anyway, should that change) */
  if (w.req.active)
    bpc__neighbor_keep_first(nb, &F, bpc__coll_cancel(ctx, &w.req), 0);
  /* Finish the object's rounds with the drain. */
  if (F.err == BPC_OK && !w.failed && nb->nents > 0)
    bpc__neighbor_keep_first(
        nb, &F,
        bpc__err(ctx, BPC_ESTATE,
                 "bpc_neighbor_iterate: %d item(s) delivered after termination was "
                 "detected (a callback enqueued without work or input?)",
                 nb->nents),
        0);
  bpc__neighbor_release_incoming(nb);
  long long undelivered = 0;
  bpc__neighbor_keep_first(nb, &F, bpc__neighbor_drain(nb, &undelivered), 1);
  if (F.err == BPC_OK && !w.failed && undelivered > 0)
    bpc__neighbor_keep_first(
        nb, &F,
        bpc__err(ctx, BPC_ESTATE,
                 "bpc_neighbor_iterate: %lld item(s) still in flight after termination "
                 "was detected (a callback enqueued without work or input?)",
                 undelivered),
        0);
  /* (the rounds after the first error, run until the wave decided, may
   * have recorded others over its message) */
  rc = bpc__neighbor_agree_first(nb, &F, NULL);

cleanup:
  if (rounds != NULL)
    *rounds = r;
  return rc;
}

/* The public entry: the re-entrancy guard (bpc__enter) around the call. */
int bpc_neighbor_iterate(bpc_neighbor_t *nb, bpc_blocks_t *blocks, bpc_neighbor_fn fn,
                         void *user, long long *rounds)
{
  BPC__GUARDED_RETURN(nb != NULL ? nb->ctx : NULL, "bpc_neighbor_iterate",
      neighbor_iterate_entry(nb, blocks, fn, user, rounds));
}
