/* tests/unit/test_core.c - error map, serial context, statistics, logging. */
#include "unit_check.h"

#include <stdio.h>
#include <string.h>

#include "bpc.h"
#include "comm/coll.h"
#include "core/core.h"

START_TEST(test_err_names)
{
  ck_assert_str_eq(bpc_err_name(BPC_OK), "BPC_OK");
  ck_assert_str_eq(bpc_err_name(BPC_EKVEC), "BPC_EKVEC");
  ck_assert_str_eq(bpc_strerror(BPC_ENOMEM), "out of memory");
  ck_assert_str_eq(bpc_err_name(12345), "BPC_E?");
  ck_assert_str_eq(bpc_strerror(-999), "unknown error code");
  /* every code in the map has a distinct name and text */
  int codes[] = {
#define XX(n, v, t) v,
      BPC_ERRNO_MAP(XX)
#undef XX
  };
  int nc = (int)(sizeof codes / sizeof codes[0]);
  for (int i = 0; i < nc; i++) {
    ck_assert_int_le(codes[i], 0);
    for (int j = i + 1; j < nc; j++) {
      ck_assert_int_ne(codes[i], codes[j]);
      ck_assert_str_ne(bpc_err_name(codes[i]), bpc_err_name(codes[j]));
    }
  }
}
END_TEST

START_TEST(test_serial_ctx)
{
  bpc_ctx_t *ctx = NULL;
  ck_assert_int_eq(bpc_init_serial(NULL, NULL), BPC_ENULL);
  ck_assert_int_eq(bpc_init_serial(NULL, &ctx), BPC_OK);
  int r = -1, s = -1;
  ck_assert_int_eq(bpc_ctx_rank(ctx, &r), BPC_OK);
  ck_assert_int_eq(bpc_ctx_size(ctx, &s), BPC_OK);
  ck_assert_int_eq(r, 0);
  ck_assert_int_eq(s, 1);
  ck_assert_int_eq(bpc_ctx_rank(NULL, &r), BPC_ENULL);
  ck_assert_int_eq(bpc_ctx_size(ctx, NULL), BPC_ENULL);
  ck_assert_str_eq(bpc_last_error(ctx), "");
  ck_assert_int_eq(bpc__err(ctx, BPC_EKVEC, "k-vector %s multiplies to %d", "4x3", 12), BPC_EKVEC);
  ck_assert_str_eq(bpc_last_error(ctx), "BPC_EKVEC: k-vector 4x3 multiplies to 12");
  ck_assert_int_eq(bpc_set_log_level(ctx, 9), BPC_ERANGE);
  ck_assert_ptr_nonnull(strstr(bpc_last_error(ctx), "log level 9"));
  ck_assert_int_eq(bpc_set_log_level(ctx, BPC_LOG_NONE), BPC_OK);
  /* agreement is the identity without MPI */
  ck_assert_int_eq(bpc__agree(ctx, BPC_EINVAL), BPC_EINVAL);
  ck_assert_int_eq(bpc__agree(ctx, BPC_OK), BPC_OK);
  double t0 = bpc_wtime(ctx), t1 = bpc_wtime(ctx);
  ck_assert(t1 >= t0);
  ck_assert_int_eq(bpc_finalize(&ctx), BPC_OK);
  ck_assert_ptr_null(ctx);
  ck_assert_int_eq(bpc_finalize(&ctx), BPC_OK); /* NULL is fine */
}
END_TEST

