/*
 * lib/engines/scan/scan_steps.c - the steps every block goes through (local
 * scan, a global round's send and step, the successor message,
 * propagation), the lock-step driver that runs them round by round over all
 * blocks, and bpc__scan_run, which sets up a call's state and runs the
 * dataflow driver (scan_flow.c) or the lock-step one.
 */
#include "engines/scan/scan_internal.h"

#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "comm/coll.h"
#include "decomp/decomp.h"

/* (1) Block l's local inclusive scan into s[l], its total into tot[l]
 * (reduce-then-scan, Algorithm 8: a reduction, no values kept). */
void bpc__scan_local_block(scan_state_t *S, int l)
{
  bpc__scan_call_t *C = S->C;
  const size_t c = C->in[l].count;
  if (c == 0)
    return;
  bpc__scan_val_t *sl = calloc(S->rts ? 1 : c, sizeof *sl);
  S->s[l] = sl;
  if (sl == NULL) {
    bpc__scan_fail(S->C, BPC_ENOMEM);
    return;
  }
  bpc__scan_val_t x0 = bpc__scan_in_item(C, l, 0);
  int r = bpc__scan_val_copy(S, &x0, &sl[0]);
  if (r != BPC_OK)
    bpc__scan_fail(S->C, r);
  for (size_t i = 1; i < c; i++) {
    bpc__scan_val_t xi = bpc__scan_in_item(C, l, i);
    if (S->rts) {
      bpc__scan_val_t t;
      bpc__scan_combine_ref(S, &sl[0], &xi, &t, 0);
      bpc__scan_val_free(C, &sl[0]);
      sl[0] = t;
    } else {
      bpc__scan_combine_ref(S, &sl[i - 1], &xi, &sl[i], 0);
    }
    bpc__scan_flow_hook(S);
  }
  if (S->rts) {
    S->tot[l] = sl[0];
    sl[0].v = NULL;
    sl[0].present = 0;
    return;
  }
  r = bpc__scan_val_copy(S, &sl[c - 1], &S->tot[l]);
  if (r != BPC_OK)
    bpc__scan_fail(S->C, r);
}

/* (3) Propagate block l's exclusive prefix tot[l] into its results. */
void bpc__scan_propagate_block(scan_state_t *S, int l)
{
  bpc__scan_call_t *C = S->C;
  const size_t c = C->in[l].count;
  const size_t es = C->type->elem_size;
  const bpc__scan_val_t *E = &S->tot[l];
  long long dmax = 0;
  bpc__scan_val_t run = {NULL, 0, 0}; /* reduce-then-scan: running value */
  for (size_t i = 0; i < c; i++) {
    bpc__scan_val_t res = {NULL, 0, 0};
    int first = 0; /* the exclusive result of the very first item */
    if (S->rts) {
      /* Algorithm 8: run = E op x_0 op ... op x_i, sequentially */
      const bpc__scan_val_t *prev = i == 0 ? E : &run;
      int r = BPC_OK;
      if (C->mode == BPC_SCAN_EXCLUSIVE) {
        if (prev->present)
          r = bpc__scan_val_copy(S, prev, &res);
        else
          first = 1;
      }
      bpc__scan_val_t nxt = {NULL, 0, 0};
      if (C->mode == BPC_SCAN_INCLUSIVE || i + 1 < c) {
        bpc__scan_val_t xi = bpc__scan_in_item(C, l, i);
        bpc__scan_combine_ref(S, prev, &xi, &nxt, 0);
      }
      if (C->mode == BPC_SCAN_INCLUSIVE)
        r = bpc__scan_val_copy(S, &nxt, &res);
      if (r != BPC_OK)
        bpc__scan_fail(S->C, r);
      bpc__scan_val_free(C, &run);
      run = nxt;
    } else if ((S->shortcut || S->succ) && i == c - 1 && S->incl[l].present) {
      /* Algorithm 9: the global inclusive prefix; 10: the successor's
       * exclusive one (the same value) */
      res = S->incl[l];
      S->incl[l].v = NULL;
      S->incl[l].present = 0;
    } else if (C->mode == BPC_SCAN_INCLUSIVE) {
      bpc__scan_combine_ref(S, E, &S->s[l][i], &res, 0);
    } else if (i > 0) {
      bpc__scan_combine_ref(S, E, &S->s[l][i - 1], &res, 0);
    } else if (E->present) {
      int r = bpc__scan_val_copy(S, E, &res);
      if (r != BPC_OK)
        bpc__scan_fail(S->C, r);
    } else {
      first = 1;
    }
    if (first && C->op->identity != NULL) {
      int r = bpc__scan_item_copy(S, C->op->identity, &res.v);
      if (r != BPC_OK)
        bpc__scan_fail(S->C, r);
      else
        res.present = 1;
    } else if (first) {
#pragma omp critical(bpc_scan_absent)
      {
        C->absent_gid = C->assign->local[l];
        C->absent_index = 0;
      }
    }
    if (res.depth > dmax)
      dmax = res.depth;
    if (C->type->kind == BPC_TYPE_CONTIGUOUS) {
      if (res.present)
        memcpy((char *)C->out[l].data + i * es, res.v, es);
      free(res.v);
    } else {
      ((void **)C->out[l].data)[i] = res.present ? res.v : NULL;
    }
    bpc__scan_flow_hook(S);
  }
  bpc__scan_val_free(C, &run);
  C->out[l].count = c;
#pragma omp critical(bpc_scan_depth)
  if (dmax > C->depth)
    C->depth = dmax;
}

