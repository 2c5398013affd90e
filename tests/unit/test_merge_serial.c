/*
 * tests/unit/test_merge_serial.c - merge-reduce on a serial context (one
 * process owns every block; no MPI): every item kind (float sums, varying
 * counts, 2x2 matrix products in order, custom lists sorted or in order)
 * against the serial reference of tests/common/merge_items.h, full and
 * partial reductions, user and automatic k-vectors, doubling and halving,
 * block orders, segments and OpenMP threads; the DIY figure (16 blocks,
 * k = 4x2x2, two rounds: roots 0 and 8); the automatic k-vector and the
 * algorithm table (bpc_algorithms); what ran (bpc_merge_info, with the
 * source of the choice); and every documented error (k-vector, rounds, algorithm
 * by argument and environment, halving without commutativity, NULLs,
 * element-wise misuse, bad order, callback failures), after which the
 * context still works; persistent plans (every kind, orders, partial
 * rounds, segments, threads; three starts on new items each).
 */
#include <stdarg.h>
#include <stdio.h>

#include "unit_check.h"

static int mi_fails;
static void mi_fail(const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "check failed: ");
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  mi_fails++;
}
#define MI_CHECK(cond, ...)  \
  do {                       \
    if (!(cond))             \
      mi_fail(__VA_ARGS__);  \
  } while (0)

#include "../common/merge_items.h"
#include "bpc.h"

static bpc_ctx_t *ctx;

static void setup(void)
{
  ck_assert_int_eq(bpc_init_serial(NULL, &ctx), BPC_OK);
  mi_fails = 0;
}

static void teardown(void) { bpc_finalize(&ctx); }

/* The algorithm table (bpc_algorithms("merge")), for the loops below. */
static bpc_algo_info_t algo_tab[16];
static int nalgo;
static void load_algos(void)
{
  ck_assert_int_eq(bpc_algorithms("merge", algo_tab, 16, &nalgo), BPC_OK);
  ck_assert_int_ge(nalgo, 2);
}
/* Does row ai run merges of this kind (a commutative-only row, such as
 * halving, needs commutative ones)? */
static int algo_fits(int ai, int kind)
{
  return !mi_row_commutative_only(algo_tab[ai].name) || mi_kind_commutative(kind);
}

#define DONE() ck_assert_msg(mi_fails == 0, "%d check(s) failed (see stderr)", mi_fails)

/* ------------------------------------------------------------ schedule */

