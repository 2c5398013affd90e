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
 *  - every documented argument error and every field that must match,
 *    bad on rank 0 only, on the last rank only and on all ranks: the same
 *    code on every rank, no hang (tests/mpi/bad_rank.h); a callback that
 *    fails on one rank: BPC_ECALLBACK with its value on every rank, and
 *    the next call works;
 *  - a wrong order fails the non-commutative check (the checks can fail);
 *  - custom items of 256 KiB across processes (pooled send buffers stay
 *    untouched until their sends complete);
 *  - persistent plans (bpc_merge_init, bpc_plan_start): every kind,
 *    assignment, algorithm, order, partial rounds, segments and threads,
 *    started three times on new items; the bad-argument table through
 *    bpc_merge_init; a bad item at a start on rank 0, the last rank or all
 *    (the same code everywhere, no callback ran, the next start works);
 *    ranks starting different plans (BPC_EMISMATCH, no hang); a failing
 *    callback in a start;
 *  - all-reduce (bpc_allreduce, tests/common/allreduce_run.h: the same item
 *    makers; its own launch would only add MPI start-up time): every
 *    algorithm and auto, matrix products in order, float sums and custom
 *    lists, block counts below, at and above the process count, orders;
 *    arguments bad or different on rank 0, the last rank or all; an
 *    operator failing on one rank only.
 */
#include "bad_rank.h"
#include "mpi_check.h"

#define MI_CHECK(cond, ...) T_CHECK(cond, __VA_ARGS__)
#include "../common/merge_items.h"
#include "../common/allreduce_run.h"
#include "bpc.h"
#include "comm/tags.h"

static bpc_ctx_t *ctx;

/* The algorithms of the registry, then NULL (auto): algos[0..nalgos]. */
static const char *algos[16];
static int nalgos;

static void setup(void)
{
  ck_assert_int_eq(bpc_init(MPI_COMM_WORLD, NULL, &ctx), BPC_OK);
  bpc_algo_info_t t[15];
  ck_assert_int_eq(bpc_algorithms("merge", t, 15, &nalgos), BPC_OK);
  ck_assert_int_ge(nalgos, 2);
  for (int i = 0; i < nalgos; i++)
    algos[i] = t[i].name; /* static strings */
  algos[nalgos] = NULL;
}
static void teardown(void) { bpc_finalize(&ctx); }

START_TEST(test_blocks_per_proc)
{
  for (int bpp = 1; bpp <= 4; bpp++) {
    int n = bpp * t_size;
    for (int ai = 0; ai <= nalgos; ai++) {
      mi_cfg_t c = {n, BPC_ASSIGN_CONTIGUOUS, MI_SUM, NULL, 0, 0, algos[ai], 0, 23, 16, 1,
                    MI_EW};
      mi_run(ctx, &c);
      c.mode = BPC_ASSIGN_ROUND_ROBIN;
      c.kind = MI_VSUM;
      c.flags = 0;
      mi_run(ctx, &c);
    }
    mi_cfg_t m = {n, BPC_ASSIGN_CONTIGUOUS, MI_MAT, NULL, 0, 0, "doubling", bpp % 3, 11,
                  bpp == 2 ? 40 : 0, 1, bpp >= 3 ? MI_EW : 0};
    mi_run(ctx, &m);
    mi_cfg_t dm = {n, BPC_ASSIGN_ROUND_ROBIN, MI_MAT, NULL, 0, 0, NULL, 1, 11, 48, 1,
                   MI_EW | MI_DECLARE};
    mi_run(ctx, &dm);
    mi_cfg_t l = {n, bpp % 2 ? BPC_ASSIGN_ROUND_ROBIN : BPC_ASSIGN_CONTIGUOUS,
                  bpp % 2 ? MI_LIST : MI_CAT, NULL, 0, 0, NULL, 0, 0, 0, 1, 0};
    mi_run(ctx, &l);
    /* the binary operator form (op.binary): a commutative built-in sum
     * (halving needs the commutativity taken from it), a non-commutative
     * matrix product (segments, a plan) and in-place list concatenation */
    mi_cfg_t bs = {
        n,  BPC_ASSIGN_ROUND_ROBIN, MI_SUM, NULL,     0, 0, bpp % 2 ? "halving" : NULL, 1,
        19, bpp == 3 ? 16 : 0,      1,      MI_BINARY};
    mi_run(ctx, &bs);
    mi_cfg_t bm = {n,          BPC_ASSIGN_CONTIGUOUS,
                   MI_MAT,     NULL,
                   0,          0,
                   "doubling", 2,
                   11,         bpp == 2 ? 48 : 0,
                   1,          MI_BINARY | (bpp == 4 ? MI_PLAN : 0)};
    mi_run(ctx, &bm);
    mi_cfg_t bc = {n, BPC_ASSIGN_USER, MI_CAT, NULL, 0, 0, NULL, 2, 0, 0, 1, MI_BINARY};
    mi_run(ctx, &bc);
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
                  MI_EW};
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
    bpc_merge_op_t op = mi_kind_op(MI_SUM, &u);
    bpc_merge_params_t p = bpc_merge_params_default();
    p.k = k16;
    p.nk = 3;
    p.rounds = 2;
    bpc_merge_result_t *r = NULL;
    int rc = bpc_merge(ctx, a, &ft, items, &op, &p, &r);
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
    for (int ai = 0; ai < nalgos; ai++) {
      mi_cfg_t c = {12, BPC_ASSIGN_ROUND_ROBIN, MI_LIST, k12, 3, rounds, algos[ai], 1, 0, 0, 1, 0};
      mi_run(ctx, &c);
      mi_cfg_t d = {30, BPC_ASSIGN_CONTIGUOUS, MI_SUM, k30, 3, rounds, algos[ai], 2, 17, 20, 1,
                    MI_EW};
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
                  MI_EW};
    mi_run(ctx, &c);
    mi_cfg_t l = {n, BPC_ASSIGN_ROUND_ROBIN, MI_LIST, NULL, 0, 0, NULL, 0, 0, 0, 2, 0};
    mi_run(ctx, &l);
    mi_cfg_t s = {n + 1, BPC_ASSIGN_USER, MI_SUM, NULL, 0, 0, NULL, 2, 1000, 0, 2,
                  MI_EW};
    mi_run(ctx, &s);
  }
  T_SYNC();
}
END_TEST

