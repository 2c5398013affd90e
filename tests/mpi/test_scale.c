/*
 * tests/mpi/test_scale.c - thousands of blocks per process: every engine
 * with 4096 blocks (merge, swap, all-to-all, neighbour exchange, composite,
 * s-to-p broadcast, prefix scan), and 65,536 blocks for merge, swap and the
 * neighbour exchange when the suite runs on 4 processes. Each run is checked
 * against a cheap serial reference (closed formulas or the shared runners
 * of tests/common), so the checks cost no more than the engines; the
 * references use arrays of the block count at most, never its square.
 *
 * Budget: correctness only, no time is asserted; the whole suite is meant to
 * finish in about a minute per process count on an idle 2-core machine, and
 * the run-test timeout (BPC_TEST_TIMEOUT, 300 s) is the hard limit. An
 * engine whose work grows with the square of the blocks per process, or a
 * schedule that sends a message per empty piece, does not finish in it.
 *
 * The all-to-all memory bound (forwarded bundles freed after the round that
 * forwards them) is asserted from the engine's own high-water mark of
 * bundle bytes held at once (bpc_alltoall_info_t.peak_bytes) against the
 * bound of one round's data computed from the reference items.
 *
 * Listed in tests/testlist at 2 and 4 processes only (see the comment
 * there): the sizes are fixed, so more processes test nothing new.
 */
#include "mpi_check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MI_CHECK(cond, ...) T_CHECK(cond, __VA_ARGS__)
#include "../common/bcast_run.h"
#include "../common/composite_run.h"
#include "../common/merge_items.h"
#include "../common/scan_run.h"
#include "../common/swap_run.h"
#include "bpc.h"

static bpc_ctx_t *ctx;

/* scan_run.h helpers this suite does not need */
static void *const unused_helpers[] __attribute__((unused)) = {(void *)sr_table31,
                                                               (void *)sr_global_ops};

static void setup(void) { ck_assert_int_eq(bpc_init(MPI_COMM_WORLD, NULL, &ctx), BPC_OK); }
static void teardown(void) { bpc_finalize(&ctx); }

/* n blocks, contiguous (checked on every rank; NULL after a failure) */
static bpc_assign_t *contiguous(int n)
{
  bpc_assign_t *a = NULL;
  int rc = bpc_assign_create(ctx, n, BPC_ASSIGN_CONTIGUOUS, NULL, &a);
  T_CHECK(rc == BPC_OK, "assign of %d blocks: %s", n, bpc_last_error(ctx));
  return a;
}

/* Quick progress lines on rank 0 (BPC_SCALE_VERBOSE=1): which case ran
 * when. For a person reading a log, never asserted. */
static void note(const char *what)
{
  if (t_rank == 0 && getenv("BPC_SCALE_VERBOSE") != NULL) {
    fprintf(stderr, "[scale] %.3f s %s\n", MPI_Wtime(), what);
    fflush(stderr);
  }
}

/* ------------------------------------------------------------- merge */

static void merge_case(int n)
{
  /* non-commutative 2x2 matrix products in order (doubling), sorted lists
   * (halving), float sums in a shuffled order (automatic algorithm) */
  mi_cfg_t m = {n, BPC_ASSIGN_CONTIGUOUS, MI_MAT, NULL, 0, 0, "doubling", 0, 3, 0, 1, MI_EW};
  mi_run(ctx, &m);
  /* halving needs a commutative merge: sorted lists (custom items) */
  mi_cfg_t h = {n, BPC_ASSIGN_ROUND_ROBIN, MI_LIST, NULL, 0, 0, "halving", 0, 0, 0, 1, 0};
  mi_run(ctx, &h);
  mi_cfg_t s = {n, BPC_ASSIGN_CONTIGUOUS, MI_SUM, NULL, 0, 0, NULL, 2, 5, 0, 1, MI_EW};
  mi_run(ctx, &s);
}

START_TEST(test_merge_4096)
{
  note("merge 4096");
  merge_case(4096);
  T_SYNC();
}
END_TEST

START_TEST(test_merge_65536)
{
  note("merge 65536");
  if (t_size == 4)
    merge_case(65536);
  T_SYNC();
}
END_TEST

/* -------------------------------------------------------------- swap */

