/*
 * lib/engines/scan/scan_flow.c - the overlapped (dataflow) driver of the
 * scan: every block moves through its steps on its own (doc/scan.md
 * "Overlap").
 */
#include "engines/scan/scan_internal.h"

#include <omp.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "comm/coll.h"
#include "decomp/decomp.h"

/*
 * The overlapped driver (doc/scan.md "Overlap"). Every block moves on its
 * own: local scan -> global rounds 0.. -> (successor message) ->
 * propagation. The master thread (thread 0, the only one that calls the
 * exchange) keeps each block's round: when a block reaches round r it
 * posts the block's sends of round r (its value before the round), then
 * takes the round's message once it has arrived (bpc__exch_take, never a
 * blocking wait) and applies the step; the operator work (local scans,
 * global combines, propagations) are items that any thread runs, global
 * combines first (they are on the critical path), then local scans, then
 * propagations. A block has at most one item queued or running, so the
 * values it reads are never written meanwhile. The master runs items too
 * and, after each operator call of a local scan or propagation it runs,
 * makes progress on the exchange and runs the queued global combines. The
 * association is the schedule's: what a block combines in round r is the
 * value its source had before round r, whatever the timing.
 */

enum { FQ_COMBINE = 0, FQ_LOCAL = 1, FQ_PROP = 2, FQ_N = 3 };
enum { PH_LOCAL = 0, PH_GLOBAL = 1, PH_PROP = 2, PH_DONE = 3 };

struct scan_flow {
  const bpc__scan_sched_t *sched;
  int n, P, nr, total_rounds;
  /* master thread only */
  int *phase, *round, *sent;
  long *dbeg, *dcur;  /* block l's sends: entries dbeg[l]..dbeg[l+1]-1, next dcur[l] (a
                       * process's sends may pass INT_MAX: about (P/2) log2 P for
                       * sklansky on one process) */
  int *dround, *ddst; /* an entry's round and destination position */
  int *dlocal;        /* an entry's destination block if it is local, else -1 */
  int *wait, nwait;   /* blocks in the global stage with no item */
  int *wpos;          /* a block's place in wait, or -1 */
  int *hot, nhot;     /* local blocks a message was just sent to */
  int *ishot;
  int *drained;
  int ndone, hook_ops, in_hook, rc;
  /* shared: under critical(bpc_scan_flow) */
  int *q[FQ_N];
  long qhead[FQ_N], qtail[FQ_N]; /* FIFOs of capacity n (a block is in one at most once) */
  int *fin, nfin;                /* blocks whose item finished */
  int stop;
};

static void flow_push(scan_flow_t *F, int which, int l)
{
#pragma omp critical(bpc_scan_flow)
  F->q[which][F->qtail[which]++ % F->n] = l;
}

/* The first queued item among the queues 0..upto: its queue, or -1 (-2
 * once the master stopped). */
static int flow_pop(scan_flow_t *F, int upto, int *l)
{
  int w = -1;
#pragma omp critical(bpc_scan_flow)
  {
    if (F->stop)
      w = -2;
    for (int i = 0; i <= upto && w == -1; i++)
      if (F->qhead[i] < F->qtail[i]) {
        *l = F->q[i][F->qhead[i]++ % F->n];
        w = i;
      }
  }
  return w;
}

static void flow_exec(scan_state_t *S, int which, int l)
{
  scan_flow_t *F = S->flow;
  if (which == FQ_LOCAL)
    bpc__scan_local_block(S, l);
  else if (which == FQ_COMBINE)
    bpc__scan_apply_step(S, l);
  else
    bpc__scan_propagate_block(S, l);
#pragma omp critical(bpc_scan_flow)
  F->fin[F->nfin++] = l;
}

/* Master: move block l as far as it goes without waiting. Returns 1 while
 * it waits for a message, 0 once an item of its is queued. */
