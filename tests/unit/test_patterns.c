/*
 * tests/unit/test_patterns.c - lib/patterns: k-vector choice and checks,
 * round groups (distance doubling), the merge variants' roots and
 * absorbed sets (doubling and halving, from their roles), piece
 * ranges and permutations. Every computed result is compared with an
 * independent reference written here (digits by repeated division, a
 * simulation of the merge rounds, piece boundaries in 128-bit arithmetic).
 */
#include "unit_check.h"

#include <stdint.h>
#include <string.h>

#include "bpc/core.h"
#include "engines/merge/merge_internal.h"
#include "patterns/patterns.h"

/* Check's ck_assert_* record a mark point (a write to the runner) on every
 * success, which costs a system call; the hot loops here use these instead,
 * which only call into Check on failure. */
#define T_REQ(cond, ...)          \
  do {                            \
    if (!(cond))                  \
      ck_abort_msg(__VA_ARGS__);  \
  } while (0)
#define T_CMP(a, op, b)                                                                   \
  do {                                                                                    \
    long long t_a_ = (long long)(a), t_b_ = (long long)(b);                               \
    if (!(t_a_ op t_b_))                                                                  \
      ck_abort_msg("line %d: %s %s %s fails (%lld vs %lld)", __LINE__, #a, #op, #b, t_a_, \
                   t_b_);                                                                 \
  } while (0)
#define T_EQ(a, b) T_CMP(a, ==, b)
#define T_TRUE(c) T_REQ(c, "line %d: %s is false", __LINE__, #c)

static const int t_counts[] = {1, 2, 3, 5, 7, 8, 12, 509, 576, 1024, 65536};
#define T_NCOUNTS ((int)(sizeof t_counts / sizeof t_counts[0]))
static const int t_targets[] = {2, 3, 4, 8};
#define T_NTARGETS ((int)(sizeof t_targets / sizeof t_targets[0]))

/* ------------------------------------------------------------ references */

static int ref_is_prime(int x)
{
  if (x < 2)
    return 0;
  for (int d = 2; (int64_t)d * d <= x; d++)
    if (x % d == 0)
      return 0;
  return 1;
}

/* Digits of p, one per round, by repeated division: doubling peels the
 * least significant digit first (round 0), halving the last round first. */
static void ref_digits(const int *k, int R, int halving, int p, int *d)
{
  for (int i = 0; i < R; i++) {
    int r = halving ? R - 1 - i : i;
    d[r] = p % k[r];
    p /= k[r];
  }
}

/* Inverse of ref_digits (Horner from the most significant digit). */
static int ref_compose(const int *k, int R, int halving, const int *d)
{
  int p = 0;
  for (int i = 0; i < R; i++) {
    int r = halving ? i : R - 1 - i;
    p = p * k[r] + d[r];
  }
  return p;
}

/* ------------------------------------------------------------- k-vectors */

