/*
 * lib/engines/scan/scan_sklansky.c - global stage "sklansky" (divide and
 * conquer with fan-out).
 *
 * Schedule: ceil(log2 P) rounds; in round r the positions form groups of
 * 2^(r+1); every position of a group's upper half (bit r of p set)
 * receives the inclusive prefix of the lower half's last position,
 * (p >> (r+1) << (r+1)) + 2^r - 1, and combines it on its left. That
 * position sends to up to 2^r positions (fan-out). Then the runner's shift
 * round. Operator calls: the positions with bit r set, summed over the
 * rounds: (P/2) log2 P for powers of two (Table 3.1); depth ceil(log2 P).
 * Cost: ceil(log2 P)(alpha + gamma) + sum_r 2^r beta m at the busiest
 * sender (the fan-out serialises on its link). Non-powers of two: the
 * upper halves are cut at P (positions >= P do not exist).
 */
#include "engines/scan/scan_internal.h"

static int sk_nrounds(int P) { return bpc__log2_ceil(P); }

static int sk_step(int P, int r, int p, bpc__scan_step_t *kind)
{
  (void)P;
  if (p & (1 << r)) { /* r < 31: the group's base and lower half are below p */
    *kind = BPC__SCAN_LEFT;
    return (int)((((long long)p >> (r + 1)) << (r + 1)) + (1LL << r) - 1);
  }
  *kind = BPC__SCAN_NONE;
  return -1;
}

/* The last position of a group's lower half sends to the whole upper half. */
static void sk_recvs(int P, int r, int s, int c[4])
{
  const long long base = ((long long)s >> (r + 1)) << (r + 1);
  c[0] = c[1] = c[2] = c[3] = 0;
  if (s == base + (1LL << r) - 1) {
    c[0] = bpc__scan_clamp((long long)s + 1, P);
    c[1] = bpc__scan_clamp(base + (2LL << r), P);
  }
}

const bpc__scan_sched_t bpc__scan_sched_sklansky = {sk_nrounds, sk_step, sk_recvs, NULL, 0, NULL};

int bpc__scan_sklansky(void *call)
{
  return bpc__scan_run((bpc__scan_call_t *)call, &bpc__scan_sched_sklansky);
}

/* The row's cost model (bpc__scan_row_t.model). */
void bpc__scan_model_sklansky(int P, double *rounds, double *depth, double *calls)
{
  const int K = bpc__log2_ceil(P);
  *rounds = K + (P > 1);
  *depth = K;
  *calls = 0.5 * P * K;
}
