/*
 * tests/unit/test_scan_serial.c - the prefix-scan engine on a serial
 * context (the in-process transport runs the same schedules): every global
 * algorithm, block counts 1..17 (primes and non-powers of two), 0..5 items
 * per block, matrices and the variable-size list type (as callbacks and
 * as binary operators), inclusive and
 * exclusive with and without identity, gid and permuted orders, operator
 * counts, thread counts, argument errors and a failing operator; the
 * overlapped driver against lock-step rounds bit for bit; the schedules'
 * senders and candidate receivers at every position of small counts and
 * around 2^29, 2^30 and INT_MAX of counts past 2^30.
 */
#include "unit_check.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "bpc.h"
#include "../common/scan_run.h"
#include "engines/scan/scan_internal.h"

static bpc_ctx_t *ctx;
static void setup(void) { ck_assert_int_eq(bpc_init_serial(NULL, &ctx), BPC_OK); }
static void teardown(void) { bpc_finalize(&ctx); }

static int algos(bpc_algo_info_t *tab)
{
  int n = 0;
  ck_assert_int_eq(bpc_algorithms("scan", tab, 16, &n), BPC_OK);
  ck_assert_int_eq(n, 6);
  return n;
}

START_TEST(test_reference)
{
  unsetenv("BPC_SCAN_ALPHA"); /* the strategy's auto below expects alpha = 5 us */
  bpc_algo_info_t tab[16];
  const int na = algos(tab);
  for (int nb = 1; nb <= 17; nb++) {
    bpc_assign_t *A = NULL;
    ck_assert_int_eq(bpc_assign_create(ctx, nb, BPC_ASSIGN_CONTIGUOUS, NULL, &A), BPC_OK);
    int *order = malloc(sizeof(int) * (size_t)nb);
    for (int p = 0; p < nb; p++)
      order[p] = (p * 5 + 2) % nb; /* a permutation when gcd(5, nb) = 1 */
    const int permuted = nb % 5 != 0;
    for (int a = 0; a < na; a++)
      for (int kind = SR_MAT; kind <= SR_LIST; kind += 2)
        for (int mi = 0; mi < 3; mi++)
          for (int ord = 0; ord <= permuted; ord++)
            for (int st = 0; st <= BPC_SCAN_STRATEGY_AUTO; st++) {
            bpc_scan_mode_t mode = mi == 0 ? BPC_SCAN_INCLUSIVE : BPC_SCAN_EXCLUSIVE;
            const int with_id = mi == 2, seed = nb + a;
            sr_prob_t P;
            sr_prob_make(&P, A, kind, seed, 0, -1);
            /* the callback and the binary form (op.binary) in turn */
            bpc_scan_op_t op = sr_op(kind | ((st + ord) % 2 ? SR_BINARY : 0), with_id);
            bpc_scan_params_t prm = bpc_scan_params_default();
            prm.algorithm = tab[a].name;
            prm.order = ord ? order : NULL;
            prm.nthreads = nb % 4 == 3 ? 3 : 1; /* threads on some counts (2 cores) */
            prm.strategy = (bpc_scan_strategy_t)st;
            bpc_scan_info_t info;
            const int want = sr_expect(tab[a].name, A, nb, prm.order, kind);
            const int rc = bpc_scan(ctx, A, &P.type, mode, P.in, P.out, &op, &prm, &info);
            ck_assert_msg(rc == want, "%s: got %s, want %s (%s)", tab[a].name, bpc_err_name(rc),
                          bpc_err_name(want), bpc_last_error(ctx));
            if (want != BPC_OK) { /* "mpi" with the custom type */
              sr_prob_free(&P);
              continue;
            }
            char msg[256];
            int bad = sr_check(&P, nb, prm.order, seed, 0, mode, with_id, &info, msg, sizeof msg);
            ck_assert_msg(bad == 0,
                          "%s, strategy %d, kind %d, mode %d, identity %d, %d blocks, order %d: %s",
                          tab[a].name, st, kind, mode, with_id, nb, ord, msg);
            ck_assert_str_eq(info.name, tab[a].name);
            ck_assert_int_eq(info.ops_total, info.ops_local);
            /* auto's rule (doc/scan.md): exclusive STP; inclusive IG, or
             * successor for Blelloch (op_seconds 0 = 1 ms > alpha 5 us) */
            int st_want = st;
            if (st == BPC_SCAN_STRATEGY_AUTO)
              st_want = mode == BPC_SCAN_EXCLUSIVE ? BPC_SCAN_SCAN_THEN_PROPAGATE
                        : strcmp(tab[a].name, "blelloch") == 0 ? BPC_SCAN_SUCCESSOR
                                                                : BPC_SCAN_INCLUSIVE_GLOBAL;
            ck_assert_msg((int)info.strategy == st_want, "%s, mode %d, strategy %d: ran %d",
                          tab[a].name, mode, st, (int)info.strategy);
            sr_prob_free(&P);
          }
    free(order);
    bpc_assign_destroy(&A);
  }
}
END_TEST

