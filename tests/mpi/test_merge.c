/*
 * tests/mpi/test_merge.c - merge-reduce under MPI at every process count of
 * tests/testlist. Every configuration is checked on every rank against the
 * serial reference of tests/common/merge_items.h (items are pure functions
 * of their gid, roots and absorbed gids come from closed formulas):
 *  - float sums (element-wise, in segments, and with varying counts), 2x2
 *    matrix products in order (not commutative), custom lists (sorted, or
 *    concatenated in order; variable size, some empty or NULL);
 *  - full and partial reductions, user and automatic k-vectors, distance
 *    doubling, halving and auto, block orders, 1..4 blocks per process,
 *    prime block counts and fewer blocks than processes, contiguous,
 *    round-robin and scattered (user map) assignments, OpenMP threads;
 *  - statistics of a call against a reference count;
 *  - bad input on every rank alike and on one rank only, and a callback
 *    that fails on one rank: BPC_ECALLBACK with its value on every rank,
 *    no hang, and the next call works.
 */
#include "mpi_check.h"

#define MI_CHECK(cond, ...) T_CHECK(cond, __VA_ARGS__)
#include "../common/merge_items.h"
#include "bpc.h"

static bpc_ctx_t *ctx;

static void setup(void) { ck_assert_int_eq(bpc_init(MPI_COMM_WORLD, NULL, &ctx), BPC_OK); }
static void teardown(void) { bpc_finalize(&ctx); }

static const char *const algos[] = {"doubling", "halving", NULL};

START_TEST(test_blocks_per_proc)
{
  for (int bpp = 1; bpp <= 4; bpp++) {
    int n = bpp * t_size;
    for (int ai = 0; ai < 3; ai++) {
      mi_cfg_t c = {n, BPC_ASSIGN_CONTIGUOUS, MI_SUM, NULL, 0, 0, algos[ai], 0, 23, 16, 1,
                    BPC_MERGE_ELEMENTWISE};
      mi_run(ctx, &c);
      c.mode = BPC_ASSIGN_ROUND_ROBIN;
      c.kind = MI_VSUM;
      c.flags = 0;
      mi_run(ctx, &c);
    }
    mi_cfg_t m = {n, BPC_ASSIGN_CONTIGUOUS, MI_MAT, NULL, 0, 0, "doubling", bpp % 3, 11,
                  bpp == 2 ? 40 : 0, 1, bpp >= 3 ? BPC_MERGE_ELEMENTWISE : 0};
    mi_run(ctx, &m);
    mi_cfg_t dm = {n, BPC_ASSIGN_ROUND_ROBIN, MI_MAT, NULL, 0, 0, NULL, 1, 11, 48, 1,
                   BPC_MERGE_ELEMENTWISE | MI_DECLARE};
    mi_run(ctx, &dm);
    mi_cfg_t l = {n, bpp % 2 ? BPC_ASSIGN_ROUND_ROBIN : BPC_ASSIGN_CONTIGUOUS,
                  bpp % 2 ? MI_LIST : MI_CAT, NULL, 0, 0, NULL, 0, 0, 0, 1, 0};
    mi_run(ctx, &l);
  }
  T_SYNC();
}
END_TEST

START_TEST(test_primes_and_few_blocks)
{
  const int few = t_size > 1 ? t_size - 1 : 1;
  const int ns[] = {1, 2, few, 7, 13};
  for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++) {
    for (int kind = 0; kind < MI_NKINDS; kind++) {
      mi_cfg_t c = {ns[i], (bpc_assign_mode_t)(i % 3), kind, NULL, 0, 0, NULL, (int)(i + kind) % 3,
                    9, 0, 1, 0};
      mi_run(ctx, &c);
    }
    mi_cfg_t s = {ns[i], BPC_ASSIGN_USER, MI_MAT, NULL, 0, 0, NULL, 2, 30, 48, 1,
                  BPC_MERGE_ELEMENTWISE};
    mi_run(ctx, &s);
  }
  T_SYNC();
}
END_TEST

