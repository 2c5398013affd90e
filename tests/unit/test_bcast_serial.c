/*
 * tests/unit/test_bcast_serial.c - the s-to-p broadcast on a serial
 * context (every block local: the schedule is simulated, nothing is sent)
 * and the source-distribution generators: every algorithm of
 * bpc_algorithms("bcast") x every distribution x s in {0, 1, 2, p/2, p}
 * x block counts (primes, non-square meshes, a 10 x 10 mesh), contiguous
 * and custom variable-size items with empty ones, against the serial
 * reference (every block gets the s items in source order); the argument
 * errors.
 */
#include "unit_check.h"

#include <stdlib.h>
#include <string.h>

#include "bpc.h"
#include "patterns/patterns.h"
#include "engines/bcast/bcast_internal.h"
#include "../common/bcast_run.h"

static bpc_ctx_t *ctx;

static void setup(void) { ck_assert_int_eq(bpc_init_serial(NULL, &ctx), BPC_OK); }
static void teardown(void) { bpc_finalize(&ctx); }

START_TEST(test_dist)
{
  const int shapes[][2] = {{1, 1}, {1, 7}, {7, 1}, {2, 3}, {4, 4}, {10, 10}, {3, 8}, {5, 12}};
  for (size_t m = 0; m < sizeof shapes / sizeof shapes[0]; m++) {
    const int r = shapes[m][0], c = shapes[m][1], p = r * c;
    int *out = malloc(sizeof(int) * (size_t)p);
    for (int k = 0; k < BPC__BDIST_COUNT; k++)
      for (int s = 0; s <= p; s++) {
        ck_assert_int_eq(bpc__bcast_dist(k, r, c, s, 7u, out), BPC_OK);
        for (int i = 0; i < s; i++) {
          ck_assert_msg(out[i] >= 0 && out[i] < p, "%s %dx%d s=%d", bpc__bcast_dist_name(k), r,
                        c, s);
          ck_assert_msg(i == 0 || out[i] > out[i - 1], "%s %dx%d s=%d: not ascending",
                        bpc__bcast_dist_name(k), r, c, s);
        }
      }
    free(out);
  }
  /* the shapes themselves, on a 4 x 5 mesh */
  int o[20];
  ck_assert_int_eq(bpc__bcast_dist(BPC__BDIST_ROW, 4, 5, 10, 0, o), BPC_OK);
  const int row[10] = {0, 1, 2, 3, 4, 10, 11, 12, 13, 14};
  ck_assert_mem_eq(o, row, sizeof row);
  ck_assert_int_eq(bpc__bcast_dist(BPC__BDIST_COL, 4, 5, 4, 0, o), BPC_OK);
  const int col[4] = {0, 5, 10, 15};
  ck_assert_mem_eq(o, col, sizeof col);
  ck_assert_int_eq(bpc__bcast_dist(BPC__BDIST_EQUAL, 4, 5, 4, 0, o), BPC_OK);
  const int eq[4] = {0, 5, 10, 15};
  ck_assert_mem_eq(o, eq, sizeof eq);
  ck_assert_int_eq(bpc__bcast_dist(BPC__BDIST_RDIAG, 4, 5, 4, 0, o), BPC_OK);
  const int rd[4] = {0, 6, 12, 18};
  ck_assert_mem_eq(o, rd, sizeof rd);
  ck_assert_int_eq(bpc__bcast_dist(BPC__BDIST_LDIAG, 4, 5, 4, 0, o), BPC_OK);
  const int ld[4] = {4, 8, 12, 16};
  ck_assert_mem_eq(o, ld, sizeof ld);
  ck_assert_int_eq(bpc__bcast_dist(BPC__BDIST_BLOCK, 4, 5, 4, 0, o), BPC_OK);
  const int bl[4] = {0, 1, 5, 6};
  ck_assert_mem_eq(o, bl, sizeof bl);
  /* random: reproducible, seed-dependent */
  int r1[8], r2[8], r3[8];
  bpc__bcast_dist(BPC__BDIST_RANDOM, 4, 5, 8, 1u, r1);
  bpc__bcast_dist(BPC__BDIST_RANDOM, 4, 5, 8, 1u, r2);
  bpc__bcast_dist(BPC__BDIST_RANDOM, 4, 5, 8, 2u, r3);
  ck_assert_mem_eq(r1, r2, sizeof r1);
  ck_assert(memcmp(r1, r3, sizeof r1) != 0);
  /* errors */
  ck_assert_int_eq(bpc__bcast_dist(BPC__BDIST_ROW, 0, 5, 0, 0, o), BPC_EINVAL);
  ck_assert_int_eq(bpc__bcast_dist(BPC__BDIST_ROW, 4, 5, 21, 0, o), BPC_EINVAL);
  ck_assert_int_eq(bpc__bcast_dist(BPC__BDIST_COUNT, 4, 5, 1, 0, o), BPC_EINVAL);
  ck_assert_int_eq(bpc__bcast_dist(BPC__BDIST_ROW, 4, 5, 1, 0, NULL), BPC_ENULL);
  ck_assert_str_eq(bpc__bcast_dist_name(BPC__BDIST_CROSS), "cross");
}
END_TEST

