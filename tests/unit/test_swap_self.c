/*
 * tests/unit/test_swap_self.c - swap-reduce and all-to-all on a serial
 * context (every block in one process, the in-process transport): every
 * schedule, automatic and user k-vectors, full and partial swaps, block
 * counts 1..16 (primes included), counts 0, smaller than the number of
 * blocks, odd and large, identity / reversed / random visibility orders,
 * commutative sum and non-commutative "over" and 2x2 matrix products
 * against a serial reference, 1 and 2 OpenMP threads (bit-identical with
 * the deterministic tree), statistics against the model, bad arguments.
 * The MPI suite (tests/mpi/test_swap.c) repeats the core cases across
 * processes.
 */
#include "unit_check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/swap_run.h"
#include "engines/swap/swap_internal.h"

static bpc_ctx_t *ctx;

static void setup(void) { ck_assert_int_eq(bpc_init_serial(NULL, &ctx), BPC_OK); }
static void teardown(void) { bpc_finalize(&ctx); }

static bpc_assign_t *assign_n(int n)
{
  bpc_assign_t *a = NULL;
  ck_assert_int_eq(bpc_assign_create(ctx, n, BPC_ASSIGN_CONTIGUOUS, NULL, &a), BPC_OK);
  return a;
}

static int run_case(bpc_assign_t *a, int op, size_t count, const bpc_swap_params_t *P,
                    const char *what)
{
  so_case_t c;
  char tag[256];
  int rc = 0;
  memset(&c, 0, sizeof c);
  c.op = op;
  c.count = count;
  c.params = *P;
  int n = 0;
  bpc_assign_nblocks(a, &n);
  snprintf(tag, sizeof tag, "%s n=%d op=%s count=%zu alg=%s nk=%d rounds=%d thr=%d det=%d", what,
           n, so_names[op], count, P->algorithm ? P->algorithm : "auto", P->nk, P->rounds,
           P->nthreads, P->deterministic);
  int f = so_run(ctx, a, &c, tag, &rc, NULL, NULL);
  ck_assert_msg(f == 0, "%s: %d failure(s)", tag, f);
  return f;
}

/* Every schedule, every op, several counts and orders, n = 1..16. */
START_TEST(test_all_schedules)
{
  const char *algs[16];
  const int nalg = so_algos(algs, 16) + 1; /* and "auto" */
  const size_t counts[] = {0, 1, 3, 37, 1000};
  int order[16];
  for (int n = 1; n <= 16; n++) {
    if (n > 8 && n != 12 && n != 13 && n != 16)
      continue;
    bpc_assign_t *a = assign_n(n);
    for (int ai = 0; ai < nalg; ai++)
      for (int op = 0; op < SO_NOPS; op++)
        for (int ci = 0; ci < 5; ci++)
          for (int ok = 0; ok < 3; ok++) {
            if (ci == 0 && ok > 0)
              continue;
            bpc_swap_params_t P = bpc_swap_params_default();
            P.algorithm = algs[ai];
            P.nthreads = 1;
            so_order(ok, n, (uint32_t)(n * 31 + ci), order);
            P.order = order;
            run_case(a, op, counts[ci], &P, "schedules");
          }
    bpc_assign_destroy(&a);
  }
}
END_TEST

/* User k-vectors, including binary swap, direct send and mixed radices. */
START_TEST(test_user_kvectors)
{
  static const struct {
    int n, nk, k[4];
  } kv[] = {{8, 3, {2, 2, 2}}, {8, 1, {8}},    {8, 2, {4, 2}},    {8, 2, {2, 4}},
            {12, 2, {4, 3}},   {12, 2, {3, 4}}, {12, 3, {2, 3, 2}}, {12, 1, {12}},
            {7, 1, {7}},       {15, 2, {5, 3}}, {16, 2, {4, 4}},   {6, 2, {2, 3}}};
  int order[16];
  for (unsigned i = 0; i < sizeof kv / sizeof kv[0]; i++) {
    bpc_assign_t *a = assign_n(kv[i].n);
    for (int op = 0; op < SO_NOPS; op++)
      for (int ok = 0; ok < 3; ok++)
        for (int det = 0; det < 2; det++) {
          bpc_swap_params_t P = bpc_swap_params_default();
          P.algorithm = "radixk";
          P.k = kv[i].k;
          P.nk = kv[i].nk;
          P.nthreads = 1;
          P.deterministic = det;
          so_order(ok, kv[i].n, 77u + i, order);
          P.order = order;
          run_case(a, op, 101, &P, "kvec");
          run_case(a, op, 5, &P, "kvec");
        }
    bpc_assign_destroy(&a);
  }
}
END_TEST