/* One float array of C elements per block; count what each rank sends (to
 * other processes and locally) and how many merges it runs. MPI messages
 * (wire_sent): a large item is two (header, payload); small ones are
 * bundled per destination process (lib/comm): the leaves send before the
 * executor first makes progress, so theirs leave as one message per
 * destination process, and every later send at most one of its own. */
static void stats_case(bpc_assign_mode_t mode, int n, size_t C)
{
  bpc_assign_t *a = NULL;
  bpc_assign_create(ctx, n, mode, NULL, &a);
  const int *gids;
  int nl;
  bpc_assign_local(a, &gids, &nl);
  void *items = mi_make_items(MI_SUM, gids, nl, C);
  mi_user_t u = {MI_SUM, -1, -1, 0, 0, 0};
  bpc_type_t ft = bpc_type_contiguous(sizeof(float), MPI_FLOAT);
  bpc_merge_op_t op = mi_kind_op(MI_SUM, &u);
  bpc_merge_result_t *r = NULL;
  bpc_merge_params_t p = bpc_merge_params_default();
  p.algorithm = "doubling"; /* the digits below are doubling's */
  int rc = bpc_merge(ctx, a, &ft, items, &op, &p, &r);
  T_CHECK(rc == BPC_OK, "stats: %s", bpc_last_error(ctx));
  if (rc == BPC_OK) {
    bpc_merge_info_t info;
    bpc_merge_info(r, &info);
    const int *k = info.k, nk = info.nk;
    uint64_t rb = 0, rm = 0, lb = 0, lm = 0, ops = 0, later = 0;
    char *leaf_to = calloc((size_t)t_size, 1); /* ranks leaves send to */
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
            if (rr == 0)
              leaf_to[rk] = 1;
            else
              later++;
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
    uint64_t bound = later;
    for (int q = 0; q < t_size; q++)
      bound += leaf_to[q];
    if (C * sizeof(float) > BPC__INLINE_MAX)
      T_CHECK(st.total.wire_sent == 2 * rm, "%llu MPI messages for %llu large items",
              (unsigned long long)st.total.wire_sent, (unsigned long long)rm);
    else
      T_CHECK(st.total.wire_sent <= bound, "%llu MPI messages for %llu small items (%llu from "
              "later rounds): more than %llu, not bundled", (unsigned long long)st.total.wire_sent,
              (unsigned long long)rm, (unsigned long long)later, (unsigned long long)bound);
    free(leaf_to);
  }
  bpc_merge_result_destroy(&r);
  mi_free_items(MI_SUM, items, nl);
  bpc_assign_destroy(&a);
}

START_TEST(test_stats)
{
  stats_case(BPC_ASSIGN_CONTIGUOUS, 3 * t_size + 1, 5000);
  /* round-robin: almost every leaf's root is on another process */
  stats_case(BPC_ASSIGN_ROUND_ROBIN, 64 * t_size + 3, 16);
  T_SYNC();
}
END_TEST

/* rc must be `want` on every rank */
#define ALL_EQ(rc, want, what)                                                          \
  do {                                                                                  \
    int r_ = (rc), lo_ = 0, hi_ = 0;                                                    \
    MPI_Allreduce(&r_, &lo_, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);                      \
    MPI_Allreduce(&r_, &hi_, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);                      \
    T_CHECK(r_ == (want) && lo_ == hi_, "%s: %s here (%s), codes %d..%d over ranks", what, \
            bpc_err_name(r_), bpc_last_error(ctx), lo_, hi_);                           \
  } while (0)

/* One call's inputs: a contiguous assignment of n blocks, items of `kind`
 * (sum or mat, `count` elements), its type and op, default params. */
typedef struct tcall {
  bpc_assign_t *a;
  const int *gids;
  int nl;
  void *items;
  mi_user_t u;
  bpc_type_t type;
  bpc_merge_op_t op;
  bpc_merge_params_t p;
} tcall_t;

static void tcall_init(tcall_t *c, int n, int kind, size_t count)
{
  memset(c, 0, sizeof *c);
  bpc_assign_create(ctx, n, BPC_ASSIGN_CONTIGUOUS, NULL, &c->a);
  bpc_assign_local(c->a, &c->gids, &c->nl);
  c->items = mi_make_items(kind, c->gids, c->nl, count);
  c->u.kind = kind;
  c->u.fail_gid = -1;
  c->u.fail_round = -1;
  c->type = kind == MI_MAT ? bpc_type_contiguous(sizeof(mi_mat_t), MPI_BYTE)
                           : bpc_type_contiguous(sizeof(float), MPI_FLOAT);
  c->op = mi_kind_op(kind, &c->u);
  c->p = bpc_merge_params_default();
}