START_TEST(test_partial)
{
  /* the DIY figure: 16 blocks, k = 4x2x2: after 2 rounds roots 0 and 8 */
  static const int k16[] = {4, 2, 2}, k12[] = {3, 2, 2}, k30[] = {2, 5, 3};
  for (int rounds = 1; rounds <= 3; rounds++)
    for (int kind = 0; kind < MI_NKINDS; kind++) {
      mi_cfg_t c = {16, (bpc_assign_mode_t)(kind % 2), kind, k16, 3, rounds, "doubling", 0, 7,
                    0, 1, 0};
      mi_run(ctx, &c);
    }
  {
    bpc_assign_t *a = NULL;
    bpc_assign_create(ctx, 16, BPC_ASSIGN_CONTIGUOUS, NULL, &a);
    const int *gids;
    int nl;
    bpc_assign_local(a, &gids, &nl);
    bpc_buf_t *items = calloc(nl ? (size_t)nl : 1, sizeof *items);
    float *v = calloc(nl ? (size_t)nl : 1, sizeof *v);
    for (int i = 0; i < nl; i++) {
      v[i] = (float)gids[i];
      items[i].data = &v[i];
      items[i].count = 1;
    }
    mi_user_t u = {MI_SUM, -1, -1, 0, 0, 0};
    bpc_type_t ft = bpc_type_contiguous(sizeof(float), MPI_FLOAT);
    bpc_merge_params_t p = bpc_merge_params_default();
    p.type = &ft;
    p.merge = mi_merge_sum;
    p.user = &u;
    p.k = k16;
    p.nk = 3;
    p.rounds = 2;
    bpc_merge_result_t *r = NULL;
    int rc = bpc_merge(a, items, &p, &r);
    T_CHECK(rc == BPC_OK, "figure: %s", bpc_last_error(ctx));
    for (int g = 0; g < 16 && r; g++) {
      int isr = -1;
      bpc_merge_is_root(r, g, &isr);
      T_CHECK(isr == (g == 0 || g == 8), "figure: gid %d is_root %d", g, isr);
    }
    for (int i = 0; i < nl && r; i++) {
      if (gids[i] == 0)
        T_CHECK(v[i] == 28.0f, "figure: root 0 holds %g", (double)v[i]);
      if (gids[i] == 8)
        T_CHECK(v[i] == 92.0f, "figure: root 8 holds %g", (double)v[i]);
    }
    bpc_merge_result_destroy(&r);
    free(items);
    free(v);
    bpc_assign_destroy(&a);
  }
  for (int rounds = 0; rounds <= 3; rounds++)
    for (int ai = 0; ai < 2; ai++) {
      mi_cfg_t c = {12, BPC_ASSIGN_ROUND_ROBIN, MI_LIST, k12, 3, rounds, algos[ai], 1, 0, 0, 1, 0};
      mi_run(ctx, &c);
      mi_cfg_t d = {30, BPC_ASSIGN_CONTIGUOUS, MI_SUM, k30, 3, rounds, algos[ai], 2, 17, 20, 1,
                    BPC_MERGE_ELEMENTWISE};
      mi_run(ctx, &d);
      mi_cfg_t e = {30, BPC_ASSIGN_USER, MI_MAT, k30, 3, rounds, "doubling", ai, 5, 0, 1, 0};
      mi_run(ctx, &e);
    }
  /* partial with the automatic k-vector: one round */
  mi_cfg_t f = {4 * t_size, BPC_ASSIGN_CONTIGUOUS, MI_CAT, NULL, 0, 1, NULL, 0, 0, 0, 1, 0};
  mi_run(ctx, &f);
  T_SYNC();
}
END_TEST

START_TEST(test_threads)
{
  for (int bpp = 3; bpp <= 4; bpp++) {
    int n = bpp * t_size;
    mi_cfg_t c = {n, BPC_ASSIGN_CONTIGUOUS, MI_MAT, NULL, 0, 0, NULL, 0, 200, 256, 2,
                  BPC_MERGE_ELEMENTWISE};
    mi_run(ctx, &c);
    mi_cfg_t l = {n, BPC_ASSIGN_ROUND_ROBIN, MI_LIST, NULL, 0, 0, NULL, 0, 0, 0, 2, 0};
    mi_run(ctx, &l);
    mi_cfg_t s = {n + 1, BPC_ASSIGN_USER, MI_SUM, NULL, 0, 0, NULL, 2, 1000, 0, 2,
                  BPC_MERGE_ELEMENTWISE};
    mi_run(ctx, &s);
  }
  T_SYNC();
}
END_TEST

