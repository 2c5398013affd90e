/*
 * lib/composite/strategies/composite_radixk.c - radix-k compositing (Radix-k paper).
 *
 * Schedule: the swap engine's radixk over a k-vector k[0..R-1] whose
 * product is the number of blocks n (given in params.k, or automatic: the
 * swap engine packs the prime factors into rounds of at most 8). In round r
 * each block exchanges with the k[r]-1 other members of its group (the
 * positions that differ only in mixed-radix digit r, consecutive in the
 * visibility order), sending each one its share of the current image range
 * and compositing the k[r]-1 shares it receives into its own.
 *
 * Cost for an image of N bytes: latency alpha * sum(k[r] - 1) messages per
 * block, bandwidth beta * N (n-1)/n, compositing gamma * N (n-1)/n. k all 2
 * is binary swap (log2 n messages), one round k = [n] direct send (n-1).
 *
 * Non-powers of two: any factorisation of n is a valid k-vector (a prime n
 * is one round of direct send).
 */
#include "composite/composite_internal.h"

int bpc__composite_radixk(void *call)
{
  bpc__composite_call_t *c = call;
  c->swap_algo = BPC_SWAP_RADIXK;
  c->k = c->P->k != NULL && c->P->nk > 0 ? c->P->k : NULL; /* NULL: the swap engine's own */
  c->nk = c->k != NULL ? c->P->nk : 0;
  return BPC_OK;
}