static int flow_drive(scan_state_t *S, int l)
{
  bpc__scan_call_t *C = S->C;
  scan_flow_t *F = S->flow;
  const int gid = C->assign->local[l];
  const int p = C->pos_of[gid];
  int rc = BPC_OK;
  while (rc == BPC_OK) {
    int r = F->round[l];
    if (F->sched->sends != NULL && r < F->nr && !F->sent[l]) {
      /* past the rounds in which this position does nothing (up to the
       * shift round, never beyond) */
      int ar[2] = {0, F->nr};
      F->sched->sends(F->P, p, ar);
      const int to = r < ar[0] ? ar[0] : r >= ar[1] ? F->nr : r;
      if (to != r)
        F->round[l] = r = to;
    }
    bpc__msg_t *m = NULL;
    if (r == F->total_rounds) { /* the global stage is done */
      if (S->succ) {
        if (!F->sent[l] && p > 0)
          rc = bpc__scan_send_val(S, gid, C->order[p - 1], r, &S->tot[l]);
        F->sent[l] = 1;
        if (rc == BPC_OK && p + 1 < F->P) {
          bpc__exch_take(C->ex, gid, C->order[p + 1], r, &m);
          if (m == NULL)
            return 1;
          rc = bpc__scan_take_succ(S, l, m);
        }
      }
      if (rc == BPC_OK) {
        F->phase[l] = PH_PROP;
        flow_push(F, FQ_PROP, l);
        return 0;
      }
      break;
    }
    if (!F->sent[l]) {
      if (r == F->nr && S->shortcut)
        bpc__scan_keep_incl(S, l);
      for (; F->dcur[l] < F->dbeg[l + 1] && F->dround[F->dcur[l]] == r && rc == BPC_OK;
           F->dcur[l]++) {
        const long e = F->dcur[l];
        const int dl = F->dlocal[e];
        rc = bpc__scan_send_val(S, gid, C->order[F->ddst[e]], r, &S->tot[l]);
        if (dl >= 0 && !F->ishot[dl]) { /* arrived: look at it soon */
          F->ishot[dl] = 1;
          F->hot[F->nhot++] = dl;
        }
      }
      F->sent[l] = 1;
      if (rc != BPC_OK)
        break;
    }
    bpc__scan_step_t k;
    const int src = bpc__scan_round_src(F->sched, F->P, F->nr, r, p, &k);
    S->kinds[l] = (int)k;
    if (src >= 0) {
      bpc__exch_take(C->ex, gid, C->order[src], r, &m);
      if (m == NULL)
        return 1;
      if ((rc = bpc__scan_take_val(S, m, &S->got[l])) != BPC_OK)
        break;
      if (k == BPC__SCAN_LEFT || k == BPC__SCAN_RIGHT) {
        flow_push(F, FQ_COMBINE, l);
        return 0;
      }
    }
    bpc__scan_apply_step(S, l); /* TAKE, CLEAR or nothing */
    F->round[l]++;
    F->sent[l] = 0;
  }
  F->rc = rc;
  return 1;
}

/* Master: drive block l and keep the wait list (O(1)). */
static void flow_step(scan_state_t *S, int l)
{
  scan_flow_t *F = S->flow;
  const int waits = flow_drive(S, l);
  if (waits && F->wpos[l] < 0) {
    F->wpos[l] = F->nwait;
    F->wait[F->nwait++] = l;
  } else if (!waits && F->wpos[l] >= 0) {
    const int i = F->wpos[l], last = F->wait[--F->nwait];
    F->wait[i] = last;
    F->wpos[last] = i;
    F->wpos[l] = -1;
  }
}

/* Master: drive the waiting blocks a local message was sent to. */
static void flow_hot(scan_state_t *S)
{
  scan_flow_t *F = S->flow;
  while (F->nhot > 0 && F->rc == BPC_OK) {
    const int l = F->hot[--F->nhot];
    F->ishot[l] = 0;
    if (F->wpos[l] >= 0)
      flow_step(S, l);
  }
}

/* Master: take the finished items (drive those blocks), make progress,
 * drive the blocks a local message was sent to and, when `full`, every
 * waiting block (a remote message may have arrived for any: a sweep costs
 * one bpc__exch_take per waiting block, so callers sweep every
 * 1 + nwait/8 items or operator calls, and whenever idle). */
