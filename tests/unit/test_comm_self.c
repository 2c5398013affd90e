/*
 * tests/unit/test_comm_self.c - block messaging on the in-process transport
 * (serial context, no MPI at all): many blocks on one process, the gid+1 /
 * gid+7 pattern, borrowed sends, pool reuse, and schedule bugs reported as
 * BPC_ESTATE instead of hangs.
 */
#include "unit_check.h"

#include "../common/comm_pattern.h"
#include "bpc.h"
#include "comm/comm.h"
#include "decomp/decomp.h"

static bpc_ctx_t *ctx;
static bpc_assign_t *asg;

static void setup(void)
{
  ck_assert_int_eq(bpc_init_serial(NULL, &ctx), BPC_OK);
  asg = NULL;
}

static void teardown(void)
{
  bpc_assign_destroy(&asg);
  bpc_finalize(&ctx);
}

static void pattern(int n, int flags)
{
  ck_assert_int_eq(bpc_assign_create(ctx, n, BPC_ASSIGN_CONTIGUOUS, NULL, &asg), BPC_OK);
  unsigned char **bufs = calloc((size_t)(2 * n), sizeof *bufs);
  bpc__exch_t *ex = NULL;
  ck_assert_int_eq(bpc__exch_open(ctx, "self", bpc__assign_rank_cb, asg, &ex), BPC_OK);
  uint64_t bytes = 0;
  for (int g = 0; g < n; g++)
    for (int seq = 0; seq < 2; seq++) {
      size_t sz = cp_size(g, seq, n);
      bufs[2 * g + seq] = malloc(sz ? sz : 1);
      cp_fill(bufs[2 * g + seq], g, seq, n);
      bytes += sz;
      ck_assert_int_eq(bpc__exch_send(ex, g, cp_dst(g, seq, n), seq, bufs[2 * g + seq], sz, flags),
                       BPC_OK);
    }
  for (int g = n - 1; g >= 0; g--)
    for (int seq = 1; seq >= 0; seq--) {
      bpc__msg_t *m = NULL;
      int src = cp_src(g, seq, n);
      ck_assert_int_eq(bpc__exch_wait(ex, g, src, seq, &m), BPC_OK);
      ck_assert_ptr_nonnull(m);
      ck_assert_int_eq(m->src_gid, src);
      ck_assert_int_eq(cp_verify(m->data, m->bytes, src, seq, n), 0);
      if (flags & BPC__SEND_BORROW)
        ck_assert(m->bytes == 0 || m->data == bufs[2 * src + seq]); /* no copy */
      else
        ck_assert(m->bytes == 0 || m->data != bufs[2 * src + seq]);
      bpc__msg_release(ex, m);
    }
  ck_assert_int_eq(bpc__exch_close(&ex), BPC_OK);
  bpc_call_stats_t cs;
  bpc_stats_last_call(ctx, &cs);
  ck_assert_str_eq(cs.engine, "self");
  ck_assert_uint_eq(cs.total.bytes_sent, 0);
  ck_assert_uint_eq(cs.total.local_msgs, (uint64_t)(2 * n));
  ck_assert_uint_eq(cs.total.local_bytes, bytes);
  for (int i = 0; i < 2 * n; i++)
    free(bufs[i]);
  free(bufs);
  bpc_assign_destroy(&asg);
}

START_TEST(test_pattern_copy)
{
  int counts[] = {1, 2, 3, 5, 7, 8, 12, 64};
  for (int i = 0; i < 8; i++)
    pattern(counts[i], 0);
}
END_TEST

START_TEST(test_pattern_borrow)
{
  pattern(12, BPC__SEND_BORROW);
}
END_TEST

START_TEST(test_wait_for_unsent_is_error)
{
  ck_assert_int_eq(bpc_assign_create(ctx, 4, BPC_ASSIGN_CONTIGUOUS, NULL, &asg), BPC_OK);
  bpc__exch_t *ex = NULL;
  ck_assert_int_eq(bpc__exch_open(ctx, NULL, bpc__assign_rank_cb, asg, &ex), BPC_OK);
  bpc__msg_t *m = NULL;
  ck_assert_int_eq(bpc__exch_wait(ex, 1, 0, 0, &m), BPC_ESTATE);
  ck_assert_ptr_nonnull(strstr(bpc_last_error(ctx), "never sent"));
  ck_assert_int_eq(bpc__exch_wait(ex, 1, -1, -1, &m), BPC_ESTATE);
  ck_assert_ptr_null(m);
  /* a message nobody takes is reported at close, and freed */
  char c = 'x';
  ck_assert_int_eq(bpc__exch_send(ex, 0, 3, 0, &c, 1, 0), BPC_OK);
  ck_assert_int_eq(bpc__exch_send(ex, 0, 3, 0, NULL, 5, 0), BPC_ENULL);
  ck_assert_int_eq(bpc__exch_close(&ex), BPC_ESTATE);
  ck_assert_ptr_null(ex);
}
END_TEST

