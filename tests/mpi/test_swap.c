/*
 * tests/mpi/test_swap.c - swap-reduce under MPI at every process count of
 * tests/testlist: radixk (automatic and user k-vectors, full and partial),
 * shift and ring, with 1..4 blocks per process (contiguous and round-robin),
 * fewer blocks than processes (ranks without blocks), odd counts, counts
 * smaller than the number of blocks and zero, identity / reversed / random
 * visibility orders, commutative sum and non-commutative RGBA "over" and
 * 2x2 matrix products against a serial reference computed on every rank,
 * 1 and 2 OpenMP threads (bit-identical with the deterministic tree),
 * bytes sent per rank against the model n(p-1)/p, and bad input (k-vector
 * mismatch, an order that is not a permutation, operator failure on one
 * rank, arguments that differ between ranks) failing on every rank alike;
 * test_bad_rank: every documented argument error and every field that must
 * match, bad on rank 0 only, on the last rank only and on all ranks, gives
 * the same code everywhere (BPC_EMISMATCH naming the field for the
 * must-match ones) and never hangs; test_sparse_hooks: every schedule
 * through the sparse-piece hooks compositing uses (tests/common/
 * swap_sparse.h), on inputs with holes. Schedules come from the registry,
 * and k-vectors and partial swaps run on every row that declares them.
 */
#include "mpi_check.h"
#include "bad_case.h"

#include <stdio.h>
#include <string.h>

#include "../common/swap_run.h"

static bpc_ctx_t *ctx;

static void setup(void) { ck_assert_int_eq(bpc_init(MPI_COMM_WORLD, NULL, &ctx), BPC_OK); }
static void teardown(void) { bpc_finalize(&ctx); }

static bpc_assign_t *make_assign(int n, bpc_assign_mode_t mode)
{
  bpc_assign_t *a = NULL;
  int rc = bpc_assign_create(ctx, n, mode, NULL, &a);
  T_CHECK(rc == BPC_OK, "assign %d: %s", n, bpc_last_error(ctx));
  return a;
}

static void one_case_sparse(bpc_assign_t *a, int op, size_t count, const bpc_swap_params_t *P,
                            const char *what, int sparse)
{
  so_case_t c;
  char tag[256];
  int n = 0, rc = 0;
  bpc_assign_nblocks(a, &n);
  memset(&c, 0, sizeof c);
  c.op = op;
  c.count = count;
  c.params = *P;
  c.sparse = sparse;
  snprintf(tag, sizeof tag,
           "[rank %d/%d] %s n=%d op=%s count=%zu alg=%s nk=%d rounds=%d thr=%d sparse=%d", t_rank,
           t_size, what, n, so_names[op], count, P->algorithm ? P->algorithm : "auto", P->nk,
           P->rounds, P->nthreads, sparse);
  int f = so_run(ctx, a, &c, tag, &rc, NULL, NULL);
  T_CHECK(f == 0, "%s: %d failure(s)", tag, f);
}

static void one_case(bpc_assign_t *a, int op, size_t count, const bpc_swap_params_t *P,
                     const char *what)
{
  one_case_sparse(a, op, count, P, what, 0);
}

/* Every schedule and operator, 1..4 blocks per process (shift and ring,
 * whose n-1 stages are slow when oversubscribed, on fewer cases). */