static void swap_case(int n, const char *algo, int op, size_t count)
{
  bpc_assign_t *a = contiguous(n);
  int rc = BPC_OK;
  so_case_t c;
  memset(&c, 0, sizeof c);
  c.op = op;
  c.count = count;
  c.params = bpc_swap_params_default();
  c.params.algorithm = algo;
  char tag[96];
  snprintf(tag, sizeof tag, "swap %s n=%d count=%zu", algo ? algo : "auto", n, count);
  note(tag);
  int f = so_run(ctx, a, &c, tag, &rc, NULL, NULL);
  T_CHECK(f == 0, "%s: %d failed check(s)", tag, f);
  bpc_assign_destroy(&a);
}

START_TEST(test_swap_4096)
{
  swap_case(4096, NULL, SO_MAT, 4099);
  swap_case(4096, "radixk", SO_SUM, 10000);
  /* not shift or ring: n - 1 stages by design (doc/swap.md) */
  T_SYNC();
}
END_TEST

START_TEST(test_swap_65536)
{
  if (t_size == 4) {
    /* buffers of 16384 blocks per process: a few KiB each, so most of the
     * 65,536 pieces are empty (they must cost nothing) */
    swap_case(65536, "radixk", SO_MAT, 256);
    swap_case(65536, NULL, SO_SUM, 1000);
  }
  T_SYNC();
}
END_TEST

/* --------------------------------------------------------- all-to-all */

/* Item src -> dst: none (-1) for most pairs; an item of 0..4 ints for the
 * block itself, its successor and about one pair in 97. */
static int a2a_len(int src, int dst, int n)
{
  const uint32_t h = mi_hash((uint32_t)src, (uint32_t)dst + 0x5151u);
  if (dst != src && dst != (src + 1) % n && h % 97u != 0)
    return -1;
  return (int)(h >> 8) % 5;
}
static int a2a_val(int src, int dst, int i) { return src * 7 + dst * 3 + i; }

/* Every item a local source gives, built before the call (the engine may
 * keep them until it returns): per local source, its destinations in
 * ascending order with their items. */
typedef struct a2a_ud {
  int n, first, nl;   /* contiguous assignment: local index = gid - first */
  int *off;           /* nl + 1 */
  int *dst;           /* off[nl] destinations */
  bpc_buf_t *items;   /* off[nl] items */
  int *vals;          /* 5 ints per item */
  int *last_src, *got;
  long long bad;
} a2a_ud_t;

static void a2a_build(a2a_ud_t *u)
{
  long long m = 0;
  u->off = calloc((size_t)u->nl + 1, sizeof(int));
  for (int l = 0; l < u->nl; l++) {
    for (int d = 0; d < u->n; d++)
      m += a2a_len(u->first + l, d, u->n) >= 0;
    u->off[l + 1] = (int)m;
  }
  u->dst = malloc(sizeof(int) * (size_t)(m + 1));
  u->items = malloc(sizeof(bpc_buf_t) * (size_t)(m + 1));
  u->vals = malloc(sizeof(int) * 5 * (size_t)(m + 1));
  for (int l = 0, x = 0; l < u->nl; l++)
    for (int d = 0; d < u->n; d++) {
      const int len = a2a_len(u->first + l, d, u->n);
      if (len < 0)
        continue;
      for (int i = 0; i < len; i++)
        u->vals[5 * x + i] = a2a_val(u->first + l, d, i);
      u->dst[x] = d;
      u->items[x].data = &u->vals[5 * x];
      u->items[x].count = (size_t)len;
      x++;
    }
  u->last_src = malloc(sizeof(int) * ((size_t)u->nl + 1));
  u->got = calloc((size_t)u->nl + 1, sizeof(int));
  for (int l = 0; l < u->nl; l++)
    u->last_src[l] = -1;
}

static void a2a_free(a2a_ud_t *u)
{
  free(u->off);
  free(u->dst);
  free(u->items);
  free(u->vals);
  free(u->last_src);
  free(u->got);
}

