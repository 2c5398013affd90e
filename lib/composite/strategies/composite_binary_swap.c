/*
 * lib/composite/strategies/composite_binary_swap.c - binary swap (Ma et al.), as
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
 * The k-vector is the prime factorisation, bpc__kvec_primes (lib/patterns).
 */
#include "composite/composite_internal.h"
#include "patterns/patterns.h"

int bpc__composite_binary_swap(void *call)
{
  bpc__composite_call_t *c = call;
  c->swap_algo = BPC_SWAP_RADIXK;
  c->k = c->kbuf;
  return bpc__kvec_primes(c->nblocks, c->kbuf, BPC_SWAP_MAX_K, &c->nk);
}
