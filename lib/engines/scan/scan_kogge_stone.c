/*
 * lib/engines/scan/scan_kogge_stone.c - global stage "kogge-stone", the
 * shift form (Hillis-Steele).
 *
 * Schedule: ceil(log2 P) rounds; in round r every position p >= 2^r
 * receives the value of position p - 2^r and combines it on its left
 * (x = v op x), every position p < P - 2^r sends to p + 2^r. Then the
 * runner's shift round gives each position its exclusive prefix. Operator
 * calls: sum over rounds of (P - 2^r) = P ceil(log2 P) - 2^ceil(log2 P) + 1,
 * which is P log2 P - P + 1 for powers of two (Table 3.1); depth
 * ceil(log2 P). Cost: ceil(log2 P)(alpha + beta m + gamma) + the shift,
 * the least depth, but P - 2^r messages and calls per round. Non-powers of
 * two: positions past P simply do not exist (no padding).
 */
#include "engines/scan/scan_internal.h"

static int ks_nrounds(int P) { return bpc__log2_ceil(P); }

static int ks_step(int P, int r, int p, bpc__scan_step_t *kind)
{
  (void)P;
  const int d = 1 << r;
  if (p >= d) {
    *kind = BPC__SCAN_LEFT;
    return p - d;
  }
  *kind = BPC__SCAN_NONE;
  return -1;
}

static void ks_recvs(int P, int r, int s, int c[4])
{
  const long long q = (long long)s + (1LL << r);
  c[0] = bpc__scan_clamp(q, P);
  c[1] = bpc__scan_clamp(q + 1, P);
  c[2] = c[3] = 0;
}

const bpc__scan_sched_t bpc__scan_sched_kogge_stone = {ks_nrounds, ks_step, ks_recvs, NULL, 0,
                                                       NULL};

int bpc__scan_kogge_stone(void *call)
{
  return bpc__scan_run((bpc__scan_call_t *)call, &bpc__scan_sched_kogge_stone);
}

/* The row's cost model (bpc__scan_row_t.model). */
void bpc__scan_model_kogge_stone(int P, double *rounds, double *depth, double *calls)
{
  const int K = bpc__log2_ceil(P);
  double W = 0;
  for (int r = 0; r < K; r++)
    W += P - (1 << r);
  *rounds = K + (P > 1);
  *depth = K;
  *calls = W;
}
