/*
 * lib/engines/bcast/bcast_plan.c - the process-level view of a schedule,
 * which the executor and the cost model query instead of simulating
 * every process.
 *
 * The executor's rule (bcast_exec.c): a transfer a -> b of step t between
 * processes A and B carries what A holds when step t begins that B neither
 * holds nor gets from an earlier transfer into B of the same step. With
 * combining, what a process holds at the start of step t is exactly the
 * items that started on the processes of its cone: the processes with a
 * time-respecting chain of cross-process transfers to it before step t.
 * So the items of a transfer are those that started on a process in
 * cone(A, t) and not in cone({B, earlier senders into B in step t}, t),
 * and a rank needs only the cones of the transfers of its own process,
 * not the holdings of every process after every step.
 *
 * The plan keeps, per step and receiving process, the distinct sending
 * processes in schedule order (a second transfer between the same two
 * processes in one step carries nothing), each with the first block
 * transfer that stands for it (its message tags). A cone is a backward
 * walk over those lists, step t-1 down to 0; for the schedules here it
 * at most doubles per step, so its cost is about its size. Per rank:
 * O(transfers) integer work to bucket the schedule (which every rank
 * builds whole, as the block-to-process map may put any block anywhere),
 * then O(cone sizes + items) per message of its own: O(p + s) per step
 * at worst with one block per process, where the old simulation cost
 * O(transfers x s / 64) word operations on every rank.
 */
#include "engines/bcast/bcast_internal.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

void bpc__bcast_plan_free(bpc__bcast_plan_t *P)
{
  free(P->in_start);
  free(P->in_from);
  free(P->in_a);
  free(P->in_b);
  free(P->it_start);
  free(P->it_idx);
  free(P->mark);
  free(P->L);
  free(P->out);
  memset(P, 0, sizeof *P);
}

int bpc__bcast_plan_init(bpc__bcast_plan_t *P, const bpc__bcast_sched_t *S, int nr, const int *ids,
                         int s)
{
  memset(P, 0, sizeof *P);
  P->nr = nr;
  P->nsteps = S->nsteps;
  P->s = s;
  const size_t G = (size_t)S->nsteps * (size_t)nr;
  const int *rk = S->rk;
  if (rk == NULL)
    return BPC_ESTATE; /* a schedule built without ranks: a caller's bug */
  P->in_start = calloc(G + 2, sizeof(int));
  P->in_from = malloc(sizeof(int) * (size_t)(S->n > 0 ? S->n : 1));
  P->in_a = malloc(sizeof(int) * (size_t)(S->n > 0 ? S->n : 1));
  P->in_b = malloc(sizeof(int) * (size_t)(S->n > 0 ? S->n : 1));
  P->it_start = calloc((size_t)nr + 2, sizeof(int));
  P->it_idx = malloc(sizeof(int) * (size_t)(s > 0 ? s : 1));
  P->mark = calloc(2 * (size_t)nr, sizeof(int));
  P->L = malloc(sizeof(int) * 2 * (size_t)nr);
  int *seen = calloc((size_t)nr, sizeof(int));
  if (P->in_start == NULL || P->in_from == NULL || P->in_a == NULL ||
      P->in_b == NULL || P->it_start == NULL || P->it_idx == NULL || P->mark == NULL ||
      P->L == NULL || seen == NULL) {
    free(seen);
    bpc__bcast_plan_free(P);
    return BPC_ENOMEM;
  }
  /* items by the process they start on, ascending within each */
  for (int i = 0; i < s; i++)
    P->it_start[rk[ids[i]] + 1]++;
  for (int r = 0; r < nr; r++)
    P->it_start[r + 1] += P->it_start[r];
  for (int i = 0; i < s; i++)
    P->it_idx[P->it_start[rk[ids[i]]]++] = i;
  for (int r = nr; r > 0; r--)
    P->it_start[r] = P->it_start[r - 1];
  P->it_start[0] = 0;
  /* cross-process transfers bucketed by (step, receiving process), stably */
  for (int e = 0; e < S->n; e++) {
    const int A = rk[S->from[e]], B = rk[S->to[e]];
    if (A != B)
      P->in_start[(size_t)S->step[e] * nr + B + 1]++;
  }
  for (size_t g = 0; g < G; g++)
    P->in_start[g + 1] += P->in_start[g];
  for (int e = 0; e < S->n; e++) {
    const int A = rk[S->from[e]], B = rk[S->to[e]];
    if (A == B)
      continue;
    const int k = P->in_start[(size_t)S->step[e] * nr + B]++;
    P->in_from[k] = A;
    P->in_a[k] = S->from[e];
    P->in_b[k] = S->to[e];
  }
  /* back to group starts, dropping repeated senders within a group */
  int k = 0, lo = 0;
  for (size_t g = 0; g < G; g++) {
    const int hi = P->in_start[g];
    P->in_start[g] = k;
    for (int e = lo; e < hi; e++) {
      if (seen[P->in_from[e]] == (int)g + 1)
        continue;
      seen[P->in_from[e]] = (int)g + 1;
      P->in_from[k] = P->in_from[e];
      P->in_a[k] = P->in_a[e];
      P->in_b[k] = P->in_b[e];
      k++;
    }
    lo = hi;
  }
  P->in_start[G] = k;
  P->ne = k;
  free(seen);
  return BPC_OK;
}

