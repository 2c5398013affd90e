/*
 * lib/engines/allreduce/allreduce_swap_allgather.c - reduce-scatter, then
 * allgather (Rabenseifner's all-reduce), for contiguous items. The first r
 * = n - m pairs of positions fold into their even member as in "doubling";
 * the m participants then halve their element range at distance 1, 2, 4,
 * ...: the lower of two partners keeps the lower half, sends the upper one
 * and combines what it gets into the half it keeps (the lower partner's
 * run on the left), so each ends with 1/m of the item reduced over all
 * blocks in order (distance doubling keeps every combined run contiguous in
 * position order, which the non-commutative case needs); the allgather
 * retraces the halvings in reverse, each partner sending the range it
 * holds; the even members send the result to their odd partners. Rounds 2
 * log2 m (+ 2): 2 log2 m alpha + 2 (m-1)/m L (beta + gamma) (the allgather
 * copies what arrives into place, at the operator's cost per byte), plus
 * 2 (alpha + L beta) + L gamma for the pairs: less data than "doubling"
 * once items are large and m > 2 (at m = 2 it moves as much and costs a
 * round more).
 */
#include "engines/allreduce/allreduce_internal.h"

#include <stdlib.h>

enum { MAXR = 32 }; /* halving rounds: m <= 2^30 participants */

/* The range virtual rank v holds after halving round t (distance 2^t),
 * t = -1: the whole item. */
static void range_after(size_t count, int v, int t, size_t *lo, size_t *hi)
{
  size_t a = 0, b = count;
  for (int s = 0; s <= t; s++) {
    const size_t mid = a + (b - a) / 2;
    if ((v >> s) & 1)
      a = mid;
    else
      b = mid;
  }
  *lo = a;
  *hi = b;
}

int bpc__allreduce_swap_allgather(void *call)
{
  bpc__allreduce_call_t *C = call;
  const int n = C->n, m = bpc__allreduce_pow2(n), r = n - m, nl = C->assign->nlocal;
  const int R = bpc__log2_ceil(m);
  int rc = r > 0 ? bpc__allreduce_pairs(C, 0, 1) : BPC_OK;
  int seq = 1;
  /* reduce-scatter: round t at distance 2^t */
  for (int t = 0; t < R && rc == BPC_OK; t++, seq++) {
    const int d = 1 << t;
    for (int l = 0; l < nl && rc == BPC_OK; l++) {
      const int p = C->lpos[l], v = bpc__allreduce_virt(n, p);
      if (v < 0)
        continue;
      size_t lo, hi, klo, khi; /* the range before the round, and the half kept */
      range_after(C->count, v, t - 1, &lo, &hi);
      range_after(C->count, v, t, &klo, &khi);
      const size_t glo = klo == lo ? khi : lo, ghi = klo == lo ? hi : klo; /* given away */
      rc = bpc__allreduce_send(C, l, p, bpc__allreduce_vpos(n, v ^ d), seq, glo, ghi - glo);
    }
    for (int l = 0; l < nl && rc == BPC_OK; l++) {
      const int p = C->lpos[l], v = bpc__allreduce_virt(n, p);
      if (v < 0)
        continue;
      size_t klo, khi;
      range_after(C->count, v, t, &klo, &khi);
      bpc__msg_t *m = NULL;
      rc = bpc__allreduce_recv(C, p, bpc__allreduce_vpos(n, v ^ d), seq, &m);
      if (rc == BPC_OK) /* the half kept is not the half being sent */
        bpc__allreduce_combine(C, l, m, klo, khi - klo, (v ^ d) < v);
    }
    const int rc2 = bpc__allreduce_step_end(C);
    rc = rc != BPC_OK ? rc : rc2;
  }
  /* allgather: the halvings in reverse */
  for (int t = R - 1; t >= 0 && rc == BPC_OK; t--, seq++) {
    const int d = 1 << t;
    for (int l = 0; l < nl && rc == BPC_OK; l++) {
      const int p = C->lpos[l], v = bpc__allreduce_virt(n, p);
      if (v < 0)
        continue;
      size_t lo, hi;
      range_after(C->count, v, t, &lo, &hi);
      rc = bpc__allreduce_send(C, l, p, bpc__allreduce_vpos(n, v ^ d), seq, lo, hi - lo);
    }
    for (int l = 0; l < nl && rc == BPC_OK; l++) {
      const int p = C->lpos[l], v = bpc__allreduce_virt(n, p);
      if (v < 0)
        continue;
      size_t plo, phi; /* the partner's range: the same split, the other side */
      range_after(C->count, v ^ d, t, &plo, &phi);
      bpc__msg_t *m = NULL;
      rc = bpc__allreduce_recv(C, p, bpc__allreduce_vpos(n, v ^ d), seq, &m);
      if (rc == BPC_OK)
        bpc__allreduce_store(C, l, m, plo, phi - plo);
    }
    const int rc2 = bpc__allreduce_step_end(C);
    rc = rc != BPC_OK ? rc : rc2;
  }
  if (rc == BPC_OK && r > 0)
    rc = bpc__allreduce_pairs(C, seq, 0);
  return rc;
}

int bpc__allreduce_rounds_swap_allgather(int n)
{
  const int m = bpc__allreduce_pow2(n);
  const int R = bpc__log2_ceil(m);
  return 2 * R + (n > m ? 2 : 0);
}

double bpc__allreduce_model_swap_allgather(int n, double L, double alpha, double beta, double gamma)
{
  const int m = bpc__allreduce_pow2(n);
  const int R = bpc__log2_ceil(m);
  const double f = (double)(m - 1) / (double)m;
  const double pairs = n > m ? 2 * (alpha + L * beta) + L * gamma : 0.0;
  return 2 * R * alpha + 2 * f * L * (beta + gamma) + pairs;
}