static int a2a_send(int src, int dst, const void **item, void *user)
{
  a2a_ud_t *u = user;
  const int l = src - u->first;
  *item = NULL;
  if (l < 0 || l >= u->nl) {
    u->bad++;
    return 0;
  }
  int lo = u->off[l], hi = u->off[l + 1];
  while (lo < hi) { /* binary search of dst among the source's items */
    const int mid = lo + (hi - lo) / 2;
    if (u->dst[mid] < dst)
      lo = mid + 1;
    else
      hi = mid;
  }
  if (lo < u->off[l + 1] && u->dst[lo] == dst)
    *item = &u->items[lo];
  return 0;
}

static int a2a_recv(int dst, int src, void *item, void *user)
{
  a2a_ud_t *u = user;
  const int l = dst - u->first;
  const bpc_buf_t *b = item;
  const int len = src >= 0 && src < u->n ? a2a_len(src, dst, u->n) : -1;
  if (l < 0 || l >= u->nl || len < 0 || src <= u->last_src[l] || b->count != (size_t)len) {
    u->bad++;
    return 0;
  }
  u->last_src[l] = src;
  u->got[l]++;
  for (int i = 0; i < len; i++)
    u->bad += ((const int *)b->data)[i] != a2a_val(src, dst, i);
  return 0;
}

/* Every pair has an item (the memory case): items[l * n + dst]. */
typedef struct a2a_full {
  int n, first, nl;
  const bpc_buf_t *items;
  long long bad;
} a2a_full_t;

static int a2a_full_send(int src, int dst, const void **item, void *user)
{
  a2a_full_t *u = user;
  *item = &u->items[(size_t)(src - u->first) * (size_t)u->n + (size_t)dst];
  return 0;
}

static int a2a_full_recv(int dst, int src, void *item, void *user)
{
  a2a_full_t *u = user;
  const bpc_buf_t *b = item;
  if (b->count != 16) {
    u->bad++;
    return 0;
  }
  for (int i = 0; i < 16; i++)
    u->bad += ((const int *)b->data)[i] != a2a_val(src, dst, i);
  return 0;
}

static void a2a_case(int n, const int *k, int nk)
{
  bpc_assign_t *a = contiguous(n);
  int rc = BPC_OK;
  a2a_ud_t u;
  memset(&u, 0, sizeof u);
  u.n = n;
  const int *gids = NULL;
  bpc_assign_local(a, &gids, &u.nl);
  u.first = u.nl > 0 ? gids[0] : 0;
  a2a_build(&u);
  bpc_type_t it = bpc_type_contiguous(sizeof(int), MPI_INT);
  bpc_alltoall_params_t p = bpc_alltoall_params_default();
  p.k = k;
  p.nk = nk;
  bpc_alltoall_info_t info;
  memset(&info, 0, sizeof info);
  note(nk ? "alltoall (given k)" : "alltoall (auto k)");
  rc = bpc_alltoall(ctx, a, &it, a2a_send, a2a_recv, &u, &p, &info);
  T_CHECK(rc == BPC_OK, "alltoall n=%d: %s", n, bpc_last_error(ctx));
  T_CHECK(u.bad == 0, "alltoall n=%d: %lld bad deliveries", n, u.bad);
  for (int l = 0; l < u.nl && rc == BPC_OK; l++) {
    int want = 0;
    for (int s = 0; s < n; s++)
      want += a2a_len(s, u.first + l, n) >= 0;
    T_CHECK(u.got[l] == want, "alltoall n=%d: block %d got %d items, expected %d", n, u.first + l,
            u.got[l], want);
    if (u.got[l] != want)
      break;
  }
  a2a_free(&u);
  bpc_assign_destroy(&a);
}

/* The memory bound: 256 blocks, an item of 16 ints for every pair; the same
 * exchange over 2 rounds (16 x 16) and over 8 rounds (2^8). A round's
 * bundles are freed once the next round has forwarded them, so the peak of
 * bundle bytes held at once does not grow with the rounds (keeping every
 * round's bundles until the end would make the 8-round peak about 4 times
 * the 2-round one), and stays within a few times what this rank sends and
 * receives (V = the packed items in and out). */