/* Extend the seeded cone L[0..*nL) (marked with `stamp` in mark) back
 * from the start of step t: at step u < t, every process sending into a
 * member (one that was a member before step u's senders were added). */
static void cone(const bpc__bcast_plan_t *P, int t, int *mark, int stamp, int *L, int *nL)
{
  for (int u = t - 1; u >= 0; u--) {
    const int n0 = *nL;
    for (int j = 0; j < n0; j++) {
      const size_t g = (size_t)u * P->nr + L[j];
      for (int e = P->in_start[g]; e < P->in_start[g + 1]; e++)
        if (mark[P->in_from[e]] != stamp) {
          mark[P->in_from[e]] = stamp;
          L[(*nL)++] = P->in_from[e];
        }
    }
  }
}

static int cmp_int(const void *x, const void *y)
{
  const int a = *(const int *)x, b = *(const int *)y;
  return (a > b) - (a < b);
}

void bpc__bcast_plan_carry(bpc__bcast_plan_t *P, int t, int B, int e, int *items, long long *n)
{
  const int nr = P->nr;
  int *mH = P->mark, *mA = P->mark + nr, *LH = P->L, *LA = P->L + nr;
  if (P->stamp >= INT_MAX - 1) { /* a long-lived (cached) plan: start the stamps over */
    memset(P->mark, 0, sizeof(int) * 2 * (size_t)nr);
    P->stamp = 0;
  }
  const int sH = ++P->stamp, sA = sH;
  const size_t g = (size_t)t * nr + B;
  /* what B holds or gets earlier in the step */
  int nH = 0;
  mH[B] = sH;
  LH[nH++] = B;
  for (int f = P->in_start[g]; f < e; f++)
    if (mH[P->in_from[f]] != sH) {
      mH[P->in_from[f]] = sH;
      LH[nH++] = P->in_from[f];
    }
  cone(P, t, mH, sH, LH, &nH);
  /* what the sender holds */
  int nA = 0;
  mA[P->in_from[e]] = sA;
  LA[nA++] = P->in_from[e];
  cone(P, t, mA, sA, LA, &nA);
  long long k = 0;
  for (int j = 0; j < nA; j++) {
    const int r = LA[j];
    if (mH[r] == sH)
      continue;
    for (int q = P->it_start[r]; q < P->it_start[r + 1]; q++) {
      if (items != NULL)
        items[k] = P->it_idx[q];
      k++;
    }
  }
  if (items != NULL && k > 1)
    qsort(items, (size_t)k, sizeof(int), cmp_int);
  *n = k;
}