/* Partial swaps: every number of rounds of a few k-vectors. */
START_TEST(test_partial)
{
  static const struct {
    int n, nk, k[4];
  } kv[] = {{8, 3, {2, 2, 2}}, {12, 3, {2, 3, 2}}, {16, 2, {4, 4}}, {18, 3, {3, 2, 3}}};
  int order[32];
  for (unsigned i = 0; i < sizeof kv / sizeof kv[0]; i++) {
    bpc_assign_t *a = assign_n(kv[i].n);
    for (int rounds = 1; rounds <= kv[i].nk; rounds++)
      for (int op = 0; op < SO_NOPS; op++)
        for (int ok = 0; ok < 3; ok += 2) {
          bpc_swap_params_t P = bpc_swap_params_default();
          P.k = kv[i].k; /* auto + a k-vector = radixk */
          P.nk = kv[i].nk;
          P.rounds = rounds;
          P.nthreads = 1;
          so_order(ok, kv[i].n, 5u + i, order);
          P.order = order;
          run_case(a, op, 63, &P, "partial");
        }
    bpc_assign_destroy(&a);
  }
}
END_TEST

/* Threads: 1 and 2 threads give correct results; with the deterministic
 * tree, float "over" results are bit-identical (large pieces so merges are
 * cut across threads). */
START_TEST(test_threads_identical)
{
  const int n = 8;
  const size_t count = 400000;
  bpc_assign_t *a = assign_n(n);
  static const int k8[1] = {8}, k42[2] = {4, 2};
  const int *ks[2] = {k8, k42};
  const int nks[2] = {1, 2};
  int order[8];
  so_order(2, n, 11u, order);
  for (int v = 0; v < 2; v++) {
    void **res[2] = {NULL, NULL};
    for (int T = 1; T <= 2; T++) {
      bpc_swap_params_t P = bpc_swap_params_default();
      P.algorithm = "radixk";
      P.k = ks[v];
      P.nk = nks[v];
      P.nthreads = T;
      P.deterministic = 1;
      P.order = order;
      so_case_t c = {SO_OVER, count, P, 0};
      int rc = 0;
      int f = so_run(ctx, a, &c, "threads", &rc, NULL, &res[T - 1]);
      ck_assert_int_eq(f, 0);
    }
    for (int i = 0; i < n; i++) {
      ck_assert_msg(memcmp(res[0][i], res[1][i], count * 16) == 0,
                    "block %d: 1 and 2 threads differ", i);
      free(res[0][i]);
      free(res[1][i]);
    }
    free(res[0]);
    free(res[1]);
  }
  /* arrival order with threads is correct too */
  for (int op = 0; op < SO_NOPS; op++) {
    bpc_swap_params_t P = bpc_swap_params_default();
    P.algorithm = "radixk";
    P.nthreads = 2;
    P.order = order;
    run_case(a, op, 100003, &P, "threads-arrival");
  }
  bpc_assign_destroy(&a);
}
END_TEST

