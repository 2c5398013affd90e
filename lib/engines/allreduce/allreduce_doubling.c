/*
 * lib/engines/allreduce/allreduce_doubling.c - recursive doubling. With m
 * the largest power of two <= n and r = n - m: the first r pairs of
 * positions (2i, 2i + 1) fold into their even member (one message of a
 * whole item); the m participants (virtual ranks, in position order) then
 * exchange whole items with the partner at distance 1, 2, 4, ... and
 * combine, the lower one on the left, so after round t each holds the
 * ordered reduction of its aligned run of 2^(t+1) participants and both
 * partners compute the same bits; last, the even members send the result
 * to their odd partners. Rounds log2 m (+ 2 when n is not a power of two),
 * each of one whole item per participant: (log2 m)(alpha + L beta + L
 * gamma), plus 2 (alpha + L beta) + L gamma for the pairs.
 */
#include "engines/allreduce/allreduce_internal.h"

#include <stdlib.h>

int bpc__allreduce_doubling(void *call)
{
  bpc__allreduce_call_t *C = call;
  const int n = C->n, m = bpc__allreduce_pow2(n), r = n - m, nl = C->assign->nlocal;
  int rc = r > 0 ? bpc__allreduce_pairs(C, 0, 1) : BPC_OK;
  bpc__msg_t **got = calloc((size_t)(nl > 0 ? nl : 1), sizeof *got);
  if (got == NULL && rc == BPC_OK)
    rc = bpc__err(C->ctx, BPC_ENOMEM, "bpc_allreduce: out of memory");
  int seq = 1;
  for (int d = 1; d < m && rc == BPC_OK; d *= 2, seq++) {
    for (int l = 0; l < nl && rc == BPC_OK; l++) {
      const int p = C->lpos[l], v = bpc__allreduce_virt(n, p);
      if (v >= 0)
        rc = bpc__allreduce_send(C, l, p, bpc__allreduce_vpos(n, v ^ d), seq, 0, C->count);
    }
    for (int l = 0; l < nl && rc == BPC_OK; l++) {
      const int p = C->lpos[l], v = bpc__allreduce_virt(n, p);
      if (v >= 0)
        rc = bpc__allreduce_recv(C, p, bpc__allreduce_vpos(n, v ^ d), seq, &got[l]);
    }
    /* every item was sent whole: combine only once the sends are done */
    const int rc2 = bpc__allreduce_step_end(C);
    rc = rc != BPC_OK ? rc : rc2;
    for (int l = 0; l < nl; l++) {
      if (got[l] == NULL)
        continue;
      const int v = bpc__allreduce_virt(n, C->lpos[l]);
      if (rc == BPC_OK)
        bpc__allreduce_combine(C, l, got[l], 0, C->count, (v ^ d) < v);
      else
        bpc__msg_release(C->ex, got[l]);
      got[l] = NULL;
    }
  }
  free(got);
  if (rc == BPC_OK && r > 0)
    rc = bpc__allreduce_pairs(C, seq, 0);
  return rc;
}

int bpc__allreduce_rounds_doubling(int n)
{
  const int m = bpc__allreduce_pow2(n);
  return bpc__log2_ceil(m) + (n > m ? 2 : 0);
}

double bpc__allreduce_model_doubling(int n, double L, double alpha, double beta, double gamma)
{
  const int m = bpc__allreduce_pow2(n);
  const double pairs = n > m ? 2 * (alpha + L * beta) + L * gamma : 0.0;
  return bpc__log2_ceil(m) * (alpha + L * beta + L * gamma) + pairs;
}
