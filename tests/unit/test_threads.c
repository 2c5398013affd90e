/*
 * tests/unit/test_threads.c - the ordered OpenMP tree reduction
 * (lib/threads): the plan's shape, results against a serial left-to-right
 * fold (exact for 2x2 uint32 matrix products, which fail on any change of
 * order), bit-identical float "over" results for 1..4 threads and chunk
 * sizes, the result landing in the home buffer, and callback failures.
 */
#include "unit_check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/swap_ops.h"
#include "threads/threads.h"

static int op_mat(const void *in, void *io, size_t n, int f, void *u)
{
  (void)u;
  return so_apply(SO_MAT, in, io, n, f);
}
static int op_over(const void *in, void *io, size_t n, int f, void *u)
{
  (void)u;
  return so_apply(SO_OVER, in, io, n, f);
}

/* m buffers of count elements of op's inputs (operand i = "gid" i + salt). */
static void **make_bufs(int op, int m, size_t count, int salt)
{
  void **b = malloc(sizeof(void *) * (size_t)m);
  for (int i = 0; i < m; i++) {
    b[i] = malloc(count * so_elem_size(op) + 1);
    so_fill(op, i + salt, b[i], count);
  }
  return b;
}

static void free_bufs(void **b, int m)
{
  for (int i = 0; i < m; i++)
    free(b[i]);
  free(b);
}

START_TEST(test_plan_shape)
{
  int L[16], R[16], I[16];
  /* 8 operands, no home: (0,1)(2,3)(4,5)(6,7) (0,2)(4,6) (0,4) */
  int nm = bpc__tree_plan(8, -1, L, R, I, 16);
  ck_assert_int_eq(nm, 7);
  const int eL[7] = {0, 2, 4, 6, 0, 4, 0}, eR[7] = {1, 3, 5, 7, 2, 6, 4};
  for (int x = 0; x < 7; x++) {
    ck_assert_int_eq(L[x], eL[x]);
    ck_assert_int_eq(R[x], eR[x]);
    ck_assert_int_eq(I[x], eL[x]);
  }
  /* home 5: merges that contain 5 write into 5 */
  nm = bpc__tree_plan(8, 5, L, R, I, 16);
  ck_assert_int_eq(nm, 7);
  ck_assert_int_eq(I[2], 5); /* (4,5) */
  ck_assert_int_eq(I[5], 5); /* (4,6) */
  ck_assert_int_eq(I[6], 5); /* (0,4) */
  ck_assert_int_eq(I[0], 0);
  /* odd m: 5 operands -> (0,1)(2,3) (0,2) (0,4) */
  nm = bpc__tree_plan(5, -1, L, R, I, 16);
  ck_assert_int_eq(nm, 4);
  ck_assert_int_eq(L[3], 0);
  ck_assert_int_eq(R[3], 4);
  ck_assert_int_eq(bpc__tree_plan(1, 0, L, R, I, 16), 0);
  ck_assert_int_eq(bpc__tree_plan(64, -1, NULL, NULL, NULL, 0), 63);
}
END_TEST

/* Every m in 1..19, every home, 1..3 threads: equals the serial fold. */
START_TEST(test_exact_against_fold)
{
  const size_t count = 301;
  for (int m = 1; m <= 19; m++) {
    unsigned char *ref = malloc(count * 16);
    int order[32];
    for (int i = 0; i < m; i++)
      order[i] = i + 7;
    for (size_t e = 0; e < count; e++)
      so_reference(SO_MAT, order, 0, m, e, ref + e * 16);
    for (int home = -1; home < m; home++) {
      for (int T = 1; T <= 3; T++) {
        void **b = make_bufs(SO_MAT, m, count, 7);
        bpc__tree_t t = {op_mat, NULL, 16, T, 8};
        int holder = -2, nmg = -1;
        int rc = bpc__tree_reduce(&t, b, m, home, count, &holder, &nmg);
        ck_assert_int_eq(rc, 0);
        ck_assert_int_eq(holder, home >= 0 ? home : 0);
        ck_assert_int_eq(nmg, m - 1);
        ck_assert_msg(memcmp(b[holder], ref, count * 16) == 0, "m=%d home=%d T=%d differs", m,
                      home, T);
        free_bufs(b, m);
      }
    }
    free(ref);
  }
}
END_TEST