START_TEST(test_take_fifo_and_wildcards)
{
  ck_assert_int_eq(bpc_assign_create(ctx, 300, BPC_ASSIGN_CONTIGUOUS, NULL, &asg), BPC_OK);
  bpc__exch_t *ex = NULL;
  ck_assert_int_eq(bpc__exch_open(ctx, NULL, bpc__assign_rank_cb, asg, &ex), BPC_OK);
  int v[4] = {10, 11, 12, 13};
  /* same envelope twice: FIFO; gids 5 and 261 share a mailbox bucket */
  ck_assert_int_eq(bpc__exch_send(ex, 1, 5, 0, &v[0], sizeof(int), 0), BPC_OK);
  ck_assert_int_eq(bpc__exch_send(ex, 2, 261, 0, &v[1], sizeof(int), 0), BPC_OK);
  ck_assert_int_eq(bpc__exch_send(ex, 1, 5, 0, &v[2], sizeof(int), 0), BPC_OK);
  ck_assert_int_eq(bpc__exch_send(ex, 3, 5, 4, &v[3], sizeof(int), 0), BPC_OK);
  bpc__msg_t *m = NULL;
  ck_assert_int_eq(bpc__exch_take(ex, 5, 3, -1, &m), BPC_OK);
  ck_assert_int_eq(*(int *)m->data, 13);
  bpc__msg_release(ex, m);
  ck_assert_int_eq(bpc__exch_take(ex, 5, -1, 0, &m), BPC_OK);
  ck_assert_int_eq(*(int *)m->data, 10);
  bpc__msg_release(ex, m);
  ck_assert_int_eq(bpc__exch_take(ex, 5, 1, 0, &m), BPC_OK);
  ck_assert_int_eq(*(int *)m->data, 12);
  bpc__msg_release(ex, m);
  ck_assert_int_eq(bpc__exch_take(ex, 5, -1, -1, &m), BPC_OK);
  ck_assert_ptr_null(m);
  ck_assert_int_eq(bpc__exch_take(ex, 261, -1, -1, &m), BPC_OK);
  ck_assert_int_eq(*(int *)m->data, 11);
  bpc__msg_release(ex, m);
  ck_assert_int_eq(bpc__exch_close(&ex), BPC_OK);
}
END_TEST

START_TEST(test_pool_reuse)
{
  size_t cap1 = 0, cap2 = 0, cap3 = 0;
  void *a = bpc__pool_get(ctx, 1000, &cap1);
  ck_assert_ptr_nonnull(a);
  ck_assert_uint_eq(cap1, 1024);
  ck_assert_uint_eq((uintptr_t)a % 64, 0);
  bpc__pool_put(ctx, a, cap1);
  void *b = bpc__pool_get(ctx, 600, &cap2);
  ck_assert_ptr_eq(a, b); /* the same buffer comes back */
  void *c = bpc__pool_get(ctx, 0, &cap3);
  ck_assert_ptr_nonnull(c);
  ck_assert_uint_ge(cap3, 1);
  bpc__pool_put(ctx, b, cap2);
  bpc__pool_put(ctx, c, cap3);
}
END_TEST

static Suite *comm_self_suite(void)
{
  Suite *s = suite_create("comm_self");
  TCase *tc = tcase_create("self");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_test(tc, test_pattern_copy);
  tcase_add_test(tc, test_pattern_borrow);
  tcase_add_test(tc, test_wait_for_unsent_is_error);
  tcase_add_test(tc, test_take_fifo_and_wildcards);
  tcase_add_test(tc, test_pool_reuse);
  suite_add_tcase(s, tc);
  return s;
}

BPC_T_UNIT_MAIN(comm_self_suite)