START_TEST(test_kvec_auto)
{
  int extra[] = {4096, 6, 30, 210, 1000, 2310, 9973, 65521, 1 << 30, 2147483647, 2147483646};
  int nextra = (int)(sizeof extra / sizeof extra[0]);
  int k[BPC__MAX_ROUNDS], k2[BPC__MAX_ROUNDS], R = -1, R2 = -1;
  char msg[256];
  for (int ci = 0; ci < T_NCOUNTS + nextra; ci++) {
    int n = ci < T_NCOUNTS ? t_counts[ci] : extra[ci - T_NCOUNTS];
    for (int ti = 0; ti < T_NTARGETS + 1; ti++) {
      int target = ti < T_NTARGETS ? t_targets[ti] : 5;
      T_EQ(bpc__kvec_auto(n, target, k, BPC__MAX_ROUNDS, &R), BPC_OK);
      T_EQ(bpc__kvec_check(n, k, R, msg, sizeof msg), BPC_OK);
      ck_assert_str_eq(msg, "");
      int64_t prod = 1;
      for (int r = 0; r < R; r++) {
        prod *= k[r];
        /* at most target, unless a prime that cannot be split */
        T_REQ(k[r] <= target || ref_is_prime(k[r]), "n=%d target=%d k[%d]=%d", n, target,
                      r, k[r]);
        /* documented order: decreasing k */
        if (r > 0)
          T_CMP(k[r], <=, k[r - 1]);
      }
      T_EQ(prod, n);
      /* no two rounds could have been packed into one */
      for (int a = 0; a < R; a++)
        for (int b = a + 1; b < R; b++)
          T_REQ((int64_t)k[a] * k[b] > target, "n=%d target=%d: %d and %d fit together",
                        n, target, k[a], k[b]);
      if (n == 1)
        T_EQ(R, 0);
      if (ref_is_prime(n) && n > target) {
        T_EQ(R, 1);
        T_EQ(k[0], n);
      }
      /* deterministic */
      T_EQ(bpc__kvec_auto(n, target, k2, BPC__MAX_ROUNDS, &R2), BPC_OK);
      T_EQ(R2, R);
      ck_assert_mem_eq(k, k2, (size_t)R * sizeof(int));
      /* cap exactly R is enough, R - 1 is not */
      T_EQ(bpc__kvec_auto(n, target, k2, R, &R2), BPC_OK);
      if (R > 0)
        T_EQ(bpc__kvec_auto(n, target, k2, R - 1, &R2), BPC_EINVAL);
    }
  }
  /* every n up to 3000 at target 4 */
  for (int n = 1; n <= 3000; n++) {
    T_EQ(bpc__kvec_auto(n, 4, k, BPC__MAX_ROUNDS, &R), BPC_OK);
    T_EQ(bpc__kvec_check(n, k, R, NULL, 0), BPC_OK);
  }
  /* documented examples */
  T_EQ(bpc__kvec_auto(12, 4, k, BPC__MAX_ROUNDS, &R), BPC_OK);
  T_EQ(R, 2);
  T_EQ(k[0], 4);
  T_EQ(k[1], 3);
  T_EQ(bpc__kvec_auto(65536, 4, k, BPC__MAX_ROUNDS, &R), BPC_OK);
  T_EQ(R, 8);
  for (int r = 0; r < R; r++)
    T_EQ(k[r], 4);
  T_EQ(bpc__kvec_auto(1024, 8, k, BPC__MAX_ROUNDS, &R), BPC_OK);
  T_EQ(R, 4); /* 8x8x8x2 */
  T_EQ(k[3], 2);
  /* bad arguments */
  T_EQ(bpc__kvec_auto(0, 4, k, BPC__MAX_ROUNDS, &R), BPC_EINVAL);
  T_EQ(bpc__kvec_auto(-3, 4, k, BPC__MAX_ROUNDS, &R), BPC_EINVAL);
  T_EQ(bpc__kvec_auto(16, 1, k, BPC__MAX_ROUNDS, &R), BPC_EINVAL);
  T_EQ(bpc__kvec_auto(16, 4, k, 1, &R), BPC_EINVAL);
  T_EQ(bpc__kvec_auto(16, 4, k, BPC__MAX_ROUNDS, NULL), BPC_ENULL);
  T_EQ(bpc__kvec_auto(1, 4, NULL, 0, &R), BPC_OK);
  T_EQ(R, 0);
}
END_TEST

/* bpc__kvec_primes: one round per prime factor, ascending; checked against
 * a reference that strips factors by increasing trial divisor */
START_TEST(test_kvec_primes)
{
  int k[BPC__MAX_ROUNDS], R = -1;
  for (int n = 1; n <= 5000; n++) {
    T_EQ(bpc__kvec_primes(n, k, BPC__MAX_ROUNDS, &R), BPC_OK);
    T_EQ(bpc__kvec_check(n, k, R, NULL, 0), BPC_OK);
    int m = n, r = 0;
    for (int d = 2; m > 1; d++)
      while (m % d == 0) {
        T_REQ(r < R, "n=%d: only %d rounds", n, R);
        T_REQ(k[r] == d, "n=%d: k[%d] = %d, expected %d", n, r, k[r], d);
        r++;
        m /= d;
      }
    T_EQ(r, R);
    /* cap exactly R is enough, R - 1 is not */
    T_EQ(bpc__kvec_primes(n, k, R, &R), BPC_OK);
    if (R > 0)
      T_EQ(bpc__kvec_primes(n, k, R - 1, &R), BPC_EINVAL);
  }
  /* documented examples; the largest counts */
  const int ex[][5] = {{12, 2, 2, 3, 0}, {6, 2, 3, 0, 0}, {7, 7, 0, 0, 0}, {8, 2, 2, 2, 0}};
  for (int e = 0; e < 4; e++) {
    T_EQ(bpc__kvec_primes(ex[e][0], k, BPC__MAX_ROUNDS, &R), BPC_OK);
    for (int r = 0; r < R; r++)
      T_EQ(k[r], ex[e][1 + r]);
    T_EQ(ex[e][1 + R], 0);
  }
  T_EQ(bpc__kvec_primes(1 << 30, k, BPC__MAX_ROUNDS, &R), BPC_OK);
  T_EQ(R, 30);
  T_EQ(bpc__kvec_primes(2147483647, k, BPC__MAX_ROUNDS, &R), BPC_OK);
  T_EQ(R, 1);
  T_EQ(k[0], 2147483647);
  T_EQ(bpc__kvec_primes(1, k, 0, &R), BPC_OK);
  T_EQ(R, 0);
  T_EQ(bpc__kvec_primes(0, k, BPC__MAX_ROUNDS, &R), BPC_EINVAL);
  T_EQ(bpc__kvec_primes(6, NULL, 2, &R), BPC_ENULL);
  T_EQ(bpc__kvec_primes(6, k, 2, NULL), BPC_ENULL);
}
END_TEST