/* Float over: 1, 2, 3, 4 threads and several chunk sizes give the same bits. */
START_TEST(test_float_bit_identical)
{
  const size_t count = 40000;
  const int ms[] = {2, 3, 8, 13};
  for (unsigned mi = 0; mi < sizeof ms / sizeof ms[0]; mi++) {
    const int m = ms[mi];
    void **b1 = make_bufs(SO_OVER, m, count, 3);
    bpc__tree_t t1 = {op_over, NULL, 16, 1, 1};
    ck_assert_int_eq(bpc__tree_reduce(&t1, b1, m, m / 2, count, NULL, NULL), 0);
    for (int T = 2; T <= 4; T++) {
      const size_t chunks[] = {1, 1000, BPC__TREE_MIN_CHUNK};
      for (int ci = 0; ci < 3; ci++) {
        void **b = make_bufs(SO_OVER, m, count, 3);
        bpc__tree_t t = {op_over, NULL, 16, T, chunks[ci]};
        ck_assert_int_eq(bpc__tree_reduce(&t, b, m, m / 2, count, NULL, NULL), 0);
        ck_assert_msg(memcmp(b[m / 2], b1[m / 2], count * 16) == 0,
                      "m=%d T=%d chunk=%zu: not bit-identical to 1 thread", m, T, chunks[ci]);
        free_bufs(b, m);
      }
    }
    /* and it is the ordered result (tolerance: the tree associates differently) */
    int order[16];
    for (int i = 0; i < m; i++)
      order[i] = i + 3;
    for (size_t e = 0; e < count; e += 997) {
      unsigned char ref[16];
      so_reference(SO_OVER, order, 0, m, e, ref);
      ck_assert(so_equal(SO_OVER, (char *)b1[m / 2] + e * 16, ref));
    }
    free_bufs(b1, m);
  }
}
END_TEST

/* A batch of independent trees (sizes 1..9 operands, counts 0..50000)
 * gives, for 1..3 threads, exactly what each tree gives alone. */
START_TEST(test_batch)
{
  enum { NJ = 9 };
  const size_t counts[NJ] = {0, 1, 50000, 777, 20000, 3, 40000, 16384, 99};
  const int ms[NJ] = {3, 2, 9, 1, 4, 5, 2, 7, 8};
  void **ref[NJ];
  for (int i = 0; i < NJ; i++) {
    ref[i] = make_bufs(SO_OVER, ms[i], counts[i], 10 * i);
    bpc__tree_t t1 = {op_over, NULL, 16, 1, 1};
    ck_assert_int_eq(bpc__tree_reduce(&t1, ref[i], ms[i], ms[i] - 1, counts[i], NULL, NULL), 0);
  }
  for (int T = 1; T <= 3; T++) {
    void **b[NJ];
    bpc__tree_job_t jobs[NJ];
    for (int i = 0; i < NJ; i++) {
      b[i] = make_bufs(SO_OVER, ms[i], counts[i], 10 * i);
      jobs[i] = (bpc__tree_job_t){b[i], ms[i], ms[i] - 1, counts[i], -5, -5};
    }
    bpc__tree_t t = {op_over, NULL, 16, T, 1000};
    ck_assert_int_eq(bpc__tree_reduce_many(&t, jobs, NJ), 0);
    for (int i = 0; i < NJ; i++) {
      ck_assert_int_eq(jobs[i].holder, ms[i] - 1);
      ck_assert_int_eq(jobs[i].nmerges, counts[i] > 0 ? ms[i] - 1 : 0);
      ck_assert_msg(memcmp(b[i][ms[i] - 1], ref[i][ms[i] - 1], counts[i] * 16) == 0,
                    "job %d with %d threads differs", i, T);
      free_bufs(b[i], ms[i]);
    }
  }
  for (int i = 0; i < NJ; i++)
    free_bufs(ref[i], ms[i]);
  bpc__tree_t t = {op_over, NULL, 16, 1, 1};
  ck_assert_int_eq(bpc__tree_reduce_many(&t, NULL, 0), 0);
  ck_assert_int_eq(bpc__tree_reduce_many(&t, NULL, 2), -1);
}
END_TEST

