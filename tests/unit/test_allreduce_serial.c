/*
 * tests/unit/test_allreduce_serial.c - all-reduce on a serial context (one
 * process owns every block; no MPI): every algorithm and auto at block
 * counts 1..17 (powers of two and not), matrix products in order, float
 * sums and custom lists concatenated in place, gid, reversed and shuffled
 * orders, empty items, threads; what ran (bpc_allreduce_info, auto's
 * choice by item size); every documented argument error.
 */
#include "unit_check.h"

#include <stdlib.h>
#include <string.h>

#include "../common/allreduce_run.h"
#include "bpc.h"

static bpc_ctx_t *ctx;
static void setup(void) { ck_assert_int_eq(bpc_init_serial(NULL, &ctx), BPC_OK); }
static void teardown(void) { bpc_finalize(&ctx); }

START_TEST(test_reference)
{
  bpc_algo_info_t tab[8];
  int na = 0;
  ck_assert_int_eq(bpc_algorithms("allreduce", tab, 8, &na), BPC_OK);
  ck_assert_int_eq(na, 3);
  for (int n = 1; n <= 17; n++)
    for (int a = 0; a <= na; a++) /* every row, then auto */
      for (int kind = 0; kind < AR_NKINDS; kind++) {
        const char *algo = a < na ? tab[a].name : NULL;
        if (kind == AR_CAT && algo != NULL && strcmp(algo, "swap-allgather") == 0)
          continue; /* contiguous only: the error test below */
        const size_t counts[3] = {0, 1, 37};
        const ar_case_t c = {n,
                             (bpc_assign_mode_t)(n % 2),
                             kind,
                             counts[(n + a) % 3],
                             algo,
                             (n + a + kind) % 3,
                             n % 5 == 3 ? 3 : 1};
        int rc = 0;
        bpc_allreduce_info_t info;
        char why[256] = "";
        const int bad = ar_run(ctx, &c, &rc, &info, why, sizeof why);
        ck_assert_msg(bad == 0, "n=%d %s %s count %zu order %d: %s (%d wrong, %s)", n,
                      algo ? algo : "auto", ar_kind_name[kind], c.count, c.order, why, bad,
                      bpc_err_name(rc));
        if (algo != NULL) {
          ck_assert_str_eq(info.name, algo);
          ck_assert_int_eq(info.source, BPC_SOURCE_ARGUMENT);
        } else {
          ck_assert_int_eq(info.source, BPC_SOURCE_BUILTIN);
        }
      }
}
END_TEST

START_TEST(test_auto_choice)
{
  /* small items: doubling; large contiguous ones at 8 blocks: the halving
   * schedule (less data); custom types never get the contiguous-only row */
  int rc = 0;
  char why[256];
  bpc_allreduce_info_t info;
  ar_case_t c = {8, BPC_ASSIGN_CONTIGUOUS, AR_SUM, 4, NULL, 0, 1};
  ck_assert_int_eq(ar_run(ctx, &c, &rc, &info, why, sizeof why), 0);
  ck_assert_str_eq(info.name, "doubling");
  ck_assert_int_eq(info.rounds, 3);
  c.count = 1 << 18;
  ck_assert_int_eq(ar_run(ctx, &c, &rc, &info, why, sizeof why), 0);
  ck_assert_str_eq(info.name, "swap-allgather");
  ck_assert_int_eq(info.rounds, 6);
  c.kind = AR_CAT;
  ck_assert_int_eq(ar_run(ctx, &c, &rc, &info, why, sizeof why), 0);
  ck_assert_str_ne(info.name, "swap-allgather");
  /* the environment names the row */
  setenv("BPC_ALLREDUCE_ALGORITHM", "Reduce_Bcast", 1);
  c.kind = AR_MAT;
  c.count = 5;
  c.n = 6;
  ck_assert_int_eq(ar_run(ctx, &c, &rc, &info, why, sizeof why), 0);
  ck_assert_str_eq(info.name, "reduce-bcast");
  ck_assert_int_eq(info.source, BPC_SOURCE_ENV);
  ck_assert_int_eq(info.rounds, 6);
  setenv("BPC_ALLREDUCE_ALGORITHM", "nope", 1);
  ck_assert_int_eq(ar_run(ctx, &c, &rc, &info, why, sizeof why), -1);
  ck_assert_int_eq(rc, BPC_EALGO);
  unsetenv("BPC_ALLREDUCE_ALGORITHM");
}
END_TEST

static int add_int(const void *in, void *inout, size_t n, int in_left, void *user)
{
  (void)in_left;
  (void)user;
  for (size_t i = 0; i < n; i++)
    ((int *)inout)[i] += ((const int *)in)[i];
  return 0;
}

static int fail_op(const void *in, void *inout, size_t n, int in_left, void *user)
{
  (void)in, (void)inout, (void)n, (void)in_left, (void)user;
  return 42;
}