START_TEST(test_kvec_check)
{
  char msg[256];
  int k43[] = {4, 3};
  T_EQ(bpc__kvec_check(16, k43, 2, msg, sizeof msg), BPC_EKVEC);
  ck_assert_str_eq(msg, "k-vector 4x3 multiplies to 12, but there are 16 blocks");
  T_EQ(bpc__kvec_check(12, k43, 2, msg, sizeof msg), BPC_OK);
  int k421[] = {4, 2, 1, 2};
  T_EQ(bpc__kvec_check(16, k421, 4, msg, sizeof msg), BPC_EKVEC);
  ck_assert_str_eq(msg, "k-vector entry 2 is 1; every k must be at least 2");
  int kneg[] = {-4, -4};
  T_EQ(bpc__kvec_check(16, kneg, 2, msg, sizeof msg), BPC_EKVEC);
  ck_assert_str_eq(msg, "k-vector entry 0 is -4; every k must be at least 2");
  int many[BPC__MAX_ROUNDS + 1];
  for (int i = 0; i < BPC__MAX_ROUNDS + 1; i++)
    many[i] = 2;
  T_EQ(bpc__kvec_check(16, many, BPC__MAX_ROUNDS + 1, msg, sizeof msg), BPC_EKVEC);
  ck_assert_str_eq(msg, "k-vector has 65 rounds; at most 64 are allowed");
  /* 40 twos multiply past int: reported without overflow */
  T_EQ(bpc__kvec_check(16, many, 40, msg, sizeof msg), BPC_EKVEC);
  ck_assert_ptr_nonnull(strstr(msg, "multiplies to more than 2147483647, but there are 16 blocks"));
  T_EQ(bpc__kvec_check(16, NULL, 0, msg, sizeof msg), BPC_EKVEC);
  ck_assert_ptr_nonnull(strstr(msg, "there are 16 blocks"));
  T_EQ(bpc__kvec_check(1, NULL, 0, msg, sizeof msg), BPC_OK);
  T_EQ(bpc__kvec_check(0, NULL, 0, msg, sizeof msg), BPC_EKVEC);
  ck_assert_ptr_nonnull(strstr(msg, "block count 0"));
  T_EQ(bpc__kvec_check(16, NULL, 2, msg, sizeof msg), BPC_EKVEC);
  T_EQ(bpc__kvec_check(16, k43, -1, msg, sizeof msg), BPC_EKVEC);
  int k2[] = {2};
  T_EQ(bpc__kvec_check(1, k2, 1, msg, sizeof msg), BPC_EKVEC);
  ck_assert_str_eq(msg, "k-vector 2 multiplies to 2, but there is 1 block");
  /* NULL msg and tiny msg buffers are fine */
  T_EQ(bpc__kvec_check(16, k43, 2, NULL, 0), BPC_EKVEC);
  char tiny[6];
  T_EQ(bpc__kvec_check(16, k43, 2, tiny, sizeof tiny), BPC_EKVEC);
  ck_assert_str_eq(tiny, "k-vec");
  /* rounds_init forwards the check */
  bpc__rounds_t R;
  T_EQ(bpc__rounds_init(&R, 16, k43, 2, msg, sizeof msg), BPC_EKVEC);
  ck_assert_str_eq(msg, "k-vector 4x3 multiplies to 12, but there are 16 blocks");
  T_EQ(bpc__rounds_init(NULL, 12, k43, 2, msg, sizeof msg), BPC_ENULL);
  T_EQ(bpc__rounds_init(&R, 12, k43, 2, msg, sizeof msg), BPC_OK);
  T_EQ(R.n, 12);
  T_EQ(R.nrounds, 2);
}
END_TEST

START_TEST(test_kvec_format)
{
  char buf[64];
  int k[] = {4, 4, 2};
  bpc__kvec_format(k, 3, buf, sizeof buf);
  ck_assert_str_eq(buf, "4x4x2");
  bpc__kvec_format(k, 0, buf, sizeof buf);
  ck_assert_str_eq(buf, "1");
  bpc__kvec_format(NULL, 0, buf, sizeof buf);
  ck_assert_str_eq(buf, "1");
  int big[] = {65536, 65536, 65536};
  char small[10];
  bpc__kvec_format(big, 3, small, sizeof small);
  T_EQ(strlen(small), sizeof small - 1);
  ck_assert_str_eq(small + strlen(small) - 3, "...");
  bpc__kvec_format(k, 3, NULL, 0); /* no crash */
}
END_TEST

/* ---------------------------------------------------------------- rounds */

/* Collect k-vectors to test for n: the automatic ones for every target plus
 * a few hand-made orders. Returns how many (each of at most 64 entries). */