START_TEST(test_schedules)
{
  const char *algs[16];
  const int nalg = so_algos(algs, 16);
  int order[64];
  int idx = 0;
  for (int bpp = 1; bpp <= 4; bpp++) {
    const int n = bpp * t_size;
    bpc_assign_t *a = make_assign(n, bpp == 2 ? BPC_ASSIGN_ROUND_ROBIN : BPC_ASSIGN_CONTIGUOUS);
    for (int ai = 0; ai < nalg; ai++) {
      if (ai > 0 && bpp > 2)
        continue;
      for (int op = 0; op < SO_NOPS; op++, idx++) {
        if (ai > 0 && bpp == 2 && op != SO_MAT)
          continue;
        bpc_swap_params_t P = bpc_swap_params_default();
        P.algorithm = algs[ai];
        P.nthreads = 1 + idx % 2;
        so_order(idx % 3, n, (uint32_t)(1000 + idx), order);
        P.order = order;
        one_case(a, op, 37, &P, "schedules");
        if (op == SO_MAT && (bpp == 1 || (ai == 0 && bpp == 3)))
          one_case(a, op, (size_t)(n > 1 ? n - 1 : 0), &P, "schedules-small");
        if (op == SO_OVER && bpp == 1)
          one_case(a, op, 0, &P, "schedules-zero");
      }
    }
    bpc_assign_destroy(&a);
  }
  T_SYNC();
}
END_TEST

/* Shift and ring with many blocks per process, round-robin (a block's
 * partners are on other processes): pieces for blocks of one process leave
 * as one MPI message per stage (lib/comm bundles), so a rank posts at most
 * (n - 1) x (P - 1) of them for its (n - 1) x (local blocks) pieces. */
START_TEST(test_bundled_stages)
{
  const int n = 8 * t_size;
  bpc_assign_t *a = make_assign(n, BPC_ASSIGN_ROUND_ROBIN);
  const char *algs[2] = {"shift", "ring"};
  for (int ai = 0; ai < 2; ai++)
    for (int op = 0; op < SO_NOPS; op += SO_NOPS - 1) {
      bpc_swap_params_t P = bpc_swap_params_default();
      P.algorithm = algs[ai];
      P.nthreads = 1;
      one_case(a, op, (size_t)(4 * n), &P, "bundled");
      bpc_call_stats_t st;
      bpc_stats_last_call(ctx, &st);
      const uint64_t bound = (uint64_t)(n - 1) * (uint64_t)(t_size - 1);
      T_CHECK(st.total.wire_sent <= bound, "%s op %s: %llu MPI messages for %llu pieces, more "
              "than %llu (one per stage and process)", algs[ai], so_names[op],
              (unsigned long long)st.total.wire_sent, (unsigned long long)st.total.msgs_sent,
              (unsigned long long)bound);
    }
  bpc_assign_destroy(&a);
  T_SYNC();
}
END_TEST

/* User k-vectors (binary-swap-like, direct send, mixed), partial swaps. */
START_TEST(test_kvectors)
{
  int order[64];
  const char *kalgs[8];
  const int nka = so_kvec_algos(kalgs, 8);
  T_CHECK(nka >= 1, "no swap row declares k-vector rounds");
  for (int ka = 0; ka < nka; ka++)
  for (int bpp = 1; bpp <= 2; bpp++) {
    const int n = bpp * t_size;
    bpc_assign_t *a = make_assign(n, BPC_ASSIGN_CONTIGUOUS);
    int kv[3][32], nk[3] = {0, 0, 0};
    /* smallest factors first (all 2 when n is a power of two) */
    int m = n;
    for (int f = 2; m > 1 && f <= m; f++)
      while (m % f == 0) {
        kv[0][nk[0]++] = f;
        m /= f;
      }
    /* one round: direct send */
    if (n > 1) {
      kv[1][0] = n;
      nk[1] = 1;
    }
    /* largest factors first */
    for (int i = 0; i < nk[0]; i++)
      kv[2][i] = kv[0][nk[0] - 1 - i];
    nk[2] = nk[0];
    for (int v = 0; v < 3; v++)
      for (int op = 1; op < SO_NOPS; op++) {
        bpc_swap_params_t P = bpc_swap_params_default();
        P.algorithm = kalgs[ka];
        P.k = nk[v] ? kv[v] : NULL;
        P.nk = nk[v];
        P.nthreads = 1;
        so_order(2, n, (uint32_t)(7 * v + op), order);
        P.order = order;
        one_case(a, op, 53, &P, "kvec");
        if (nk[v] >= 2) {
          P.rounds = 1;
          one_case(a, op, 29, &P, "partial");
          P.rounds = nk[v] - 1;
          one_case(a, op, 29, &P, "partial");
        }
      }
    bpc_assign_destroy(&a);
  }
  T_SYNC();
}
END_TEST

