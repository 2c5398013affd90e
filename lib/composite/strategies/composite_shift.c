/*
 * lib/composite/strategies/composite_shift.c - shift-based compositing (Shift-Based
 * paper), the swap engine's shift schedule.
 *
 * Schedule: n-1 stages; at stage s block p sends flat piece (p+s) mod n to
 * position (p+s) mod n and receives its own piece from (p-s) mod n; the
 * compositing of stage s-1 overlaps the transfer of stage s, and "over"
 * only joins neighbours in the order (dense: two runs; active pixels: the
 * wrapped pieces held and folded at the end; lib/engines/swap/swap_shift.c).
 *
 * Cost for an image of N bytes: alpha * (n-1) + beta * N (n-1)/n + gamma *
 * N (n-1)/n, with computation overlapped with communication and at most
 * one message in flight per block and stage (no contention). Any n works.
 */
#include "composite/composite_internal.h"

int bpc__composite_shift(void *call)
{
  bpc__composite_call_t *c = call;
  c->swap_algo = BPC_SWAP_SHIFT;
  c->k = NULL;
  c->nk = 0;
  return BPC_OK;
}