/* Bytes moved: (n-1)/n of the buffer per block, for every schedule. */
START_TEST(test_stats_model)
{
  const int n = 8;
  const size_t count = 800;
  bpc_assign_t *a = assign_n(n);
  const char *algs[16];
  const int nalg = so_algos(algs, 16);
  for (int ai = 0; ai < nalg; ai++)
    for (int op = 0; op < SO_NOPS; op += 2) {
      bpc_swap_params_t P = bpc_swap_params_default();
      P.algorithm = algs[ai];
      P.nthreads = 1;
      ck_assert_int_eq(bpc_stats_reset(ctx), BPC_OK);
      run_case(a, op, count, &P, "stats");
      bpc_call_stats_t st;
      ck_assert_int_eq(bpc_stats_last_call(ctx, &st), BPC_OK);
      ck_assert_str_eq(st.engine, "swap");
      const uint64_t per_block = (uint64_t)(count * so_elem_size(op)) * (n - 1) / n;
      ck_assert_uint_eq(st.total.local_bytes, per_block * n);
      ck_assert_uint_eq(st.total.bytes_sent, 0);
      ck_assert_uint_eq(st.total.op_calls, (uint64_t)(n - 1) * n);
    }
  bpc_assign_destroy(&a);
}
END_TEST

static int fail_op(const void *in, void *io, size_t n, int f, void *u)
{
  int *calls = u;
  (*calls)++;
  if (*calls == 3)
    return 17;
  return so_apply(SO_SUM, in, io, n, f);
}