static unsigned long long a2a_peak(int n, const int *k, int nk, unsigned long long *v)
{
  bpc_assign_t *a = contiguous(n);
  const int *gids = NULL;
  int nl = 0;
  bpc_assign_local(a, &gids, &nl);
  int *vals = malloc(sizeof(int) * 16 * (size_t)(nl > 0 ? nl : 1) * (size_t)n);
  bpc_buf_t *items = malloc(sizeof *items * (size_t)(nl > 0 ? nl : 1) * (size_t)n);
  for (int l = 0; l < nl; l++)
    for (int d = 0; d < n; d++) {
      const size_t x = (size_t)l * (size_t)n + (size_t)d;
      for (int i = 0; i < 16; i++)
        vals[16 * x + (size_t)i] = a2a_val(gids[l], d, i);
      items[x].data = &vals[16 * x];
      items[x].count = 16;
    }
  a2a_full_t u = {n, nl > 0 ? gids[0] : 0, nl, items, 0};
  bpc_type_t it = bpc_type_contiguous(sizeof(int), MPI_INT);
  bpc_alltoall_params_t p = bpc_alltoall_params_default();
  p.k = k;
  p.nk = nk;
  bpc_alltoall_info_t info;
  memset(&info, 0, sizeof info);
  int rc = bpc_alltoall(ctx, a, &it, a2a_full_send, a2a_full_recv, &u, &p, &info);
  T_CHECK(rc == BPC_OK, "alltoall memory n=%d nk=%d: %s", n, nk, bpc_last_error(ctx));
  T_CHECK(u.bad == 0, "alltoall memory n=%d nk=%d: %lld bad deliveries", n, nk, u.bad);
  /* packed: the ints, a key and a length per item, in and out */
  *v = 2ull * (unsigned long long)nl * (unsigned long long)n * (16u * sizeof(int) + 16u);
  free(vals);
  free(items);
  bpc_assign_destroy(&a);
  return info.peak_bundle_bytes;
}

START_TEST(test_alltoall_memory)
{
  static const int k2[] = {16, 16}, k8[] = {2, 2, 2, 2, 2, 2, 2, 2};
  unsigned long long v2 = 0, v8 = 0;
  note("alltoall memory");
  const unsigned long long p2 = a2a_peak(256, k2, 2, &v2);
  const unsigned long long p8 = a2a_peak(256, k8, 8, &v8);
  if (t_rank == 0 && getenv("BPC_SCALE_VERBOSE") != NULL)
    fprintf(stderr, "[scale] alltoall peak bundle bytes: 2 rounds %llu, 8 rounds %llu, V %llu\n",
            p2, p8, v2);
  T_CHECK(p2 > 0 && p8 > 0, "no peak reported (%llu, %llu)", p2, p8);
  T_CHECK(2 * p8 <= 3 * p2, "8 rounds held %llu bundle bytes at once, 2 rounds %llu", p8, p2);
  /* two rounds' bundles, each about V/2, pool capacities up to twice the size */
  T_CHECK(p8 <= 3 * v8, "8 rounds held %llu bundle bytes at once, V = %llu", p8, v8);
  T_SYNC();
}
END_TEST

START_TEST(test_alltoall_4096)
{
  static const int k3[] = {16, 16, 16};
  a2a_case(4096, NULL, 0);
  a2a_case(4096, k3, 3);
  T_SYNC();
}
END_TEST

/* ------------------------------------------------- neighbour exchange */

/* A side x side 2-D decomposition without wrap: links are faces, edges and
 * corners (symmetric, each neighbour once). Each block sends every
 * neighbour two items (the second empty every fourth time); the reference
 * is the link list of the receiver itself. */