/* Position p's step in round r of the global stage; round nr is the
 * runner's shift round (p takes p - 1's value, position 0 clears). Returns
 * the source position, or -1 when nothing arrives (*k NONE, or CLEAR). */
int bpc__scan_round_src(const bpc__scan_sched_t *sched, int P, int nr, int r, int p,
                        bpc__scan_step_t *k)
{
  int src;
  *k = BPC__SCAN_NONE;
  if (r == nr) {
    src = p - 1;
    *k = p > 0 ? BPC__SCAN_TAKE : BPC__SCAN_CLEAR;
  } else {
    src = sched->step(P, r, p, k);
  }
  if (*k == BPC__SCAN_CLEAR)
    return -1;
  if (src < 0)
    *k = BPC__SCAN_NONE;
  return *k == BPC__SCAN_NONE ? -1 : src;
}

/* The positions that may receive from position s in round r (the shift
 * round nr: s + 1), as up to two ascending, disjoint ranges [c[0], c[1])
 * and [c[2], c[3]) within [0, P): a superset, the caller keeps those whose
 * bpc__scan_round_src is s. */
void bpc__scan_round_dests(const bpc__scan_sched_t *sched, int P, int nr, int r, int s, int c[4])
{
  if (r == nr) {
    c[0] = bpc__scan_clamp((long long)s + 1, P);
    c[1] = bpc__scan_clamp((long long)s + 2, P);
    c[2] = c[3] = 0;
  } else if (sched->recvs != NULL) {
    sched->recvs(P, r, s, c);
  } else {
    c[0] = 0;
    c[1] = P;
    c[2] = c[3] = 0;
  }
  /* bounds in [0, P]: the schedules clamp (test_schedule_bounds) */
  if (c[2] >= c[3]) {
    c[2] = c[3] = 0;
  } else if (c[0] >= c[1]) {
    c[0] = c[2];
    c[1] = c[3];
    c[2] = c[3] = 0;
  } else if (c[2] <= c[1] && c[3] >= c[0]) { /* overlapping or touching: one */
    c[0] = c[0] < c[2] ? c[0] : c[2];
    c[1] = c[1] > c[3] ? c[1] : c[3];
    c[2] = c[3] = 0;
  } else if (c[2] < c[0]) { /* ascending */
    int t0 = c[0], t1 = c[1];
    c[0] = c[2];
    c[1] = c[3];
    c[2] = t0;
    c[3] = t1;
  }
}