START_TEST(test_diy_figure)
{
  /* 16 blocks, k = 4 then 2 (then 2): after two rounds roots 0 and 8 */
  static const int k[] = {4, 2, 2};
  for (int kind = 0; kind < MI_NKINDS; kind++)
    for (int rounds = 1; rounds <= 3; rounds++) {
      mi_cfg_t c = {16, BPC_ASSIGN_CONTIGUOUS, kind, k, 3, rounds, "doubling", 0, 9, 0, 1, 0};
      ck_assert_int_eq(mi_run(ctx, &c), BPC_OK);
    }
  bpc_assign_t *a = NULL;
  ck_assert_int_eq(bpc_assign_create(ctx, 16, BPC_ASSIGN_CONTIGUOUS, NULL, &a), BPC_OK);
  bpc_buf_t items[16];
  float data[16];
  for (int g = 0; g < 16; g++) {
    data[g] = (float)g;
    items[g].data = &data[g];
    items[g].count = 1;
  }
  mi_user_t u = {MI_SUM, -1, -1, 0, 0, 0};
  bpc_type_t ft = bpc_type_contiguous(sizeof(float), MPI_FLOAT);
  bpc_merge_op_t op = mi_kind_op(MI_SUM, &u);
  bpc_merge_params_t p = bpc_merge_params_default();
  p.k = k;
  p.nk = 3;
  p.rounds = 2;
  bpc_merge_result_t *r = NULL;
  ck_assert_int_eq(bpc_merge(ctx, a, &ft, items, &op, &p, &r), BPC_OK);
  for (int g = 0; g < 16; g++) {
    int isr = -1;
    ck_assert_int_eq(bpc_merge_is_root(r, g, &isr), BPC_OK);
    ck_assert_int_eq(isr, g == 0 || g == 8);
  }
  int gids[16], n = 0;
  ck_assert_int_eq(bpc_merge_absorbed(r, 8, gids, 16, &n), BPC_OK);
  ck_assert_int_eq(n, 8);
  for (int i = 0; i < 8; i++)
    ck_assert_int_eq(gids[i], 8 + i);
  ck_assert(data[0] == 28.0f && data[8] == 92.0f); /* 0+..+7, 8+..+15 */
  ck_assert_int_eq(bpc_merge_absorbed(r, 8, gids, 3, &n), BPC_ERANGE);
  ck_assert_int_eq(n, 8);
  n = -1;
  ck_assert_int_eq(bpc_merge_absorbed(r, 0, NULL, 0, &n), BPC_OK); /* size query */
  ck_assert_int_eq(n, 8);
  ck_assert_int_eq(bpc_merge_absorbed(r, 5, gids, 16, &n), BPC_OK);
  ck_assert_int_eq(n, 0);
  int root = -1;
  ck_assert_int_eq(bpc_merge_root_of(r, 13, &root), BPC_OK);
  ck_assert_int_eq(root, 8);
  ck_assert_int_eq(bpc_merge_is_root(r, 16, &root), BPC_ERANGE);
  ck_assert_int_eq(bpc_merge_root_of(r, -1, &root), BPC_ERANGE);
  /* 3 rounds ran? no: 2 of 3 */
  bpc_merge_info_t info;
  ck_assert_int_eq(bpc_merge_info(r, &info), BPC_OK);
  ck_assert_str_eq(info.name, "doubling");
  ck_assert_int_eq(info.algorithm, BPC_MERGE_DOUBLING);
  ck_assert_int_eq(info.source, BPC_SOURCE_BUILTIN);
  ck_assert_int_eq(info.nk, 3);
  ck_assert_int_eq(info.k[0], 4);
  ck_assert_int_eq(info.k[2], 2);
  ck_assert_int_eq(info.rounds, 2);
  ck_assert_int_eq(bpc_merge_info(NULL, &info), BPC_ENULL);
  ck_assert_int_eq(bpc_merge_info(r, NULL), BPC_ENULL);
  bpc_call_stats_t st;
  bpc_stats_last_call(ctx, &st);
  ck_assert_str_eq(st.engine, "merge");
  ck_assert_int_eq(st.nrounds, 2);
  ck_assert_int_eq((int)st.total.op_calls, 4 + 2); /* four k=4 groups, two k=2 groups */
  ck_assert_int_eq((int)st.total.local_msgs, 12 + 2);
  ck_assert_int_eq((int)st.total.msgs_sent, 0);
  bpc_merge_result_destroy(&r);
  ck_assert_ptr_null(r);
  bpc_assign_destroy(&a);
  DONE();
}
END_TEST

START_TEST(test_all_kinds)
{
  static const int n_list[] = {1, 2, 3, 5, 6, 8, 12, 13, 16, 30};
  load_algos();
  for (size_t ni = 0; ni < sizeof n_list / sizeof n_list[0]; ni++) {
    int n = n_list[ni];
    for (int kind = 0; kind < MI_NKINDS; kind++)
      for (int ai = 0; ai <= nalgo; ai++) { /* every row, then auto */
        if (ai < nalgo && !algo_fits(ai, kind))
          continue;
        const char *an = ai < nalgo ? algo_tab[ai].name : NULL;
        for (int ord = 0; ord < 3; ord++) {
          mi_cfg_t c = {n, BPC_ASSIGN_CONTIGUOUS, kind, NULL, 0, 0, an, ord, 5, 0, 1, 0};
          ck_assert_int_eq(mi_run(ctx, &c), BPC_OK);
        }
      }
  }
  DONE();
}
END_TEST