static void nb_case(int side)
{
  bpc_decomp_params_t p = bpc_decomp_params_default();
  p.dim = 2;
  p.nblocks = side * side;
  p.divs[0] = p.divs[1] = side;
  p.domain_max[0] = p.domain_max[1] = 4 * side;
  bpc_decomp_t *d = NULL;
  bpc_neighbor_t *nb = NULL;
  bpc_type_t it = bpc_type_contiguous(sizeof(int), MPI_INT);
  char tag[64];
  snprintf(tag, sizeof tag, "neighbor %dx%d", side, side);
  note(tag);
  int rc = bpc_decomp_create(ctx, &p, &d);
  T_CHECK(rc == BPC_OK, "%s decomp: %s", tag, bpc_last_error(ctx));
  if (rc == BPC_OK)
    rc = bpc_neighbor_create_decomp(ctx, d, &it, NULL, &nb);
  T_CHECK(rc == BPC_OK, "%s create: %s", tag, bpc_last_error(ctx));
  const int *gids = NULL;
  int nl = 0;
  if (d != NULL)
    bpc_assign_local(bpc_decomp_assign(d), &gids, &nl);
  long long bad = 0;
  for (int round = 0; round < 2 && nb != NULL; round++) {
    for (int i = 0; i < nl; i++) {
      const bpc_link_t *L = NULL;
      int m = 0;
      bpc_neighbor_links(nb, gids[i], &L, &m);
      for (int j = 0; j < m; j++) {
        int v[3] = {gids[i], L[j].gid, round};
        bpc_buf_t b = {v, 3};
        bad += bpc_neighbor_enqueue(nb, gids[i], L[j].gid, &b) != BPC_OK;
        b.count = (gids[i] + L[j].gid + round) % 4 == 0 ? 0 : 1;
        bad += bpc_neighbor_enqueue(nb, gids[i], L[j].gid, &b) != BPC_OK;
      }
    }
    rc = bpc_neighbor_exchange(nb);
    T_CHECK(rc == BPC_OK, "%s exchange: %s", tag, bpc_last_error(ctx));
    for (int i = 0; i < nl; i++) {
      const bpc_link_t *L = NULL;
      const int *srcs = NULL;
      int m = 0, ns = 0;
      bpc_neighbor_links(nb, gids[i], &L, &m);
      bpc_neighbor_incoming(nb, gids[i], &srcs, &ns);
      if (ns != m && bad++ == 0)
        fprintf(stderr, "[rank %d] %s: block %d: %d sources, %d links\n", t_rank, tag, gids[i], ns,
                m);
      for (int j = 0; j < m; j++) {
        const int s = L[j].gid;
        for (int t = 0; t < 2; t++) {
          void *item = NULL;
          int got = 0;
          bpc_neighbor_dequeue(nb, gids[i], s, &item, &got);
          const bpc_buf_t *b = item;
          const size_t want = t == 0 ? 3 : (s + gids[i] + round) % 4 == 0 ? 0 : 1;
          if (!got || b == NULL || b->count != want) {
            if (bad++ == 0)
              fprintf(stderr, "[rank %d] %s: block %d from %d item %d: got %d count %zu, want %zu\n",
                      t_rank, tag, gids[i], s, t, got, b ? b->count : 0, want);
            continue;
          }
          const int *v = b->data;
          if (b->count > 0 && (v[0] != s || (t == 0 && (v[1] != gids[i] || v[2] != round))) &&
              bad++ == 0)
            fprintf(stderr, "[rank %d] %s: block %d from %d item %d: %d %d %d\n", t_rank, tag,
                    gids[i], s, t, v[0], t == 0 ? v[1] : -1, t == 0 ? v[2] : -1);
        }
        int got = 1;
        void *item = NULL;
        bpc_neighbor_dequeue(nb, gids[i], s, &item, &got);
        if (got != 0 && bad++ == 0) /* exactly two items per source */
          fprintf(stderr, "[rank %d] %s: block %d from %d: a third item\n", t_rank, tag, gids[i], s);
      }
    }
  }
  T_CHECK(bad == 0, "%s: %lld wrong deliveries", tag, bad);
  rc = bpc_neighbor_destroy(&nb);
  T_CHECK(rc == BPC_OK, "%s destroy: %s", tag, bpc_last_error(ctx));
  bpc_decomp_destroy(&d);
}

START_TEST(test_neighbor_4096)
{
  nb_case(64);
  T_SYNC();
}
END_TEST

START_TEST(test_neighbor_65536)
{
  if (t_size == 4)
    nb_case(256);
  T_SYNC();
}
END_TEST

/* ---------------------------------------------------------- composite */

/* The case: direct send of a 19 x 11 image over 4096 blocks, so
 * most blocks own no pixel; then the automatic strategy (radix-k) with a
 * non-commutative over in a shuffled order. */