START_TEST(test_counts)
{
  bpc_algo_info_t tab[16];
  const int na = algos(tab);
  for (int nb = 1; nb <= 64; nb++) {
    bpc_assign_t *A = NULL;
    ck_assert_int_eq(bpc_assign_create(ctx, nb, BPC_ASSIGN_CONTIGUOUS, NULL, &A), BPC_OK);
    for (int a = 0; a < na; a++)
      for (int v = 0; v < 5; v++) {
      /* v: 0 exclusive (scan-then-propagate), 1 inclusive, 2 inclusive
       * reduce-then-scan, 3 inclusive with the inclusive-global shortcut,
       * 4 inclusive with the successor round */
      const bpc_scan_mode_t mode = v == 0 ? BPC_SCAN_EXCLUSIVE : BPC_SCAN_INCLUSIVE;
      sr_prob_t P;
      sr_prob_make(&P, A, SR_MAT, 0, 1, -1);
      bpc_scan_op_t op = sr_op(SR_MAT, 0);
      bpc_scan_params_t prm = bpc_scan_params_default();
      prm.algorithm = tab[a].name;
      prm.strategy = v == 2   ? BPC_SCAN_REDUCE_THEN_SCAN
                     : v == 3 ? BPC_SCAN_INCLUSIVE_GLOBAL
                     : v == 4 ? BPC_SCAN_SUCCESSOR
                              : BPC_SCAN_SCAN_THEN_PROPAGATE;
      bpc_scan_info_t info;
      ck_assert_int_eq(bpc_scan(ctx, A, &P.type, mode, P.in, P.out, &op, &prm, &info), BPC_OK);
      char msg[256];
      ck_assert_msg(sr_check(&P, nb, NULL, 0, 1, mode, 0, &info, msg, sizeof msg) == 0, "%s",
                    msg);
      ck_assert_msg(info.ops_global == sr_global_ops(tab[a].name, nb),
                    "%s, %d blocks: %lld calls, want %lld", tab[a].name, nb, info.ops_global,
                    sr_global_ops(tab[a].name, nb));
      if ((nb & (nb - 1)) == 0 && sr_table31(tab[a].name, nb) >= 0) /* not "mpi" */
        ck_assert_msg(info.ops_global == sr_table31(tab[a].name, nb),
                      "%s, %d blocks: %lld calls, Table 3.1: %lld", tab[a].name, nb,
                      info.ops_global, sr_table31(tab[a].name, nb));
      /* one item per block: the propagation makes one call per block after
       * the first (inclusive), none with the shortcut (but Blelloch's
       * global stage is exclusive: no shortcut there) or exclusive */
      const int is_bl = strcmp(tab[a].name, "blelloch") == 0;
      /* the successor round: only the last position computes its result */
      long long prop = v == 0 ? 0 : v == 3 && !is_bl ? 0 : v == 4 ? (nb > 1) : nb - 1;
      ck_assert_msg(info.ops_total == info.ops_global + prop,
                    "%s, variant %d, %d blocks: %lld calls, want %lld + %lld", tab[a].name, v,
                    nb, info.ops_total, info.ops_global, prop);
      /* depth of the global stage, one item per block */
      int K = 0;
      while ((1 << K) < nb)
        K++;
      long long want_depth = strcmp(tab[a].name, "serial") == 0 ||
                                     strcmp(tab[a].name, "mpi") == 0
                                 ? nb - 2
                             : strcmp(tab[a].name, "brent-kung") == 0 ? (K > 1 ? 2 * K - 1 : K)
                             : strcmp(tab[a].name, "blelloch") == 0   ? (K > 1 ? 2 * K - 1 : 0)
                                                                      : K;
      bpc_call_stats_t st;
      ck_assert_int_eq(bpc_stats_last_call(ctx, &st), BPC_OK);
      ck_assert_str_eq(st.engine, "scan");
      ck_assert_int_eq((long long)st.op_depth, info.depth);
      ck_assert_int_eq((long long)st.total.op_calls, info.ops_total);
      if (v == 0 && nb > 2 && !is_bl && strcmp(tab[a].name, "brent-kung"))
        ck_assert_msg(info.depth <= want_depth, "%s, %d blocks: depth %lld, at most %lld",
                      tab[a].name, nb, info.depth, want_depth);
      sr_prob_free(&P);
    }
    bpc_assign_destroy(&A);
  }
}
END_TEST