START_TEST(test_bad_input)
{
  const int n = 6;
  bpc_assign_t *a = assign_n(n);
  float *b[6];
  bpc_swap_piece_t pc[6];
  for (int i = 0; i < n; i++) {
    b[i] = calloc(12, sizeof(float));
    so_fill(SO_SUM, i, b[i], 12);
  }
  void *const *bufs = (void *const *)b;
  bpc_type_t t = bpc_type_contiguous(4, MPI_FLOAT);
  bpc_op_t op = so_op(SO_SUM);
  bpc_swap_params_t P = bpc_swap_params_default();

  int k[2] = {4, 2};
  P.k = k;
  P.nk = 2;
  ck_assert_int_eq(bpc_swap(ctx, a, &t, bufs, 12, &op, &P, pc, NULL), BPC_EKVEC);
  ck_assert_msg(strstr(bpc_last_error(ctx), "4x2") != NULL, "%s", bpc_last_error(ctx));
  int k1[2] = {1, 6};
  P.k = k1;
  ck_assert_int_eq(bpc_swap(ctx, a, &t, bufs, 12, &op, &P, pc, NULL), BPC_EKVEC);

  P = bpc_swap_params_default();
  int ord[6] = {0, 1, 2, 2, 4, 5};
  P.order = ord;
  ck_assert_int_eq(bpc_swap(ctx, a, &t, bufs, 12, &op, &P, pc, NULL), BPC_EPERM);
  int ord2[6] = {0, 1, 2, 3, 4, 6};
  P.order = ord2;
  ck_assert_int_eq(bpc_swap(ctx, a, &t, bufs, 12, &op, &P, pc, NULL), BPC_EPERM);

  P = bpc_swap_params_default();
  P.algorithm = "bogus";
  ck_assert_int_eq(bpc_swap(ctx, a, &t, bufs, 12, &op, &P, pc, NULL), BPC_EALGO);
  P.algorithm = "shift";
  P.rounds = 1;
  ck_assert_int_eq(bpc_swap(ctx, a, &t, bufs, 12, &op, &P, pc, NULL), BPC_EINVAL);
  P.algorithm = "radixk";
  P.rounds = 5;
  ck_assert_int_eq(bpc_swap(ctx, a, &t, bufs, 12, &op, &P, pc, NULL), BPC_ERANGE);
  P.rounds = -1;
  ck_assert_int_eq(bpc_swap(ctx, a, &t, bufs, 12, &op, &P, pc, NULL), BPC_ERANGE);
  P = bpc_swap_params_default();
  P.nthreads = -2;
  ck_assert_int_eq(bpc_swap(ctx, a, &t, bufs, 12, &op, &P, pc, NULL), BPC_EINVAL);

  P = bpc_swap_params_default();
  bpc_type_ops_t tops;
  memset(&tops, 0, sizeof tops);
  bpc_type_t custom = bpc_type_custom(&tops, NULL);
  ck_assert_int_eq(bpc_swap(ctx, a, &custom, bufs, 12, &op, &P, pc, NULL), BPC_ETYPE);
  bpc_type_t zero = bpc_type_contiguous(0, MPI_BYTE);
  ck_assert_int_eq(bpc_swap(ctx, a, &zero, bufs, 12, &op, &P, pc, NULL), BPC_ETYPE);
  ck_assert_int_eq(bpc_swap(ctx, a, &t, NULL, 12, &op, &P, pc, NULL), BPC_ENULL);
  ck_assert_int_eq(bpc_swap(ctx, a, &t, bufs, 12, &op, &P, NULL, NULL), BPC_ENULL);
  ck_assert_int_eq(bpc_swap(ctx, a, &t, bufs, 12, NULL, &P, pc, NULL), BPC_ENULL);
  ck_assert_int_eq(bpc_swap(ctx, NULL, &t, bufs, 12, &op, &P, pc, NULL), BPC_ENULL);
  ck_assert_int_eq(bpc_swap(NULL, a, &t, bufs, 12, &op, &P, pc, NULL), BPC_ENULL);
  ck_assert_int_eq(bpc_swap(ctx, a, &t, bufs, SIZE_MAX / 2, &op, &P, pc, NULL), BPC_ERANGE);

  /* operator failure: every schedule finishes and reports it */
  const char *algs[16];
  const int nalg = so_algos(algs, 16);
  for (int ai = 0; ai < nalg; ai++) {
    int calls = 0;
    bpc_op_t fop = {fail_op, 1, &calls};
    P = bpc_swap_params_default();
    P.algorithm = algs[ai];
    P.nthreads = 1;
    ck_assert_int_eq(bpc_swap(ctx, a, &t, bufs, 12, &fop, &P, pc, NULL), BPC_ECALLBACK);
    ck_assert_msg(strstr(bpc_last_error(ctx), "returned 17") != NULL, "%s", bpc_last_error(ctx));
    ck_assert_int_eq(calls, 3); /* no operator call after the failure */
  }
  /* the context still works afterwards */
  P = bpc_swap_params_default();
  P.nthreads = 1;
  run_case(a, SO_MAT, 40, &P, "after-errors");

  /* count 0: buffers may be NULL; every piece is empty */
  for (int ai = 0; ai < nalg; ai++) {
    P = bpc_swap_params_default();
    P.algorithm = algs[ai];
    for (int i = 0; i < n; i++)
      pc[i].offset = pc[i].count = 99;
    ck_assert_int_eq(bpc_swap(ctx, a, &t, NULL, 0, &op, &P, pc, NULL), BPC_OK);
    for (int i = 0; i < n; i++)
      ck_assert(pc[i].offset == 0 && pc[i].count == 0);
  }

  /* piece_of arguments */
  bpc_swap_info_t info;
  memset(&info, 0, sizeof info);
  bpc_swap_piece_t one;
  ck_assert_int_eq(bpc_swap_piece_of(NULL, 10, 0, &one), BPC_ENULL);
  ck_assert_int_eq(bpc_swap_piece_of(&info, 10, 0, &one), BPC_EINVAL);
  info.nblocks = 4;
  info.algorithm = BPC_SWAP_SHIFT;
  ck_assert_int_eq(bpc_swap_piece_of(&info, 10, 4, &one), BPC_ERANGE);
  ck_assert_int_eq(bpc_swap_piece_of(&info, 10, 3, &one), BPC_OK);
  ck_assert_uint_eq(one.offset, 7);
  ck_assert_uint_eq(one.count, 3);

  for (int i = 0; i < n; i++)
    free(b[i]);
  bpc_assign_destroy(&a);
}
END_TEST

/* Environment: BPC_SWAP_ALGORITHM forces a schedule for "auto" and a bad
 * name is BPC_EALGO; a tuning file drives "auto". */
