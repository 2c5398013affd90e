/*
 * tests/mpi/test_alltoall.c - all-to-all over swap rounds under MPI: every
 * block sends a variable-size item to every block (some empty, some none at
 * all), with contiguous items (ints) and custom items (strings with their
 * own pack/unpack), 1..3 blocks per process and fewer blocks than
 * processes, automatic, one-round and smallest-factor k-vectors. Every
 * receiver checks it got exactly the expected items with the expected
 * content, in ascending source order; a failing callback on one rank gives
 * BPC_ECALLBACK on all; every documented argument error and every field
 * that must match (k-vector, block count, type, element size), bad on rank
 * 0 only, on the last rank only and on all, gives the same code everywhere
 * and never hangs.
 */
#include "mpi_check.h"
#include "bad_case.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/str_type.h"
#include "../common/swap_ops.h"

static bpc_ctx_t *ctx;

static void setup(void) { ck_assert_int_eq(bpc_init(MPI_COMM_WORLD, NULL, &ctx), BPC_OK); }
static void teardown(void) { bpc_finalize(&ctx); }

/* Item src -> dst: length -1 (no item), 0 (empty) or up to 300 elements. */
static int item_len(int src, int dst, int salt)
{
  uint32_t h = so_hash((uint32_t)src, (uint32_t)dst, (uint32_t)salt);
  if (h % 7u == 0)
    return -1;
  if (h % 7u == 1)
    return 0;
  return (int)(h % 300u);
}

typedef struct ud {
  int n, salt, custom;
  int fail_rank;
  const int *gids;
  int nl;
  bpc_buf_t *bufs;   /* contiguous items of local sources: nl * n */
  char **strs;       /* custom items: nl * n */
  int *last_src;     /* per local block: last source seen (ascending check) */
  unsigned char *seen; /* nl * n */
  int bad;
} ud_t;

static int local_index(const ud_t *u, int gid)
{
  for (int i = 0; i < u->nl; i++)
    if (u->gids[i] == gid)
      return i;
  return -1;
}

static int a_send(int src, int dst, const void **item, void *user)
{
  ud_t *u = user;
  const int li = local_index(u, src);
  if (item_len(src, dst, u->salt) < 0) {
    *item = NULL;
    return 0;
  }
  if (u->custom)
    *item = u->strs[li * u->n + dst];
  else
    *item = &u->bufs[li * u->n + dst];
  return 0;
}

static int a_recv(int dst, int src, void *item, void *user)
{
  ud_t *u = user;
  if (t_rank == u->fail_rank)
    return 5;
  const int li = local_index(u, dst);
  const int len = item_len(src, dst, u->salt);
  if (li < 0 || len < 0 || src <= u->last_src[li] || u->seen[li * u->n + src]) {
    u->bad++;
    return 0;
  }
  u->last_src[li] = src;
  u->seen[li * u->n + src] = 1;
  if (u->custom) {
    const char *s = item;
    if ((int)strlen(s) != len)
      u->bad++;
    for (int i = 0; i < len && i < (int)strlen(s); i++)
      if (s[i] != 'a' + (src * 7 + dst + i) % 26)
        u->bad++;
  } else {
    const bpc_buf_t *b = item;
    if (b->count != (size_t)len)
      u->bad++;
    else
      for (int i = 0; i < len; i++)
        if (((const int *)b->data)[i] != src * 100000 + dst * 300 + i)
          u->bad++;
  }
  return 0;
}