START_TEST(test_errors)
{
  bpc_assign_t *A = NULL;
  ck_assert_int_eq(bpc_assign_create(ctx, 3, BPC_ASSIGN_CONTIGUOUS, NULL, &A), BPC_OK);
  sr_prob_t P;
  sr_prob_make(&P, A, SR_MAT, 1, 0, -1);
  bpc_scan_op_t op = sr_op(SR_MAT, 0);
  ck_assert_int_eq(bpc_scan(NULL, A, &P.type, 0, P.in, P.out, &op, NULL, NULL), BPC_ENULL);
  ck_assert_int_eq(bpc_scan(ctx, NULL, &P.type, 0, P.in, P.out, &op, NULL, NULL), BPC_ENULL);
  ck_assert_int_eq(bpc_scan(ctx, A, NULL, 0, P.in, P.out, &op, NULL, NULL), BPC_ENULL);
  ck_assert_int_eq(bpc_scan(ctx, A, &P.type, 0, NULL, P.out, &op, NULL, NULL), BPC_ENULL);
  ck_assert_int_eq(bpc_scan(ctx, A, &P.type, 0, P.in, NULL, &op, NULL, NULL), BPC_ENULL);
  ck_assert_int_eq(bpc_scan(ctx, A, &P.type, 0, P.in, P.out, NULL, NULL, NULL), BPC_ENULL);
  ck_assert_int_eq(bpc_scan(ctx, A, &P.type, 5, P.in, P.out, &op, NULL, NULL), BPC_EINVAL);
  bpc_scan_op_t two = op, none = op; /* both forms, or neither */
  two.binary.fn = sr_mat_mul_bin;
  none.fn = NULL;
  ck_assert_int_eq(bpc_scan(ctx, A, &P.type, 0, P.in, P.out, &two, NULL, NULL), BPC_EINVAL);
  ck_assert_int_eq(bpc_scan(ctx, A, &P.type, 0, P.in, P.out, &none, NULL, NULL), BPC_ENULL);
  bpc_scan_params_t prm = bpc_scan_params_default();
  prm.algorithm = "nope";
  ck_assert_int_eq(bpc_scan(ctx, A, &P.type, 0, P.in, P.out, &op, &prm, NULL), BPC_EALGO);
  int bad_order[3] = {0, 2, 2};
  prm = bpc_scan_params_default();
  prm.order = bad_order;
  ck_assert_int_eq(bpc_scan(ctx, A, &P.type, 0, P.in, P.out, &op, &prm, NULL), BPC_EPERM);
  sr_prob_free(&P);
  /* a failing operator: every algorithm reports BPC_ECALLBACK */
  bpc_algo_info_t tab[16];
  const int na = algos(tab);
  for (int a = 0; a < na; a++) {
    sr_prob_make(&P, A, SR_MAT, 1, 0, 1);
    prm = bpc_scan_params_default();
    prm.algorithm = tab[a].name;
    ck_assert_int_eq(bpc_scan(ctx, A, &P.type, 0, P.in, P.out, &op, &prm, NULL), BPC_ECALLBACK);
    sr_prob_free(&P);
  }
  /* auto picks a row and says so */
  sr_prob_make(&P, A, SR_MAT, 1, 0, -1);
  bpc_scan_info_t info;
  ck_assert_int_eq(bpc_scan(ctx, A, &P.type, 0, P.in, P.out, &op, NULL, &info), BPC_OK);
  ck_assert_int_ne(info.algorithm, BPC_SCAN_AUTO);
  sr_prob_free(&P);
  bpc_assign_destroy(&A);
}
END_TEST