START_TEST(test_env_and_tuning)
{
  const int n = 12;
  bpc_assign_t *a = assign_n(n);
  bpc_swap_params_t P = bpc_swap_params_default();
  P.nthreads = 1;
  so_case_t c = {SO_MAT, 50, P, 0};
  bpc_swap_info_t info;
  int rc = 0;

  setenv("BPC_SWAP_ALGORITHM", "Ring", 1); /* names are case-insensitive */
  ck_assert_int_eq(so_run(ctx, a, &c, "env", &rc, &info, NULL), 0);
  ck_assert_int_eq(info.algorithm, BPC_SWAP_RING);
  ck_assert_int_eq(info.source, BPC_SOURCE_ENV);
  setenv("BPC_SWAP_ALGORITHM", "nope", 1);
  so_run(ctx, a, &c, "env-bad (expected failure)", &rc, NULL, NULL);
  ck_assert_int_eq(rc, BPC_EALGO);
  unsetenv("BPC_SWAP_ALGORITHM");

  char path[] = "/tmp/bpc_tune_testXXXXXX";
  int fd = mkstemp(path);
  ck_assert_int_ge(fd, 0);
  FILE *f = fdopen(fd, "w");
  fprintf(f, "# test tuning file\nswap 12 1 64 0 shift - 0.1\nswap 12 1 100000 0 radixk 3x2x2 0.2\n"
             "swap 12 1 200 1 ring - 0.1\nmerge 12 1 64 0 x - 0\nswap 12 1 garbage\n");
  fclose(f);
  setenv("BPC_TUNING_FILE", path, 1);
  c.count = 1000; /* 16000 bytes: nearest non-commutative entry is 100000 */
  ck_assert_int_eq(so_run(ctx, a, &c, "tuning", &rc, &info, NULL), 0);
  ck_assert_int_eq(info.algorithm, BPC_SWAP_RADIXK);
  ck_assert_int_eq(info.source, BPC_SOURCE_TUNING);
  ck_assert_int_eq(info.nk, 3);
  ck_assert_int_eq(info.k[0], 3);
  c.count = 2; /* 32 bytes: the 64-byte entry */
  ck_assert_int_eq(so_run(ctx, a, &c, "tuning", &rc, &info, NULL), 0);
  ck_assert_int_eq(info.algorithm, BPC_SWAP_SHIFT);
  c.op = SO_SUM; /* commutative: the commutative entry wins */
  ck_assert_int_eq(so_run(ctx, a, &c, "tuning", &rc, &info, NULL), 0);
  ck_assert_int_eq(info.algorithm, BPC_SWAP_RING);
  /* a k-vector in the call means radixk from the argument, not the file */
  int k34[2] = {3, 4};
  c.params.k = k34;
  c.params.nk = 2;
  ck_assert_int_eq(so_run(ctx, a, &c, "tuning+k", &rc, &info, NULL), 0);
  ck_assert_int_eq(info.algorithm, BPC_SWAP_RADIXK);
  ck_assert_int_eq(info.source, BPC_SOURCE_ARGUMENT);
  ck_assert_int_eq(info.k[0], 3);
  c.params.k = NULL;
  c.params.nk = 0;
  unsetenv("BPC_TUNING_FILE");
  remove(path);
  ck_assert_int_eq(so_run(ctx, a, &c, "builtin", &rc, &info, NULL), 0);
  ck_assert_int_eq(info.source, BPC_SOURCE_BUILTIN);
  ck_assert_int_eq(info.algorithm, BPC_SWAP_RADIXK);
  bpc_assign_destroy(&a);
}
END_TEST

/* ------------------------------------------------------------ all-to-all */

typedef struct a2a_ud {
  int n;
  bpc_buf_t *items; /* n*n, item src->dst at [src*n+dst] */
  unsigned char *seen;
  int bad;
} a2a_ud_t;

/* size of the item src -> dst: empty for some pairs, NULL (no item) for others */
static int a2a_len(int src, int dst) { return (int)(so_hash((uint32_t)src, (uint32_t)dst, 1u) % 40u) - 5; }

static int a2a_send(int src, int dst, const void **item, void *user)
{
  a2a_ud_t *u = user;
  *item = a2a_len(src, dst) < 0 ? NULL : &u->items[src * u->n + dst];
  return 0;
}

static int a2a_recv(int dst, int src, void *item, void *user)
{
  a2a_ud_t *u = user;
  const bpc_buf_t *b = item;
  int len = a2a_len(src, dst);
  if (len < 0 || b->count != (size_t)len || u->seen[src * u->n + dst]++)
    u->bad++;
  for (int i = 0; i < len; i++)
    if (((const int *)b->data)[i] != src * 1000 + dst + i)
      u->bad++;
  return 0;
}

