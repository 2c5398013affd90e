/*
 * tests/mpi/test_core_mpi.c - the context under MPI: communicator
 * duplication and error handler, rank/size, error agreement (a failure on one
 * rank reaches all ranks, no hang), bad input answered alike on every rank,
 * tag epochs in step across ranks.
 */
#include "mpi_check.h"

#include <string.h>

#include "bpc.h"
#include "comm/coll.h"
#include "core/core.h"

START_TEST(test_init_dup)
{
  bpc_ctx_t *ctx = NULL;
  int rc = bpc_init(MPI_COMM_WORLD, NULL, &ctx);
  T_CHECK(rc == BPC_OK, "bpc_init: %d", rc);
  MPI_Comm c = MPI_COMM_NULL;
  bpc_ctx_comm(ctx, &c);
  int cmp = MPI_UNEQUAL;
  MPI_Comm_compare(c, MPI_COMM_WORLD, &cmp);
  T_CHECK(cmp == MPI_CONGRUENT, "the context's communicator is a duplicate (cmp %d)", cmp);
  MPI_Errhandler eh;
  MPI_Comm_get_errhandler(c, &eh);
  T_CHECK(eh == MPI_ERRORS_RETURN, "MPI_ERRORS_RETURN is set");
  MPI_Errhandler_free(&eh);
  int r = -1, s = -1;
  bpc_ctx_rank(ctx, &r);
  bpc_ctx_size(ctx, &s);
  T_CHECK(r == t_rank && s == t_size, "rank %d size %d", r, s);
  bpc_ctx_t *bad = ctx;
  T_CHECK(bpc_init(MPI_COMM_NULL, NULL, &bad) == BPC_EINVAL && bad == NULL,
          "MPI_COMM_NULL refused");
  T_CHECK(bpc_init(MPI_COMM_WORLD, NULL, NULL) == BPC_ENULL, "NULL out refused");
  T_CHECK(bpc_finalize(&ctx) == BPC_OK && ctx == NULL, "finalize");
  T_SYNC();
}
END_TEST

START_TEST(test_agree)
{
  bpc_ctx_t *ctx = NULL;
  ck_assert_int_eq(bpc_init(MPI_COMM_WORLD, NULL, &ctx), BPC_OK);
  /* nobody fails */
  T_CHECK(bpc__agree(ctx, BPC_OK) == BPC_OK, "all ok");
  /* the last rank fails: every rank returns its code, with that rank's own
   * message */
  int failing = t_size - 1;
  int mine = BPC_OK;
  if (t_rank == failing)
    mine = bpc__err(ctx, BPC_ECALLBACK, "merge callback returned %d (root gid 4)", 7);
  int rc = bpc__agree(ctx, mine);
  T_CHECK(rc == BPC_ECALLBACK, "rank %d got %d", t_rank, rc);
  char want[96];
  if (t_rank != failing)
    snprintf(want, sizeof want, "BPC_ECALLBACK: on rank %d: merge callback returned 7 (root gid 4)",
             failing);
  else
    snprintf(want, sizeof want, "BPC_ECALLBACK: merge callback returned 7 (root gid 4)");
  T_CHECK(strcmp(bpc_last_error(ctx), want) == 0, "message '%s', expected '%s'",
          bpc_last_error(ctx), want);
  /* two ranks fail differently: the most negative code wins elsewhere, each
   * failing rank keeps its own */
  mine = t_rank == 0 ? BPC_EINVAL : (t_rank == failing ? BPC_ENOMEM : BPC_OK);
  rc = bpc__agree(ctx, mine);
  if (t_rank == 0)
    T_CHECK(rc == BPC_EINVAL, "rank 0 keeps its own code");
  else
    T_CHECK(rc == BPC_ENOMEM, "got %d", rc);
  bpc_finalize(&ctx);
  T_SYNC();
}
END_TEST

START_TEST(test_agree_args)
{
  bpc_ctx_t *ctx = NULL;
  ck_assert_int_eq(bpc_init(MPI_COMM_WORLD, NULL, &ctx), BPC_OK);
  const int last = t_size - 1;
  int kv[3] = {2, 3, 4};
  for (int mode = 0; mode < 3; mode++) {
    /* mode 0: all agree; 1: the last rank's count differs; 2: the last
     * rank's k-vector (a hashed field) differs */
    bpc__sig_t sig;
    bpc__sig_init(&sig);
    bpc__sig_int(&sig, "block count", 12);
    bpc__sig_int(&sig, "count", (mode == 1 && t_rank == last) ? 13 : 10);
    if (mode == 2 && t_rank == last)
      kv[2] = 5;
    bpc__sig_bytes(&sig, "k-vector", kv, sizeof kv);
    kv[2] = 4;
    int rc = bpc__agree_args(ctx, "test", BPC_OK, &sig);
    int want = (mode == 0 || t_size == 1) ? BPC_OK : BPC_EMISMATCH;
    T_CHECK(rc == want, "mode %d: rc %d, expected %d (%s)", mode, rc, want, bpc_last_error(ctx));
    if (want == BPC_EMISMATCH) {
      char exp[160];
      if (mode == 1)
        snprintf(exp, sizeof exp,
                 "BPC_EMISMATCH: test: ranks disagree on count (10 on rank 0, 13 on rank %d)", last);
      else
        snprintf(exp, sizeof exp,
                 "BPC_EMISMATCH: test: ranks disagree on k-vector (rank %d differs from rank 0)",
                 last);
      T_CHECK(strncmp(bpc_last_error(ctx), exp, strlen(exp)) == 0, "message '%s', expected '%s'",
              bpc_last_error(ctx), exp);
    }
  }
  /* an argument error on rank 0 only wins over a mismatch, on every rank */
  bpc__sig_t sig;
  bpc__sig_init(&sig);
  bpc__sig_int(&sig, "rounds", t_rank);
  int mine = t_rank == 0 ? bpc__err(ctx, BPC_EKVEC, "k-vector 4x3 multiplies to 12") : BPC_OK;
  int rc = bpc__agree_args(ctx, "test", mine, &sig);
  T_CHECK(rc == BPC_EKVEC, "rank %d: %d (%s)", t_rank, rc, bpc_last_error(ctx));
  T_CHECK(strstr(bpc_last_error(ctx), "k-vector 4x3 multiplies to 12") != NULL, "message '%s'",
          bpc_last_error(ctx));
  bpc_finalize(&ctx);
  T_SYNC();
}
END_TEST