static void flow_poll(scan_state_t *S, int full)
{
  scan_flow_t *F = S->flow;
  int nd = 0;
#pragma omp critical(bpc_scan_flow)
  {
    nd = F->nfin;
    memcpy(F->drained, F->fin, sizeof(int) * (size_t)nd);
    F->nfin = 0;
  }
  for (int i = 0; i < nd; i++) {
    const int l = F->drained[i];
    if (F->phase[l] == PH_PROP) {
      F->phase[l] = PH_DONE;
      F->ndone++;
      continue;
    }
    if (F->phase[l] == PH_LOCAL) { /* enters round 0 */
      F->phase[l] = PH_GLOBAL;
      F->round[l] = 0;
    } else { /* a combine finished its round */
      F->round[l]++;
    }
    F->sent[l] = 0;
    if (F->rc == BPC_OK)
      flow_step(S, l);
  }
  if (F->rc == BPC_OK)
    F->rc = bpc__exch_progress(S->C->ex);
  flow_hot(S);
  for (int i = 0; full && i < F->nwait && F->rc == BPC_OK;) {
    const int l = F->wait[i];
    flow_step(S, l);
    if (F->wpos[l] >= 0) /* still waiting (else wait[i] is another block) */
      i++;
  }
  flow_hot(S);
  /* what this poll sent leaves now (bundles), not at the next poll */
  if (F->rc == BPC_OK)
    F->rc = bpc__exch_push(S->C->ex);
}

/* Whether the master sweeps all waiting blocks now: once per 1 + nwait/8
 * items or operator calls (counted in hook_ops). */
static int flow_sweep_due(scan_flow_t *F)
{
  if (++F->hook_ops < 1 + F->nwait / 8)
    return 0;
  F->hook_ops = 0;
  return 1;
}

/* After an operator call of a local scan or propagation: on the master,
 * poll and run the queued global combines. */
void bpc__scan_flow_hook(scan_state_t *S)
{
  scan_flow_t *F = S->flow;
  if (F == NULL || omp_get_thread_num() != 0 || F->in_hook)
    return;
  F->in_hook = 1;
  int l;
  flow_poll(S, flow_sweep_due(F));
  while (F->rc == BPC_OK && flow_pop(F, FQ_COMBINE, &l) == FQ_COMBINE) {
    flow_exec(S, FQ_COMBINE, l);
    flow_poll(S, 0);
  }
  F->in_hook = 0;
}

static void flow_master(scan_state_t *S)
{
  scan_flow_t *F = S->flow;
  int idle = 0, full = 1, l;
  while (F->rc == BPC_OK && F->ndone < F->n) {
    flow_poll(S, full);
    if (F->rc != BPC_OK)
      break;
    const int w = flow_pop(F, FQ_N - 1, &l);
    full = w < 0 || flow_sweep_due(F);
    if (w >= 0) {
      flow_exec(S, w, l);
      idle = 0;
    } else if (++idle > 64) { /* let an oversubscribed core go to another rank */
      sched_yield();
      idle = 0;
    }
  }
#pragma omp critical(bpc_scan_flow)
  F->stop = 1;
}

static void flow_worker(scan_state_t *S)
{
  int l, w;
  while ((w = flow_pop(S->flow, FQ_N - 1, &l)) != -2) {
    if (w >= 0)
      flow_exec(S, w, l);
    else
      sched_yield();
  }
}

