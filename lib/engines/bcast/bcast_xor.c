/*
 * lib/engines/bcast/bcast_xor.c - xor: recursive doubling on block ids. With q
 * the largest power of two <= p: in step i (i = 0 .. log2 q - 1) block id
 * < q exchanges everything it has with id xor 2^i (combining), so after
 * log2 q steps every block below q has every item of the first q blocks.
 *
 * Non-powers of two: the p - q blocks id >= q first hand their items to
 * id - q (one extra step before), and get everything back from id - q
 * after (one extra step after).
 *
 * The paper's "xor" is the same partner rule applied to a personalised
 * all-to-all (p - 1 rounds of id xor j, no combining); the combining form
 * here is the one the issue asks for.
 *
 * Cost (one block per process, L bytes per item): log2 q steps (+2 when p
 * is not a power of two); the message of step i carries what 2^i blocks
 * held, up to s L: T ~ log2 q alpha + s L beta when sources are spread
 * evenly, up to log2 q (alpha + s L beta) when they bunch in low ids.
 */
#include "engines/bcast/bcast_internal.h"

int bpc__bcast_xor(void *call)
{
  bpc__bcast_call_t *C = call;
  const int p = C->p;
  int q = 1, lg = 0;
  while (2 * q <= p) {
    q *= 2;
    lg++;
  }
  const int fold = q < p;
  for (int id = q; id < p; id++)
    bpc__bcast_add(&C->S, 0, id, id - q);
  for (int i = 0; i < lg; i++)
    for (int id = 0; id < q; id++)
      if (id < (id ^ (1 << i)))
        bpc__bcast_xchg(&C->S, fold + i, id, id ^ (1 << i));
  for (int id = q; id < p; id++)
    bpc__bcast_add(&C->S, fold + lg, id - q, id);
  return bpc__bcast_exec(C);
}