static void tcall_free(tcall_t *c)
{
  mi_free_items(c->u.kind, c->items, c->nl);
  bpc_assign_destroy(&c->a);
}

/*
 * The bad-argument cases: every documented argument error of bpc_merge, and
 * every field that must match across ranks made different. The call is a
 * float sum of 2 blocks per rank (4 elements each, contiguous assignment);
 * bad_case() spoils this rank's arguments for case c. Argument errors give
 * their code on every rank whichever ranks are bad; a mismatch gives
 * BPC_EMISMATCH, or BPC_OK when every rank has the same (valid) value.
 */
enum {
  BC_NULL_ASSIGN, BC_NULL_TYPE, BC_NULL_OP, BC_NULL_FN, BC_NULL_ITEMS, BC_NULL_DATA, BC_BAD_TYPE,
  BC_BAD_KVEC, BC_NEG_ROUNDS, BC_MANY_ROUNDS, BC_BAD_ORDER, BC_BAD_ALGO, BC_BAD_ENV_ALGO,
  BC_HALVING_NC, BC_EW_CUSTOM, BC_EW_COUNTS, BC_EW_DECLARED, BC_OTHER_CTX,
  /* valid values that must match */
  BC_MM_KVEC, BC_MM_ROUNDS, BC_MM_ORDER, BC_MM_ALGO, BC_MM_COMM, BC_MM_EW, BC_MM_ESIZE,
  BC_MM_COUNT, BC_MM_EW_COUNT, BC_NCASES
};
static const struct {
  const char *name;
  int code; /* BPC_EMISMATCH: a mismatch case */
} bcase[BC_NCASES] = {
    {"assign NULL", BPC_ENULL},          {"type NULL", BPC_ENULL},
    {"op NULL", BPC_ENULL},              {"op->fn NULL", BPC_ENULL},
    {"items NULL", BPC_ENULL},           {"item data NULL", BPC_ENULL},
    {"bad type", BPC_ETYPE},             {"bad k-vector", BPC_EKVEC},
    {"rounds < 0", BPC_ERANGE},          {"rounds beyond the k-vector", BPC_ERANGE},
    {"order not a permutation", BPC_EPERM}, {"unknown algorithm", BPC_EALGO},
    {"unknown algorithm in BPC_MERGE_ALGORITHM", BPC_EALGO},
    {"halving without commutative", BPC_EINVAL}, {"element-wise custom type", BPC_EINVAL},
    {"element-wise counts differ", BPC_EINVAL}, {"element-wise count not params->count", BPC_EINVAL},
    {"assignment of another context", BPC_EINVAL},
    {"k-vector differs", BPC_EMISMATCH}, {"rounds differ", BPC_EMISMATCH},
    {"order differs", BPC_EMISMATCH},    {"algorithm differs", BPC_EMISMATCH},
    {"commutative differs", BPC_EMISMATCH}, {"element-wise differs", BPC_EMISMATCH},
    {"element size differs", BPC_EMISMATCH}, {"params->count differs", BPC_EMISMATCH},
    {"element count differs across ranks", BPC_EMISMATCH}};

/* bad_case calls bpc_merge_init (then starts and frees the plan) instead
 * of bpc_merge: a plan's making checks and agrees like the call. */
static int bad_via_init;