/* Every algorithm's schedule (all but "mpi", which has none) with every block its own process (the
 * paper's setting): every block must end with every item, in at most the
 * documented number of steps; br_lin / xor / 2step message counts. */
START_TEST(test_schedules)
{
  bpc_algo_info_t tab[16];
  int na = 0;
  ck_assert_int_eq(bpc_algorithms("bcast", tab, 16, &na), BPC_OK);
  const int shapes[][2] = {{1, 1}, {1, 2}, {1, 3}, {2, 2}, {1, 5}, {2, 3}, {1, 7}, {2, 4},
                           {3, 3}, {2, 5}, {1, 11}, {3, 4}, {1, 13}, {4, 4}, {3, 6}, {1, 31},
                           {4, 8}, {5, 7}, {6, 6}, {10, 10}, {7, 9}, {8, 8}, {1, 97}};
  int src[128];
  for (size_t m = 0; m < sizeof shapes / sizeof shapes[0]; m++) {
    const int r = shapes[m][0], c = shapes[m][1], p = r * c;
    int lg = 0;
    while ((1 << lg) < p)
      lg++;
    for (int k = 0; k < na; k++)
      for (int d = 0; d < BPC__BDIST_COUNT && strcmp(tab[k].name, "mpi") != 0; d++)
        for (int s = 0; s <= p; s += (s < 3 || p < 10) ? 1 : p / 5) {
          ck_assert_int_eq(bpc__bcast_dist(d, r, c, s, 3u, src), BPC_OK);
          int miss = -1, steps = -1;
          long long msgs = -1;
          for (int rep = 3; rep >= 0; rep--) { /* bit 0 reposition, bit 1 partition; plain last */
            int rc = bpc__bcast_sched_check(tab[k].name, r, c, src, s, rep, &miss, &steps, &msgs);
            ck_assert_msg(rc == BPC_OK, "%s %dx%d %s s=%d flags=%d: %s, %d missing",
                          tab[k].name, r, c, bpc__bcast_dist_name(d), s, rep, bpc_err_name(rc),
                          miss);
          }
          /* steps: ceil(log2 p) (+ 1 for 2step's gather, + 2 for xor's
           * fold, + 1 for the two phases of the xy ones) */
          ck_assert_msg(steps <= lg + 2 + (r > 1 && c > 1), "%s %dx%d: %d steps", tab[k].name,
                        r, c, steps);
          if (s == 0)
            ck_assert_int_eq(msgs, 0);
          if (s == 1 && strcmp(tab[k].name, "2step") == 0)
            ck_assert_int_eq(msgs, p - 1); /* one binomial tree */
        }
  }
  ck_assert_int_eq(bpc__bcast_sched_check("nope", 2, 2, src, 0, 0, NULL, NULL, NULL), BPC_EALGO);
}
END_TEST

static void one(const bpc_assign_t *a, int n, int rows, int cols, const char *algo, int kind,
                int s, int custom)
{
  int *src = malloc(sizeof(int) * (size_t)(n + 1));
  const int R = rows ? rows : 1, C = rows ? cols : n;
  /* distributions are laid on the mesh view when given, else on 1 x n */
  ck_assert_int_eq(bpc__bcast_dist(kind, R, C, s, (unsigned)n, src), BPC_OK);
  int bad = 0;
  char why[256];
  bpc_bcast_info_t info;
  const int rep = (s + kind + n) % 4;
  int rc = br_run(ctx, a, src, s, algo, rows, cols, custom, n * 31 + s, 0, rep, &bad, why, sizeof why,
                  &info);
  ck_assert_msg(rc == BPC_OK && bad == 0, "%s n=%d mesh %dx%d %s s=%d custom=%d rep=%d: %s, %d bad: %s",
                algo, n, rows, cols, bpc__bcast_dist_name(kind), s, custom, rep, bpc_err_name(rc), bad,
                why);
  ck_assert_str_eq(info.name, algo);
  ck_assert_int_eq(info.msgs_sent, 0); /* serial: everything is local */
  free(src);
}

