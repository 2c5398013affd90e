/*
 * lib/engines/swap/swap_ring.c - ring (parallel pipeline) swap-reduce.
 *
 * Schedule. n blocks at positions 0..n-1 of the visibility order; position
 * p owns piece p of the flat split. n-1 steps.
 *  - Commutative operators: the classic ring. At step t (1..n-1) position p
 *    sends its partial of piece (p-t) mod n to position p+1 and receives the
 *    partial of piece (p-t-1) mod n from p-1, reduces it into its own copy
 *    of that piece (in place, in its buffer) and sends that on at the next
 *    step. After n-1 steps piece p has visited every position and ends at p.
 *  - Non-commutative operators: a partial that crosses the ring's seam
 *    (from position n-1 to 0) would join operands that are not adjacent in
 *    the order, so the ring is cut at the seam and run in both directions
 *    along the line: the partial [0..p-1] of piece j > p-1 travels up
 *    (p-1 -> p), the partial [p+1..n-1] of piece j < p+1 travels down
 *    (p+1 -> p). Position p sends piece j up at step p + n - j (j > p) and
 *    down at step n - p + j (j < p); both partials of piece p reach p at
 *    step n-1, where p finishes up o own o down. A position sends at most one
 *    message each way per step and n-1 messages in all, so the costs are
 *    those of the ring.
 * Each step's send depends on the previous step's reduction, so there is
 * no overlap of reduction and communication (as in the classic parallel
 * pipeline). Sends come straight from the block's buffer; a piece is never
 * written by its sender after it has been sent. With sparse hooks
 * (swap_common.h; compositing's active pixels) pieces are encoded from the
 * hooks' knowledge of the block and an encoded arrival is blended into the
 * buffer as it is (one fold); the block's whole buffer stays its range
 * (no keep).
 *
 * Cost: latency alpha * (n-1) steps (one message per step per direction),
 * bandwidth beta * N * (n-1)/n, computation gamma * N * (n-1)/n, with N the
 * buffer's bytes. Every block talks to its two neighbours only.
 *
 * Non-power-of-two counts: any n. Uneven buffers: floor split, pieces
 * differ by at most one element; empty pieces are neither sent nor
 * expected. The association of operands is fixed (independent of timing).
 */
#include "engines/swap/swap_common.h"

#include <stdlib.h>
#include <string.h>

/* Receive block b's message from `from` with seq `seq` for piece j and
 * reduce it into the block's piece j (in_first as given). */
static int ring_recv_reduce(bpc__swap_call_t *c, int b, int from, int seq, int j, int in_first)
{
  size_t off, len;
  bpc__flat_piece(c->count, c->n, j, &off, &len);
  if (len == 0)
    return BPC_OK;
  bpc__msg_t *m = NULL;
  int rc = bpc__exch_wait(c->ex, c->gids[b], from, seq, &m);
  if (rc != BPC_OK)
    return rc;
  if (c->sparse != NULL) { /* an encoded piece is blended into the buffer as it is */
    int enc = 0;
    if (bpc__swap_accept_sparse(c, m, len, &enc) == BPC_OK) {
      const bpc__swap_fold_op_t op = {m->data, enc ? m->bytes : 0, in_first};
      const bpc__swap_fold_t job = {b, off, len, &op, 1};
      bpc__swap_fold(c, &job, 1);
    }
  } else if (bpc__swap_accept(c, m, len) == BPC_OK) {
    bpc__swap_op(c, c->buf[b] + off * c->es, m->data, len, in_first, c->gids[b]);
  }
  bpc__msg_release(c->ex, m);
  return BPC_OK;
}

static int ring_send(bpc__swap_call_t *c, int b, int to_pos, int seq, int j)
{
  size_t off, len;
  bpc__flat_piece(c->count, c->n, j, &off, &len);
  if (len == 0)
    return BPC_OK;
  return bpc__swap_send(c, b, c->order[to_pos], seq, c->buf[b] + off * c->es, len,
                        c->sparse != NULL ? off : BPC__SWAP_NOOFF);
}

/* The classic one-way ring (commutative operators). */
static int ring_oneway(bpc__swap_call_t *c)
{
  const int n = c->n, nl = c->nlocal;
  int rc = BPC_OK;
  for (int t = 1; t < n && rc == BPC_OK; t++) {
    c->cur_round = t - 1;
    bpc__stats_set_round(c->ctx, t - 1);
    for (int b = 0; b < nl && rc == BPC_OK; b++) {
      const int p = c->lpos[b];
      rc = ring_send(c, b, bpc__ring_pos(n, p, 1), t, bpc__ring_pos(n, p, -t));
    }
    for (int b = 0; b < nl && rc == BPC_OK; b++) {
      const int p = c->lpos[b];
      const int j = bpc__ring_pos(n, p, -t - 1);
      /* the partial covers positions j+1..p-1 (cyclic): all before p unless
       * it wrapped; the flag is informative (the operator commutes) */
      rc = ring_recv_reduce(c, b, c->order[bpc__ring_pos(n, p, -1)], t, j, j < p);
    }
  }
  return rc;
}

/* The two-way line (any operator). seq = 2*t (up) or 2*t + 1 (down). */
static int ring_twoway(bpc__swap_call_t *c)
{
  const int n = c->n, nl = c->nlocal;
  int rc = BPC_OK;
  for (int t = 1; t < n && rc == BPC_OK; t++) {
    c->cur_round = t - 1;
    bpc__stats_set_round(c->ctx, t - 1);
    for (int b = 0; b < nl && rc == BPC_OK; b++) {
      const int p = c->lpos[b];
      if (p < n - 1 && t >= p + 1) /* up: piece j = n - t + p, partial [0..p] */
        rc = ring_send(c, b, p + 1, 2 * t, n - t + p);
      if (rc == BPC_OK && p > 0 && t >= n - p) /* down: piece j = t - n + p, [p..n-1] */
        rc = ring_send(c, b, p - 1, 2 * t + 1, t - n + p);
    }
    for (int b = 0; b < nl && rc == BPC_OK; b++) {
      const int p = c->lpos[b];
      /* from p-1 (sent up at step t): piece n - t + p - 1, then it comes first */
      if (p > 0 && t >= p)
        rc = ring_recv_reduce(c, b, c->order[p - 1], 2 * t, n - t + p - 1, 1);
      /* from p+1 (sent down at step t): piece t - n + p + 1, it comes after */
      if (rc == BPC_OK && p < n - 1 && t >= n - p - 1)
        rc = ring_recv_reduce(c, b, c->order[p + 1], 2 * t + 1, t - n + p + 1, 0);
    }
  }
  return rc;
}

int bpc__swap_ring(void *call)
{
  bpc__swap_call_t *c = call;
  /* round-robin positions make every block's neighbour remote: pieces for
   * blocks of one process travel together (lib/comm/comm.h) */
  bpc__exch_bundle(c->ex, 1);
  int rc = c->op->commutative ? ring_oneway(c) : ring_twoway(c);
  for (int b = 0; b < c->nlocal; b++)
    bpc__flat_piece(c->count, c->n, c->lpos[b], &c->pieces[b].offset, &c->pieces[b].count);
  return rc;
}