static int bad_case(int c, int bad)
{
  const int n = 2 * t_size, C = 4;
  tcall_t tc;
  tcall_init(&tc, n, MI_SUM, C);
  const int nl = tc.nl;
  bpc_buf_t *items = tc.items;
  bpc_merge_op_t op = tc.op, *opp = &op;
  bpc_merge_params_t p = tc.p;
  bpc_type_t f2 = bpc_type_contiguous(2 * sizeof(float), MPI_BYTE);
  bpc_type_t zt = bpc_type_contiguous(0, MPI_FLOAT);
  bpc_type_t lt = mi_list_type(&tc.u);
  const bpc_type_t *type = &tc.type;
  const bpc_assign_t *arg_a = tc.a;
  bpc_assign_t *other = NULL;
  bpc_ctx_t *octx = NULL;
  void *arg_items = items;
  int kbad[2] = {2, n}, kone[1] = {n}, order[64], rorder[64];
  for (int i = 0; i < n; i++) {
    order[i] = i;
    rorder[i] = n - 1 - i;
  }
  order[n - 1] = 0; /* not a permutation */
  float *saved = NULL;
  size_t saved_count = 0;
  if (c == BC_EW_COUNTS || c == BC_EW_DECLARED || c == BC_MM_EW_COUNT || c == BC_MM_COUNT)
    op.elementwise = 1;
  if (c == BC_EW_DECLARED || c == BC_MM_COUNT)
    p.count = C;
  if (c == BC_MM_ALGO)
    p.algorithm = algos[0];
  if (bad) {
    switch (c) {
    case BC_NULL_ASSIGN: arg_a = NULL; break;
    case BC_NULL_TYPE: type = NULL; break;
    case BC_NULL_OP: opp = NULL; break;
    case BC_NULL_FN: op.fn = NULL; break;
    case BC_NULL_ITEMS: arg_items = NULL; break;
    case BC_NULL_DATA: saved = items[0].data; items[0].data = NULL; break;
    case BC_BAD_TYPE: type = &zt; break;
    case BC_BAD_KVEC: p.k = kbad; p.nk = 2; break;
    case BC_NEG_ROUNDS: p.rounds = -1; break;
    case BC_MANY_ROUNDS: p.rounds = 65; break;
    case BC_BAD_ORDER: p.order = order; break;
    case BC_BAD_ALGO: p.algorithm = "no-such-algorithm"; break;
    case BC_BAD_ENV_ALGO: setenv("BPC_MERGE_ALGORITHM", "zigzag", 1); break;
    case BC_HALVING_NC: p.algorithm = "halving"; op.commutative = 0; break;
    case BC_EW_CUSTOM: op.elementwise = 1; type = &lt; break;
    case BC_EW_COUNTS: saved_count = items[0].count; items[0].count = 3; break;
    case BC_EW_DECLARED: p.count = 3; break;
    case BC_OTHER_CTX:
      bpc_init_serial(NULL, &octx);
      bpc_assign_create(octx, n, BPC_ASSIGN_CONTIGUOUS, NULL, &other);
      arg_a = other;
      break;
    case BC_MM_KVEC: p.k = kone; p.nk = 1; break;
    case BC_MM_ROUNDS: p.rounds = 1; break;
    case BC_MM_ORDER: p.order = rorder; break;
    case BC_MM_ALGO: p.algorithm = algos[1]; break;
    case BC_MM_COMM: op.commutative = 0; break;
    case BC_MM_EW: op.elementwise = 1; break;
    case BC_MM_ESIZE:
      type = &f2;
      for (int i = 0; i < nl; i++)
        items[i].count = C / 2;
      break;
    case BC_MM_COUNT:
      p.count = C / 2;
      for (int i = 0; i < nl; i++)
        items[i].count = C / 2;
      break;
    case BC_MM_EW_COUNT:
      for (int i = 0; i < nl; i++)
        items[i].count = C / 2;
      break;
    }
  }
  bpc_merge_result_t *r = NULL;
  int rc;
  if (bad_via_init) {
    bpc_plan_t *plan = (bpc_plan_t *)&rc; /* not NULL: must be NULL after a failure */
    rc = bpc_merge_init(ctx, arg_a, type, arg_items, opp, &p, &plan);
    T_CHECK((rc == BPC_OK) == (plan != NULL), "%s: init %s with plan %p", bcase[c].name,
            bpc_err_name(rc), (void *)plan);
    if (rc == BPC_OK) {
      unsetenv("BPC_MERGE_ALGORITHM"); /* fixed at init: a start never reads it */
      rc = bpc_plan_start(plan);
    }
    bpc_plan_free(&plan);
  } else {
    rc = bpc_merge(ctx, arg_a, type, arg_items, opp, &p, &r);
  }
  T_CHECK(r == NULL || rc == BPC_OK, "%s: result set on failure", bcase[c].name);
  T_CHECK(rc != BPC_OK || tc.u.bad == 0, "%s: the callback saw bad groups", bcase[c].name);
  if (c == BC_MM_EW_COUNT) /* valid on every rank alike; across ranks EINVAL */
    rc = rc == BPC_EINVAL ? BPC_EMISMATCH : rc;
  bpc_merge_result_destroy(&r);
  unsetenv("BPC_MERGE_ALGORITHM");
  if (saved != NULL)
    items[0].data = saved;
  if (saved_count)
    items[0].count = saved_count;
  tcall_free(&tc);
  bpc_assign_destroy(&other);
  bpc_finalize(&octx);
  return rc;
}

static void bad_rank_all(void);

START_TEST(test_bad_rank)
{
  bad_via_init = 0;
  bad_rank_all();
}
END_TEST

/* The same cases for a plan's making (bpc_merge_init) */
START_TEST(test_plan_bad_init)
{
  bad_via_init = 1;
  bad_rank_all();
  bad_via_init = 0;
}
END_TEST

static void bad_rank_all(void)
{
  ck_assert_int_le(2 * t_size, 64);
  for (int c = 0; c < BC_NCASES; c++)
    for (int m = 0; m < BAD_NMODES; m++) {
      int rc = bad_case(c, bad_here(m));
      /* a mismatch needs ranks that differ: not when all (or the only
       * rank) have the value */
      int want = bcase[c].code;
      if (want == BPC_EMISMATCH && (m == BAD_ALL || t_size == 1))
        want = BPC_OK;
      char what[160];
      snprintf(what, sizeof what, "%s, %s", bcase[c].name, bad_mode_name(m));
      ALL_EQ(rc, want, what);
      if (want == BPC_EMISMATCH)
        T_CHECK(strstr(bpc_last_error(ctx), "ranks disagree on") != NULL ||
                    c == BC_MM_EW_COUNT,
                "%s: message '%s'", what, bpc_last_error(ctx));
    }
  /* after all that, a good call still works */
  mi_cfg_t g = {2 * t_size, BPC_ASSIGN_CONTIGUOUS, MI_SUM, NULL, 0, 0, NULL, 0, 4, 0, 1, MI_EW};
  g.flags |= bad_via_init ? MI_PLAN : 0u;
  T_CHECK(mi_run(ctx, &g) == BPC_OK, "good call after the bad ones");
  T_SYNC();
}