START_TEST(test_stats)
{
  /* one float array of C elements per block; count what each rank sends
   * (to other processes and locally) and how many merges it runs */
  const int n = 3 * t_size + 1;
  const size_t C = 5000;
  bpc_assign_t *a = NULL;
  bpc_assign_create(ctx, n, BPC_ASSIGN_CONTIGUOUS, NULL, &a);
  const int *gids;
  int nl;
  bpc_assign_local(a, &gids, &nl);
  void *items = mi_make_items(MI_SUM, gids, nl, C);
  mi_user_t u = {MI_SUM, -1, -1, 0, 0, 0};
  bpc_type_t ft = bpc_type_contiguous(sizeof(float), MPI_FLOAT);
  bpc_merge_params_t p = bpc_merge_params_default();
  p.type = &ft;
  p.merge = mi_merge_sum;
  p.user = &u;
  bpc_merge_result_t *r = NULL;
  int rc = bpc_merge(a, items, &p, &r);
  T_CHECK(rc == BPC_OK, "stats: %s", bpc_last_error(ctx));
  if (rc == BPC_OK) {
    int k[64], nk = 0;
    bpc_merge_schedule(r, NULL, k, 64, &nk, NULL);
    uint64_t rb = 0, rm = 0, lb = 0, lm = 0, ops = 0;
    for (int i = 0; i < nl; i++) {
      /* digits of gid (doubling, identity order) */
      int g = gids[i], stride = 1;
      for (int rr = 0; rr < nk; rr++) {
        int d = (g / stride) % k[rr];
        if (d != 0) {
          int root = g - d * stride, rk = -1;
          bpc_assign_rank(a, root, &rk);
          if (rk == t_rank) {
            lb += C * sizeof(float);
            lm++;
          } else {
            rb += C * sizeof(float);
            rm++;
          }
          break;
        }
        ops++;
        stride *= k[rr];
      }
    }
    bpc_call_stats_t st;
    bpc_stats_last_call(ctx, &st);
    T_CHECK(strcmp(st.engine, "merge") == 0, "engine '%s'", st.engine);
    T_CHECK(st.nrounds == nk, "nrounds %d, k-vector has %d", st.nrounds, nk);
    T_CHECK(st.total.bytes_sent == rb && st.total.msgs_sent == rm,
            "sent %llu bytes in %llu msgs, expected %llu in %llu",
            (unsigned long long)st.total.bytes_sent, (unsigned long long)st.total.msgs_sent,
            (unsigned long long)rb, (unsigned long long)rm);
    T_CHECK(st.total.local_bytes == lb && st.total.local_msgs == lm,
            "local %llu bytes in %llu msgs, expected %llu in %llu",
            (unsigned long long)st.total.local_bytes, (unsigned long long)st.total.local_msgs,
            (unsigned long long)lb, (unsigned long long)lm);
    T_CHECK(st.total.op_calls == ops && (uint64_t)u.calls == ops, "%llu merges, expected %llu",
            (unsigned long long)st.total.op_calls, (unsigned long long)ops);
  }
  bpc_merge_result_destroy(&r);
  mi_free_items(MI_SUM, items, nl);
  bpc_assign_destroy(&a);
  T_SYNC();
}
END_TEST

/* One call with every rank alike except `tweak` on rank `who`. */
typedef struct ecase {
  int n;
  const int *k;
  int nk;
  int rounds;
  const char *algo;
  unsigned flags;
  int who;   /* rank with the local problem, -1 none */
  int tweak; /* 1 items NULL, 2 data NULL, 3 other count */
  size_t count; /* params->count (element-wise, declared) */
  size_t seg;   /* params->segment_bytes */
} ecase_t;