static int t_kvecs_all(int n, int ks[][BPC__MAX_ROUNDS], int *Rs, int max)
{
  int m = 0;
  for (int ti = 0; ti < T_NTARGETS && m < max; ti++) {
    T_EQ(bpc__kvec_auto(n, t_targets[ti], ks[m], BPC__MAX_ROUNDS, &Rs[m]), BPC_OK);
    m++;
  }
  /* the reverse of the target-4 vector (increasing k) */
  if (m < max) {
    int R4 = Rs[2];
    for (int r = 0; r < R4; r++)
      ks[m][r] = ks[2][R4 - 1 - r];
    Rs[m++] = R4;
  }
  /* the whole count in one round (O(n^2) to check, so small n only) */
  if (n > 1 && n <= 1024 && m < max) {
    ks[m][0] = n;
    Rs[m++] = 1;
  }
  return m;
}

/* t_kvecs_all without repeated vectors. */
static int t_kvecs(int n, int ks[][BPC__MAX_ROUNDS], int *Rs, int max)
{
  int m = t_kvecs_all(n, ks, Rs, max);
  /* drop repeats (e.g. targets 2 and 3 agree on powers of two) */
  int u = 0;
  for (int v = 0; v < m; v++) {
    int dup = 0;
    for (int w = 0; w < u && !dup; w++)
      dup = Rs[w] == Rs[v] && memcmp(ks[w], ks[v], (size_t)Rs[v] * sizeof(int)) == 0;
    if (!dup) {
      if (u != v) {
        memcpy(ks[u], ks[v], sizeof ks[v]);
        Rs[u] = Rs[v];
      }
      u++;
    }
  }
  return u;
}

/* Check strides, indices and groups of every round for every position
 * against the digit reference; and that the groups partition 0..n-1. */
static void t_check_groups(int n, const int *k, int R)
{
  bpc__rounds_t rd;
  char msg[256];
  T_EQ(bpc__rounds_init(&rd, n, k, R, msg, sizeof msg), BPC_OK);
  static int members[65536], ref[65536], hits[65536];
  int d[BPC__MAX_ROUNDS], e[BPC__MAX_ROUNDS];
  for (int r = 0; r < R; r++) {
    /* reference stride: position of digit r = 1, other digits 0 */
    memset(e, 0, sizeof e);
    e[r] = 1;
    int ref_stride = ref_compose(k, R, 0, e);
    T_EQ(bpc__round_stride(&rd, r), ref_stride);
    memset(hits, 0, (size_t)n * sizeof hits[0]);
    for (int p = 0; p < n; p++) {
      ref_digits(k, R, 0, p, d);
      T_EQ(ref_compose(k, R, 0, d), p);
      T_EQ(bpc__round_index(&rd, r, p), d[r]);
      /* the composition is linear in each digit: changing digit r from
       * d[r] to j moves the position by (j - d[r]) * ref_stride */
      for (int j = 0; j < k[r]; j++)
        ref[j] = p + (j - d[r]) * ref_stride;
      bpc__round_group(&rd, r, p, members);
      for (int j = 0; j < k[r]; j++)
        T_REQ(members[j] == ref[j], "n=%d R=%d r=%d p=%d j=%d: %d vs %d", n,
                      R, r, p, j, members[j], ref[j]);
      T_EQ(members[d[r]], p);
      if (d[r] == 0)
        for (int j = 0; j < k[r]; j++)
          hits[members[j]]++;
    }
    for (int p = 0; p < n; p++)
      T_REQ(hits[p] == 1, "n=%d r=%d: position %d in %d groups", n, r, p, hits[p]);
  }
  /* out-of-range arguments */
  T_EQ(bpc__round_stride(&rd, R), -1);
  T_EQ(bpc__round_index(&rd, 0, n), -1);
  T_EQ(bpc__round_index(&rd, -1, 0), -1);
}

START_TEST(test_groups)
{
  int ks[8][BPC__MAX_ROUNDS], Rs[8];
  for (int ci = 0; ci < T_NCOUNTS; ci++) {
    int n = t_counts[ci];
    int m = t_kvecs(n, ks, Rs, 8);
    for (int v = 0; v < m; v++)
      t_check_groups(n, ks[v], Rs[v]);
  }
  int k232[] = {2, 3, 2};
  t_check_groups(12, k232, 3);
  int k537[] = {5, 3, 7};
  t_check_groups(105, k537, 3);
}
END_TEST

static int t_group_is(const bpc__rounds_t *rd, int r, int p, const int *want, int nw)
{
  int got[64];
  bpc__round_group(rd, r, p, got);
  return memcmp(got, want, (size_t)nw * sizeof(int)) == 0;
}

/* A merge schedule as the result queries see it: n, k-vector, rounds and
 * the variant (halving 0: doubling's roles, 1: halving's). */