START_TEST(test_bad_input_messages)
{
  /* the message of the failing rank reaches every rank */
  static const int k44[] = {4, 4};
  const int last = t_size - 1;
  tcall_t c;
  tcall_init(&c, 12, MI_SUM, 4);
  if (t_rank == last) {
    c.p.k = k44;
    c.p.nk = 2;
  }
  ALL_EQ(bpc_merge(ctx, c.a, &c.type, c.items, &c.op, &c.p, NULL), BPC_EKVEC,
         "k-vector on the last rank");
  T_CHECK(strstr(bpc_last_error(ctx), "k-vector 4x4 multiplies to 16, but there are 12 blocks") !=
              NULL, "message '%s'", bpc_last_error(ctx));
  c.p.k = NULL;
  c.p.nk = 0;
  c.p.rounds = t_rank == last ? 1 : 0;
  int want = t_size > 1 ? BPC_EMISMATCH : BPC_OK;
  ALL_EQ(bpc_merge(ctx, c.a, &c.type, c.items, &c.op, &c.p, NULL), want,
         "rounds on the last rank");
  if (t_size > 1) {
    char exp[128];
    snprintf(exp, sizeof exp, "merge: ranks disagree on rounds (0 on rank 0, 1 on rank %d)", last);
    T_CHECK(strstr(bpc_last_error(ctx), exp) != NULL, "message '%s'", bpc_last_error(ctx));
  }
  tcall_free(&c);
  T_SYNC();
}
END_TEST

START_TEST(test_wrong_order_fails)
{
  /* The checks can fail: a non-commutative product merged in one order does
   * not verify against another. 2x2 matrices, reversed order: the root
   * (gid n-1) holds M(n-1) ... M(0), not M(0) ... M(n-1). */
  const int n = 2 * t_size + 1;
  int order[64], fwd[64], rev[64];
  ck_assert_int_le(n, 64);
  for (int i = 0; i < n; i++) {
    order[i] = n - 1 - i;
    fwd[i] = i;
    rev[i] = n - 1 - i;
  }
  tcall_t c;
  tcall_init(&c, n, MI_MAT, 3);
  c.p.order = order;
  int rc = bpc_merge(ctx, c.a, &c.type, c.items, &c.op, &c.p, NULL);
  T_CHECK(rc == BPC_OK, "merge: %s", bpc_last_error(ctx));
  for (int i = 0; i < c.nl && rc == BPC_OK; i++) {
    if (c.gids[i] != n - 1)
      continue;
    char why[160] = "";
    T_CHECK(mi_verify(MI_MAT, c.items, i, c.gids[i], rev, n, 3, why, sizeof why),
            "the right order does not verify: %s", why);
    T_CHECK(!mi_verify(MI_MAT, c.items, i, c.gids[i], fwd, n, 3, why, sizeof why),
            "the wrong order verifies too: the check cannot fail");
  }
  tcall_free(&c);
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
      const bpc_type_t *type = kind == MI_MAT ? &mt : kind >= MI_LIST ? &lt : &ft;
      bpc_merge_op_t op = mi_kind_op(kind, &u);
      op.elementwise = seg;
      bpc_merge_params_t p = bpc_merge_params_default();
      p.k = k;
      p.nk = nk;
      p.segment_bytes = seg ? 64 : 0;
      int rc = bpc_merge(ctx, a, type, items, &op, &p, NULL);
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
        op.elementwise = 0;
        rc = bpc_merge(ctx, b, type, it2, &op, &p, NULL);
        ALL_EQ(rc, BPC_ECALLBACK, "unpack on one rank");
        T_CHECK(strstr(bpc_last_error(ctx), "unpack callback returned 7") != NULL,
                "message '%s'", bpc_last_error(ctx));
        mi_free_items(kind, it2, nl2);
        bpc_assign_destroy(&b);
      }
      bpc_assign_destroy(&a);
      /* the next call works */
      mi_cfg_t c = {n, BPC_ASSIGN_CONTIGUOUS, kind, NULL, 0, 0, NULL, 0, 50, seg ? 64 : 0, 1,
                    seg ? MI_EW : 0};
      T_CHECK(mi_run(ctx, &c) == BPC_OK, "call after a failure");
    }
  T_SYNC();
}
END_TEST

/* Large custom items across processes: a packed item is sent borrowed from
 * a pooled buffer, which must not go back to the pool (whose free list
 * writes into it) before the send completes. Items of 256 KiB (well above
 * any eager limit) as arrays of ints with their length first, summed
 * element by element, not commutative in the op flags (doubling runs). */
typedef struct big {
  size_t n;
  int *v;
} big_t;
#define BIG_N 65536
static int big_size(const void *it, size_t *bytes, void *u)
{
  (void)u;
  *bytes = it ? sizeof(size_t) + ((const big_t *)it)->n * sizeof(int) : 0;
  return 0;
}
static int big_pack(const void *it, void *buf, size_t bytes, void *u)
{
  (void)u;
  (void)bytes;
  const big_t *b = it;
  memcpy(buf, &b->n, sizeof b->n);
  memcpy((char *)buf + sizeof b->n, b->v, b->n * sizeof(int));
  return 0;
}
static void big_free(void *it, void *u)
{
  (void)u;
  if (it != NULL)
    free(((big_t *)it)->v);
  free(it);
}
static int big_unpack(const void *buf, size_t bytes, void **it, void *u)
{
  (void)u;
  big_t *b = calloc(1, sizeof *b);
  if (b == NULL || bytes < sizeof b->n)
    return (free(b), 1);
  memcpy(&b->n, buf, sizeof b->n);
  if (bytes != sizeof b->n + b->n * sizeof(int) || (b->v = malloc(b->n * sizeof(int))) == NULL)
    return (free(b), 2);
  memcpy(b->v, (const char *)buf + sizeof b->n, b->n * sizeof(int));
  *it = b;
  return 0;
}
static int big_add(bpc_merge_group_t *g, void *u)
{
  (void)u;
  big_t *r = g->items[g->root];
  for (int j = 0; j < g->nitems; j++) {
    const big_t *x = g->items[j];
    if (j == g->root)
      continue;
    if (x->n != r->n)
      return 3;
    for (size_t i = 0; i < r->n; i++)
      r->v[i] += x->v[i];
  }
  return 0;
}

