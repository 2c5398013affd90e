/*
 * lib/engines/bcast/bcast_2step.c - 2step: an s-to-one gather followed by a
 * one-to-all broadcast. Step 0: every source sends its item straight to
 * the root (the lowest source gid); steps 1..: a binomial tree from the
 * root over the blocks in the order root, root+1, ..., root-1 (mod p):
 * the holder of a segment sends everything to the middle of the segment,
 * both halves recurse (odd lengths: the first half is the larger one).
 * No sources: no steps.
 *
 * Cost (one block per process, L bytes per item): 1 + ceil(log2 p)
 * steps; the root receives s - 1 messages in step 0 (the bottleneck the
 * paper measures), then every message carries all s items:
 * T ~ (s - 1)(alpha + L beta) + ceil(log2 p)(alpha + s L beta).
 * Messages per block: at most ceil(log2 p) (root), 1 for other sources
 * plus tree sends.
 */
#include "engines/bcast/bcast_internal.h"

#include <stdlib.h>

int bpc__bcast_2step(void *call)
{
  bpc__bcast_call_t *C = call;
  if (C->s > 0) {
    const int root = C->sources[0];
    for (int i = 1; i < C->s; i++)
      bpc__bcast_add(&C->S, 0, C->sources[i], root);
    int *order = malloc(sizeof(int) * (size_t)C->p);
    if (order == NULL)
      return bpc__err(C->ctx, BPC_ENOMEM, "bpc_bcast: out of memory");
    for (int i = 0; i < C->p; i++)
      order[i] = (root + i) % C->p;
    bpc__bcast_tree(&C->S, 1, order, C->p);
    free(order);
  }
  return bpc__bcast_exec(C);
}