static bpc__merge_plan_t t_shape(const bpc__rounds_t *rd, int rounds, int halving)
{
  bpc__merge_plan_t P;
  memset(&P, 0, sizeof P);
  P.n = rd->n;
  P.R = *rd;
  P.rounds = rounds;
  P.variant = halving ? &bpc__merge_halving : &bpc__merge_doubling;
  return P;
}

/* The DIY example: 16 blocks, k = {4, 2, 2}. */
START_TEST(test_diy_example)
{
  int k[] = {4, 2, 2};
  bpc__rounds_t rd;
  T_EQ(bpc__rounds_init(&rd, 16, k, 3, NULL, 0), BPC_OK);
  int g00[] = {0, 1, 2, 3}, g01[] = {4, 5, 6, 7}, g03[] = {12, 13, 14, 15};
  T_TRUE(t_group_is(&rd, 0, 0, g00, 4));
  T_TRUE(t_group_is(&rd, 0, 6, g01, 4));
  T_TRUE(t_group_is(&rd, 0, 15, g03, 4));
  int g10[] = {0, 4}, g11[] = {8, 12};
  T_TRUE(t_group_is(&rd, 1, 0, g10, 2));
  T_TRUE(t_group_is(&rd, 1, 4, g10, 2));
  T_TRUE(t_group_is(&rd, 1, 12, g11, 2));
  int g20[] = {0, 8};
  T_TRUE(t_group_is(&rd, 2, 8, g20, 2));
  /* doubling's roots after two rounds: 0 and 8; 8 has absorbed 8..15 */
  bpc__merge_plan_t S1 = t_shape(&rd, 1, 0), S2 = t_shape(&rd, 2, 0), S3 = t_shape(&rd, 3, 0);
  for (int p = 0; p < 16; p++) {
    T_EQ(bpc__merge_shape_root(&S2, p), p < 8 ? 0 : 8);
    T_EQ(bpc__merge_shape_root(&S1, p), p - p % 4);
  }
  int out[16];
  T_EQ(bpc__merge_shape_absorbed(&S2, 8, out, 16), 8);
  for (int i = 0; i < 8; i++)
    T_EQ(out[i], 8 + i);
  T_EQ(bpc__merge_shape_absorbed(&S3, 0, out, 16), 16);
  for (int i = 0; i < 16; i++)
    T_EQ(out[i], i);
  /* halving merge after one round: groups {0,4,8,12}, {1,5,9,13}, ...:
   * roots 0..3, root 1 absorbed 1,5,9,13 */
  int h01[] = {1, 5, 9, 13};
  bpc__merge_plan_t H1 = t_shape(&rd, 1, 1);
  for (int p = 0; p < 16; p++)
    T_EQ(bpc__merge_shape_root(&H1, p), p % 4);
  T_EQ(bpc__merge_shape_absorbed(&H1, 1, out, 16), 4);
  ck_assert_mem_eq(out, h01, sizeof h01);
}
END_TEST

/* The merge variants' roles as the result queries walk them (merge.c)
 * against a simulation of the digit rule: owner[q] is the position holding
 * q's item; each round, every active group moves its items to index 0. */
static void t_check_merge(int n, const int *k, int R, int halving)
{
  bpc__rounds_t rd;
  T_EQ(bpc__rounds_init(&rd, n, k, R, NULL, 0), BPC_OK);
  static int owner[65536], active[65536], held[65536], out[65536], to[65536];
  int d[BPC__MAX_ROUNDS];
  for (int p = 0; p < n; p++) {
    owner[p] = p;
    active[p] = 1;
  }
  for (int r = 0; r <= R; r++) {
    /* state at the start of round r (after r rounds) */
    memset(held, 0, (size_t)n * sizeof held[0]);
    for (int q = 0; q < n; q++)
      held[owner[q]]++;
    const bpc__merge_plan_t S = t_shape(&rd, r, halving);
    for (int p = 0; p < n; p++) {
      T_REQ((bpc__merge_shape_root(&S, p) == p) == active[p], "n=%d R=%d h=%d r=%d p=%d", n, R,
                    halving, r, p);
      T_EQ(bpc__merge_shape_root(&S, p), owner[p]);
      if (!active[p])
        continue;
      int c = bpc__merge_shape_absorbed(&S, p, out, n);
      T_EQ(c, held[p]);
      for (int i = 0; i < c; i++) {
        T_EQ(owner[out[i]], p);
        if (i > 0)
          T_CMP(out[i - 1], <, out[i]);
      }
    }
    if (r == R)
      break;
    /* round r: each active position with a nonzero digit sends to index 0 */
    for (int p = 0; p < n; p++) {
      to[p] = p;
      if (!active[p])
        continue;
      ref_digits(k, R, halving, p, d);
      if (d[r] == 0)
        continue;
      d[r] = 0;
      to[p] = ref_compose(k, R, halving, d);
      T_TRUE(active[to[p]]);
    }
    for (int p = 0; p < n; p++)
      if (to[p] != p)
        active[p] = 0;
    for (int q = 0; q < n; q++)
      owner[q] = to[owner[q]];
  }
  /* everything ends at position 0 */
  for (int p = 0; p < n; p++)
    T_EQ(owner[p], 0);
  /* truncated output still reports the full count */
  if (n >= 2 && R >= 1) {
    int two[2] = {-1, -1};
    const bpc__merge_plan_t S = t_shape(&rd, R, halving);
    T_EQ(bpc__merge_shape_absorbed(&S, 0, two, 1), n);
    T_EQ(two[0], 0);
    T_EQ(two[1], -1);
    T_EQ(bpc__merge_shape_absorbed(&S, 0, NULL, 0), n);
  }
}