START_TEST(test_custom_large)
{
  const bpc_type_ops_t ops = {big_size, big_pack, big_unpack, big_free, NULL};
  bpc_type_t type = bpc_type_custom(&ops, NULL);
  bpc_merge_op_t op = {.fn = big_add};
  for (int bpp = 1; bpp <= 2; bpp++) {
    const int n = bpp * t_size;
    bpc_assign_t *a = NULL;
    const int *gids = NULL;
    int nl = 0;
    ck_assert_int_eq(bpc_assign_create(ctx, n, BPC_ASSIGN_CONTIGUOUS, NULL, &a), BPC_OK);
    bpc_assign_local(a, &gids, &nl);
    void **items = calloc((size_t)(nl ? nl : 1), sizeof *items);
    for (int i = 0; i < nl; i++) {
      big_t *b = malloc(sizeof *b);
      b->n = BIG_N;
      b->v = malloc(BIG_N * sizeof(int));
      for (int e = 0; e < BIG_N; e++)
        b->v[e] = gids[i] * 7 + e % 13;
      items[i] = b;
    }
    int rc = bpc_merge(ctx, a, &type, items, &op, NULL, NULL);
    T_CHECK(rc == BPC_OK, "merge of large custom items: %s", bpc_last_error(ctx));
    if (rc == BPC_OK && nl > 0 && gids[0] == 0) {
      const big_t *r = items[0];
      long bad = -1;
      for (int e = 0; e < BIG_N && bad < 0; e++)
        if (r->v[e] != 7 * (n * (n - 1) / 2) + n * (e % 13))
          bad = e;
      T_CHECK(bad < 0, "%d blocks: element %ld of the sum is %d", n, bad, bad >= 0 ? r->v[bad] : 0);
    }
    for (int i = 0; i < nl; i++)
      big_free(items[i], NULL);
    free(items);
    bpc_assign_destroy(&a);
  }
  T_SYNC();
}
END_TEST

/* ------------------------------------------------ persistent plans */

START_TEST(test_plan_runs)
{
  /* Plans of every item kind, assignment, algorithm, order, partial
   * rounds, segments and threads, each started three times on items made
   * anew: the last start checked against the serial reference */
  static const bpc_assign_mode_t modes[] = {BPC_ASSIGN_CONTIGUOUS, BPC_ASSIGN_ROUND_ROBIN,
                                            BPC_ASSIGN_USER};
  int ncfg = 0;
  for (int kind = 0; kind < MI_NKINDS; kind++)
    for (int bpp = 1; bpp <= 3; bpp++) {
      const int n = bpp * t_size + (bpp == 3 ? 1 : 0); /* 3: not a multiple of P */
      for (int ai = 0; ai <= nalgos; ai++) {
        const char *an = algos[ai];
        if (mi_row_commutative_only(an) && !mi_kind_commutative(kind))
          continue;
        const int ew = (kind == MI_SUM || kind == MI_MAT) && (bpp + ai) % 2 == 0;
        mi_cfg_t c = {n, modes[(kind + bpp) % 3], kind, NULL, 0, 0, an, (kind + ai) % 3,
                      ew ? 40 : 5, ew ? 64 : 0, ai == nalgos ? 2 : 1,
                      ew ? MI_EW | (bpp == 2 ? MI_DECLARE : 0) : 0};
        c.rounds = (bpp == 2 && n > 2 && an != NULL && strcmp(an, "doubling") == 0) ? 1 : 0;
        c.flags |= MI_PLAN;
        T_CHECK(mi_run(ctx, &c) == BPC_OK, "plan, kind %s, %d blocks", mi_kind_name[kind], n);
        ncfg++;
      }
    }
  T_CHECK(ncfg >= 20, "only %d configurations", ncfg);
  T_SYNC();
}
END_TEST

/* Fresh values (mi_fval) in the float items of a plan, in place. */
static void plan_refill(tcall_t *c, size_t count)
{
  bpc_buf_t *b = c->items;
  for (int i = 0; i < c->nl; i++) {
    b[i].count = count;
    for (size_t e = 0; e < count; e++)
      ((float *)b[i].data)[e] = mi_fval(c->gids[i], e);
  }
}

/* Is every local item still its own fresh value (no merge touched it)? */
static int plan_untouched(const tcall_t *c, size_t count)
{
  const bpc_buf_t *b = c->items;
  for (int i = 0; i < c->nl; i++)
    for (size_t e = 0; e < count; e++)
      if (((const float *)b[i].data)[e] != mi_fval(c->gids[i], e))
        return 0;
  return 1;
}

/* The full merge of gids 0..n-1 in gid 0's item, where it lives. */
static void plan_check_root(const tcall_t *c, int n, size_t count, const char *what)
{
  int set[64];
  for (int g = 0; g < n; g++)
    set[g] = g;
  for (int i = 0; i < c->nl; i++) {
    if (c->gids[i] != 0)
      continue;
    char why[160] = "";
    T_CHECK(mi_verify(MI_SUM, c->items, i, 0, set, n, count, why, sizeof why), "%s: %s", what,
            why);
  }
}

/* The plan tests' call: a float sum of 2 blocks a process (C elements,
 * element-wise if `ew`), and its plan made on every rank. */