/* Block l's step of the round with the value got[l] (kinds[l]). */
void bpc__scan_apply_step(scan_state_t *S, int l)
{
  bpc__scan_val_t nv = {NULL, 0, 0};
  switch (S->kinds[l]) {
  case BPC__SCAN_LEFT:
    bpc__scan_combine_ref(S, &S->got[l], &S->tot[l], &nv, 1);
    break;
  case BPC__SCAN_RIGHT:
    bpc__scan_combine_ref(S, &S->tot[l], &S->got[l], &nv, 1);
    break;
  case BPC__SCAN_TAKE:
    nv = S->got[l];
    S->got[l].v = NULL;
    S->got[l].present = 0;
    break;
  case BPC__SCAN_CLEAR:
    break;
  default:
    return;
  }
  bpc__scan_val_free(S->C, &S->got[l]);
  bpc__scan_val_free(S->C, &S->tot[l]);
  S->tot[l] = nv;
}

/* Before the shift round: keep block l's inclusive prefix (Algorithm 9). */
void bpc__scan_keep_incl(scan_state_t *S, int l)
{
  if (S->C->in[l].count == 0)
    return;
  int r = bpc__scan_val_copy(S, &S->tot[l], &S->incl[l]);
  if (r != BPC_OK)
    bpc__scan_fail(S->C, r);
}

/* The successor's message into incl[l] (an empty block drops it). */
int bpc__scan_take_succ(scan_state_t *S, int l, bpc__msg_t *m)
{
  int rc = bpc__scan_take_val(S, m, &S->incl[l]);
  if (S->C->in[l].count == 0)
    bpc__scan_val_free(S->C, &S->incl[l]);
  return rc;
}

/* ------------------------------------------------------------- lock-step */

/* fn(S, l) for every local block l < n: on C->nthreads threads when `par`
 * and there are threads, else here in order (no team of one: an OpenMP
 * region costs ~0.3 us even with a false if clause). */
static void for_blocks(scan_state_t *S, int n, int par, void (*fn)(scan_state_t *S, int l))
{
  const int nt = S->C->nthreads;
  if (par && nt > 1) {
#pragma omp parallel for schedule(dynamic, 1) num_threads(nt)
    for (int l = 0; l < n; l++)
      fn(S, l);
  } else {
    for (int l = 0; l < n; l++)
      fn(S, l);
  }
}

/* Every local scan, then the global stage round by round over all local
 * blocks (sends, receives, combines), then every propagation. */
static int run_lockstep(scan_state_t *S, const bpc__scan_sched_t *sched)
{
  bpc__scan_call_t *C = S->C;
  const int n = C->assign->nlocal;
  const int *gids = C->assign->local;
  const int P = C->nblocks;
  int rc = BPC_OK;
  /* threads only when there is more than one block: an idle team spins */
  for_blocks(S, n, n > 1, bpc__scan_local_block);

  if (sched->stage != NULL)
    rc = sched->stage(C, S->tot, S->shortcut ? S->incl : NULL);
  const int nr = sched->nrounds != NULL ? sched->nrounds(P) : 0;
  const int total_rounds = sched->nrounds == NULL ? 0 : nr + (sched->exclusive_out ? 0 : 1);
  for (int r = 0; r < total_rounds && rc == BPC_OK; r++) {
    if (r == nr && S->shortcut)
      for (int l = 0; l < n; l++)
        bpc__scan_keep_incl(S, l);
    /* sends: every position q whose source is one of ours, found from
     * our own positions (bpc__scan_round_dests) */
    for (int l = 0; l < n && rc == BPC_OK; l++) {
      const int s = C->pos_of[gids[l]];
      int c[4];
      bpc__scan_round_dests(sched, P, nr, r, s, c);
      for (int h = 0; h < 4; h += 2)
        for (int q = c[h]; q < c[h + 1] && rc == BPC_OK; q++) {
          bpc__scan_step_t k;
          if (bpc__scan_round_src(sched, P, nr, r, q, &k) == s)
            rc = bpc__scan_send_val(S, gids[l], C->order[q], r, &S->tot[l]);
        }
    }
    /* receives */
    int busy = 0;
    for (int l = 0; l < n && rc == BPC_OK; l++) {
      bpc__scan_step_t k;
      int src = bpc__scan_round_src(sched, P, nr, r, C->pos_of[gids[l]], &k);
      S->kinds[l] = (int)k;
      busy += k == BPC__SCAN_LEFT || k == BPC__SCAN_RIGHT;
      if (src >= 0)
        rc = bpc__scan_recv_val(S, gids[l], C->order[src], r, &S->got[l]);
    }
    if (rc != BPC_OK)
      break;
    /* combines (this process's positions in parallel) */
    for_blocks(S, n, busy > 1, bpc__scan_apply_step);
  }
  /* the successor round: position p sends its exclusive prefix to p - 1,
   * which takes it as the inclusive result of its last item (every
   * position but the last receives, also an empty one, which drops it) */
  if (S->succ && rc == BPC_OK) {
    for (int l = 0; l < n && rc == BPC_OK; l++) {
      const int p = C->pos_of[gids[l]];
      if (p > 0)
        rc = bpc__scan_send_val(S, gids[l], C->order[p - 1], total_rounds, &S->tot[l]);
    }
    for (int l = 0; l < n && rc == BPC_OK; l++) {
      const int p = C->pos_of[gids[l]];
      bpc__msg_t *m = NULL;
      if (p + 1 < P &&
          (rc = bpc__exch_wait(C->ex, gids[l], C->order[p + 1], total_rounds, &m)) == BPC_OK)
        rc = bpc__scan_take_succ(S, l, m);
    }
  }
  int rc2 = bpc__exch_flush(C->ex);
  if (rc == BPC_OK)
    rc = rc2;

  /* (3) propagate the exclusive prefixes tot[l] into the blocks */
  if (rc == BPC_OK) {
    for_blocks(S, n, n > 1, bpc__scan_propagate_block);
  }
  return rc;
}