START_TEST(test_merge)
{
  int ks[8][BPC__MAX_ROUNDS], Rs[8];
  for (int ci = 0; ci < T_NCOUNTS; ci++) {
    int n = t_counts[ci];
    int m = t_kvecs(n, ks, Rs, 8);
    for (int v = 0; v < m; v++)
      for (int h = 0; h < 2; h++)
        t_check_merge(n, ks[v], Rs[v], h);
  }
  int k232[] = {2, 3, 2};
  t_check_merge(12, k232, 3, 0);
  t_check_merge(12, k232, 3, 1);
}
END_TEST

/* ---------------------------------------------------------------- pieces */

#ifdef __SIZEOF_INT128__
static int64_t ref_floor_div(int64_t i, int64_t count, int k)
{
  return (int64_t)(((__int128)i * count) / k);
}
#endif

static uint64_t t_rng = 88172645463325252ull;
static uint64_t t_rand(void)
{
  t_rng ^= t_rng << 13;
  t_rng ^= t_rng >> 7;
  t_rng ^= t_rng << 17;
  return t_rng;
}

static void t_check_pieces(int64_t count, int k)
{
  int64_t prev_end = 0, minlen = INT64_MAX, maxlen = -1;
  int all_e = count <= 4096;
  for (int i = 0; i < k; i++) {
    int64_t off = -1, len = -1;
    bpc__piece_range(count, k, i, &off, &len);
#ifdef __SIZEOF_INT128__
    T_REQ(off == ref_floor_div(i, count, k), "count=%lld k=%d i=%d", (long long)count, k,
                  i);
    T_EQ(off + len, ref_floor_div((int64_t)i + 1, count, k));
#endif
    T_REQ(off == prev_end, "count=%lld k=%d i=%d: gap", (long long)count, k, i);
    T_CMP(len, >=, 0);
    prev_end = off + len;
    if (len < minlen)
      minlen = len;
    if (len > maxlen)
      maxlen = len;
    if (len > 0) {
      T_EQ(bpc__piece_of(count, k, off), i);
      T_EQ(bpc__piece_of(count, k, off + len - 1), i);
      if (all_e)
        for (int64_t e = off; e < off + len; e++)
          T_EQ(bpc__piece_of(count, k, e), i);
      else if (i % 97 == 0)
        T_EQ(bpc__piece_of(count, k, off + (int64_t)(t_rand() % (uint64_t)len)), i);
    }
  }
  T_EQ(prev_end, count);
  T_CMP(maxlen - minlen, <=, 1);
  /* random elements against the reference formula */
#ifdef __SIZEOF_INT128__
  for (int s = 0; s < 200 && count > 0; s++) {
    int64_t e = (int64_t)(t_rand() % (uint64_t)count);
    int i = (int)((((__int128)e + 1) * k - 1) / count);
    T_EQ(bpc__piece_of(count, k, e), i);
  }
#endif
  T_EQ(bpc__piece_of(count, k, count), -1);
  T_EQ(bpc__piece_of(count, k, -1), -1);
}

START_TEST(test_pieces)
{
  int ks[] = {1, 2, 3, 4, 7, 16, 100, 509, 1000, 4096, 65521, 65536};
  int nk = (int)(sizeof ks / sizeof ks[0]);
  for (int a = 0; a < nk; a++) {
    int k = ks[a];
    int64_t counts[] = {0, 1, 2, k - 1, k, k + 1, 2 * (int64_t)k + 3, 1000003,
                        (int64_t)1 << 40, ((int64_t)1 << 62) + 12345, INT64_MAX};
    int nc = (int)(sizeof counts / sizeof counts[0]);
    for (int c = 0; c < nc; c++)
      if (counts[c] >= 0)
        t_check_pieces(counts[c], k);
  }
  /* bad arguments */
  int64_t off = 7, len = 7;
  bpc__piece_range(10, 0, 0, &off, &len);
  T_TRUE(off == 0 && len == 0);
  bpc__piece_range(10, 3, 3, &off, &len);
  T_TRUE(off == 0 && len == 0);
  bpc__piece_range(-1, 3, 0, &off, &len);
  T_TRUE(off == 0 && len == 0);
  T_EQ(bpc__piece_of(10, 0, 0), -1);
  T_EQ(bpc__piece_of(0, 3, 0), -1);
  /* a worked example: 10 over 4 -> [0,2) [2,5) [5,7) [7,10) */
  int64_t want[] = {0, 2, 5, 7, 10};
  for (int i = 0; i < 4; i++) {
    bpc__piece_range(10, 4, i, &off, &len);
    T_EQ(off, want[i]);
    T_EQ(off + len, want[i + 1]);
  }
}
END_TEST