START_TEST(test_alltoall_self)
{
  for (int n = 1; n <= 12; n++) {
    bpc_assign_t *a = assign_n(n);
    a2a_ud_t u;
    u.n = n;
    u.items = calloc((size_t)(n * n), sizeof(bpc_buf_t));
    u.seen = calloc((size_t)(n * n), 1);
    for (int s = 0; s < n; s++)
      for (int d = 0; d < n; d++) {
        int len = a2a_len(s, d);
        int *v = malloc(sizeof(int) * (size_t)(len > 0 ? len : 1));
        for (int i = 0; i < len; i++)
          v[i] = s * 1000 + d + i;
        u.items[s * n + d].data = v;
        u.items[s * n + d].count = len > 0 ? (size_t)len : 0;
      }
    bpc_type_t t = bpc_type_contiguous(sizeof(int), MPI_INT);
    for (int variant = 0; variant < 2; variant++) {
      memset(u.seen, 0, (size_t)(n * n));
      u.bad = 0;
      bpc_alltoall_params_t ap = bpc_alltoall_params_default();
      int one[1] = {n};
      if (variant == 1) {
        ap.k = one;
        ap.nk = n > 1 ? 1 : 0;
      }
      int rc = bpc_alltoall(ctx, a, &t, a2a_send, a2a_recv, &u, &ap, NULL);
      ck_assert_msg(rc == BPC_OK, "n=%d: %s", n, bpc_last_error(ctx));
      ck_assert_int_eq(u.bad, 0);
      for (int s = 0; s < n; s++)
        for (int d = 0; d < n; d++)
          ck_assert_int_eq(u.seen[s * n + d], a2a_len(s, d) >= 0 ? 1 : 0);
    }
    for (int i = 0; i < n * n; i++)
      free(u.items[i].data);
    free(u.items);
    free(u.seen);
    bpc_assign_destroy(&a);
  }
}
END_TEST

/* The registry: bpc_algorithms("swap") lists every schedule with a name,
 * a description and a distinct id, and each name runs as itself. */
START_TEST(test_registry)
{
  bpc_algo_info_t t[16];
  int n = 0;
  ck_assert_int_eq(bpc_algorithms("swap", NULL, 0, &n), BPC_OK);
  ck_assert_int_ge(n, 3);
  ck_assert_int_eq(bpc_algorithms("SWAP", t, 16, &n), BPC_OK);
  bpc_assign_t *a = assign_n(6);
  for (int i = 0; i < n; i++) {
    ck_assert(t[i].name != NULL && t[i].desc != NULL && t[i].id != BPC_SWAP_AUTO);
    for (int j = 0; j < i; j++)
      ck_assert_int_ne(t[i].id, t[j].id);
    bpc_swap_params_t P = bpc_swap_params_default();
    P.algorithm = t[i].name;
    P.nthreads = 1;
    so_case_t c = {SO_MAT, 30, P, 0};
    bpc_swap_info_t info;
    int rc = 0;
    ck_assert_int_eq(so_run(ctx, a, &c, t[i].name, &rc, &info, NULL), 0);
    ck_assert_int_eq(info.algorithm, t[i].id);
    ck_assert_str_eq(info.name, t[i].name);
    ck_assert_int_eq(info.source, BPC_SOURCE_ARGUMENT);
  }
  ck_assert_int_eq(bpc_algorithms("alltoall", t, 16, &n), BPC_OK);
  ck_assert_int_eq(n, 1);
  ck_assert_str_eq(t[0].name, "rounds");
  bpc_assign_destroy(&a);
}
END_TEST

/* The internal entry compositing uses: plan with a forced schedule (the
 * name in params is ignored), the signature, one agreement, exec; an
 * unknown id fails in the plan. */
