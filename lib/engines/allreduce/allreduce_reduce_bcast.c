/*
 * lib/engines/allreduce/allreduce_reduce_bcast.c - a binomial reduce to
 * position 0, then a binomial broadcast of the result (MPI_Reduce then
 * MPI_Bcast, over blocks). Reduce round t (distance k = 2^t): position p
 * with p mod 2k == k sends its item (the ordered reduction of its run
 * [p, p + k)) to p - k, which combines it on the right. Broadcast: the
 * distances in reverse, p mod 2k == 0 sends the result to p + k, which
 * stores it. 2 ceil(log2 n) rounds of whole items: ceil(log2 n)(2 alpha +
 * 2 L beta + L gamma) on the critical path; never cheaper than recursive
 * doubling in that model (auto does not pick it), but every block but
 * position 0 only receives the result, and position 0's partial items stay
 * on one path (the shape of MPI's reduce + broadcast).
 */
#include "engines/allreduce/allreduce_internal.h"

/* One round at distance k: reduce (combine at the receiver) or broadcast
 * (store). */
static int round_k(bpc__allreduce_call_t *C, int k, int seq, int reduce)
{
  const int n = C->n, nl = C->assign->nlocal;
  int rc = BPC_OK;
  for (int l = 0; l < nl && rc == BPC_OK; l++) {
    const int p = C->lpos[l];
    if (reduce ? p % (2 * k) == k : p % (2 * k) == 0 && p + k < n)
      rc = bpc__allreduce_send(C, l, p, reduce ? p - k : p + k, seq, 0, C->count);
  }
  for (int l = 0; l < nl && rc == BPC_OK; l++) {
    const int p = C->lpos[l];
    bpc__msg_t *m = NULL;
    if (reduce && p % (2 * k) == 0 && p + k < n) {
      rc = bpc__allreduce_recv(C, p, p + k, seq, &m);
      if (rc == BPC_OK) /* a receiver sends nothing this round: combine at once */
        bpc__allreduce_combine(C, l, m, 0, C->count, 0);
    } else if (!reduce && p % (2 * k) == k) {
      rc = bpc__allreduce_recv(C, p, p - k, seq, &m);
      if (rc == BPC_OK)
        bpc__allreduce_store(C, l, m, 0, C->count);
    }
  }
  const int rc2 = bpc__allreduce_step_end(C);
  return rc != BPC_OK ? rc : rc2;
}

int bpc__allreduce_reduce_bcast(void *call)
{
  bpc__allreduce_call_t *C = call;
  const int R = bpc__log2_ceil(C->n);
  int rc = BPC_OK, seq = 0;
  for (int t = 0; t < R && rc == BPC_OK; t++)
    rc = round_k(C, 1 << t, seq++, 1);
  for (int t = R - 1; t >= 0 && rc == BPC_OK; t--)
    rc = round_k(C, 1 << t, seq++, 0);
  return rc;
}

int bpc__allreduce_rounds_reduce_bcast(int n) { return 2 * bpc__log2_ceil(n); }

double bpc__allreduce_model_reduce_bcast(int n, double L, double alpha, double beta, double gamma)
{
  return bpc__log2_ceil(n) * (2 * alpha + 2 * L * beta + L * gamma);
}
