/*
 * lib/engines/merge/merge_doubling.c - merge-reduce by distance doubling
 * (the default; DIY Algorithm 1).
 *
 * Schedule: positions 0..n-1 written in mixed radix over the k-vector,
 * round r on digit r counted from the least significant end: the round-r
 * group of p is the k[r] positions that differ from p only in that digit,
 * spaced stride(r) = k[0]*...*k[r-1] apart. The member with digit 0 is the
 * root and receives the k[r]-1 others' items; the others are done. Before
 * round r every active position's item is the merge of the stride(r)
 * consecutive positions starting at it, so a group's items, by increasing
 * position, are consecutive runs: merges need not be commutative. After R
 * rounds position 0 holds everything; after fewer (a partial reduction) the
 * roots are the multiples of stride(rounds), each holding its run.
 *
 * Cost (items of B bytes, one block per process, alpha-beta-gamma): the
 * final root receives sum_r (k[r]-1) items, so
 *   T = sum_r [ alpha + (k[r]-1) (beta + gamma) B ],
 * least data at k = 2 (log2 n rounds, B each), least latency at k = n. With
 * element-wise merges the items move in segments of S bytes and each root
 * forwards a segment as soon as it is final (a pipelined tree):
 *   T ~ (k-1)(beta + gamma) B + depth * (alpha + (k-1)(beta + gamma) S).
 * Blocks of one process merge without messages over the network: with a
 * contiguous assignment of b blocks per process the first rounds (product
 * of their k up to b) are local.
 *
 * Any n works: the k-vector is any factorisation of n (a prime n is one
 * round of k = n); there is no padding and no idle "virtual" block.
 */
#include "engines/merge/merge_internal.h"

/* Round r groups positions stride(r) = k[0]*...*k[r-1] apart: the stride
 * grows from 1 (neighbours first), so a root's group is the runs its
 * members merged in the rounds before. */
static void doubling_role(const bpc__merge_plan_t *P, int p, bpc__merge_role_t *role)
{
  bpc__merge_role_init(role);
  int s = 1;
  for (int r = 0; r < P->rounds && bpc__merge_role_step(P, role, r, p, s); r++)
    s *= P->R.k[r];
}

const bpc__merge_variant_t bpc__merge_doubling = {BPC_MERGE_DOUBLING, 0, doubling_role};

int bpc__merge_doubling_run(void *call)
{
  bpc__merge_plan_t *P = call;
  P->variant = &bpc__merge_doubling;
  return bpc__merge_execute(P);
}