START_TEST(test_plan_by_id)
{
  const int n = 6;
  const size_t count = 30;
  bpc_assign_t *a = assign_n(n);
  bpc_type_t t = bpc_type_contiguous(16, MPI_BYTE);
  bpc_op_t op = so_op(SO_MAT);
  bpc_swap_params_t P = bpc_swap_params_default();
  P.algorithm = "ring"; /* ignored: the id wins */
  P.nthreads = 1;
  void *bufs[6];
  bpc_swap_piece_t pc[6];
  for (int i = 0; i < n; i++) {
    bufs[i] = malloc(count * 16);
    so_fill(SO_MAT, i, bufs[i], count);
  }
  bpc__swap_plan_t plan;
  ck_assert_int_eq(bpc__swap_plan_by_id(ctx, a, &t, count, &op, &P, BPC_SWAP_SHIFT, &plan),
                   BPC_OK);
  ck_assert_int_eq(plan.row->info.id, BPC_SWAP_SHIFT);
  ck_assert_int_eq(plan.source, BPC_SOURCE_ARGUMENT);
  bpc__sig_t sig;
  bpc__sig_init(&sig);
  bpc__sig_int(&sig, "caller's own field", 7);
  bpc__swap_plan_sig(&plan, &sig);
  ck_assert_int_eq(sig.n, 13); /* 12 swap fields (with the assignment's two) */
  ck_assert_int_eq(bpc__agree_args(ctx, "test", plan.rc, &sig), BPC_OK);
  bpc_swap_info_t info;
  ck_assert_int_eq(bpc__swap_exec(&plan, bufs, pc, &info), BPC_OK);
  ck_assert_int_eq(info.algorithm, BPC_SWAP_SHIFT);
  ck_assert_int_eq(info.source, BPC_SOURCE_ARGUMENT);
  for (int i = 0; i < n; i++) {
    bpc_swap_piece_t q;
    ck_assert_int_eq(bpc_swap_piece_of(&info, count, i, &q), BPC_OK);
    ck_assert(q.offset == pc[i].offset && q.count == pc[i].count);
    for (size_t e = q.offset; e < q.offset + q.count; e++) {
      unsigned char ref[16];
      int order[6] = {0, 1, 2, 3, 4, 5};
      so_reference(SO_MAT, order, 0, n, e, ref);
      ck_assert(so_equal(SO_MAT, (char *)bufs[i] + e * 16, ref));
    }
  }
  bpc__swap_plan_free(&plan);
  bpc__swap_plan_free(&plan); /* idempotent */

  /* radixk forced with a k-vector from params */
  int k32[2] = {3, 2};
  P.k = k32;
  P.nk = 2;
  ck_assert_int_eq(bpc__swap_plan_by_id(ctx, a, &t, count, &op, &P, BPC_SWAP_RADIXK, &plan),
                   BPC_OK);
  ck_assert(plan.nk == 2 && plan.k[0] == 3 && plan.k[1] == 2 && plan.nrounds == 2);
  bpc__swap_plan_free(&plan);
  /* an unknown id, and a plan error is what exec returns */
  ck_assert_int_eq(bpc__swap_plan_by_id(ctx, a, &t, count, &op, &P, (bpc_swap_algorithm_t)99,
                                        &plan), BPC_EALGO);
  ck_assert_ptr_null(plan.row);
  ck_assert_int_eq(bpc__swap_exec(&plan, bufs, pc, NULL), BPC_EALGO);
  bpc__swap_plan_free(&plan);
  for (int i = 0; i < n; i++)
    free(bufs[i]);
  bpc_assign_destroy(&a);
}
END_TEST

static Suite *swap_self_suite(void)
{
  Suite *s = suite_create("swap_self");
  TCase *tc = tcase_create("swap");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_all_schedules);
  tcase_add_test(tc, test_user_kvectors);
  tcase_add_test(tc, test_partial);
  tcase_add_test(tc, test_threads_identical);
  tcase_add_test(tc, test_stats_model);
  tcase_add_test(tc, test_bad_input);
  tcase_add_test(tc, test_env_and_tuning);
  tcase_add_test(tc, test_registry);
  tcase_add_test(tc, test_plan_by_id);
  tcase_add_test(tc, test_alltoall_self);
  suite_add_tcase(s, tc);
  return s;
}

BPC_T_UNIT_MAIN(swap_self_suite)