START_TEST(test_agree_args_vals)
{
  /* open fields match anything and learn the others' value; max fields are
   * not compared but reduced; a mismatch names the lowest stating rank */
  bpc_ctx_t *ctx = NULL;
  ck_assert_int_eq(bpc_init(MPI_COMM_WORLD, NULL, &ctx), BPC_OK);
  const int last = t_size - 1;
  for (int mode = 0; mode < 3; mode++) {
    bpc__sig_t sig;
    long long vals[3] = {0, 0, 0};
    bpc__sig_init(&sig);
    if (t_rank == 0) /* mode 0: only rank 0 leaves it open */
      bpc__sig_open(&sig, "width");
    else
      bpc__sig_int(&sig, "width", mode == 1 && t_rank == last ? 8 : 7);
    bpc__sig_max(&sig, "flag", t_rank == last ? 5 : t_rank);
    if (mode == 2) /* every rank leaves it open */
      bpc__sig_open(&sig, "height");
    else
      bpc__sig_int(&sig, "height", 3);
    int rc = bpc__agree_args_vals(ctx, "test", BPC_OK, &sig, vals);
    const int want = mode == 1 && t_size > 2 ? BPC_EMISMATCH : BPC_OK;
    T_CHECK(rc == want, "mode %d: %d (%s)", mode, rc, bpc_last_error(ctx));
    if (rc == BPC_OK) {
      const long long w = t_size == 1 ? BPC__SIG_NONE : mode == 1 ? 8 : 7;
      T_CHECK(vals[0] == w, "mode %d: width %lld, expected %lld", mode, vals[0], w);
      T_CHECK(vals[1] == (last > 5 ? last - 1 : 5), "mode %d: flag %lld", mode, vals[1]);
      T_CHECK(vals[2] == (mode == 2 ? BPC__SIG_NONE : 3), "mode %d: height %lld", mode, vals[2]);
    } else {
      char exp[160];
      snprintf(exp, sizeof exp,
               "BPC_EMISMATCH: test: ranks disagree on width (7 on rank 1, 8 on rank %d)", last);
      T_CHECK(strncmp(bpc_last_error(ctx), exp, strlen(exp)) == 0, "message '%s', expected '%s'",
              bpc_last_error(ctx), exp);
    }
  }
  bpc_finalize(&ctx);
  T_SYNC();
}
END_TEST

START_TEST(test_tags_in_step)
{
  bpc_ctx_t *ctx = NULL;
  ck_assert_int_eq(bpc_init(MPI_COMM_WORLD, NULL, &ctx), BPC_OK);
  for (int i = 0; i < 5; i++) {
    int t = bpc__next_tag(ctx), tmin = 0, tmax = 0;
    MPI_Allreduce(&t, &tmin, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(&t, &tmax, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    T_CHECK(tmin == tmax, "tag epochs differ: %d..%d", tmin, tmax);
  }
  bpc_finalize(&ctx);
  T_SYNC();
}
END_TEST

START_TEST(test_two_contexts)
{
  /* two contexts on the same communicator are independent */
  bpc_ctx_t *a = NULL, *b = NULL;
  ck_assert_int_eq(bpc_init(MPI_COMM_WORLD, NULL, &a), BPC_OK);
  ck_assert_int_eq(bpc_init(MPI_COMM_WORLD, NULL, &b), BPC_OK);
  MPI_Comm ca, cb;
  bpc_ctx_comm(a, &ca);
  bpc_ctx_comm(b, &cb);
  T_CHECK(ca != cb, "distinct communicators");
  bpc__err(a, BPC_EINVAL, "only a");
  T_CHECK(strcmp(bpc_last_error(b), "") == 0, "b has no error");
  bpc_finalize(&b);
  bpc_finalize(&a);
  T_SYNC();
}
END_TEST

static Suite *core_mpi_suite(void)
{
  Suite *s = suite_create("core_mpi");
  TCase *tc = tcase_create("ctx");
  tcase_add_test(tc, test_init_dup);
  tcase_add_test(tc, test_agree);
  tcase_add_test(tc, test_agree_args);
  tcase_add_test(tc, test_agree_args_vals);
  tcase_add_test(tc, test_tags_in_step);
  tcase_add_test(tc, test_two_contexts);
  suite_add_tcase(s, tc);
  return s;
}

BPC_T_MPI_MAIN(core_mpi_suite)
