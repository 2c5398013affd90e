/*
 * lib/engines/merge/merge_halving.c - merge-reduce by distance halving.
 *
 * Schedule: as distance doubling (merge_doubling.c) but round r works on
 * digit r counted from the most significant end: round 0 groups positions
 * stride(0) = k[1]*...*k[R-1] apart (16 blocks, k = {4, 2, 2}: round 0
 * {0,4,8,12}, {1,5,9,13}, ...; round 1 {0,2}, {1,3}; round 2 {0,1}). The
 * digit-0 member is the root. Groups are strided, so a root's item is the
 * merge of an interleaved set of positions: only commutative merges give a
 * well-defined result, and bpc_merge refuses halving without
 * BPC_MERGE_COMMUTATIVE (BPC_EINVAL). After a partial reduction of r rounds
 * the roots are positions 0..stride(r-1)-1, each holding the positions
 * congruent to it modulo stride(r-1).
 *
 * When it pays: the far-apart blocks are paired first, so with a
 * round-robin assignment (gid g on rank g mod P, n = b P) the first rounds
 * (product of their k up to b) stay inside the process, as doubling's do
 * with a contiguous assignment. "auto" picks halving for commutative merges
 * when it sends fewer messages across processes than doubling.
 *
 * Cost: the same alpha-beta-gamma terms as doubling (the final root
 * receives sum_r (k[r]-1) items). Any n (any factorisation of n).
 */
#include "engines/merge/merge.h"

int bpc__merge_halving(bpc__merge_plan_t *P)
{
  if (!(P->flags & BPC_MERGE_COMMUTATIVE))
    return bpc__err(P->ctx, BPC_EINVAL,
                    "merge: distance halving forms strided groups and needs a commutative merge "
                    "(set BPC_MERGE_COMMUTATIVE, or use \"doubling\")");
  P->R.halving = 1;
  P->algo = BPC_MERGE_HALVING;
  return bpc__merge_execute(P);
}