static int run_ecase(const ecase_t *e)
{
  bpc_assign_t *a = NULL;
  bpc_assign_create(ctx, e->n, BPC_ASSIGN_CONTIGUOUS, NULL, &a);
  const int *gids;
  int nl;
  bpc_assign_local(a, &gids, &nl);
  bpc_buf_t *items = mi_make_items(MI_SUM, gids, nl, 4);
  mi_user_t u = {MI_SUM, -1, -1, 0, 0, 0};
  bpc_type_t ft = bpc_type_contiguous(sizeof(float), MPI_FLOAT);
  bpc_merge_params_t p = bpc_merge_params_default();
  p.type = &ft;
  p.merge = mi_merge_sum;
  p.user = &u;
  p.k = e->k;
  p.nk = e->nk;
  p.rounds = e->rounds;
  p.algorithm = e->algo;
  p.flags = e->flags;
  p.count = e->count;
  p.segment_bytes = e->seg;
  void *arg = items;
  float *saved = NULL;
  if (t_rank == e->who && nl > 0) {
    if (e->tweak == 1)
      arg = NULL;
    if (e->tweak == 2) {
      saved = items[0].data;
      items[0].data = NULL;
    }
    if (e->tweak == 3)
      items[0].count = 3;
  }
  bpc_merge_result_t *r = NULL;
  int rc = bpc_merge(a, arg, &p, &r);
  T_CHECK(r == NULL || rc == BPC_OK, "result set on failure");
  bpc_merge_result_destroy(&r);
  if (saved)
    items[0].data = saved;
  mi_free_items(MI_SUM, items, nl);
  bpc_assign_destroy(&a);
  return rc;
}

/* rc must be `want` on every rank */
#define ALL_EQ(rc, want, what)                                                          \
  do {                                                                                  \
    int r_ = (rc), lo_ = 0, hi_ = 0;                                                    \
    MPI_Allreduce(&r_, &lo_, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);                      \
    MPI_Allreduce(&r_, &hi_, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);                      \
    T_CHECK(r_ == (want) && lo_ == hi_, "%s: %s here (%s), codes %d..%d over ranks", what, \
            bpc_err_name(r_), bpc_last_error(ctx), lo_, hi_);                           \
  } while (0)

START_TEST(test_bad_input)
{
  static const int k44[] = {4, 4}, k43[] = {4, 3};
  const int last = t_size - 1;
  ecase_t e = {12, k44, 2, 0, NULL, 0, -1, 0, 0, 0};
  int rc = run_ecase(&e);
  ALL_EQ(rc, BPC_EKVEC, "k-vector mismatch");
  T_CHECK(strstr(bpc_last_error(ctx), "k-vector 4x4 multiplies to 16, but there are 12 blocks") != NULL,
          "message '%s'", bpc_last_error(ctx));
  e.k = k43;
  e.rounds = 3;
  rc = run_ecase(&e);
  ALL_EQ(rc, BPC_ERANGE, "rounds beyond full");
  e.rounds = 0;
  e.algo = "fancy";
  ALL_EQ(run_ecase(&e), BPC_EALGO, "unknown algorithm");
  e.algo = "halving";
  ALL_EQ(run_ecase(&e), BPC_EINVAL, "halving, not commutative");
  e.algo = NULL;
  setenv("BPC_MERGE_ALGORITHM", "zigzag", 1);
  ALL_EQ(run_ecase(&e), BPC_EALGO, "unknown algorithm from the environment");
  unsetenv("BPC_MERGE_ALGORITHM");
  /* local problems on the last rank only: every rank fails alike */
  e.who = last;
  e.tweak = 1;
  ALL_EQ(run_ecase(&e), BPC_ENULL, "items NULL on one rank");
  e.tweak = 2;
  ALL_EQ(run_ecase(&e), BPC_ENULL, "data NULL on one rank");
  e.flags = BPC_MERGE_ELEMENTWISE;
  ALL_EQ(run_ecase(&e), BPC_ENULL, "data NULL on one rank, element-wise");
  e.tweak = 3;
  ALL_EQ(run_ecase(&e), BPC_EINVAL, "element-wise, one count differs");
  /* declared count: no collective before the schedule, the bad rank sends
   * zeros of the right size, the outcome is still the same everywhere */
  e.count = 4;
  e.seg = 8; /* two segments of 2 floats */
  ALL_EQ(run_ecase(&e), BPC_EINVAL, "element-wise, declared count, one count differs");
  e.tweak = 1;
  ALL_EQ(run_ecase(&e), BPC_ENULL, "element-wise, declared count, items NULL on one rank");
  e.tweak = 0;
  e.who = -1;
  ALL_EQ(run_ecase(&e), BPC_OK, "element-wise, declared count");
  e.count = 0;
  e.seg = 0;
  e.tweak = 0;
  e.flags = 0;
  e.who = -1;
  ALL_EQ(run_ecase(&e), BPC_OK, "good call after the bad ones");
  T_SYNC();
}
END_TEST

