/*
 * lib/engines/bcast/bcast_br_lin.c - br_lin: the blocks as one linear array in
 * snake-like row-major order of the mesh view (row i left to right when i
 * is even, right to left when odd, so neighbours in the order are mesh
 * neighbours). Step 0: the first half of the array exchanges with the
 * second (position i with h + i, h = floor(n/2)), each sending everything
 * it has (combining; a block with nothing new for its partner sends
 * nothing); then both halves recurse, in the same steps.
 *
 * Non-powers of two: with n odd the second half has one more block; it
 * also exchanges with the first half's last block, so the union of both
 * halves stays the whole array's and ceil(log2 p) steps suffice.
 *
 * Cost (one block per process, all items of L bytes): ceil(log2 p) steps;
 * a block sends at most one message per step (two for the odd block),
 * whose size is what it has gathered, so T <= ceil(log2 p) alpha +
 * s L beta in the best case (every step doubles the sources each block
 * knows) and up to ceil(log2 p) (alpha + s L beta) when sources bunch in
 * one half (the paper's "poor distributions"). Messages per block <=
 * ceil(log2 p) + 1.
 */
#include "engines/bcast/bcast_internal.h"

#include <stdlib.h>

int bpc__bcast_br_lin(void *call)
{
  bpc__bcast_call_t *C = call;
  int *order = malloc(sizeof(int) * (size_t)(C->p > 0 ? C->p : 1));
  if (order == NULL)
    return bpc__err(C->ctx, BPC_ENOMEM, "bpc_bcast: out of memory");
  int k = 0;
  for (int r = 0; r < C->rows; r++)
    for (int j = 0; j < C->cols; j++)
      order[k++] = r * C->cols + (r % 2 == 0 ? j : C->cols - 1 - j);
  bpc__bcast_lin(&C->S, 0, order, C->p);
  free(order);
  return bpc__bcast_exec(C);
}