int bpc__scan_run_flow(scan_state_t *S, const bpc__scan_sched_t *sched)
{
  bpc__scan_call_t *C = S->C;
  scan_flow_t F;
  memset(&F, 0, sizeof F);
  const int n = C->assign->nlocal, P = C->nblocks;
  const int *gids = C->assign->local;
  const size_t nn = (size_t)(n > 0 ? n : 1);
  F.sched = sched;
  F.n = n;
  F.P = P;
  F.nr = sched->nrounds(P);
  F.total_rounds = F.nr + (sched->exclusive_out ? 0 : 1);
  int **arrays[] = {&F.phase, &F.round,   &F.sent, &F.wait, &F.wpos, &F.hot,
                    &F.ishot, &F.drained, &F.fin,  &F.q[0], &F.q[1], &F.q[2]};
  int rc = BPC_OK;
  for (size_t i = 0; i < sizeof arrays / sizeof *arrays; i++)
    if ((*arrays[i] = calloc(nn, sizeof(int))) == NULL)
      rc = BPC_ENOMEM;
  F.dbeg = calloc(nn + 1, sizeof(long));
  F.dcur = calloc(nn, sizeof(long));
  if (F.dcur == NULL)
    rc = BPC_ENOMEM;
  /* this process's sends, per source block in round order (the same
   * walk over positions as the lock-step rounds) */
  long nsend = 0;
  for (int pass = 0; pass < 2 && rc == BPC_OK && F.dbeg != NULL; pass++) {
    if (pass == 1) {
      for (int l = 0; l < n; l++)
        F.dbeg[l + 1] += F.dbeg[l];
      nsend = F.dbeg[n];
      F.dround = malloc(sizeof(int) * (size_t)(nsend > 0 ? nsend : 1));
      F.ddst = malloc(sizeof(int) * (size_t)(nsend > 0 ? nsend : 1));
      F.dlocal = malloc(sizeof(int) * (size_t)(nsend > 0 ? nsend : 1));
      if (F.dround == NULL || F.ddst == NULL || F.dlocal == NULL)
        break;
      memcpy(F.dcur, F.dbeg, sizeof(long) * (size_t)n);
    }
    for (int li = 0; li < n; li++) {
      const int s = C->pos_of[gids[li]];
      int sr[2] = {0, F.nr};
      if (sched->sends != NULL)
        sched->sends(P, s, sr);
      for (int r = sr[0] > 0 ? sr[0] : 0; r < F.total_rounds;
           r = r + 1 < sr[1] || r >= F.nr ? r + 1 : F.nr) { /* then the shift round, if any */
        int c[4];
        bpc__scan_round_dests(sched, P, F.nr, r, s, c);
        for (int h = 0; h < 4; h += 2)
          for (int q = c[h]; q < c[h + 1]; q++) {
            bpc__scan_step_t k;
            if (bpc__scan_round_src(sched, P, F.nr, r, q, &k) != s)
              continue;
            if (pass == 0) {
              F.dbeg[li + 1]++;
            } else {
              F.dround[F.dcur[li]] = r;
              F.dlocal[F.dcur[li]] = bpc__assign_local_index(C->assign, C->order[q]);
              F.ddst[F.dcur[li]++] = q;
            }
          }
      }
    }
  }
  if (F.dbeg == NULL || (rc == BPC_OK && (F.dround == NULL || F.ddst == NULL || F.dlocal == NULL)))
    rc = BPC_ENOMEM;
  if (rc == BPC_OK) {
    memcpy(F.dcur, F.dbeg, sizeof(long) * (size_t)n);
    for (int l = 0; l < n; l++) {
      F.q[FQ_LOCAL][l] = l;
      F.wpos[l] = -1;
    }
    F.qtail[FQ_LOCAL] = n;
    S->flow = &F;
    /* one thread when there is a single block: its work is a chain (and
     * then no team at all: the master alone, outside any region) */
    if (n > 1 && C->nthreads > 1) {
#pragma omp parallel num_threads(C->nthreads)
      {
        if (omp_get_thread_num() == 0)
          flow_master(S);
        else
          flow_worker(S);
      }
    } else {
      flow_master(S);
    }
    S->flow = NULL;
    rc = F.rc;
  }
  for (size_t i = 0; i < sizeof arrays / sizeof *arrays; i++)
    free(*arrays[i]);
  free(F.dbeg);
  free(F.dcur);
  free(F.dround);
  free(F.ddst);
  free(F.dlocal);
  int rc2 = bpc__exch_flush(C->ex);
  return rc != BPC_OK ? rc : rc2;
}