START_TEST(test_callback_failure)
{
  /* the failing root: gid 2*stride-ish in the middle of the schedule, on
   * whichever rank owns it; other ranks learn value, rank and gid */
  for (int kind = 0; kind < MI_NKINDS; kind++)
    for (int seg = 0; seg < 2; seg++) {
      if (seg && kind != MI_SUM && kind != MI_MAT)
        continue;
      const int n = 2 * t_size + 2;
      bpc_assign_t *a = NULL;
      bpc_assign_create(ctx, n, BPC_ASSIGN_CONTIGUOUS, NULL, &a);
      const int *gids;
      int nl;
      bpc_assign_local(a, &gids, &nl);
      void *items = mi_make_items(kind, gids, nl, 50);
      mi_user_t u = {kind, 0, -1, 42, 0, 0}; /* gid 0 fails in round 0 or later */
      int k[64], nk = 0;
      bpc_merge_kvec_auto(a, 0, k, 64, &nk);
      if (nk > 1) { /* fail in the last round of gid 0 */
        u.fail_round = nk - 1;
      }
      bpc_type_t ft = bpc_type_contiguous(sizeof(float), MPI_FLOAT);
      bpc_type_t mt = bpc_type_contiguous(sizeof(mi_mat_t), MPI_BYTE);
      bpc_type_t lt = mi_list_type(&u);
      bpc_merge_params_t p = bpc_merge_params_default();
      p.type = kind == MI_MAT ? &mt : kind >= MI_LIST ? &lt : &ft;
      p.merge = mi_kind_fn(kind);
      p.user = &u;
      p.k = k;
      p.nk = nk;
      p.flags = seg ? BPC_MERGE_ELEMENTWISE : 0;
      p.segment_bytes = seg ? 64 : 0;
      int rc = bpc_merge(a, items, &p, NULL);
      ALL_EQ(rc, BPC_ECALLBACK, mi_kind_name[kind]);
      T_CHECK(strstr(bpc_last_error(ctx), "returned 42") != NULL &&
                  strstr(bpc_last_error(ctx), "gid 0") != NULL,
              "message '%s'", bpc_last_error(ctx));
      mi_free_items(kind, items, nl);
      if (kind == MI_LIST && t_size > 1) {
        /* unpack fails on the last rank only (where it unpacks anything) */
        u.fail_gid = t_rank == t_size - 1 ? -2 : -1;
        u.fail_value = 7;
        static const int k2[] = {2};
        /* gid 0 (the root) on the last rank unpacks gid 1's item, from rank 0 */
        int map[2] = {t_size - 1, 0};
        bpc_assign_t *b = NULL;
        bpc_assign_create(ctx, 2, BPC_ASSIGN_USER, map, &b);
        const int *g2;
        int nl2;
        bpc_assign_local(b, &g2, &nl2);
        void *it2 = mi_make_items(kind, g2, nl2, 0);
        p.k = k2;
        p.nk = 1;
        p.flags = 0;
        rc = bpc_merge(b, it2, &p, NULL);
        ALL_EQ(rc, BPC_ECALLBACK, "unpack on one rank");
        T_CHECK(strstr(bpc_last_error(ctx), "unpack callback returned 7") != NULL,
                "message '%s'", bpc_last_error(ctx));
        mi_free_items(kind, it2, nl2);
        bpc_assign_destroy(&b);
      }
      bpc_assign_destroy(&a);
      /* the next call works */
      mi_cfg_t c = {n, BPC_ASSIGN_CONTIGUOUS, kind, NULL, 0, 0, NULL, 0, 50, seg ? 64 : 0, 1,
                    seg ? BPC_MERGE_ELEMENTWISE : 0};
      T_CHECK(mi_run(ctx, &c) == BPC_OK, "call after a failure");
    }
  T_SYNC();
}
END_TEST

static Suite *suite(void)
{
  Suite *s = suite_create("merge");
  TCase *tc = tcase_create("merge");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_blocks_per_proc);
  tcase_add_test(tc, test_primes_and_few_blocks);
  tcase_add_test(tc, test_partial);
  tcase_add_test(tc, test_threads);
  tcase_add_test(tc, test_stats);
  tcase_add_test(tc, test_bad_input);
  tcase_add_test(tc, test_callback_failure);
  suite_add_tcase(s, tc);
  return s;
}

BPC_T_MPI_MAIN(suite)