START_TEST(test_errors)
{
  bpc_assign_t *a = NULL;
  ck_assert_int_eq(bpc_assign_create(ctx, 4, BPC_ASSIGN_CONTIGUOUS, NULL, &a), BPC_OK);
  int d[4][3] = {{1, 2, 3}, {4, 5, 6}, {7, 8, 9}, {10, 11, 12}};
  bpc_buf_t it[4] = {{d[0], 3}, {d[1], 3}, {d[2], 3}, {d[3], 3}};
  bpc_type_t t = bpc_type_contiguous(sizeof(int), MPI_INT);
  bpc_op_t op = {add_int, 1, NULL};
  ck_assert_int_eq(bpc_allreduce(NULL, a, &t, it, &op, NULL, NULL), BPC_ENULL);
  ck_assert_int_eq(bpc_allreduce(ctx, NULL, &t, it, &op, NULL, NULL), BPC_ENULL);
  ck_assert_int_eq(bpc_allreduce(ctx, a, NULL, it, &op, NULL, NULL), BPC_ENULL);
  ck_assert_int_eq(bpc_allreduce(ctx, a, &t, NULL, &op, NULL, NULL), BPC_ENULL);
  ck_assert_int_eq(bpc_allreduce(ctx, a, &t, it, NULL, NULL, NULL), BPC_ENULL);
  bpc_op_t nofn = {NULL, 1, NULL};
  ck_assert_int_eq(bpc_allreduce(ctx, a, &t, it, &nofn, NULL, NULL), BPC_ENULL);
  bpc_type_t bad = bpc_type_contiguous(0, MPI_INT);
  ck_assert_int_eq(bpc_allreduce(ctx, a, &bad, it, &op, NULL, NULL), BPC_ETYPE);
  bpc_allreduce_params_t p = bpc_allreduce_params_default();
  ck_assert_str_eq(p.algorithm, "auto");
  p.nthreads = -1;
  ck_assert_int_eq(bpc_allreduce(ctx, a, &t, it, &op, &p, NULL), BPC_EINVAL);
  p = bpc_allreduce_params_default();
  int order[4] = {0, 1, 1, 3};
  p.order = order;
  ck_assert_int_eq(bpc_allreduce(ctx, a, &t, it, &op, &p, NULL), BPC_EPERM);
  p = bpc_allreduce_params_default();
  p.algorithm = "tree";
  ck_assert_int_eq(bpc_allreduce(ctx, a, &t, it, &op, &p, NULL), BPC_EALGO);
  it[2].count = 2; /* counts differ */
  ck_assert_int_eq(bpc_allreduce(ctx, a, &t, it, &op, NULL, NULL), BPC_EINVAL);
  it[2].count = 3;
  it[1].data = NULL;
  ck_assert_int_eq(bpc_allreduce(ctx, a, &t, it, &op, NULL, NULL), BPC_ENULL);
  it[1].data = d[1];
  bpc_assign_t *other = NULL;
  bpc_ctx_t *ctx2 = NULL;
  ck_assert_int_eq(bpc_init_serial(NULL, &ctx2), BPC_OK);
  ck_assert_int_eq(bpc_assign_create(ctx2, 4, BPC_ASSIGN_CONTIGUOUS, NULL, &other), BPC_OK);
  ck_assert_int_eq(bpc_allreduce(ctx, other, &t, it, &op, NULL, NULL), BPC_EINVAL);
  bpc_assign_destroy(&other);
  bpc_finalize(&ctx2);
  /* a failing operator: BPC_ECALLBACK naming its value, every algorithm */
  bpc_op_t f = {fail_op, 1, NULL};
  const char *algos[3] = {"doubling", "reduce-bcast", "swap-allgather"};
  for (int i = 0; i < 3; i++) {
    p = bpc_allreduce_params_default();
    p.algorithm = algos[i];
    ck_assert_int_eq(bpc_allreduce(ctx, a, &t, it, &f, &p, NULL), BPC_ECALLBACK);
    ck_assert_ptr_nonnull(strstr(bpc_last_error(ctx), "42"));
  }
  /* the data as given still reduces: the context works after failures */
  bpc_allreduce_info_t info;
  ck_assert_int_eq(bpc_allreduce(ctx, a, &t, it, &op, NULL, &info), BPC_OK);
  for (int b = 0; b < 4; b++)
    ck_assert_int_eq(((int *)it[b].data)[2], 3 + 6 + 9 + 12);
  /* custom types: no NULL item, no swap-allgather */
  mi_user_t u;
  memset(&u, 0, sizeof u);
  u.fail_gid = -1;
  bpc_type_t lt = mi_list_type(&u);
  void *li[4] = {mi_list_new(1), NULL, mi_list_new(0), mi_list_new(2)};
  bpc_op_t cat = {mi_op_cat, 0, NULL};
  ck_assert_int_eq(bpc_allreduce(ctx, a, &lt, li, &cat, NULL, NULL), BPC_ENULL);
  li[1] = mi_list_new(0);
  p = bpc_allreduce_params_default();
  p.algorithm = "swap-allgather";
  ck_assert_int_eq(bpc_allreduce(ctx, a, &lt, li, &cat, &p, NULL), BPC_ETYPE);
  for (int b = 0; b < 4; b++)
    mi_list_free(li[b], NULL);
  bpc_assign_destroy(&a);
}
END_TEST

static Suite *make(void)
{
  Suite *s = suite_create("allreduce_serial");
  TCase *tc = tcase_create("allreduce");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_reference);
  tcase_add_test(tc, test_auto_choice);
  tcase_add_test(tc, test_errors);
  suite_add_tcase(s, tc);
  return s;
}

BPC_T_UNIT_MAIN(make)