/* The cost model of "auto" (doc/scan.md). */
START_TEST(test_auto_model)
{
  /* one block per process, expensive operator: least depth, fewer calls */
  ck_assert_int_eq(bpc__scan_auto(8, 8, 1e-2, 5e-6), BPC_SCAN_SKLANSKY);
  ck_assert_int_eq(bpc__scan_auto(1024, 1024, 1e-3, 5e-6), BPC_SCAN_SKLANSKY);
  /* every block on one process: the fewest calls (the chain) */
  ck_assert_int_eq(bpc__scan_auto(64, 1, 1e-3, 5e-6), BPC_SCAN_SERIAL);
  /* 4 blocks per process: work-efficient */
  ck_assert_int_eq(bpc__scan_auto(16, 4, 1e-3, 5e-6), BPC_SCAN_BRENT_KUNG);
  /* a cheap operator: the fewest message rounds */
  ck_assert_int_eq(bpc__scan_auto(64, 64, 1e-9, 5e-6), BPC_SCAN_SKLANSKY);
  ck_assert_int_eq(bpc__scan_auto(1, 1, 0, 5e-6), BPC_SCAN_SKLANSKY);
  /* the strategy rule */
  const bpc_scan_mode_t I = BPC_SCAN_INCLUSIVE, E = BPC_SCAN_EXCLUSIVE;
  for (int id = BPC_SCAN_SERIAL; id <= BPC_SCAN_MPI; id++)
    ck_assert_int_eq(bpc__scan_strategy_auto(E, id, 1e-3, 5e-6), BPC_SCAN_SCAN_THEN_PROPAGATE);
  ck_assert_int_eq(bpc__scan_strategy_auto(I, BPC_SCAN_SKLANSKY, 1e-9, 5e-6),
                   BPC_SCAN_INCLUSIVE_GLOBAL);
  ck_assert_int_eq(bpc__scan_strategy_auto(I, BPC_SCAN_MPI, 1e-3, 5e-6),
                   BPC_SCAN_INCLUSIVE_GLOBAL);
  ck_assert_int_eq(bpc__scan_strategy_auto(I, BPC_SCAN_BLELLOCH, 1e-3, 5e-6), BPC_SCAN_SUCCESSOR);
  ck_assert_int_eq(bpc__scan_strategy_auto(I, BPC_SCAN_BLELLOCH, 0, 5e-6), BPC_SCAN_SUCCESSOR);
  ck_assert_int_eq(bpc__scan_strategy_auto(I, BPC_SCAN_BLELLOCH, 1e-9, 5e-6),
                   BPC_SCAN_SCAN_THEN_PROPAGATE);
}
END_TEST

/* The overlapped driver against the reference and, bit for bit, against
 * lock-step rounds (sr_overlap_case): one process, many blocks finishing
 * their local stage out of order, 1..3 threads. */
START_TEST(test_overlap)
{
  bpc_algo_info_t tab[16];
  const int na = algos(tab);
  const int counts[] = {11, 16};
  for (int ci = 0; ci < 2; ci++) {
    const int nb = counts[ci];
    bpc_assign_t *A = NULL;
    ck_assert_int_eq(bpc_assign_create(ctx, nb, BPC_ASSIGN_CONTIGUOUS, NULL, &A), BPC_OK);
    int *order = malloc(sizeof(int) * (size_t)nb);
    for (int p = 0; p < nb; p++)
      order[p] = (p * 5 + 2) % nb; /* a permutation: gcd(5, nb) = 1 */
    for (int a = 0; a < na; a++) {
      if (strcmp(tab[a].name, "mpi") == 0)
        continue;
      for (int st = 0; st <= BPC_SCAN_STRATEGY_AUTO; st++)
        for (int mi = 0; mi < 3; mi++)
          for (int nt = 1; nt <= 3; nt++) {
            const bpc_scan_mode_t mode = mi == 0 ? BPC_SCAN_INCLUSIVE : BPC_SCAN_EXCLUSIVE;
            const int kind = (a + st + mi + nt) % 3;
            char msg[256];
            int bad = sr_overlap_case(ctx, A, nb, ci ? order : NULL, tab[a].name, st, kind,
                                      mode, mi == 2, nt, a + ci, msg, sizeof msg);
            ck_assert_msg(bad == 0, "%s, strategy %d, kind %d, mode %d, identity %d, "
                          "%d threads, %d blocks: %s", tab[a].name, st, kind, (int)mode,
                          mi == 2, nt, nb, msg);
          }
    }
    free(order);
    bpc_assign_destroy(&A);
  }
}
END_TEST

/* The schedules at block counts near INT_MAX (2^30 and up: a position plus
 * 2^30 or 2^31 passes INT_MAX): for sampled positions and rounds, each
 * position's sender is a position below P and names it among its
 * candidate receivers, every candidate range lies in [0, P], and the
 * serial chain's rounds are in range. The arithmetic is 64-bit (a signed
 * overflow fails the sanitizer build's run of this suite). Small counts:
 * every position and round. */
static int in_ranges(const int c[4], int p)
{
  return (p >= c[0] && p < c[1]) || (p >= c[2] && p < c[3]);
}