START_TEST(test_all)
{
  bpc_algo_info_t tab[16];
  int na = 0;
  ck_assert_int_eq(bpc_algorithms("bcast", tab, 16, &na), BPC_OK);
  ck_assert_int_ge(na, 5);
  const int shapes[][2] = {{1, 1}, {1, 2}, {1, 3}, {1, 5}, {2, 4}, {1, 7}, {3, 4}, {4, 4},
                           {2, 9}, {1, 13}, {10, 10}, {0, 0}};
  for (size_t m = 0; m < sizeof shapes / sizeof shapes[0]; m++) {
    const int n = shapes[m][0] ? shapes[m][0] * shapes[m][1] : 12;
    bpc_assign_t *a = NULL;
    ck_assert_int_eq(bpc_assign_create(ctx, n, BPC_ASSIGN_CONTIGUOUS, NULL, &a), BPC_OK);
    const int svals[5] = {0, 1, 2 <= n ? 2 : n, n / 2, n};
    for (int k = 0; k < na; k++)
      for (int d = 0; d < BPC__BDIST_COUNT; d++)
        for (int si = 0; si < 5; si++)
          one(a, n, shapes[m][0], shapes[m][1], tab[k].name, d, svals[si], (si + d) % 2);
    bpc_assign_destroy(&a);
  }
}
END_TEST

static int fail_item(int src, const void **item, void *user)
{
  (void)src;
  (void)user;
  *item = NULL;
  return 9;
}

START_TEST(test_errors)
{
  bpc_assign_t *a = NULL;
  ck_assert_int_eq(bpc_assign_create(ctx, 6, BPC_ASSIGN_CONTIGUOUS, NULL, &a), BPC_OK);
  bpc_type_t t = bpc_type_contiguous(sizeof(int), MPI_INT);
  int src[3] = {0, 2, 5}, unsorted[3] = {2, 0, 5}, out_of_range[2] = {1, 6};
  br_ud_t u;
  memset(&u, 0, sizeof u);
  bpc_bcast_params_t P = bpc_bcast_params_default();
  ck_assert_int_eq(bpc_bcast(NULL, a, &t, src, 3, br_item, br_recv, &u, NULL, NULL), BPC_ENULL);
  ck_assert_int_eq(bpc_bcast(ctx, NULL, &t, src, 3, br_item, br_recv, &u, NULL, NULL), BPC_ENULL);
  ck_assert_int_eq(bpc_bcast(ctx, a, NULL, src, 3, br_item, br_recv, &u, NULL, NULL), BPC_ENULL);
  ck_assert_int_eq(bpc_bcast(ctx, a, &t, NULL, 3, br_item, br_recv, &u, NULL, NULL), BPC_ENULL);
  ck_assert_int_eq(bpc_bcast(ctx, a, &t, src, 3, NULL, br_recv, &u, NULL, NULL), BPC_ENULL);
  ck_assert_int_eq(bpc_bcast(ctx, a, &t, src, 3, br_item, NULL, &u, NULL, NULL), BPC_ENULL);
  ck_assert_int_eq(bpc_bcast(ctx, a, &t, unsorted, 3, br_item, br_recv, &u, NULL, NULL),
                   BPC_EINVAL);
  ck_assert_int_eq(bpc_bcast(ctx, a, &t, out_of_range, 2, br_item, br_recv, &u, NULL, NULL),
                   BPC_EINVAL);
  ck_assert_int_eq(bpc_bcast(ctx, a, &t, src, -1, br_item, br_recv, &u, NULL, NULL), BPC_EINVAL);
  ck_assert_int_eq(bpc_bcast(ctx, a, &t, src, 7, br_item, br_recv, &u, NULL, NULL), BPC_EINVAL);
  P.algorithm = "no_such";
  ck_assert_int_eq(bpc_bcast(ctx, a, &t, src, 3, br_item, br_recv, &u, &P, NULL), BPC_EALGO);
  P = bpc_bcast_params_default();
  P.rows = 4;
  P.cols = 2;
  ck_assert_int_eq(bpc_bcast(ctx, a, &t, src, 3, br_item, br_recv, &u, &P, NULL), BPC_EDIVS);
  P = bpc_bcast_params_default();
  P.nthreads = -1;
  ck_assert_int_eq(bpc_bcast(ctx, a, &t, src, 3, br_item, br_recv, &u, &P, NULL), BPC_EINVAL);
  bpc_type_t badt = bpc_type_contiguous(0, MPI_INT);
  ck_assert_int_eq(bpc_bcast(ctx, a, &badt, src, 3, br_item, br_recv, &u, NULL, NULL), BPC_ETYPE);
  /* a failing recv callback: BPC_ECALLBACK */
  int bad = 0;
  char why[256];
  ck_assert_int_eq(br_run(ctx, a, src, 3, "br_lin", 0, 0, 0, 1, 1, 0, &bad, why, sizeof why, NULL),
                   BPC_ECALLBACK);
  /* defaults: auto's cost model on one process (every schedule costs
   * nothing: the first row), a 2 x 3 mesh */
  bpc_bcast_info_t info;
  ck_assert_int_eq(br_run(ctx, a, src, 3, NULL, 0, 0, 0, 1, 0, 0, &bad, why, sizeof why, &info),
                   BPC_OK);
  ck_assert_int_eq(bad, 0);
  ck_assert_int_eq(info.algorithm, BPC_BCAST_BR_LIN);
  ck_assert_int_eq(info.source, BPC_SOURCE_BUILTIN);
  ck_assert_int_eq(info.rows, 2);
  ck_assert_int_eq(info.cols, 3);
  /* names: any case, '-' and '_' alike; nothing else is loose */
  ck_assert_int_eq(
      br_run(ctx, a, src, 3, "Br-Xy_Dim", 0, 0, 0, 1, 0, 0, &bad, why, sizeof why, &info), BPC_OK);
  ck_assert_int_eq(info.algorithm, BPC_BCAST_BR_XY_DIM);
  ck_assert_int_eq(info.source, BPC_SOURCE_ARGUMENT);
  ck_assert_int_eq(br_run(ctx, a, src, 3, "br lin", 0, 0, 0, 1, 0, 0, &bad, why, sizeof why, NULL),
                   BPC_EALGO);
  /* a failing item callback fails before any message */
  u.s = 3;
  ck_assert_int_eq(bpc_bcast(ctx, a, &t, src, 3, fail_item, br_recv, &u, NULL, NULL),
                   BPC_ECALLBACK);
  bpc_assign_destroy(&a);
}
END_TEST