/* Every schedule through the sparse hooks (the compositing plug-in's path,
 * with the test's own codec), pieces encoded when smaller and always
 * encoded, on inputs with holes: sum and the non-commutative over and
 * matrix product, 1..3 blocks per process, shuffled orders, k-vector
 * rounds and a partial swap on the rows that declare them. Some rank must
 * have encoded a piece, or the sparse path was not run. */
START_TEST(test_sparse_hooks)
{
  const char *algs[16], *kalgs[8];
  const int nalg = so_algos(algs, 16), nka = so_kvec_algos(kalgs, 8);
  int order[64];
  int idx = 0;
  for (int bpp = 1; bpp <= 3; bpp++) {
    const int n = bpp * t_size;
    bpc_assign_t *a = make_assign(n, bpp == 2 ? BPC_ASSIGN_ROUND_ROBIN : BPC_ASSIGN_CONTIGUOUS);
    for (int ai = 0; ai < nalg; ai++)
      for (int op = 0; op < SO_NOPS; op++, idx++) {
        const int mode = 1 + idx % 2;
        if (bpp == 3 && op != SO_MAT)
          continue;
        bpc_swap_params_t P = bpc_swap_params_default();
        P.algorithm = algs[ai];
        P.nthreads = 1 + (idx / 2) % 2;
        so_order(idx % 3, n, (uint32_t)(3000 + idx), order);
        P.order = order;
        so_last_encoded = 0;
        one_case_sparse(a, op, 257, &P, "sparse", mode);
        long enc = so_last_encoded, all = 0;
        MPI_Allreduce(&enc, &all, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
        T_CHECK(n < 2 || all > 0, "sparse n=%d alg=%s op=%s: no piece went encoded", n,
                algs[ai], so_names[op]);
        for (int ka = 0; ka < nka && op == SO_OVER; ka++)
          if (strcmp(kalgs[ka], algs[ai]) == 0 && n >= 4 && n % 2 == 0) {
            int k[2] = {2, n / 2};
            P.k = k;
            P.nk = 2;
            one_case_sparse(a, op, 131, &P, "sparse-kvec", mode);
            P.rounds = 1;
            one_case_sparse(a, op, 131, &P, "sparse-partial", mode);
            P.k = NULL;
            P.nk = 0;
            P.rounds = 0;
          }
      }
    bpc_assign_destroy(&a);
  }
  T_SYNC();
}
END_TEST

/* Fewer blocks than processes: ranks without blocks take part. */
START_TEST(test_fewer_blocks)
{
  const int ns[3] = {1, t_size > 2 ? t_size - 1 : 1, t_size > 3 ? t_size / 2 + 1 : 2};
  const char *algs[16];
  const int nalg = so_algos(algs, 16);
  for (int i = 0; i < 3; i++) {
    bpc_assign_t *a = make_assign(ns[i], BPC_ASSIGN_CONTIGUOUS);
    for (int ai = 0; ai < nalg; ai++) {
      bpc_swap_params_t P = bpc_swap_params_default();
      P.algorithm = algs[ai];
      P.nthreads = 1;
      int order[64];
      so_order(1, ns[i], 3u, order);
      P.order = order;
      one_case(a, SO_MAT, 19, &P, "fewer");
    }
    bpc_assign_destroy(&a);
  }
  T_SYNC();
}
END_TEST

/* 1 and 2 threads: bit-identical float results with the deterministic
 * tree, over several blocks per process (local pieces arrive together). */
START_TEST(test_threads)
{
  const int n = 2 * t_size;
  const size_t count = 12000;
  setenv("BPC_TREE_MIN_CHUNK", "64", 1); /* cut even these small pieces across threads */
  bpc_assign_t *a = make_assign(n, BPC_ASSIGN_CONTIGUOUS);
  int order[64];
  so_order(2, n, 99u, order);
  void **res[2] = {NULL, NULL};
  int nl = 0;
  const int *gids;
  bpc_assign_local(a, &gids, &nl);
  for (int T = 1; T <= 2; T++) {
    bpc_swap_params_t P = bpc_swap_params_default();
    P.algorithm = "radixk";
    P.nthreads = T;
    P.deterministic = 1;
    P.order = order;
    so_case_t c = {SO_OVER, count, P, 0};
    int rc = 0;
    char tag[64];
    snprintf(tag, sizeof tag, "[rank %d] threads T=%d", t_rank, T);
    T_CHECK(so_run(ctx, a, &c, tag, &rc, NULL, &res[T - 1]) == 0, "%s", tag);
  }
  for (int i = 0; i < nl; i++) {
    T_CHECK(memcmp(res[0][i], res[1][i], count * 16) == 0, "block %d: 1 and 2 threads differ",
            gids[i]);
    free(res[0][i]);
    free(res[1][i]);
  }
  free(res[0]);
  free(res[1]);
  unsetenv("BPC_TREE_MIN_CHUNK");
  bpc_assign_destroy(&a);
  T_SYNC();
}
END_TEST

/* Bytes sent per rank: n(p-1)/p of the buffer with one block per process. */
START_TEST(test_bytes_model)
{
  const int n = t_size;
  const size_t count = 840 * 4; /* divisible by every n in the testlist */
  bpc_assign_t *a = make_assign(n, BPC_ASSIGN_CONTIGUOUS);
  const char *algs[16];
  const int nalg = so_algos(algs, 16);
  for (int ai = 0; ai < nalg; ai++)
    for (int op = 0; op < SO_NOPS; op += 2) {
      bpc_swap_params_t P = bpc_swap_params_default();
      P.algorithm = algs[ai];
      P.nthreads = 1;
      one_case(a, op, count, &P, "bytes");
      bpc_call_stats_t st;
      bpc_stats_last_call(ctx, &st);
      const uint64_t model = (uint64_t)(count * so_elem_size(op)) * (uint64_t)(n - 1) / (uint64_t)n;
      T_CHECK(st.total.bytes_sent == model, "%s op %s: sent %llu bytes, model %llu", algs[ai],
              so_names[op], (unsigned long long)st.total.bytes_sent, (unsigned long long)model);
      T_CHECK(st.total.local_bytes == 0, "%s: local bytes %llu with one block per process",
              algs[ai], (unsigned long long)st.total.local_bytes);
      /* one record: the argument agreement and the outcome's */
      T_CHECK(strcmp(st.engine, "swap") == 0 && st.total.colls == (t_size > 1 ? 2u : 0u),
              "%s: record '%s' with %llu collectives", algs[ai], st.engine,
              (unsigned long long)st.total.colls);
    }
  bpc_assign_destroy(&a);
  T_SYNC();
}
END_TEST

static int fail_on_last_rank(const void *in, void *io, size_t n, int f, void *u)
{
  (void)u;
  if (t_rank == t_size - 1)
    return 23;
  return so_apply(SO_SUM, in, io, n, f);
}

START_TEST(test_bad_input)
{
  const int n = 2 * t_size;
  bpc_assign_t *a = make_assign(n, BPC_ASSIGN_CONTIGUOUS);
  const int *gids;
  int nl = 0;
  bpc_assign_local(a, &gids, &nl);
  float *b[2];
  bpc_swap_piece_t pc[2];
  for (int i = 0; i < nl; i++) {
    b[i] = calloc(40, sizeof(float));
    so_fill(SO_SUM, gids[i], b[i], 40);
  }
  void *const *bufs = (void *const *)b;
  bpc_type_t t = bpc_type_contiguous(4, MPI_FLOAT);
  bpc_op_t op = so_op(SO_SUM);
  bpc_swap_params_t P = bpc_swap_params_default();
  int rc;

  /* k-vector that does not multiply to n */
  int k[2] = {n, 2};
  P.k = k;
  P.nk = 2;
  rc = bpc_swap(ctx, a, &t, bufs, 40, &op, &P, pc, NULL);
  T_CHECK(rc == BPC_EKVEC, "kvec: %s", bpc_err_name(rc));

  /* an order that is not a permutation, on one rank only: all fail */
  P = bpc_swap_params_default();
  int *ord = malloc(sizeof(int) * (size_t)n);
  for (int i = 0; i < n; i++)
    ord[i] = i;
  if (t_rank == 0)
    ord[n - 1] = 0;
  P.order = ord;
  rc = bpc_swap(ctx, a, &t, bufs, 40, &op, &P, pc, NULL);
  T_CHECK(rc == BPC_EPERM, "perm: %s", bpc_err_name(rc));

  /* a valid order that differs between ranks: detected, no hang */
  if (t_size > 1) {
    for (int i = 0; i < n; i++)
      ord[i] = t_rank == 0 ? n - 1 - i : i;
    rc = bpc_swap(ctx, a, &t, bufs, 40, &op, &P, pc, NULL);
    T_CHECK(rc == BPC_EMISMATCH, "differing orders: %s", bpc_err_name(rc));
  }
  free(ord);

  /* count that differs between ranks */
  P = bpc_swap_params_default();
  if (t_size > 1) {
    rc = bpc_swap(ctx, a, &t, bufs, t_rank == 0 ? 39 : 40, &op, &P, pc, NULL);
    T_CHECK(rc == BPC_EMISMATCH, "differing counts: %s", bpc_err_name(rc));
  }

  /* operator failure on the last rank: BPC_ECALLBACK everywhere, every schedule */
  const char *algs[16];
  const int nalg = so_algos(algs, 16);
  for (int ai = 0; ai < nalg; ai++) {
    bpc_op_t fop = {fail_on_last_rank, 1, NULL};
    P = bpc_swap_params_default();
    P.algorithm = algs[ai];
    rc = bpc_swap(ctx, a, &t, bufs, 40, &fop, &P, pc, NULL);
    T_CHECK(rc == BPC_ECALLBACK, "%s op failure: %s (%s)", algs[ai], bpc_err_name(rc),
            bpc_last_error(ctx));
    if (t_rank == t_size - 1)
      T_CHECK(strstr(bpc_last_error(ctx), "returned 23") != NULL, "message: %s",
              bpc_last_error(ctx));
  }
  /* and the context still works */
  P = bpc_swap_params_default();
  one_case(a, SO_MAT, 21, &P, "after-errors");

  for (int i = 0; i < nl; i++)
    free(b[i]);
  bpc_assign_destroy(&a);
  T_SYNC();
}
END_TEST


/* ------------------------------------------------- bad argument on some ranks */

typedef struct bad_args {
  bpc_ctx_t *ctx;
  const bpc_assign_t *a;
  const bpc_type_t *type;
  void *const *bufs;
  size_t count;
  const bpc_op_t *op;
  bpc_swap_params_t P;
  bpc_swap_piece_t *pieces;
} bad_args_t;

/* Every documented argument error, then every field that must match; the
 * switch in test_bad_rank spoils the arguments of case i on the bad ranks. */
static const bad_case_t bad_cases[] = {
    {"assign NULL", BPC_ENULL, 0, NULL},
    {"type NULL", BPC_ENULL, 0, NULL},
    {"op NULL", BPC_ENULL, 0, NULL},
    {"op->fn NULL", BPC_ENULL, 0, NULL},
    {"bufs NULL", BPC_ENULL, 0, NULL},
    {"a buffer NULL", BPC_ENULL, 0, NULL},
    {"pieces NULL", BPC_ENULL, 0, NULL},
    {"custom type", BPC_ETYPE, 0, NULL},
    {"element size 0", BPC_ETYPE, 0, NULL},
    {"unknown algorithm", BPC_EALGO, 0, NULL},
    {"unknown BPC_SWAP_ALGORITHM", BPC_EALGO, 0, NULL},
    {"k-vector product", BPC_EKVEC, 0, NULL},
    {"k < 2", BPC_EKVEC, 0, NULL},
    {"nk negative", BPC_EKVEC, 0, NULL},
    {"nk too long", BPC_EKVEC, 0, NULL},
    {"order not a permutation", BPC_EPERM, 0, NULL},
    {"rounds too many", BPC_ERANGE, 0, NULL},
    {"rounds negative", BPC_ERANGE, 0, NULL},
    {"count overflows", BPC_ERANGE, 0, NULL},
    {"nthreads negative", BPC_EINVAL, 0, NULL},
    {"partial shift", BPC_EINVAL, 0, NULL},
    {"assignment of another context", BPC_EINVAL, 0, NULL},
    {"count differs", BPC_EMISMATCH, 1, "count"},
    {"k-vector differs", BPC_EMISMATCH, 1, "k-vector"},
    {"rounds differ", BPC_EMISMATCH, 1, "rounds"},
    {"order differs", BPC_EMISMATCH, 1, "order"},
    {"algorithm differs", BPC_EMISMATCH, 1, "algorithm"},
    {"BPC_SWAP_ALGORITHM differs", BPC_EMISMATCH, 1, "algorithm"},
    {"element size differs", BPC_EMISMATCH, 1, "element size"},
    {"commutativity differs", BPC_EMISMATCH, 1, "commutative"},
    {"deterministic differs", BPC_EMISMATCH, 1, "deterministic"},
};
#define NBAD ((int)(sizeof bad_cases / sizeof bad_cases[0]))

START_TEST(test_bad_rank)
{
  const int n = 2 * t_size;
  bpc_assign_t *a = make_assign(n, BPC_ASSIGN_CONTIGUOUS);
  bpc_ctx_t *other = NULL;
  bpc_assign_t *oa = NULL;
  T_CHECK(bpc_init_serial(NULL, &other) == BPC_OK, "serial context");
  T_CHECK(bpc_assign_create(other, n, BPC_ASSIGN_CONTIGUOUS, NULL, &oa) == BPC_OK, "assign");
  const int *gids;
  int nl = 0;
  bpc_assign_local(a, &gids, &nl);
  float *b[2];
  void *nullbufs[2] = {NULL, NULL};
  bpc_swap_piece_t pc[2];
  const bpc_type_t t = bpc_type_contiguous(4, MPI_FLOAT);
  const bpc_type_t t8 = bpc_type_contiguous(8, MPI_DOUBLE);
  const bpc_type_t zero = bpc_type_contiguous(0, MPI_BYTE);
  bpc_type_ops_t tops;
  memset(&tops, 0, sizeof tops);
  const bpc_type_t custom = bpc_type_custom(&tops, NULL);
  const bpc_op_t op = so_op(SO_SUM);
  bpc_op_t nofn = op, noncomm = op;
  nofn.fn = NULL;
  noncomm.commutative = 0;
  int kprod[2] = {n, 2}, kone[2] = {1, n}, kflat[1] = {n}, ksplit[2] = {2, t_size};
  int klong[BPC_SWAP_MAX_K + 1];
  for (int i = 0; i <= BPC_SWAP_MAX_K; i++)
    klong[i] = 2;
  int *ord = malloc(sizeof(int) * (size_t)n), *rev = malloc(sizeof(int) * (size_t)n);
  for (int i = 0; i < n; i++) {
    ord[i] = i;
    rev[i] = n - 1 - i;
  }
  ord[n - 1] = 0; /* not a permutation */

  for (int ci = 0; ci < NBAD; ci++)
    for (int m = 0; m < BAD_NMODES; m++) {
      const bad_case_t *C = &bad_cases[ci];
      const int bad = bad_here(m);
      for (int i = 0; i < nl; i++) {
        b[i] = calloc(40, sizeof(float));
        so_fill(SO_SUM, gids[i], b[i], 40);
      }
      bad_args_t A = {ctx, a, &t, (void *const *)b, 40, &op, bpc_swap_params_default(), pc};
      A.P.nthreads = 1;
      if (bad) {
        switch (ci) {
        case 0: A.a = NULL; break;
        case 1: A.type = NULL; break;
        case 2: A.op = NULL; break;
        case 3: A.op = &nofn; break;
        case 4: A.bufs = NULL; break;
        case 5: A.bufs = (void *const *)nullbufs; break;
        case 6: A.pieces = NULL; break;
        case 7: A.type = &custom; break;
        case 8: A.type = &zero; break;
        case 9: A.P.algorithm = "bogus"; break;
        case 10: setenv("BPC_SWAP_ALGORITHM", "bogus", 1); break;
        case 11: A.P.k = kprod; A.P.nk = 2; break;
        case 12: A.P.k = kone; A.P.nk = 2; break;
        case 13: A.P.k = kflat; A.P.nk = -1; break;
        case 14: A.P.k = klong; A.P.nk = BPC_SWAP_MAX_K + 1; break;
        case 15: A.P.order = ord; break;
        case 16: A.P.algorithm = "radixk"; A.P.rounds = BPC_SWAP_MAX_K + 1; break;
        case 17: A.P.algorithm = "radixk"; A.P.rounds = -1; break;
        case 18: A.count = SIZE_MAX / 2; break;
        case 19: A.P.nthreads = -1; break;
        case 20: A.P.algorithm = "shift"; A.P.rounds = 1; break;
        case 21: A.a = oa; break;
        case 22: A.count = 39; break;
        case 23: A.P.k = kflat; A.P.nk = 1; break;
        case 24: A.P.rounds = 1; break;
        case 25: A.P.order = rev; break;
        case 26: A.P.algorithm = "ring"; break;
        case 27: setenv("BPC_SWAP_ALGORITHM", "ring", 1); break;
        case 28: A.type = &t8; break;
        case 29: A.op = &noncomm; break;
        case 30: A.P.deterministic = 1; break;
        default: break;
        }
      }
      /* the must-match cases: the others' value, valid and different */
      if (ci == 23 && !bad) { /* the bad ranks use one round */
        A.P.k = t_size > 1 ? ksplit : kflat;
        A.P.nk = t_size > 1 ? 2 : 1;
      }
      if (ci == 24) { /* the same k-vector everywhere, partial on the bad ranks */
        A.P.k = t_size > 1 ? ksplit : kflat;
        A.P.nk = t_size > 1 ? 2 : 1;
      }
      if (ci == 26 && !bad)
        A.P.algorithm = "shift";
      if (ci == 28)
        A.count = 20; /* same count, different element size */
      int rc = bpc_swap(A.ctx, A.a, A.type, A.bufs, A.count, A.op, &A.P, A.pieces, NULL);
      unsetenv("BPC_SWAP_ALGORITHM");
      bad_check(ctx, C, m, rc);
      for (int i = 0; i < nl; i++)
        free(b[i]);
    }
  /* and the context still works */
  bpc_swap_params_t P = bpc_swap_params_default();
  one_case(a, SO_MAT, 21, &P, "after-bad-ranks");
  free(ord);
  free(rev);
  bpc_assign_destroy(&oa);
  bpc_finalize(&other);
  bpc_assign_destroy(&a);
  T_SYNC();
}
END_TEST

static Suite *swap_suite(void)
{
  Suite *s = suite_create("swap_mpi");
  TCase *tc = tcase_create("swap");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 240);
  tcase_add_test(tc, test_schedules);
  tcase_add_test(tc, test_kvectors);
  tcase_add_test(tc, test_sparse_hooks);
  tcase_add_test(tc, test_fewer_blocks);
  tcase_add_test(tc, test_threads);
  tcase_add_test(tc, test_bytes_model);
  tcase_add_test(tc, test_bundled_stages);
  tcase_add_test(tc, test_bad_input);
  tcase_add_test(tc, test_bad_rank);
  suite_add_tcase(s, tc);
  return s;
}

BPC_T_MPI_MAIN(swap_suite)