START_TEST(test_partial_user_k)
{
  static const int k12a[] = {3, 2, 2}, k12b[] = {2, 3, 2}, k12c[] = {12}, k12d[] = {2, 2, 3};
  static const int k30[] = {5, 3, 2}, k13[] = {13};
  static const struct {
    int n;
    const int *k;
    int nk;
  } kv[] = {{12, k12a, 3}, {12, k12b, 3}, {12, k12c, 1}, {12, k12d, 3}, {30, k30, 3}, {13, k13, 1}};
  load_algos();
  for (size_t i = 0; i < sizeof kv / sizeof kv[0]; i++)
    for (int rounds = 0; rounds <= kv[i].nk; rounds++)
      for (int kind = 0; kind < MI_NKINDS; kind++)
        for (int ai = 0; ai < nalgo; ai++) {
          if (!algo_fits(ai, kind))
            continue;
          mi_cfg_t c = {kv[i].n, BPC_ASSIGN_CONTIGUOUS, kind, kv[i].k, kv[i].nk, rounds,
                        algo_tab[ai].name, (int)(i % 3), 4, 0, 1, 0};
          ck_assert_int_eq(mi_run(ctx, &c), BPC_OK);
        }
  DONE();
}
END_TEST

START_TEST(test_segments_threads)
{
  /* element-wise items in segments (sizes not multiples of the segment),
   * one and two threads, matrices (not commutative) and sums */
  static const int k8[] = {2, 2, 2}, k9[] = {3, 3};
  static const size_t counts[] = {0, 1, 7, 64, 100};
  static const size_t segs[] = {4, 16, 48, 0, SIZE_MAX};
  for (size_t ci = 0; ci < sizeof counts / sizeof counts[0]; ci++)
    for (size_t si = 0; si < sizeof segs / sizeof segs[0]; si++)
      for (int thr = 1; thr <= 2; thr++)
        for (int kind = 0; kind <= MI_MAT; kind += 2) {
          mi_cfg_t c = {8, BPC_ASSIGN_CONTIGUOUS, kind, k8, 3, 0, "doubling", 0, counts[ci],
                        segs[si], thr, MI_EW};
          ck_assert_int_eq(mi_run(ctx, &c), BPC_OK);
          mi_cfg_t d = {9, BPC_ASSIGN_CONTIGUOUS, kind, k9, 2, 1, NULL, 2, counts[ci], segs[si],
                        thr, MI_EW | (counts[ci] ? MI_DECLARE : 0u)};
          ck_assert_int_eq(mi_run(ctx, &d), BPC_OK);
        }
  /* lists and varying sums with threads (whole-item merges in parallel) */
  for (int kind = 0; kind < MI_NKINDS; kind++) {
    mi_cfg_t c = {24, BPC_ASSIGN_CONTIGUOUS, kind, NULL, 0, 0, NULL, 1, 6, 0, 2, 0};
    ck_assert_int_eq(mi_run(ctx, &c), BPC_OK);
  }
  DONE();
}
END_TEST

START_TEST(test_kvec_auto_table)
{
  bpc_assign_t *a = NULL;
  int k[64], nk = -1;
  static const int ns[] = {1, 2, 7, 12, 16, 97, 360, 1024};
  for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++) {
    ck_assert_int_eq(bpc_assign_create(ctx, ns[i], BPC_ASSIGN_CONTIGUOUS, NULL, &a), BPC_OK);
    for (int big = 0; big < 2; big++) {
      ck_assert_int_eq(bpc_merge_kvec_auto(a, big ? (16u << 20) : 0, k, 64, &nk), BPC_OK);
      long prod = 1;
      for (int r = 0; r < nk; r++) {
        ck_assert_int_ge(k[r], 2);
        prod *= k[r];
      }
      ck_assert_int_eq(prod, ns[i]);
      if (ns[i] == 1)
        ck_assert_int_eq(nk, 0);
    }
    if (ns[i] > 2)
      ck_assert_int_eq(bpc_merge_kvec_auto(a, 0, k, 1, &nk), ns[i] == 7 || ns[i] == 97 ? BPC_OK
                                                                                       : BPC_EINVAL);
    bpc_assign_destroy(&a);
  }
  ck_assert_int_eq(bpc_merge_kvec_auto(NULL, 0, k, 64, &nk), BPC_ENULL);
  bpc_algo_info_t t[4];
  int n = 0;
  ck_assert_int_eq(bpc_algorithms("merge", t, 4, &n), BPC_OK);
  ck_assert_int_ge(n, 2); /* a new variant is one more row: no test edit */
  const int nrows = n;
  ck_assert_str_eq(t[0].name, "doubling");
  ck_assert_str_eq(t[1].name, "halving");
  ck_assert_int_eq(t[0].id, BPC_MERGE_DOUBLING);
  ck_assert_int_eq(t[1].id, BPC_MERGE_HALVING);
  ck_assert_ptr_nonnull(t[0].desc);
  ck_assert_int_eq(bpc_algorithms("MERGE", NULL, 0, &n), BPC_OK); /* any case, size query */
  ck_assert_int_eq(n, nrows);
  ck_assert_int_eq(bpc_algorithms("merge", t, 1, &n), BPC_ERANGE);
}
END_TEST

