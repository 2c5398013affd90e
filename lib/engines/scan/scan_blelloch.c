/*
 * lib/engines/scan/scan_blelloch.c - global stage "blelloch" (work-
 * efficient exclusive scan).
 *
 * Schedule, K = ceil(log2 P): the up-sweep of brent-kung (K rounds: b =
 * min(k + 2^(d+1) - 1, P - 1) takes a = k + 2^d - 1 on its left); a round
 * that clears the last position (the root: the empty prefix); then
 * down-sweep rounds d = K-1..0 over the same pairs: a and b exchange, a
 * takes b's value (the prefix before the subtree) and b combines its own
 * value with a's old one on the right (x_b = x_b op x_a). Every position
 * then holds its exclusive prefix: no shift round. Operator calls: P - 1
 * up, P - 1 - K down: Table 3.1's 2(N - 1) counts the K down-sweep steps
 * whose left operand is the identity; bpc skips them (no identity is
 * needed), so 2(P - 1) - log2 P for powers of two. Depth 2K - 1 calls,
 * 2K message rounds. Cost: 2K(alpha + beta m) + (2K - 1) gamma, two
 * messages per pair in the down-sweep. Non-powers of two: the tree is cut
 * at P as in brent-kung (the last position stands in for missing right
 * subtrees; pairs with a >= P - 1 do not exist).
 */
#include "engines/scan/scan_internal.h"

static int bl_nrounds(int P)
{
  const int K = bpc__log2_ceil(P);
  return 2 * K + 1;
}

/* The pair of level d that position p belongs to: *a and *b (b cut at
 * P - 1), or 0. In 64 bits: 2^(d+1) may pass INT_MAX. */
static int bl_pair(int P, int d, int p, long long *a, long long *b)
{
  const long long k = (long long)p & ~((2LL << d) - 1);
  *a = k + (1LL << d) - 1;
  *b = k + (2LL << d) - 1;
  if (*b > P - 1)
    *b = P - 1;
  return *a < *b && (p == *a || p == *b);
}

static int bl_step(int P, int r, int p, bpc__scan_step_t *kind)
{
  const int K = bpc__log2_ceil(P);
  long long a, b;
  *kind = BPC__SCAN_NONE;
  if (r < K) { /* up-sweep */
    if (bl_pair(P, r, p, &a, &b) && p == b) {
      *kind = BPC__SCAN_LEFT;
      return (int)a;
    }
    return -1;
  }
  if (r == K) {
    if (p == P - 1)
      *kind = BPC__SCAN_CLEAR;
    return -1;
  }
  const int d = K - 1 - (r - K - 1);
  if (!bl_pair(P, d, p, &a, &b))
    return -1;
  if (p == a) {
    *kind = BPC__SCAN_TAKE;
    return (int)b;
  }
  *kind = BPC__SCAN_RIGHT;
  return (int)a;
}

/* The pair's two positions (up-sweep: only its upper one receives; the
 * clearing round sends nothing). */
static void bl_recvs(int P, int r, int s, int c[4])
{
  const int K = bpc__log2_ceil(P);
  c[0] = c[1] = c[2] = c[3] = 0;
  if (r == K)
    return;
  const int d = r < K ? r : K - 1 - (r - K - 1);
  const long long k = (long long)s & ~((2LL << d) - 1);
  const long long a = k + (1LL << d) - 1, e = k + (2LL << d) - 1;
  const long long b = e < P - 1 ? e : P - 1;
  c[0] = bpc__scan_clamp(b, P);
  c[1] = bpc__scan_clamp(b + 1, P);
  if (r > K) {
    c[2] = bpc__scan_clamp(a, P);
    c[3] = bpc__scan_clamp(a + 1, P);
  }
}

const bpc__scan_sched_t bpc__scan_sched_blelloch = {bl_nrounds, bl_step, bl_recvs, NULL, 1, NULL};

int bpc__scan_blelloch(void *call)
{
  return bpc__scan_run((bpc__scan_call_t *)call, &bpc__scan_sched_blelloch);
}

/* The row's cost model (bpc__scan_row_t.model). */
void bpc__scan_model_blelloch(int P, double *rounds, double *depth, double *calls)
{
  const int K = bpc__log2_ceil(P);
  *rounds = 2 * K; /* the root's clearing round sends nothing */
  *depth = K > 1 ? 2 * K - 1 : K;
  *calls = 2.0 * (P - 1) - K;
}