START_TEST(test_composite_4096)
{
  const int n = 4096;
  bpc_assign_t *a = contiguous(n);
  int *order = malloc(sizeof(int) * n);
  cr_order(2, n, 7u, order);
  static const char *strategies[] = {"direct-send", "auto", "binary-swap"};
  for (int s = 0; s < 3; s++) {
    cr_case_t c;
    memset(&c, 0, sizeof c);
    c.W = 19;
    c.H = 11;
    c.kind = s == 1 ? 1 : 0; /* sparse and full images */
    c.seed = 3 + s;
    c.op = CR_OVER;
    c.split = BPC_COMPOSITE_PIXELS;
    c.gather = s == 0;
    c.P = bpc_composite_params_default();
    c.P.algorithm = strategies[s];
    c.P.order = s == 0 ? NULL : order;
    char tag[64];
    snprintf(tag, sizeof tag, "composite %s n=%d", strategies[s], n);
    note(tag);
    cr_out_t out;
    memset(&out, 0, sizeof out);
    int f = cr_run(ctx, a, &c, tag, &out);
    T_CHECK(f == 0, "%s: %d failed check(s)", tag, f);
  }
  free(order);
  bpc_assign_destroy(&a);
  T_SYNC();
}
END_TEST

/* ---------------------------------------------------- s-to-p broadcast */

START_TEST(test_bcast_4096)
{
  const int n = 4096;
  bpc_assign_t *a = contiguous(n);
  static const int src[] = {0, 1, 777, 2048, 4095};
  for (int custom = 0; custom <= 1; custom++) {
    int bad = 0;
    char why[256];
    note(custom ? "bcast custom" : "bcast contiguous");
    int rc = br_run(ctx, a, src, 5, NULL, 0, 0, custom, 11 + custom, 0, 0, &bad, why, sizeof why,
                    NULL);
    T_CHECK(rc == BPC_OK, "bcast n=%d: %s", n, bpc_last_error(ctx));
    T_CHECK(bad == 0, "bcast n=%d custom=%d: %d wrong deliveries: %s", n, custom, bad, why);
  }
  bpc_assign_destroy(&a);
  T_SYNC();
}
END_TEST

/* -------------------------------------------------------- prefix scan */

START_TEST(test_scan_4096)
{
  const int n = 4096;
  bpc_assign_t *a = contiguous(n);
  for (int mi = 0; mi < 2; mi++) {
    const bpc_scan_mode_t mode = mi == 0 ? BPC_SCAN_INCLUSIVE : BPC_SCAN_EXCLUSIVE;
    sr_prob_t P;
    sr_prob_make(&P, a, SR_MAT, 5 + mi, 0, -1);
    bpc_scan_op_t op = sr_op(SR_MAT, mi);
    bpc_scan_params_t prm = bpc_scan_params_default();
    bpc_scan_info_t info;
    note(mi ? "scan exclusive" : "scan inclusive");
    int rc = bpc_scan(ctx, a, &P.type, mode, P.in, P.out, &op, &prm, &info);
    T_CHECK(rc == BPC_OK, "scan n=%d: %s", n, bpc_last_error(ctx));
    if (rc == BPC_OK) {
      char msg[256];
      int bad = sr_check(&P, n, NULL, 5 + mi, 0, mode, mi, &info, msg, sizeof msg);
      T_CHECK(bad == 0, "scan n=%d %s: %d wrong: %s", n, info.name, bad, msg);
    }
    sr_prob_free(&P);
  }
  bpc_assign_destroy(&a);
  T_SYNC();
}
END_TEST

/* One case per engine, so that CK_RUN_CASE=<engine> runs one alone. */
static void add_case(Suite *s, const char *name, const TTest *t1, const TTest *t2)
{
  TCase *tc = tcase_create(name);
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 0);
  tcase_add_test(tc, t1);
  if (t2 != NULL)
    tcase_add_test(tc, t2);
  suite_add_tcase(s, tc);
}

static Suite *make_suite(void)
{
  Suite *s = suite_create("scale");
  add_case(s, "merge", test_merge_4096, test_merge_65536);
  add_case(s, "swap", test_swap_4096, test_swap_65536);
  add_case(s, "alltoall", test_alltoall_4096, test_alltoall_memory);
  add_case(s, "neighbor", test_neighbor_4096, test_neighbor_65536);
  add_case(s, "composite", test_composite_4096, NULL);
  add_case(s, "bcast", test_bcast_4096, NULL);
  add_case(s, "scan", test_scan_4096, NULL);
  return s;
}

BPC_T_MPI_MAIN(make_suite)