/* -------------------------------------------------------------- errors */

typedef struct err_fixture {
  bpc_assign_t *a;
  bpc_buf_t items[12];
  float data[12];
  bpc_type_t ft;
  mi_user_t u;
  const bpc_type_t *type;
  bpc_merge_op_t op;
  bpc_merge_params_t p;
} err_fixture_t;

static int fx_merge(err_fixture_t *f, bpc_merge_result_t **r)
{
  return bpc_merge(ctx, f->a, f->type, f->items, &f->op, &f->p, r);
}

static void fixture(err_fixture_t *f, int n)
{
  memset(f, 0, sizeof *f);
  ck_assert_int_eq(bpc_assign_create(ctx, n, BPC_ASSIGN_CONTIGUOUS, NULL, &f->a), BPC_OK);
  for (int g = 0; g < n; g++) {
    f->data[g] = 1.0f;
    f->items[g].data = &f->data[g];
    f->items[g].count = 1;
  }
  f->ft = bpc_type_contiguous(sizeof(float), MPI_FLOAT);
  f->u.fail_gid = -1;
  f->type = &f->ft;
  f->op = mi_kind_op(MI_SUM, &f->u);
  f->op.commutative = 0; /* sums are, but not declared so below */
  f->p = bpc_merge_params_default();
}