/* The item size auto's model takes (and its cache keys on): exact up to
 * 8 bytes, then rounded up by at most a quarter of the octave. */
START_TEST(test_model_size)
{
  ck_assert_int_eq(bpc__bcast_model_L(0), 0);
  ck_assert_int_eq(bpc__bcast_model_L(8), 8);
  ck_assert_int_eq(bpc__bcast_model_L(9), 10);
  ck_assert_int_eq(bpc__bcast_model_L(32), 32);
  ck_assert_int_eq(bpc__bcast_model_L(33), 40);
  ck_assert_int_eq(bpc__bcast_model_L(1000), 1024);
  ck_assert_int_eq(bpc__bcast_model_L(1100), 1280);
  long long prev = 0;
  for (long long L = 1; L <= 100000; L++) {
    const long long q = bpc__bcast_model_L(L);
    ck_assert_msg(q >= L && q >= prev && (L <= 8 ? q == L : 4 * q < 5 * L),
                  "L=%lld -> %lld", L, q);
    prev = q;
  }
  /* on a serial context: the second auto call hits the cache, with the
   * model's choice */
  bpc_assign_t *a = NULL;
  ck_assert_int_eq(bpc_assign_create(ctx, 12, BPC_ASSIGN_CONTIGUOUS, NULL, &a), BPC_OK);
  int src[3] = {0, 5, 11}, bad = 0;
  char why[256], pick[48];
  double T = -1.0;
  ck_assert_int_eq(bpc__bcast_model_time(ctx, a, src, 3, 3, 4, 40, "auto", 0, 0, &T, pick,
                                         sizeof pick), BPC_OK);
  ck_assert(T >= 0.0);
  ck_assert_int_eq(bpc__bcast_model_time(ctx, a, src, 3, 5, 4, 40, "auto", 0, 0, &T, NULL, 0),
                   BPC_EINVAL);
  ck_assert_int_eq(bpc__bcast_model_time(ctx, a, src, 3, 3, 4, 40, "nope", 0, 0, &T, NULL, 0),
                   BPC_EALGO);
  long long h = -1, m = -1;
  bpc_bcast_info_t info;
  for (int k = 0; k < 2; k++) {
    ck_assert_int_eq(br_run(ctx, a, src, 3, NULL, 3, 4, 0, 1, 0, 0, &bad, why, sizeof why, &info),
                     BPC_OK);
    ck_assert_int_eq(bad, 0);
    ck_assert_str_eq(info.name, "br_lin"); /* serial: every schedule costs nothing */
    ck_assert_int_eq(bpc__bcast_cache(ctx, -1, &h, &m), BPC_OK);
    ck_assert_int_eq(h, k);
    ck_assert_int_eq(m, 1);
  }
  bpc_assign_destroy(&a);
}
END_TEST

static Suite *make(void)
{
  Suite *s = suite_create("bcast_serial");
  TCase *tc = tcase_create("serial");
  tcase_set_timeout(tc, 120);
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_test(tc, test_dist);
  tcase_add_test(tc, test_schedules);
  tcase_add_test(tc, test_all);
  tcase_add_test(tc, test_errors);
  tcase_add_test(tc, test_model_size);
  suite_add_tcase(s, tc);
  return s;
}

BPC_T_UNIT_MAIN(make)