static int fail_count;
static int op_fail(const void *in, void *io, size_t n, int f, void *u)
{
  (void)io;
  (void)in;
  (void)n;
  (void)f;
  (void)u;
#pragma omp atomic
  fail_count++;
  return 42;
}

/* The job of each unit: jobs without units (equal neighbouring firsts)
 * are never chosen, wherever they stand. */
START_TEST(test_unit_job)
{
  const size_t first[] = {0, 0, 3, 3, 3, 5, 9, 9};
  const int njobs = 7; /* jobs 0, 3 and 6 have no units */
  const int want[9] = {1, 1, 1, 4, 4, 5, 5, 5, 5};
  for (size_t u = 0; u < 9; u++)
    ck_assert_int_eq(bpc__tree_unit_job(first, njobs, u), want[u]);
  const size_t one[] = {0, 4};
  for (size_t u = 0; u < 4; u++)
    ck_assert_int_eq(bpc__tree_unit_job(one, 1, u), 0);
}
END_TEST

START_TEST(test_failure_and_args)
{
  void **b = make_bufs(SO_MAT, 6, 100, 0);
  for (int T = 1; T <= 2; T++) {
    bpc__tree_t t = {op_fail, NULL, 16, T, 1};
    int nmg = -1;
    fail_count = 0;
    ck_assert_int_eq(bpc__tree_reduce(&t, b, 6, -1, 100, NULL, &nmg), 42);
    ck_assert_int_lt(nmg, 5);
    ck_assert_int_ge(fail_count, 1);
  }
  bpc__tree_t t = {op_mat, NULL, 16, 1, 1};
  ck_assert_int_eq(bpc__tree_reduce(NULL, b, 6, -1, 100, NULL, NULL), -1);
  ck_assert_int_eq(bpc__tree_reduce(&t, NULL, 6, -1, 100, NULL, NULL), -1);
  ck_assert_int_eq(bpc__tree_reduce(&t, b, 0, -1, 100, NULL, NULL), -1);
  ck_assert_int_eq(bpc__tree_reduce(&t, b, 6, 6, 100, NULL, NULL), -1);
  bpc__tree_t z = {op_mat, NULL, 0, 1, 1};
  ck_assert_int_eq(bpc__tree_reduce(&z, b, 6, -1, 100, NULL, NULL), -1);
  /* count 0: no callback at all */
  bpc__tree_t tf = {op_fail, NULL, 16, 2, 1};
  fail_count = 0;
  ck_assert_int_eq(bpc__tree_reduce(&tf, b, 6, 2, 0, NULL, NULL), 0);
  ck_assert_int_eq(fail_count, 0);
  free_bufs(b, 6);
  ck_assert_int_ge(bpc__threads_resolve(0), 1);
  ck_assert_int_eq(bpc__threads_resolve(3), 3);
}
END_TEST

static Suite *threads_suite(void)
{
  Suite *s = suite_create("threads");
  TCase *tc = tcase_create("tree");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_plan_shape);
  tcase_add_test(tc, test_exact_against_fold);
  tcase_add_test(tc, test_float_bit_identical);
  tcase_add_test(tc, test_batch);
  tcase_add_test(tc, test_failure_and_args);
  tcase_add_test(tc, test_unit_job);
  suite_add_tcase(s, tc);
  return s;
}

BPC_T_UNIT_MAIN(threads_suite)
