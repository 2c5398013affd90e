/*
 * lib/composite/strategies/binary_swap.c - binary swap (Ma et al.), as
 * radix-k rounds of 2 on the swap engine.
 *
 * Schedule: log2 n rounds; in round r block p pairs with the block whose
 * position differs in bit r, each keeps one half of its current range and
 * sends the other half to its partner, then composites the half it
 * receives (partners are adjacent runs of the visibility order, so "over"
 * keeps its order). The final piece of position p is its bit-reversed
 * share of the image.
 *
 * Cost for an image of N bytes: alpha * log2 n + beta * N (n-1)/n + gamma *
 * N (n-1)/n.
 *
 * Non-powers of two: n = 2^m * q with q odd runs m rounds of 2 followed by
 * one round per odd prime factor of q, ascending (the "2-3 swap" idea,
 * generalised: 12 = 2x2x3, 6 = 2x3, 7 = 7). Every block keeps working and
 * ends up with a piece; the bytes stay at the optimum N (n-1)/n and only the
 * latency term grows (a prime n degenerates to direct send: n-1 messages).
 */
#include "composite/composite_internal.h"

int bpc__cp_binary_swap(bpc_ctx_t *ctx, int n, const bpc_composite_params_t *P,
                        bpc_swap_params_t *sp, int *kbuf)
{
  (void)ctx;
  (void)P;
  int nk = 0, m = n;
  while (m % 2 == 0 && nk < BPC_SWAP_MAX_K) {
    kbuf[nk++] = 2;
    m /= 2;
  }
  for (int f = 3; m > 1 && nk < BPC_SWAP_MAX_K; f += 2) {
    if ((long long)f * f > m)
      f = m; /* m is prime now */
    while (m % f == 0 && nk < BPC_SWAP_MAX_K) {
      kbuf[nk++] = f;
      m /= f;
    }
  }
  sp->algorithm = "radixk";
  sp->k = kbuf;
  sp->nk = nk;
  return BPC_OK;
}