static void run_a2a(int n, int custom, const int *k, int nk, int fail_rank, int expect_rc,
                    const char *what)
{
  bpc_assign_t *a = NULL;
  int rc = bpc_assign_create(ctx, n, BPC_ASSIGN_CONTIGUOUS, NULL, &a);
  T_CHECK(rc == BPC_OK, "assign");
  ud_t u;
  memset(&u, 0, sizeof u);
  u.n = n;
  u.salt = n * 3 + custom + nk;
  u.custom = custom;
  u.fail_rank = fail_rank;
  bpc_assign_local(a, &u.gids, &u.nl);
  const size_t m = (size_t)(u.nl > 0 ? u.nl : 1) * (size_t)n;
  u.bufs = calloc(m, sizeof *u.bufs);
  u.strs = calloc(m, sizeof *u.strs);
  u.seen = calloc(m, 1);
  u.last_src = malloc(sizeof(int) * (size_t)(u.nl > 0 ? u.nl : 1));
  for (int i = 0; i < u.nl; i++) {
    u.last_src[i] = -1;
    for (int d = 0; d < n; d++) {
      const int s = u.gids[i], len = item_len(s, d, u.salt);
      int *v = malloc(sizeof(int) * (size_t)(len > 0 ? len : 1));
      char *str = malloc((size_t)(len > 0 ? len : 0) + 1);
      for (int e = 0; e < len; e++) {
        v[e] = s * 100000 + d * 300 + e;
        str[e] = (char)('a' + (s * 7 + d + e) % 26);
      }
      str[len > 0 ? len : 0] = '\0';
      u.bufs[i * n + d].data = v;
      u.bufs[i * n + d].count = len > 0 ? (size_t)len : 0;
      u.strs[i * n + d] = str;
    }
  }
  bpc_type_ops_t ops = str_ops();
  bpc_type_t t = custom ? bpc_type_custom(&ops, NULL) : bpc_type_contiguous(sizeof(int), MPI_INT);
  bpc_alltoall_params_t ap = bpc_alltoall_params_default();
  ap.k = k;
  ap.nk = nk;
  bpc_alltoall_info_t info;
  rc = bpc_alltoall(ctx, a, &t, a_send, a_recv, &u, &ap, &info);
  T_CHECK(rc == expect_rc, "%s n=%d custom=%d nk=%d: got %s (%s), want %s", what, n, custom, nk,
          bpc_err_name(rc), bpc_last_error(ctx), bpc_err_name(expect_rc));
  if (expect_rc == BPC_OK && rc == BPC_OK) {
    /* what ran: the rounds routing, from the built-in choice, with the
     * given k-vector (or an automatic one whose product is n) */
    int prod = 1;
    for (int r = 0; r < info.nk; r++)
      prod *= info.k[r];
    T_CHECK(info.algorithm == BPC_ALLTOALL_ROUNDS && strcmp(info.name, "rounds") == 0 &&
                info.source == BPC_SOURCE_BUILTIN && (n == 1 || prod == n) &&
                (nk == 0 || (info.nk == nk && memcmp(info.k, k, sizeof(int) * (size_t)nk) == 0)),
            "%s n=%d: info %d '%s' source %d nk %d (product %d)", what, n, (int)info.algorithm,
            info.name, (int)info.source, info.nk, prod);
  }
  if (expect_rc == BPC_OK) {
    T_CHECK(u.bad == 0, "%s n=%d: %d bad deliveries", what, n, u.bad);
    for (int i = 0; i < u.nl; i++)
      for (int s = 0; s < n; s++)
        T_CHECK(u.seen[i * n + s] == (item_len(s, u.gids[i], u.salt) >= 0),
                "%s n=%d: item %d -> %d delivered %d times", what, n, s, u.gids[i],
                u.seen[i * n + s]);
  }
  for (size_t i = 0; i < (size_t)u.nl * (size_t)n; i++) {
    free(u.bufs[i].data);
    free(u.strs[i]);
  }
  free(u.bufs);
  free(u.strs);
  free(u.seen);
  free(u.last_src);
  bpc_assign_destroy(&a);
}

START_TEST(test_alltoall_variants)
{
  for (int bpp = 1; bpp <= 3; bpp++) {
    const int n = bpp * t_size;
    int small[32], nsmall = 0, m = n;
    for (int f = 2; m > 1 && f <= m; f++)
      while (m % f == 0) {
        small[nsmall++] = f;
        m /= f;
      }
    int one[1] = {n};
    for (int custom = 0; custom < 2; custom++) {
      run_a2a(n, custom, NULL, 0, -1, BPC_OK, "auto");
      if (n > 1)
        run_a2a(n, custom, one, 1, -1, BPC_OK, "direct");
      run_a2a(n, custom, nsmall ? small : NULL, nsmall, -1, BPC_OK, "smallest");
    }
  }
  /* fewer blocks than processes */
  run_a2a(1, 0, NULL, 0, -1, BPC_OK, "one block");
  if (t_size > 2)
    run_a2a(t_size - 1, 1, NULL, 0, -1, BPC_OK, "fewer");
  T_SYNC();
}
END_TEST

START_TEST(test_alltoall_errors)
{
  const int n = 2 * t_size;
  run_a2a(n, 0, NULL, 0, t_size - 1, BPC_ECALLBACK, "recv failure");
  int bad[2] = {n, 2};
  run_a2a(n, 0, bad, 2, -1, BPC_EKVEC, "bad kvec");
  T_SYNC();
}
END_TEST

/* ------------------------------------------------- bad argument on some ranks */

static int none_send(int src, int dst, const void **item, void *user)
{
  (void)src;
  (void)dst;
  (void)user;
  *item = NULL;
  return 0;
}

static int none_recv(int dst, int src, void *item, void *user)
{
  (void)dst;
  (void)src;
  (void)item;
  (void)user;
  return 0;
}

/* Every documented argument error, then every field that must match; the
 * switch in test_alltoall_bad_rank spoils case i on the bad ranks. */