/* ---------------------------------------------------------- permutations */

static void t_check_perm_ok(const int *order, int n)
{
  static int pos_of[70000];
  char msg[128] = "x";
  T_EQ(bpc__perm_check(order, n, msg, sizeof msg), BPC_OK);
  ck_assert_str_eq(msg, "");
  bpc__perm_invert(order, n, pos_of);
  for (int pos = 0; pos < n; pos++)
    T_EQ(pos_of[order[pos]], pos);
  for (int g = 0; g < n; g++)
    T_EQ(order[pos_of[g]], g);
}

/* Flat pieces (size_t), radix-k nested ownership and ring partners. */
START_TEST(test_swap_pieces)
{
  /* flat: the same boundaries as bpc__piece_range, tiling [0, count) */
  const size_t counts[] = {0, 1, 5, 37, 1000, (size_t)1 << 40};
  for (int ci = 0; ci < 6; ci++)
    for (int n = 1; n <= 13; n++) {
      size_t next = 0;
      for (int p = 0; p < n; p++) {
        size_t off = 99, len = 99;
        int64_t o = 0, l = 0;
        bpc__flat_piece(counts[ci], n, p, &off, &len);
        bpc__piece_range((int64_t)counts[ci], n, p, &o, &l);
        ck_assert_uint_eq(off, (size_t)o);
        ck_assert_uint_eq(len, (size_t)l);
        ck_assert_uint_eq(off, next);
        next = off + len;
      }
      ck_assert_uint_eq(next, counts[ci]);
    }
  size_t off = 1, len = 1;
  bpc__flat_piece(10, 4, 4, &off, &len);
  ck_assert(off == 0 && len == 0);

  /* radix-k: binary swap on 8 positions, 8 elements: bit-reversed owners */
  bpc__rounds_t R;
  int k222[3] = {2, 2, 2};
  ck_assert_int_eq(bpc__rounds_init(&R, 8, k222, 3, NULL, 0), BPC_OK);
  const int bitrev[8] = {0, 4, 2, 6, 1, 5, 3, 7};
  for (int p = 0; p < 8; p++) {
    bpc__radixk_piece(&R, 3, 8, p, &off, &len);
    ck_assert_uint_eq(len, 1);
    ck_assert_uint_eq(off, (size_t)bitrev[p]);
  }
  /* after one round: halves by the lowest digit */
  bpc__radixk_piece(&R, 1, 8, 5, &off, &len);
  ck_assert(off == 4 && len == 4);
  bpc__radixk_piece(&R, 0, 8, 5, &off, &len);
  ck_assert(off == 0 && len == 8);
  /* one round = the flat split; any k-vector tiles [0, count) */
  int k12[1] = {12}, k34[2] = {3, 4}, k43[2] = {4, 3};
  const int *kv[3] = {k12, k34, k43};
  const int nk[3] = {1, 2, 2};
  for (int v = 0; v < 3; v++) {
    ck_assert_int_eq(bpc__rounds_init(&R, 12, kv[v], nk[v], NULL, 0), BPC_OK);
    for (int ci = 0; ci < 5; ci++) {
      unsigned char cover[1000];
      memset(cover, 0, sizeof cover);
      for (int p = 0; p < 12; p++) {
        bpc__radixk_piece(&R, nk[v], counts[ci], p, &off, &len);
        if (v == 0) {
          size_t fo, fl;
          bpc__flat_piece(counts[ci], 12, p, &fo, &fl);
          ck_assert(fo == off && fl == len);
        }
        for (size_t e = off; e < off + len; e++)
          cover[e]++;
      }
      for (size_t e = 0; e < counts[ci]; e++)
        ck_assert_int_eq(cover[e], 1);
    }
  }
  bpc__radixk_piece(&R, 3, 12, 0, &off, &len); /* rounds out of range */
  ck_assert(off == 0 && len == 0);
  bpc__radixk_piece(&R, 2, 12, 12, &off, &len); /* position out of range */
  ck_assert(off == 0 && len == 0);
  bpc__radixk_piece(NULL, 0, 12, 0, &off, &len);
  ck_assert(off == 0 && len == 0);

  /* ring partners */
  ck_assert_int_eq(bpc__ring_pos(5, 4, 1), 0);
  ck_assert_int_eq(bpc__ring_pos(5, 0, -1), 4);
  ck_assert_int_eq(bpc__ring_pos(5, 2, -7), 0);
  ck_assert_int_eq(bpc__ring_pos(5, 2, 13), 0);
  ck_assert_int_eq(bpc__ring_pos(1, 0, -3), 0);
  ck_assert_int_eq(bpc__ring_pos(0, 0, 1), -1);
  ck_assert_int_eq(bpc__ring_pos(5, 5, 1), -1);
  ck_assert_int_eq(bpc__ring_pos(5, -1, 1), -1);
  for (int n = 1; n <= 9; n++)
    for (int d = -2 * n; d <= 2 * n; d++) {
      unsigned seen = 0;
      for (int p = 0; p < n; p++) { /* a shift is a permutation, undone by -d */
        const int q = bpc__ring_pos(n, p, d);
        ck_assert(q >= 0 && q < n);
        seen |= 1u << q;
        ck_assert_int_eq(bpc__ring_pos(n, q, -d), p);
      }
      ck_assert_uint_eq(seen, (1u << n) - 1);
    }
}
END_TEST