/* One position and round; returns 0, or 1 with the first problem in msg
 * (plain checks: a Check assertion per call would cost a mark point each,
 * over a million here). */
static int sched_check(const char *name, const bpc__scan_sched_t *S, int P, long long p, int r,
                       char *msg, size_t cap)
{
  if (p < 0 || p >= P || r < 0 || r >= S->nrounds(P))
    return 0;
  int c[4] = {0, P, 0, 0}; /* NULL recvs: every position */
  if (S->recvs != NULL)
    S->recvs(P, r, (int)p, c);
  for (int h = 0; h < 4; h++)
    if (c[h] < 0 || c[h] > P) {
      snprintf(msg, cap, "%s, P %d, round %d, position %lld: candidate bound %d", name, P, r, p,
               c[h]);
      return 1;
    }
  bpc__scan_step_t kind;
  const int q = S->step(P, r, (int)p, &kind);
  if (q < 0)
    return 0;
  if (q >= P || q == p) {
    snprintf(msg, cap, "%s, P %d, round %d: position %lld receives from %d", name, P, r, p, q);
    return 1;
  }
  if (S->recvs != NULL)
    S->recvs(P, r, q, c);
  if (!in_ranges(c, (int)p)) {
    snprintf(msg, cap, "%s, P %d, round %d: %d does not name %lld ([%d, %d) [%d, %d))", name, P,
             r, q, p, c[0], c[1], c[2], c[3]);
    return 1;
  }
  if (S->sends != NULL) { /* both ends act in the round: sender and receiver */
    int sr[2], pr[2];
    S->sends(P, q, sr);
    S->sends(P, (int)p, pr);
    if (r < sr[0] || r >= sr[1] || r < pr[0] || r >= pr[1]) {
      snprintf(msg, cap, "%s, P %d: round %d from %d to %lld outside [%d, %d) or [%d, %d)", name,
               P, r, q, p, sr[0], sr[1], pr[0], pr[1]);
      return 1;
    }
  }
  return 0;
}

START_TEST(test_schedule_bounds)
{
  static const struct {
    const char *name;
    const bpc__scan_sched_t *S;
  } sch[] = {{"serial", &bpc__scan_sched_serial},
             {"kogge-stone", &bpc__scan_sched_kogge_stone},
             {"sklansky", &bpc__scan_sched_sklansky},
             {"brent-kung", &bpc__scan_sched_brent_kung},
             {"blelloch", &bpc__scan_sched_blelloch}};
  const int big[] = {INT_MAX, INT_MAX - 1, (1 << 30) + 1, 1 << 30, 3 << 29, (1 << 30) + 12345};
  char msg[256] = "";
  long bad = 0, checks = 0;
  for (size_t i = 0; i < sizeof sch / sizeof sch[0]; i++) {
    const bpc__scan_sched_t *S = sch[i].S;
    for (int P = 1; P <= 40; P++) /* every position and round */
      for (int r = 0; r < S->nrounds(P); r++)
        for (int p = 0; p < P; p++, checks++)
          bad += sched_check(sch[i].name, S, P, p, r, msg, bad ? 0 : sizeof msg);
    for (size_t b = 0; b < sizeof big / sizeof big[0]; b++) {
      const int P = big[b];
      const long long at[] = {0, 1LL << 29, 1LL << 30, P / 2, (long long)P - 32};
      const int nr = S->nrounds(P);
      for (size_t a = 0; a < sizeof at / sizeof at[0]; a++)
        for (long long p = at[a] - 32; p < at[a] + 32; p++) {
          /* the chain (sends given): the rounds around p; else every round */
          const int r0 = S->sends != NULL ? (int)(p > 2 ? p - 2 : 0) : 0;
          const long long r1 = S->sends != NULL ? p + 2 : nr;
          for (int r = r0; r < r1 && r < nr; r++, checks++)
            bad += sched_check(sch[i].name, S, P, p, r, msg, bad ? 0 : sizeof msg);
        }
    }
  }
  ck_assert_msg(bad == 0, "%ld of %ld schedule checks failed; first: %s", bad, checks, msg);
}
END_TEST

static Suite *make(void)
{
  Suite *s = suite_create("scan_serial");
  TCase *tc = tcase_create("scan");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, test_reference);
  tcase_add_test(tc, test_counts);
  tcase_add_test(tc, test_errors);
  tcase_add_test(tc, test_auto_model);
  tcase_add_test(tc, test_overlap);
  tcase_add_test(tc, test_schedule_bounds);
  suite_add_tcase(s, tc);
  return s;
}

BPC_T_UNIT_MAIN(make)
