/*
 * lib/composite/strategies/composite_direct_send.c - direct send (Hsu; Neumann), as
 * one radix-k round of k = n on the swap engine.
 *
 * Schedule: the image is cut into n flat pieces; block p owns piece p
 * (position p of the visibility order); every block sends piece q of its
 * image straight to the block owning it and composites the n-1 pieces it
 * receives in visibility order as they become adjacent.
 *
 * Cost for an image of N bytes: alpha * (n-1) + beta * N (n-1)/n + gamma *
 * N (n-1)/n: the fewest bytes and one round, but n-1 messages per block
 * (contention at scale). Any n works.
 */
#include "composite/composite_internal.h"

int bpc__composite_direct_send(void *call)
{
  bpc__composite_call_t *c = call;
  c->swap_algo = BPC_SWAP_RADIXK;
  c->kbuf[0] = c->nblocks;
  c->k = c->kbuf;
  c->nk = c->nblocks > 1 ? 1 : 0;
  return BPC_OK;
}