/* ------------------------------------------------------------- runner */

int bpc__scan_run(bpc__scan_call_t *C, const bpc__scan_sched_t *sched)
{
  scan_state_t S;
  memset(&S, 0, sizeof S);
  S.C = C;
  const int n = C->assign->nlocal;
  const size_t nn = (size_t)(n > 0 ? n : 1);
  S.s = calloc(nn, sizeof *S.s);
  S.tot = calloc(nn, sizeof *S.tot);
  S.got = calloc(nn, sizeof *S.got);
  S.kinds = calloc(nn, sizeof *S.kinds);
  S.incl = calloc(nn, sizeof *S.incl);
  S.rts = C->strategy == BPC_SCAN_REDUCE_THEN_SCAN;
  S.shortcut = C->strategy == BPC_SCAN_INCLUSIVE_GLOBAL && C->mode == BPC_SCAN_INCLUSIVE &&
               !sched->exclusive_out;
  /* Algorithm 10, deterministic: the last item takes the successor's
   * exclusive prefix, always waited for */
  S.succ = C->strategy == BPC_SCAN_SUCCESSOR && C->mode == BPC_SCAN_INCLUSIVE;
  int rc = BPC_OK;
  if (S.s != NULL && S.tot != NULL && S.got != NULL && S.kinds != NULL && S.incl != NULL) {
    rc = C->overlap && sched->nrounds != NULL && sched->stage == NULL
             ? bpc__scan_run_flow(&S, sched)
             : run_lockstep(&S, sched);
  } else {
    bpc__scan_fail(C, BPC_ENOMEM);
    rc = C->fail_code;
    if (sched->stage != NULL) /* a stage of collective calls needs every rank */
      sched->stage(C, NULL, NULL);
  }
  for (int i = 0; i < S.nsend; i++)
    free(S.sendbufs[i]);
  free(S.sendbufs);
  for (int l = 0; l < n && S.s != NULL && S.tot != NULL && S.got != NULL && S.incl != NULL; l++) {
    if (S.s[l] != NULL)
      for (size_t i = 0; i < (S.rts ? 1 : C->in[l].count); i++)
        bpc__scan_val_free(C, &S.s[l][i]);
    free(S.s[l]);
    bpc__scan_val_free(C, &S.tot[l]);
    bpc__scan_val_free(C, &S.got[l]);
    bpc__scan_val_free(C, &S.incl[l]);
  }
  free(S.incl);
  free(S.s);
  free(S.tot);
  free(S.got);
  free(S.kinds);
  if (rc == BPC_OK && C->failed)
    rc = C->fail_code;
  return rc;
}