static bpc_plan_t *plan_make(tcall_t *c, int ew)
{
  ck_assert_int_le(2 * t_size, 64);
  tcall_init(c, 2 * t_size, MI_SUM, 4);
  c->op.elementwise = ew;
  bpc_plan_t *plan = NULL;
  ALL_EQ(bpc_merge_init(ctx, c->a, &c->type, c->items, &c->op, &c->p, &plan), BPC_OK, "init");
  return plan;
}

START_TEST(test_plan_bad_start)
{
  /* A start with a bad item on some ranks (data NULL, or an element-wise
   * count other than the agreed one) fails on every rank with the bad
   * rank's code, before any callback (every item as it was), and the next
   * start works */
  const int n = 2 * t_size;
  const size_t C = 4;
  tcall_t c;
  bpc_plan_t *plan = plan_make(&c, 1);
  bpc_buf_t *b = c.items;
  for (int m = 0; m < BAD_NMODES && plan != NULL; m++)
    for (int what = 0; what < 2; what++) {
      char txt[96];
      snprintf(txt, sizeof txt, "%s, %s", what ? "count 3" : "data NULL", bad_mode_name(m));
      plan_refill(&c, C);
      void *saved = b[0].data;
      if (bad_here(m)) {
        if (what == 0)
          b[0].data = NULL;
        else
          b[0].count = 3;
      }
      ALL_EQ(bpc_plan_start(plan), what ? BPC_EINVAL : BPC_ENULL, txt);
      b[0].data = saved;
      b[0].count = C;
      T_CHECK(plan_untouched(&c, C), "%s: an item changed", txt);
      ALL_EQ(bpc_plan_start(plan), BPC_OK, "the start after it");
      plan_check_root(&c, n, C, txt);
    }
  bpc_plan_free(&plan);
  tcall_free(&c);
  T_SYNC();
}
END_TEST

START_TEST(test_plan_mismatch)
{
  /* Ranks that start different plans (of other schedules: a k-vector of
   * one round against the automatic one) all get BPC_EMISMATCH, no hang,
   * no callback; then each plan works */
  const int n = 2 * t_size;
  const size_t C = 4;
  tcall_t c;
  bpc_plan_t *pa = plan_make(&c, 0), *pb = NULL;
  const int kone[1] = {n};
  bpc_merge_params_t pk = c.p;
  pk.k = kone;
  pk.nk = 1;
  ALL_EQ(bpc_merge_init(ctx, c.a, &c.type, c.items, &c.op, &pk, &pb), BPC_OK, "plan b");
  for (int m = 0; m < BAD_NMODES; m++) {
    plan_refill(&c, C);
    const int want = t_size > 1 && m != BAD_ALL ? BPC_EMISMATCH : BPC_OK;
    ALL_EQ(bpc_plan_start(bad_here(m) ? pb : pa), want, bad_mode_name(m));
    if (want == BPC_EMISMATCH) {
      T_CHECK(strstr(bpc_last_error(ctx), "different persistent plans") != NULL,
              "message '%s'", bpc_last_error(ctx));
      T_CHECK(plan_untouched(&c, C), "%s: an item changed", bad_mode_name(m));
    } else {
      plan_check_root(&c, n, C, bad_mode_name(m));
    }
    plan_refill(&c, C);
    ALL_EQ(bpc_plan_start(pa), BPC_OK, "plan a after it");
    plan_check_root(&c, n, C, "plan a");
    plan_refill(&c, C);
    ALL_EQ(bpc_plan_start(pb), BPC_OK, "plan b after it");
    plan_check_root(&c, n, C, "plan b");
  }
  /* the plan's queries, and NULL arguments */
  bpc_merge_result_t *r = NULL;
  T_CHECK(bpc_merge_plan_result(pa, &r) == BPC_OK && r != NULL, "plan result");
  bpc_merge_result_destroy(&r);
  T_CHECK(strcmp(bpc_plan_engine(pa), "merge") == 0, "engine %s", bpc_plan_engine(pa));
  T_CHECK(bpc_plan_start(NULL) == BPC_ENULL, "start NULL");
  bpc_plan_free(&pa);
  bpc_plan_free(&pb);
  T_CHECK(pa == NULL && pb == NULL, "free sets NULL");
  T_CHECK(bpc_plan_free(&pa) == BPC_OK, "free NULL");
  tcall_free(&c);
  T_SYNC();
}
END_TEST

START_TEST(test_plan_callback_failure)
{
  /* A callback failing on the rank of gid 0 in one start: BPC_ECALLBACK
   * with its value on every rank; the next start works */
  const int n = 2 * t_size;
  const size_t C = 4;
  tcall_t c;
  bpc_plan_t *plan = plan_make(&c, 0);
  c.u.fail_gid = 0;
  c.u.fail_value = 42;
  ALL_EQ(bpc_plan_start(plan), BPC_ECALLBACK, "failing start");
  T_CHECK(strstr(bpc_last_error(ctx), "returned 42") != NULL, "message '%s'",
          bpc_last_error(ctx));
  c.u.fail_gid = -1;
  plan_refill(&c, C);
  ALL_EQ(bpc_plan_start(plan), BPC_OK, "the start after it");
  plan_check_root(&c, n, C, "after a failure");
  bpc_plan_free(&plan);
  tcall_free(&c);
  T_SYNC();
}
END_TEST

/* ------------------------------------------------------------ all-reduce */

