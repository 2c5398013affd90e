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
 * op->commutative (BPC_EINVAL). After a partial reduction of r rounds
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
#include "engines/merge/merge_internal.h"

/* Round r groups positions stride(r) = k[r+1]*...*k[R-1] apart: the stride
 * shrinks from n / k[0] (farthest first) to 1 in the last round. */
static void halving_role(const bpc__merge_plan_t *P, int p, bpc__merge_role_t *role)
{
  bpc__merge_role_init(role);
  int s = P->n;
  for (int r = 0; r < P->rounds; r++) {
    s /= P->R.k[r];
    if (!bpc__merge_role_step(P, role, r, p, s))
      break;
  }
}

/* Strided groups: commutative ops only (the entry refuses others). */
const bpc__merge_variant_t bpc__merge_halving = {BPC_MERGE_HALVING, 1, halving_role};

int bpc__merge_halving_run(void *call)
{
  bpc__merge_plan_t *P = call;
  P->variant = &bpc__merge_halving;
  return bpc__merge_execute(P);
}