START_TEST(test_errors)
{
  err_fixture_t f;
  fixture(&f, 12);
  bpc_merge_result_t *r = (bpc_merge_result_t *)&f; /* must be reset to NULL on failure */
  static const int k43[] = {4, 3}, k44[] = {4, 4}, k1[] = {12, 1};

  f.p.k = k44;
  f.p.nk = 2;
  ck_assert_int_eq(fx_merge(&f, &r), BPC_EKVEC);
  ck_assert_ptr_null(r);
  ck_assert_ptr_nonnull(strstr(bpc_last_error(ctx), "k-vector 4x4 multiplies to 16, but there are 12 blocks"));
  f.p.k = k1;
  ck_assert_int_eq(fx_merge(&f, NULL), BPC_EKVEC);
  ck_assert_ptr_nonnull(strstr(bpc_last_error(ctx), "at least 2"));
  f.p.k = NULL;
  f.p.nk = 1;
  ck_assert_int_eq(fx_merge(&f, NULL), BPC_EKVEC);

  f.p.k = k43;
  f.p.nk = 2;
  f.p.rounds = 3;
  ck_assert_int_eq(fx_merge(&f, NULL), BPC_ERANGE);
  ck_assert_ptr_nonnull(strstr(bpc_last_error(ctx), "3 rounds requested, but the k-vector 4x3 has 2"));
  f.p.rounds = -1;
  ck_assert_int_eq(fx_merge(&f, NULL), BPC_ERANGE);
  f.p.rounds = 0;
  f.p.k = NULL;
  f.p.nk = 0;
  f.p.rounds = 9; /* beyond the automatic k-vector too */
  ck_assert_int_eq(fx_merge(&f, NULL), BPC_ERANGE);
  f.p.rounds = 0;

  f.p.algorithm = "bogus";
  ck_assert_int_eq(fx_merge(&f, NULL), BPC_EALGO);
  ck_assert_ptr_nonnull(strstr(bpc_last_error(ctx), "'bogus'"));
  f.p.algorithm = "halving"; /* sums are commutative, but not declared so */
  ck_assert_int_eq(fx_merge(&f, NULL), BPC_EINVAL);
  ck_assert_ptr_nonnull(strstr(bpc_last_error(ctx), "commutative"));
  f.p.algorithm = NULL;
  setenv("BPC_MERGE_ALGORITHM", "nope", 1);
  ck_assert_int_eq(fx_merge(&f, NULL), BPC_EALGO);
  ck_assert_ptr_nonnull(strstr(bpc_last_error(ctx), "BPC_MERGE_ALGORITHM"));
  setenv("BPC_MERGE_ALGORITHM", "halving", 1);
  f.op.commutative = 1;
  ck_assert_int_eq(fx_merge(&f, &r), BPC_OK);
  bpc_merge_info_t info;
  bpc_merge_info(r, &info);
  ck_assert_str_eq(info.name, "halving");
  ck_assert_int_eq(info.source, BPC_SOURCE_ENV);
  bpc_merge_result_destroy(&r);
  f.p.algorithm = "DOUBLING"; /* the argument wins over the environment; any case */
  ck_assert_int_eq(fx_merge(&f, &r), BPC_OK);
  bpc_merge_info(r, &info);
  ck_assert_str_eq(info.name, "doubling");
  ck_assert_int_eq(info.source, BPC_SOURCE_ARGUMENT);
  bpc_merge_result_destroy(&r);
  unsetenv("BPC_MERGE_ALGORITHM");
  f.p.algorithm = NULL;
  f.op.commutative = 0;

  ck_assert_int_eq(bpc_merge(NULL, f.a, f.type, f.items, &f.op, &f.p, NULL), BPC_ENULL);
  ck_assert_int_eq(bpc_merge(ctx, NULL, f.type, f.items, &f.op, &f.p, NULL), BPC_ENULL);
  ck_assert_int_eq(bpc_merge(ctx, f.a, f.type, f.items, NULL, &f.p, NULL), BPC_ENULL);
  ck_assert_int_eq(bpc_merge(ctx, f.a, f.type, NULL, &f.op, &f.p, NULL), BPC_ENULL);
  ck_assert_ptr_nonnull(strstr(bpc_last_error(ctx), "items is NULL"));
  /* params NULL: the defaults */
  ck_assert_int_eq(bpc_merge(ctx, f.a, f.type, f.items, &f.op, NULL, NULL), BPC_OK);
  for (int g = 0; g < 12; g++)
    f.data[g] = 1.0f;
  f.op.fn = NULL;
  ck_assert_int_eq(fx_merge(&f, NULL), BPC_ENULL);
  f.op.fn = mi_merge_sum; /* a callback and a binary operator: one too many */
  ck_assert_int_eq(bpc_op_builtin("sum", MPI_FLOAT, &f.op.binary), BPC_OK);
  ck_assert_int_eq(fx_merge(&f, NULL), BPC_EINVAL);
  ck_assert_ptr_nonnull(strstr(bpc_last_error(ctx), "both set"));
  f.op.binary.fn = NULL;
  { /* custom items fold in place with a binary operator: none may be NULL */
    mi_user_t lu;
    memset(&lu, 0, sizeof lu);
    lu.fail_gid = -1;
    bpc_type_t lt = mi_list_type(&lu);
    void *li[12] = {NULL};
    for (int g = 0; g < 12; g++)
      li[g] = g == 5 ? NULL : mi_list_new(1);
    bpc_merge_op_t bop = {.fn = NULL};
    bop.binary = (bpc_op_t){mi_op_cat, 0, NULL};
    ck_assert_int_eq(bpc_merge(ctx, f.a, &lt, li, &bop, NULL, NULL), BPC_ENULL);
    ck_assert_ptr_nonnull(strstr(bpc_last_error(ctx), "gid 5"));
    for (int g = 0; g < 12; g++)
      mi_list_free(li[g], NULL);
  }
  f.type = NULL;
  ck_assert_int_eq(fx_merge(&f, NULL), BPC_ENULL);
  bpc_type_t bad = bpc_type_contiguous(0, MPI_FLOAT);
  f.type = &bad;
  ck_assert_int_eq(fx_merge(&f, NULL), BPC_ETYPE);
  f.type = &f.ft;
  bpc_ctx_t *other = NULL;
  bpc_assign_t *oa = NULL;
  ck_assert_int_eq(bpc_init_serial(NULL, &other), BPC_OK);
  ck_assert_int_eq(bpc_assign_create(other, 12, BPC_ASSIGN_CONTIGUOUS, NULL, &oa), BPC_OK);
  ck_assert_int_eq(bpc_merge(ctx, oa, f.type, f.items, &f.op, &f.p, NULL), BPC_EINVAL);
  ck_assert_ptr_nonnull(strstr(bpc_last_error(ctx), "another context"));
  bpc_assign_destroy(&oa);
  bpc_finalize(&other);
  f.items[3].data = NULL;
  ck_assert_int_eq(fx_merge(&f, NULL), BPC_ENULL);
  ck_assert_ptr_nonnull(strstr(bpc_last_error(ctx), "gid 3"));
  f.items[3].data = &f.data[3];

  /* element-wise misuse */
  f.op.elementwise = 1;
  f.items[5].count = 0;
  ck_assert_int_eq(fx_merge(&f, NULL), BPC_EINVAL);
  ck_assert_ptr_nonnull(strstr(bpc_last_error(ctx), "gid 5 0"));
  f.items[5].count = 1;
  mi_user_t lu;
  memset(&lu, 0, sizeof lu);
  bpc_type_t lt = mi_list_type(&lu);
  f.type = &lt;
  ck_assert_int_eq(fx_merge(&f, NULL), BPC_EINVAL);
  f.type = &f.ft;
  f.p.count = 2; /* declared, but the items have 1 element */
  ck_assert_int_eq(fx_merge(&f, NULL), BPC_EINVAL);
  ck_assert_ptr_nonnull(strstr(bpc_last_error(ctx), "params->count 2"));
  f.p.count = 1;
  for (int g = 0; g < 12; g++)
    f.data[g] = 1.0f;
  ck_assert_int_eq(fx_merge(&f, NULL), BPC_OK);
  ck_assert(f.data[0] == 12.0f);
  f.p.count = 0;
  f.op.elementwise = 0;

  /* order */
  int order[12];
  for (int i = 0; i < 12; i++)
    order[i] = i;
  order[7] = 2;
  f.p.order = order;
  ck_assert_int_eq(fx_merge(&f, NULL), BPC_EPERM);
  f.p.order = NULL;

  /* after all that, a good call still works */
  for (int g = 0; g < 12; g++)
    f.data[g] = 1.0f;
  ck_assert_int_eq(fx_merge(&f, NULL), BPC_OK);
  ck_assert(f.data[0] == 12.0f);
  bpc_assign_destroy(&f.a);
}
END_TEST

