/*
 * lib/engines/scan/scan_brent_kung.c - global stage "brent-kung".
 *
 * Schedule, K = ceil(log2 P): up-sweep rounds d = 0..K-1: for every k that
 * is a multiple of 2^(d+1), the position b = min(k + 2^(d+1) - 1, P - 1)
 * receives from a = k + 2^d - 1 (if a < b) and combines it on its left;
 * down-sweep rounds d = K-2..0: every position q < P - 1 with
 * (q + 1) mod 2^(d+1) = 2^d and q >= 3 * 2^d - 1 receives from q - 2^d and
 * combines on its left. Every position then holds its inclusive prefix;
 * the runner's shift round gives the exclusive one. Operator calls: P - 1
 * in the up-sweep (one per tree node), P - log2 P - 1 in the down-sweep:
 * 2P - log2 P - 2 for powers of two (Table 3.1); depth 2K - 1. Cost:
 * (2K - 1)(alpha + beta m + gamma) + the shift, at most one message per
 * position and round. Non-powers of two: the tree is cut at P (the last
 * position stands in for the missing right subtrees; it holds the total
 * after the up-sweep and is skipped in the down-sweep).
 */
#include "engines/scan/scan_internal.h"

static int bk_nrounds(int P)
{
  const int K = bpc__log2_ceil(P);
  return K + (K > 1 ? K - 1 : 0);
}

static int bk_step(int P, int r, int p, bpc__scan_step_t *kind)
{
  const int K = bpc__log2_ceil(P);
  *kind = BPC__SCAN_NONE;
  if (r < K) { /* up-sweep, level d = r (2^(d+1) may pass INT_MAX) */
    const int d = r;
    const long long k = (long long)p & ~((2LL << d) - 1);
    const long long a = k + (1LL << d) - 1;
    if ((p == k + (2LL << d) - 1 || p == P - 1) && a < p) {
      *kind = BPC__SCAN_LEFT;
      return (int)a;
    }
    return -1;
  }
  const int d = K - 2 - (r - K); /* down-sweep */
  const long long h = 1LL << d;
  if (p < P - 1 && ((long long)p + 1) % (2 * h) == h && p >= 3 * h - 1) {
    *kind = BPC__SCAN_LEFT;
    return (int)(p - h);
  }
  return -1;
}

static void bk_recvs(int P, int r, int s, int c[4])
{
  const int K = bpc__log2_ceil(P);
  c[2] = c[3] = 0;
  if (r < K) { /* up-sweep: the group's last position, or the last of all */
    const long long k = (long long)s & ~((2LL << r) - 1);
    c[0] = bpc__scan_clamp(k + (2LL << r) - 1, P);
    c[1] = bpc__scan_clamp(k + (2LL << r), P);
    c[2] = P - 1;
    c[3] = P;
    return;
  }
  const long long q = (long long)s + (1LL << (K - 2 - (r - K))); /* down-sweep */
  c[0] = bpc__scan_clamp(q, P);
  c[1] = bpc__scan_clamp(q + 1, P);
}

const bpc__scan_sched_t bpc__scan_sched_brent_kung = {bk_nrounds, bk_step, bk_recvs, NULL, 0,
                                                      NULL};

int bpc__scan_brent_kung(void *call)
{
  return bpc__scan_run((bpc__scan_call_t *)call, &bpc__scan_sched_brent_kung);
}

/* The row's cost model (bpc__scan_row_t.model). */
void bpc__scan_model_brent_kung(int P, double *rounds, double *depth, double *calls)
{
  const int K = bpc__log2_ceil(P);
  *rounds = K + (K > 1 ? K - 1 : 0) + (P > 1);
  *depth = K > 1 ? 2 * K - 1 : K;
  *calls = 2.0 * P - K - 2;
}
