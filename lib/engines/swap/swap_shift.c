/*
 * lib/engines/swap/swap_shift.c - shift-permutation swap-reduce (the
 * Shift-Based paper's compositing schedule, for any operator).
 *
 * Schedule. n blocks at positions 0..n-1 of the visibility order; position
 * p owns piece p of the flat split of the buffer. n-1 stages: at stage s
 * (1..n-1) position p sends piece (p+s) mod n of its buffer to position
 * (p+s) mod n and receives its own piece from position (p-s) mod n. Every
 * send comes straight from the block's buffer (those pieces are never
 * written again). The piece received at stage s is reduced after the
 * stage-s+1 send has been posted, so the reduction of one stage overlaps
 * the transfer of the next (as far as the MPI library progresses in the
 * background).
 *
 * Order. Arrivals come from positions p-1, p-2, ..., 0, then n-1, n-2, ...,
 * p+1: each one is adjacent (just before) to one of two runs: A = [q..p],
 * accumulated in the block's own piece (in = received, first), and B =
 * [q..n-1], which starts as the first wrapped piece and stays in that
 * receive buffer (no copy); B is appended to A at the end (A o B). So a
 * non-commutative operator is always applied to adjacent operands and no
 * piece ever waits; commutative operators fold B's pieces straight into A.
 * The association is fixed: results do not depend on timing.
 *
 * Cost: latency alpha * (n-1) messages per block (with many blocks per
 * process, pieces up to 8 KiB for blocks of one process travel as one
 * bundle per stage and pair of processes: lib/comm/comm.h), bandwidth
 * beta * N * (n-1)/n (every message is one piece, N/n bytes), computation
 * gamma * N * (n-1)/n, overlapped with communication except for the last
 * stage. Contention-free on fat trees (a shift is a permutation).
 *
 * Non-power-of-two counts: any n; the shift needs no factorisation. Uneven
 * buffers: floor split, pieces differ by at most one element; empty pieces
 * are neither sent nor expected.
 */
#include "engines/swap/swap_common.h"

#include <stdlib.h>
#include <string.h>

typedef struct sh_block {
  size_t off, len;   /* own piece */
  bpc__msg_t *pend;  /* received in the previous stage, not yet reduced */
  int pend_stage;
  bpc__msg_t *B;     /* the wrapped run, in a receive buffer */
} sh_block_t;

/* Reduce the piece block b received at stage s. */
static void sh_reduce(bpc__swap_call_t *c, sh_block_t *S, int b)
{
  bpc__msg_t *m = S->pend;
  const int p = c->lpos[b], s = S->pend_stage;
  S->pend = NULL;
  if (m == NULL)
    return;
  char *A = c->buf[b] + S->off * c->es; /* a piece arrived: count > 0, buffers exist */
  if (s <= p) {
    /* from position p - s: just before A */
    bpc__swap_op(c, A, m->data, S->len, 1, c->gids[b]);
    bpc__msg_release(c->ex, m);
  } else if (c->op->commutative) {
    /* from position n + p - s > p: commutative, fold into A directly */
    bpc__swap_op(c, A, m->data, S->len, 0, c->gids[b]);
    bpc__msg_release(c->ex, m);
  } else if (S->B == NULL) {
    S->B = m; /* the last position, n-1: B starts here, in place */
  } else {
    bpc__swap_op(c, S->B->data, m->data, S->len, 1, c->gids[b]);
    bpc__msg_release(c->ex, m);
  }
}

int bpc__swap_shift(void *call)
{
  bpc__swap_call_t *c = call;
  const int n = c->n, nl = c->nlocal;
  const size_t es = c->es;
  int rc = BPC_OK;
  sh_block_t *S = bpc__calloc((size_t)(nl > 0 ? nl : 1), sizeof *S);
  if (S == NULL)
    return bpc__err(c->ctx, BPC_ENOMEM, "swap shift: out of memory for %d blocks", nl);
  for (int b = 0; b < nl; b++)
    bpc__flat_piece(c->count, n, c->lpos[b], &S[b].off, &S[b].len);
  /* every stage sends one piece per local block: those for blocks of the
   * same process travel together (lib/comm/comm.h, bundling) */
  bpc__exch_bundle(c->ex, 1);

  for (int s = 1; s < n && rc == BPC_OK; s++) {
    c->cur_round = s - 1;
    bpc__stats_set_round(c->ctx, s - 1);
    /* stage s: post the sends */
    for (int b = 0; b < nl && rc == BPC_OK; b++) {
      const int q = bpc__ring_pos(n, c->lpos[b], s);
      size_t off, len;
      bpc__flat_piece(c->count, n, q, &off, &len);
      if (len > 0)
        rc = bpc__swap_send(c, b, c->order[q], s, c->buf[b] + off * es, len, BPC__SWAP_NOOFF);
    }
    /* small pieces for blocks of one process leave as one message now,
     * before the reduction below */
    if (rc == BPC_OK)
      rc = bpc__exch_push(c->ex);
    /* reduce stage s-1 while stage s travels (no progress call in between:
     * an oversubscribed MPI yields the processor in one that finds nothing) */
    for (int b = 0; b < nl; b++)
      sh_reduce(c, &S[b], b);
    /* wait for stage s */
    for (int b = 0; b < nl && rc == BPC_OK; b++) {
      if (S[b].len == 0)
        continue;
      const int from = c->order[bpc__ring_pos(n, c->lpos[b], -s)];
      bpc__msg_t *m = NULL;
      rc = bpc__exch_wait(c->ex, c->gids[b], from, s, &m);
      if (rc != BPC_OK)
        break;
      if (bpc__swap_accept(c, m, S[b].len) != BPC_OK) {
        bpc__msg_release(c->ex, m);
        continue;
      }
      S[b].pend = m;
      S[b].pend_stage = s;
    }
  }
  /* the last stage, then A o B */
  for (int b = 0; b < nl; b++) {
    if (rc == BPC_OK)
      sh_reduce(c, &S[b], b);
    if (S[b].B != NULL && rc == BPC_OK)
      bpc__swap_op(c, c->buf[b] + S[b].off * es, S[b].B->data, S[b].len, 0, c->gids[b]);
    bpc__msg_release(c->ex, S[b].pend);
    bpc__msg_release(c->ex, S[b].B);
    c->pieces[b].offset = S[b].off;
    c->pieces[b].count = S[b].len;
  }
  free(S);
  return rc;
}