START_TEST(test_callback_failure)
{
  /* a failing merge (contiguous, segmented, custom) and a failing unpack:
   * BPC_ECALLBACK with the value, no further merge, no leak, and the
   * context works afterwards */
  for (int kind = 0; kind < MI_NKINDS; kind++)
    for (int seg = 0; seg < 2; seg++) {
      if (seg && kind != MI_SUM && kind != MI_MAT)
        continue;
      bpc_assign_t *a = NULL;
      ck_assert_int_eq(bpc_assign_create(ctx, 16, BPC_ASSIGN_CONTIGUOUS, NULL, &a), BPC_OK);
      const int *gids;
      int nl;
      bpc_assign_local(a, &gids, &nl);
      void *items = mi_make_items(kind, gids, nl, 40);
      mi_user_t u = {kind, 4, 1, 42, 0, 0};
      bpc_type_t ft = bpc_type_contiguous(sizeof(float), MPI_FLOAT);
      bpc_type_t mt = bpc_type_contiguous(sizeof(mi_mat_t), MPI_BYTE);
      bpc_type_t lt = mi_list_type(&u);
      static const int k[] = {2, 2, 2, 2};
      const bpc_type_t *type = kind == MI_MAT ? &mt : kind >= MI_LIST ? &lt : &ft;
      bpc_merge_op_t op = mi_kind_op(kind, &u);
      op.elementwise = seg;
      bpc_merge_params_t p = bpc_merge_params_default();
      p.k = k;
      p.nk = 4;
      p.nthreads = 1;
      p.segment_bytes = seg ? 32 : 0;
      int rc = bpc_merge(ctx, a, type, items, &op, &p, NULL);
      ck_assert_int_eq(rc, BPC_ECALLBACK);
      ck_assert_ptr_nonnull(strstr(bpc_last_error(ctx), "returned 42"));
      ck_assert_ptr_nonnull(strstr(bpc_last_error(ctx), "gid 4"));
      /* root 4 fails in round 1; gid 0 still merges in rounds 0 and 1
       * before or after, but no merge starts after the failure, so the
       * final rounds (2, 3) never run */
      ck_assert_int_le(u.calls, 8 + 4 * (seg ? 2 : 1) * 2);
      mi_free_items(kind, items, nl);
      if (kind == MI_LIST) { /* failing unpack */
        items = mi_make_items(kind, gids, nl, 0);
        u.fail_gid = -2;
        u.fail_value = 7;
        rc = bpc_merge(ctx, a, type, items, &op, &p, NULL);
        ck_assert_int_eq(rc, BPC_ECALLBACK);
        ck_assert_ptr_nonnull(strstr(bpc_last_error(ctx), "unpack callback returned 7"));
        mi_free_items(kind, items, nl);
      }
      mi_cfg_t c = {16, BPC_ASSIGN_CONTIGUOUS, kind, k, 4, 0, NULL, 0, 40, seg ? 32 : 0, 1,
                    seg ? MI_EW : 0};
      ck_assert_int_eq(mi_run(ctx, &c), BPC_OK);
      bpc_assign_destroy(&a);
    }
  DONE();
}
END_TEST