START_TEST(test_allreduce)
{
  bpc_algo_info_t tab[8];
  int na = 0;
  ck_assert_int_eq(bpc_algorithms("allreduce", tab, 8, &na), BPC_OK);
  const int ns[4] = {1, t_size, 2 * t_size + 1, 3 * t_size};
  for (int i = 0; i < 4; i++)
    for (int a = 0; a <= na; a++)
      for (int kind = 0; kind < AR_NKINDS; kind++) {
        const char *algo = a < na ? tab[a].name : NULL;
        if (kind == AR_CAT && algo != NULL && strcmp(algo, "swap-allgather") == 0)
          continue;
        const ar_case_t c = {ns[i], (bpc_assign_mode_t)((i + a) % 2),
                             kind,  (size_t)(i == 2 ? 37 : 5 + a),
                             algo,  (i + kind) % 3,
                             1};
        int rc = 0;
        bpc_allreduce_info_t info;
        char why[256] = "";
        const int bad = ar_run(ctx, &c, &rc, &info, why, sizeof why);
        T_CHECK(bad == 0, "allreduce n=%d %s %s order %d: %s", c.n, algo ? algo : "auto",
                ar_kind_name[kind], c.order, why);
      }
  T_SYNC();
}
END_TEST

static int ar_fail_last(const void *in, void *inout, size_t n, int in_left, void *user)
{
  (void)user;
  if (t_rank == t_size - 1)
    return 9;
  return mi_op_mat(in, inout, n, in_left, NULL);
}

START_TEST(test_allreduce_bad_rank)
{
  const int n = 2 * t_size;
  bpc_assign_t *a = NULL;
  ck_assert_int_eq(bpc_assign_create(ctx, n, BPC_ASSIGN_CONTIGUOUS, NULL, &a), BPC_OK);
  const int *gids;
  int nl;
  bpc_assign_local(a, &gids, &nl);
  bpc_type_t mt = bpc_type_contiguous(sizeof(mi_mat_t), MPI_BYTE);
  int *order = malloc(sizeof(int) * (size_t)n);
  /* code, what: every case bad here (per mode) and agreed everywhere */
  enum { NCASES = 6 };
  static const int want[NCASES] = {BPC_ENULL,     BPC_EPERM, BPC_EMISMATCH,
                                   BPC_EMISMATCH, BPC_EALGO, BPC_EMISMATCH};
  static const char *const what[NCASES] = {"op NULL",           "order not a permutation",
                                           "another algorithm", "another item count",
                                           "unknown algorithm", "another order"};
  for (int cs = 0; cs < NCASES; cs++)
    for (int m = 0; m < BAD_NMODES; m++) {
      const int bad = bad_here(m);
      void *items = mi_make_items(MI_MAT, gids, nl, bad && cs == 3 ? 4 : 3);
      bpc_op_t op = {mi_op_mat, 0, NULL};
      bpc_allreduce_params_t p = bpc_allreduce_params_default();
      mi_make_order(n, bad && cs == 5 ? 1 : 0, order);
      p.order = cs == 1 || cs == 5 ? order : NULL;
      if (bad && cs == 1)
        order[0] = order[1];
      p.algorithm = cs == 2 ? (bad ? "reduce-bcast" : "doubling") : cs == 4 && bad ? "ring" : NULL;
      const int rc = bpc_allreduce(ctx, a, &mt, items, bad && cs == 0 ? NULL : &op, &p, NULL);
      /* "bad on all" (every mode on one process) is a valid call for the
       * must-match cases */
      const int all = m == BAD_ALL || t_size == 1;
      const int w = all && (cs == 2 || cs == 3 || cs == 5) ? BPC_OK : want[cs];
      char tag[96];
      snprintf(tag, sizeof tag, "allreduce: %s, %s", what[cs], bad_mode_name(m));
      ALL_EQ(rc, w, tag);
      mi_free_items(MI_MAT, items, nl);
    }
  /* an operator that fails on the last rank only: BPC_ECALLBACK everywhere,
   * every algorithm, then a call that works */
  static const char *const names[3] = {"doubling", "reduce-bcast", "swap-allgather"};
  for (int i = 0; i < 3 && t_size > 1; i++) {
    void *items = mi_make_items(MI_MAT, gids, nl, 3);
    bpc_op_t f = {ar_fail_last, 0, NULL};
    bpc_allreduce_params_t p = bpc_allreduce_params_default();
    p.algorithm = names[i];
    int rc = bpc_allreduce(ctx, a, &mt, items, &f, &p, NULL);
    ALL_EQ(rc, BPC_ECALLBACK, names[i]);
    T_CHECK(strstr(bpc_last_error(ctx), "returned 9") != NULL, "message '%s'", bpc_last_error(ctx));
    mi_free_items(MI_MAT, items, nl);
  }
  free(order);
  bpc_assign_destroy(&a);
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
  tcase_add_test(tc, test_bad_rank);
  tcase_add_test(tc, test_bad_input_messages);
  tcase_add_test(tc, test_wrong_order_fails);
  tcase_add_test(tc, test_callback_failure);
  tcase_add_test(tc, test_custom_large);
  tcase_add_test(tc, test_plan_runs);
  tcase_add_test(tc, test_plan_bad_init);
  tcase_add_test(tc, test_plan_bad_start);
  tcase_add_test(tc, test_plan_mismatch);
  tcase_add_test(tc, test_plan_callback_failure);
  tcase_add_test(tc, test_allreduce);
  tcase_add_test(tc, test_allreduce_bad_rank);
  suite_add_tcase(s, tc);
  return s;
}

BPC_T_MPI_MAIN(suite)