static const bad_case_t bad_cases[] = {
    {"assign NULL", BPC_ENULL, 0, NULL},
    {"type NULL", BPC_ENULL, 0, NULL},
    {"send NULL", BPC_ENULL, 0, NULL},
    {"recv NULL", BPC_ENULL, 0, NULL},
    {"custom type without callbacks", BPC_ETYPE, 0, NULL},
    {"unknown algorithm", BPC_EALGO, 0, NULL},
    {"unknown BPC_ALLTOALL_ALGORITHM", BPC_EALGO, 0, NULL},
    {"k-vector product", BPC_EKVEC, 0, NULL},
    {"k < 2", BPC_EKVEC, 0, NULL},
    {"nk negative", BPC_EKVEC, 0, NULL},
    {"nk too long", BPC_EKVEC, 0, NULL},
    {"nthreads negative", BPC_EINVAL, 0, NULL},
    {"assignment of another context", BPC_EINVAL, 0, NULL},
    {"k-vector differs", BPC_EMISMATCH, 1, "k-vector"},
    {"block count differs", BPC_EMISMATCH, 1, "block count"},
    {"type differs", BPC_EMISMATCH, 1, "type kind"},
    {"element size differs", BPC_EMISMATCH, 1, "element size"},
};
#define NBAD ((int)(sizeof bad_cases / sizeof bad_cases[0]))

START_TEST(test_alltoall_bad_rank)
{
  const int n = 2 * t_size;
  bpc_assign_t *a = NULL, *a1 = NULL, *oa = NULL;
  bpc_ctx_t *other = NULL;
  T_CHECK(bpc_assign_create(ctx, n, BPC_ASSIGN_CONTIGUOUS, NULL, &a) == BPC_OK, "assign");
  T_CHECK(bpc_assign_create(ctx, n + 1, BPC_ASSIGN_CONTIGUOUS, NULL, &a1) == BPC_OK, "assign");
  T_CHECK(bpc_init_serial(NULL, &other) == BPC_OK, "serial context");
  T_CHECK(bpc_assign_create(other, n, BPC_ASSIGN_CONTIGUOUS, NULL, &oa) == BPC_OK, "assign");
  const bpc_type_t ti = bpc_type_contiguous(sizeof(int), MPI_INT);
  const bpc_type_t td = bpc_type_contiguous(sizeof(double), MPI_DOUBLE);
  bpc_type_ops_t none;
  memset(&none, 0, sizeof none);
  const bpc_type_t tbad = bpc_type_custom(&none, NULL);
  bpc_type_ops_t ops = str_ops();
  const bpc_type_t tstr = bpc_type_custom(&ops, NULL);
  int kprod[2] = {n, 2}, kone[2] = {1, n}, kflat[1] = {n}, ksplit[2] = {2, t_size};
  int klong[BPC_ALLTOALL_MAX_K + 1];
  for (int i = 0; i <= BPC_ALLTOALL_MAX_K; i++)
    klong[i] = 2;

  for (int ci = 0; ci < NBAD; ci++)
    for (int m = 0; m < BAD_NMODES; m++) {
      const bad_case_t *C = &bad_cases[ci];
      const int bad = bad_here(m);
      const bpc_assign_t *A = a;
      const bpc_type_t *T = &ti;
      bpc_a2a_send_fn snd = none_send;
      bpc_a2a_recv_fn rcv = none_recv;
      bpc_alltoall_params_t P = bpc_alltoall_params_default();
      if (ci == 13) { /* one round on the bad ranks, two elsewhere */
        P.k = bad || t_size == 1 ? kflat : ksplit;
        P.nk = bad || t_size == 1 ? 1 : 2;
      }
      if (bad) {
        switch (ci) {
        case 0: A = NULL; break;
        case 1: T = NULL; break;
        case 2: snd = NULL; break;
        case 3: rcv = NULL; break;
        case 4: T = &tbad; break;
        case 5: P.algorithm = "bogus"; break;
        case 6: setenv("BPC_ALLTOALL_ALGORITHM", "bogus", 1); break;
        case 7: P.k = kprod; P.nk = 2; break;
        case 8: P.k = kone; P.nk = 2; break;
        case 9: P.k = kflat; P.nk = -1; break;
        case 10: P.k = klong; P.nk = BPC_ALLTOALL_MAX_K + 1; break;
        case 11: P.nthreads = -1; break;
        case 12: A = oa; break;
        case 14: A = a1; break;
        case 15: T = &tstr; break;
        case 16: T = &td; break;
        default: break;
        }
      }
      int rc = bpc_alltoall(ctx, A, T, snd, rcv, NULL, &P, NULL);
      unsetenv("BPC_ALLTOALL_ALGORITHM");
      bad_check(ctx, C, m, rc);
    }
  /* the context still works */
  run_a2a(n, 0, NULL, 0, -1, BPC_OK, "after bad ranks");
  bpc_assign_destroy(&oa);
  bpc_finalize(&other);
  bpc_assign_destroy(&a1);
  bpc_assign_destroy(&a);
  T_SYNC();
}
END_TEST

static Suite *a2a_suite(void)
{
  Suite *s = suite_create("alltoall_mpi");
  TCase *tc = tcase_create("alltoall");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 240);
  tcase_add_test(tc, test_alltoall_variants);
  tcase_add_test(tc, test_alltoall_errors);
  tcase_add_test(tc, test_alltoall_bad_rank);
  suite_add_tcase(s, tc);
  return s;
}

BPC_T_MPI_MAIN(a2a_suite)