START_TEST(test_plans)
{
  /* persistent plans on the in-process transport: every kind, an order,
   * partial rounds, segments and threads, three starts on new items each
   * (the start agreement and the guard are the serial ones) */
  load_algos();
  static const int k222[] = {2, 2, 2};
  for (int kind = 0; kind < MI_NKINDS; kind++)
    for (int v = 0; v < 4; v++) {
      const int ew = (kind == MI_SUM || kind == MI_MAT) && v >= 2;
      mi_cfg_t c = {8, BPC_ASSIGN_CONTIGUOUS, kind, v == 1 ? k222 : NULL, v == 1 ? 3 : 0,
                    v == 1 ? 2 : 0, NULL, v % 3, ew ? 40 : 5, ew ? 32 : 0, v == 3 ? 2 : 1,
                    MI_PLAN | (ew ? MI_EW : 0u)};
      ck_assert_int_eq(mi_run(ctx, &c), BPC_OK);
    }
  bpc_plan_t *plan = NULL;
  ck_assert_int_eq(bpc_plan_start(NULL), BPC_ENULL);
  ck_assert_int_eq(bpc_merge_init(ctx, NULL, NULL, NULL, NULL, NULL, &plan), BPC_ENULL);
  ck_assert_ptr_null(plan);
  ck_assert_int_eq(bpc_plan_free(&plan), BPC_OK);
  DONE();
}
END_TEST

static Suite *suite(void)
{
  Suite *s = suite_create("merge_serial");
  TCase *tc = tcase_create("merge");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_diy_figure);
  tcase_add_test(tc, test_all_kinds);
  tcase_add_test(tc, test_partial_user_k);
  tcase_add_test(tc, test_segments_threads);
  tcase_add_test(tc, test_kvec_auto_table);
  tcase_add_test(tc, test_errors);
  tcase_add_test(tc, test_callback_failure);
  tcase_add_test(tc, test_plans);
  suite_add_tcase(s, tc);
  return s;
}

BPC_T_UNIT_MAIN(suite)
