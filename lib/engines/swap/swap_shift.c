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
 * Sparse hooks (swap_common.h; compositing's active pixels): pieces are
 * encoded from the hooks' knowledge of the block (the whole buffer stays
 * its range: no keep) and an encoded arrival stays encoded: it is blended
 * into A as it is (one fold per stage for all local blocks). Encoded
 * pieces are never merged with each other (that would need a dense
 * buffer), so a non-commutative operator's wrapped run B is not built:
 * its pieces (positions n-1 down to p+1, as they arrive) are held and
 * folded behind A at the end, nearest first: ((A o p+1) o ...) o n-1, the
 * same operands in the same order, but not the dense path's association
 * A o (p+1 o (... o n-1)); fixed too, so results agree with the dense path
 * bit for bit only where the operator is exactly associative on the values
 * (the z-buffer always). The held pieces are at most what the block
 * receives (encoded: with a bound, up to the bound per piece).
 *
 * Cost: latency alpha * (n-1) messages per block (with many blocks per
 * process, pieces up to 8 KiB for blocks of one process travel as one
 * bundle per stage and pair of processes: lib/comm/comm.h), bandwidth
 * beta * N * (n-1)/n (every message is one piece, N/n bytes), computation
 * gamma * N * (n-1)/n, overlapped with communication except for the last
 * stage (sparse, non-commutative: and the held pieces, n-1-p of them at
 * position p, folded after it). Contention-free on fat trees (a shift is a
 * permutation).
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
  int pend_enc;      /* sparse: pend is an encoding (else dense) */
  bpc__msg_t *B;     /* the wrapped run, in a receive buffer */
  /* sparse, non-commutative: the wrapped pieces held, in arrival order */
  bpc__msg_t **hm;
  bpc__swap_fold_op_t *hop;
  int nh, caph;
  bpc__swap_fold_op_t op; /* sparse: this stage's fold */
} sh_block_t;

/* Sparse: hold block b's wrapped piece m (non-commutative operator). */
static void sh_hold(bpc__swap_call_t *c, sh_block_t *S, bpc__msg_t *m, int enc)
{
  if (S->nh == S->caph) {
    const int nc = S->caph > 0 ? 2 * S->caph : 8;
    bpc__msg_t **hm = realloc(S->hm, sizeof *hm * (size_t)nc);
    if (hm != NULL)
      S->hm = hm;
    bpc__swap_fold_op_t *hop = hm != NULL ? realloc(S->hop, sizeof *hop * (size_t)nc) : NULL;
    if (hop != NULL)
      S->hop = hop;
    if (hm == NULL || hop == NULL) {
      if (c->err == BPC_OK)
        c->err = bpc__err(c->ctx, BPC_ENOMEM, "swap shift: out of memory to hold %d pieces",
                          nc);
      bpc__msg_release(c->ex, m);
      return;
    }
    S->caph = nc;
  }
  S->hm[S->nh] = m;
  S->hop[S->nh] = (bpc__swap_fold_op_t){m->data, enc ? m->bytes : 0, 0};
  S->nh++;
}

/* Sparse: fold every local block's pending piece into its A (one fold for
 * all of them), or hold it (a wrapped piece, non-commutative operator). */
static void sh_fold_pending(bpc__swap_call_t *c, sh_block_t *S, bpc__swap_fold_t *jobs)
{
  int nj = 0;
  for (int b = 0; b < c->nlocal; b++) {
    bpc__msg_t *m = S[b].pend;
    if (m == NULL)
      continue;
    const int p = c->lpos[b], s = S[b].pend_stage;
    if (s > p && !c->op->commutative) {
      S[b].pend = NULL;
      sh_hold(c, &S[b], m, S[b].pend_enc);
      continue;
    }
    /* from p - s (just before A), or commutative: behind it */
    S[b].op = (bpc__swap_fold_op_t){m->data, S[b].pend_enc ? m->bytes : 0, s <= p};
    jobs[nj++] = (bpc__swap_fold_t){b, S[b].off, S[b].len, &S[b].op, 1};
  }
  bpc__swap_fold(c, jobs, nj);
  for (int b = 0; b < c->nlocal; b++) {
    bpc__msg_release(c->ex, S[b].pend);
    S[b].pend = NULL;
  }
}

/* Sparse, non-commutative: fold the held wrapped pieces behind A, nearest
 * first (they arrived farthest first). */
static void sh_fold_held(bpc__swap_call_t *c, sh_block_t *S, bpc__swap_fold_t *jobs)
{
  int nj = 0;
  for (int b = 0; b < c->nlocal; b++) {
    if (S[b].nh == 0)
      continue;
    for (int i = 0, j = S[b].nh - 1; i < j; i++, j--) {
      const bpc__swap_fold_op_t t = S[b].hop[i];
      S[b].hop[i] = S[b].hop[j];
      S[b].hop[j] = t;
    }
    jobs[nj++] = (bpc__swap_fold_t){b, S[b].off, S[b].len, S[b].hop, S[b].nh};
  }
  bpc__swap_fold(c, jobs, nj);
}

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
  bpc__swap_fold_t *jobs = c->sparse != NULL && S != NULL
                               ? bpc__calloc((size_t)(nl > 0 ? nl : 1), sizeof *jobs)
                               : NULL;
  if (S == NULL || (c->sparse != NULL && jobs == NULL)) {
    free(S);
    return bpc__err(c->ctx, BPC_ENOMEM, "swap shift: out of memory for %d blocks", nl);
  }
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
        rc = bpc__swap_send(c, b, c->order[q], s, c->buf[b] + off * es, len,
                            c->sparse != NULL ? off : BPC__SWAP_NOOFF);
    }
    /* small pieces for blocks of one process leave as one message now,
     * before the reduction below */
    if (rc == BPC_OK)
      rc = bpc__exch_push(c->ex);
    /* reduce stage s-1 while stage s travels (no progress call in between:
     * an oversubscribed MPI yields the processor in one that finds nothing) */
    if (c->sparse != NULL)
      sh_fold_pending(c, S, jobs);
    else
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
      int enc = 0;
      if ((c->sparse != NULL ? bpc__swap_accept_sparse(c, m, S[b].len, &enc)
                             : bpc__swap_accept(c, m, S[b].len)) != BPC_OK) {
        bpc__msg_release(c->ex, m);
        continue;
      }
      S[b].pend = m;
      S[b].pend_enc = enc;
      S[b].pend_stage = s;
    }
  }
  /* the last stage, then A o B (sparse: the held pieces behind A) */
  if (c->sparse != NULL && rc == BPC_OK) {
    sh_fold_pending(c, S, jobs);
    sh_fold_held(c, S, jobs);
  }
  for (int b = 0; b < nl; b++) {
    if (rc == BPC_OK && c->sparse == NULL)
      sh_reduce(c, &S[b], b);
    if (S[b].B != NULL && rc == BPC_OK)
      bpc__swap_op(c, c->buf[b] + S[b].off * es, S[b].B->data, S[b].len, 0, c->gids[b]);
    bpc__msg_release(c->ex, S[b].pend);
    bpc__msg_release(c->ex, S[b].B);
    for (int i = 0; i < S[b].nh; i++)
      bpc__msg_release(c->ex, S[b].hm[i]);
    free(S[b].hm);
    free(S[b].hop);
    c->pieces[b].offset = S[b].off;
    c->pieces[b].count = S[b].len;
  }
  free(jobs);
  free(S);
  return rc;
}