START_TEST(test_perm)
{
  static int order[70000];
  int sizes[] = {0, 1, 2, 5, 16, 1000, 65536, 70000};
  char msg[128];
  for (int s = 0; s < (int)(sizeof sizes / sizeof sizes[0]); s++) {
    int n = sizes[s];
    for (int i = 0; i < n; i++)
      order[i] = i;
    t_check_perm_ok(order, n);
    for (int i = 0; i < n; i++)
      order[i] = n - 1 - i;
    t_check_perm_ok(order, n);
    for (int i = n - 1; i > 0; i--) { /* Fisher-Yates */
      int j = (int)(t_rand() % (uint64_t)(i + 1));
      int t = order[i];
      order[i] = order[j];
      order[j] = t;
    }
    t_check_perm_ok(order, n);
    if (n >= 2) {
      /* duplicate: overwrite the entry holding gid 1 with the gid at the end */
      int a = 0;
      while (order[a] != 1)
        a++;
      int b = a == n - 1 ? 0 : n - 1;
      int saved = order[a];
      order[a] = order[b];
      T_EQ(bpc__perm_check(order, n, msg, sizeof msg), BPC_EPERM);
      T_REQ(strstr(msg, "repeats") != NULL, "%s", msg);
      order[a] = saved;
    }
    if (n >= 1) {
      int saved = order[n / 2];
      order[n / 2] = n;
      T_EQ(bpc__perm_check(order, n, msg, sizeof msg), BPC_EPERM);
      T_REQ(strstr(msg, "outside") != NULL, "%s", msg);
      order[n / 2] = -1;
      T_EQ(bpc__perm_check(order, n, msg, sizeof msg), BPC_EPERM);
      T_REQ(strstr(msg, "outside") != NULL, "%s", msg);
      order[n / 2] = saved;
      T_EQ(bpc__perm_check(order, n, NULL, 0), BPC_OK);
    }
  }
  int dup[] = {2, 0, 3, 0};
  T_EQ(bpc__perm_check(dup, 4, msg, sizeof msg), BPC_EPERM);
  ck_assert_str_eq(msg, "order[3] = 0 repeats order[1]; every gid 0..3 must appear once");
  int out[] = {0, 1, 4, 2};
  T_EQ(bpc__perm_check(out, 4, msg, sizeof msg), BPC_EPERM);
  ck_assert_str_eq(msg, "order[2] = 4 is outside the gid range 0..3");
  T_EQ(bpc__perm_check(NULL, 3, msg, sizeof msg), BPC_ENULL);
  T_EQ(bpc__perm_check(NULL, 0, msg, sizeof msg), BPC_OK);
  T_EQ(bpc__perm_check(dup, -1, msg, sizeof msg), BPC_EINVAL);
}
END_TEST

static Suite *patterns_suite(void)
{
  Suite *s = suite_create("patterns");
  TCase *tc = tcase_create("patterns");
  tcase_set_timeout(tc, 30);
  tcase_add_test(tc, test_kvec_auto);
  tcase_add_test(tc, test_kvec_primes);
  tcase_add_test(tc, test_kvec_check);
  tcase_add_test(tc, test_kvec_format);
  tcase_add_test(tc, test_groups);
  tcase_add_test(tc, test_diy_example);
  tcase_add_test(tc, test_merge);
  tcase_add_test(tc, test_pieces);
  tcase_add_test(tc, test_swap_pieces);
  tcase_add_test(tc, test_perm);
  suite_add_tcase(s, tc);
  return s;
}

BPC_T_UNIT_MAIN(patterns_suite)