START_TEST(test_stats)
{
  bpc_ctx_t *ctx = NULL;
  ck_assert_int_eq(bpc_init_serial(NULL, &ctx), BPC_OK);
  bpc__stats_begin_call(ctx, "merge");
  bpc__stats_sent(ctx, 100, 0);
  bpc__stats_set_round(ctx, 1);
  bpc__stats_sent(ctx, 50, 0);
  bpc__stats_sent(ctx, 7, 1);
  bpc__stats_recv(ctx, 30, 0);
  bpc__stats_recv(ctx, 7, 1); /* local: counted on the send side only */
  bpc__stats_ops(ctx, 3);
  bpc__stats_set_round(ctx, 100); /* beyond the table: last slot */
  bpc__stats_sent(ctx, 1, 0);
  bpc_call_stats_t cs;
  ck_assert_int_eq(bpc_stats_last_call(ctx, &cs), BPC_OK);
  ck_assert_str_eq(cs.engine, "merge");
  ck_assert_int_eq(cs.nrounds, 101);
  ck_assert_uint_eq(cs.total.bytes_sent, 151);
  ck_assert_uint_eq(cs.total.msgs_sent, 3);
  ck_assert_uint_eq(cs.total.local_bytes, 7);
  ck_assert_uint_eq(cs.total.local_msgs, 1);
  ck_assert_uint_eq(cs.total.bytes_recv, 30);
  ck_assert_uint_eq(cs.total.msgs_recv, 1);
  ck_assert_uint_eq(cs.total.op_calls, 3);
  ck_assert_uint_eq(cs.round[0].bytes_sent, 100);
  ck_assert_uint_eq(cs.round[1].bytes_sent, 50);
  ck_assert_uint_eq(cs.round[1].op_calls, 3);
  ck_assert_uint_eq(cs.round[BPC_STATS_MAX_ROUNDS - 1].bytes_sent, 1);
  bpc_counters_t tot;
  ck_assert_int_eq(bpc_stats_total(ctx, &tot), BPC_OK);
  ck_assert_uint_eq(tot.bytes_sent, 151);
  bpc__stats_begin_call(ctx, "swap"); /* a new call resets the record, not the totals */
  ck_assert_int_eq(bpc_stats_last_call(ctx, &cs), BPC_OK);
  ck_assert_uint_eq(cs.total.bytes_sent, 0);
  ck_assert_int_eq(bpc_stats_total(ctx, &tot), BPC_OK);
  ck_assert_uint_eq(tot.bytes_sent, 151);
  ck_assert_int_eq(bpc_stats_reset(ctx), BPC_OK);
  ck_assert_int_eq(bpc_stats_total(ctx, &tot), BPC_OK);
  ck_assert_uint_eq(tot.bytes_sent, 0);
  ck_assert_int_eq(bpc_stats_total(NULL, &tot), BPC_ENULL);
  bpc_finalize(&ctx);
}
END_TEST

START_TEST(test_tags)
{
  bpc_ctx_t *ctx = NULL;
  ck_assert_int_eq(bpc_init_serial(NULL, &ctx), BPC_OK);
  int a = bpc__next_tag(ctx), b = bpc__next_tag(ctx);
  ck_assert_int_ne(a, b);
  ck_assert_int_gt(a, 0);
  /* epochs cycle within [first, tag_ub] */
  for (int i = 0; i < 70000; i++) {
    int t = bpc__next_tag(ctx);
    ck_assert_int_gt(t, 0);
    ck_assert_int_le(t, 32767);
  }
  bpc_finalize(&ctx);
}
END_TEST

/* bpc_version() (the library) and the bpc/version.h macros (the headers)
 * agree, the string is MAJOR.MINOR.PATCH as the numbers say, and NULL
 * out-parameters are allowed. */
START_TEST(test_version)
{
  int major = -1, minor = -1, patch = -1;
  const char *v = bpc_version(&major, &minor, &patch);
  ck_assert_ptr_nonnull(v);
  ck_assert_int_eq(major, BPC_VERSION_MAJOR);
  ck_assert_int_eq(minor, BPC_VERSION_MINOR);
  ck_assert_int_eq(patch, BPC_VERSION_PATCH);
  ck_assert_str_eq(v, BPC_VERSION_STRING);
  char numbers[64];
  snprintf(numbers, sizeof numbers, "%d.%d.%d", major, minor, patch);
  ck_assert_int_eq(strncmp(v, numbers, strlen(numbers)), 0);
  ck_assert_int_eq(BPC_VERSION_NUMBER, BPC_VERSION_ENCODE(major, minor, patch));
  ck_assert_int_gt(BPC_VERSION_ENCODE(major, minor, patch + 1), BPC_VERSION_NUMBER);
  ck_assert_int_gt(BPC_VERSION_ENCODE(major + 1, 0, 0), BPC_VERSION_NUMBER);
  ck_assert_str_eq(bpc_version(NULL, NULL, NULL), v);
}
END_TEST

static Suite *core_suite(void)
{
  Suite *s = suite_create("core");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, test_err_names);
  tcase_add_test(tc, test_serial_ctx);
  tcase_add_test(tc, test_stats);
  tcase_add_test(tc, test_tags);
  tcase_add_test(tc, test_version);
  suite_add_tcase(s, tc);
  return s;
}

BPC_T_UNIT_MAIN(core_suite)
