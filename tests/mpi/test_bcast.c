/*
 * tests/mpi/test_bcast.c - the s-to-p broadcast under MPI: every algorithm
 * of bpc_algorithms("bcast") x every source distribution x s in {0, 1, 2,
 * p/2, p} x 1..4 blocks per process (contiguous and round-robin
 * assignments), a 10 x 10 mesh of blocks, contiguous and custom
 * variable-size items with empty ones, against the serial reference; the
 * bytes sent over all ranks equal "each item once to every other process
 * with blocks" (a process receives each item once; every other process for
 * the mpi baseline); a failing callback on
 * one rank; auto's decision cache (a cached decision equals the uncached
 * model's; sources, item size, mesh and alpha change the key; LRU bound);
 * every argument error and must-match field bad on rank 0 only,
 * on the last rank only and on all ranks: the same code everywhere, no hang;
 * the allgatherv collective of lib/comm directly.
 */
#include "mpi_check.h"
#include "bad_case.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/coll.h"
#include "engines/bcast/bcast_internal.h"
#include "patterns/patterns.h"
#include "../common/bcast_run.h"

static bpc_ctx_t *ctx;

static void setup(void) { ck_assert_int_eq(bpc_init(MPI_COMM_WORLD, NULL, &ctx), BPC_OK); }
static void teardown(void) { bpc_finalize(&ctx); }

static int algos(bpc_algo_info_t *tab)
{
  int na = 0;
  T_CHECK(bpc_algorithms("bcast", tab, 16, &na) == BPC_OK && na >= 5, "bpc_algorithms");
  return na;
}

/* One call checked, plus the process-level byte count. */
static void one(const bpc_assign_t *a, int n, int rows, int cols, const char *algo, int kind,
                int s, int custom)
{
  int *src = malloc(sizeof(int) * (size_t)(n + 1));
  const int R = rows ? rows : 1, C = rows ? cols : n;
  T_CHECK(bpc__bcast_dist(kind, R, C, s, (unsigned)n, src) == BPC_OK, "dist");
  int bad = 0;
  char why[256];
  bpc_bcast_info_t info;
  memset(&info, 0, sizeof info);
  const int salt = n * 17 + s + kind;
  const int rep = (s + kind + n) % 4;
  int rc = br_run(ctx, a, src, s, algo, rows, cols, custom, salt, 0, rep, &bad, why, sizeof why,
                  &info);
  T_CHECK(rc == BPC_OK && bad == 0, "%s n=%d mesh %dx%d %s s=%d custom=%d rep=%d: %s (%s), %d bad: %s",
          algo, n, rows, cols, bpc__bcast_dist_name(kind), s, custom, rep, bpc_err_name(rc),
          bpc_last_error(ctx), bad, why);
  /* auto's choice (row, repositioning, partitioning) is the same on every rank */
  if (strcmp(algo, "auto") == 0) {
    int v[3] = {(int)info.algorithm, info.reposition, info.partition}, lo[3], hi[3];
    MPI_Allreduce(v, lo, 3, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(v, hi, 3, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    T_CHECK(memcmp(lo, hi, sizeof lo) == 0 && (v[1] | v[2]) <= 1,
            "auto n=%d s=%d: choice %d/%d/%d differs between ranks", n, s, v[0], v[1], v[2]);
  }
  /* every process with blocks gets every item exactly once */
  int *has = calloc((size_t)t_size, sizeof(int));
  for (int g = 0; g < n; g++) {
    int r = 0;
    bpc_assign_rank(a, g, &r);
    has[r] = 1;
  }
  int active = 0;
  for (int r = 0; r < t_size; r++)
    active += has[r];
  long long want = 0, got = 0, mine = info.bytes_sent;
  for (int i = 0; i < s; i++) {
    const long long len = br_item_len(src[i], salt);
    /* mpi: MPI_Allgatherv reaches every rank, with blocks or not */
    want += (custom ? len : len * (long long)sizeof(int)) *
            (strcmp(algo, "mpi") == 0 ? t_size - 1 : active - 1);
  }
  MPI_Allreduce(&mine, &got, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
  T_CHECK(got == want, "%s n=%d %s s=%d: %lld bytes sent over all ranks, want %lld", algo, n,
          bpc__bcast_dist_name(kind), s, got, want);
  free(has);
  free(src);
}

START_TEST(test_bcast_all)
{
  bpc_algo_info_t tab[16];
  const int na = algos(tab);
  for (int bpp = 1; bpp <= 4; bpp++) {
    const int n = bpp * t_size;
    bpc_assign_t *a = NULL;
    T_CHECK(bpc_assign_create(ctx, n, bpp % 2 ? BPC_ASSIGN_CONTIGUOUS : BPC_ASSIGN_ROUND_ROBIN,
                              NULL, &a) == BPC_OK,
            "assign");
    const int sv[5] = {0, 1, n >= 2 ? 2 : 1, n / 2, n};
    for (int k = 0; k < na; k++)
      for (int d = 0; d < BPC__BDIST_COUNT; d++)
        for (int si = 0; si < 5; si++)
          one(a, n, 0, 0, tab[k].name, d, sv[si], (si + d + bpp) % 2);
    /* auto: the cost model's pick, the same on every rank */
    for (int d = 0; d < BPC__BDIST_COUNT && bpp <= 2; d++)
      for (int si = 0; si < 5; si++)
        one(a, n, 0, 0, "auto", d, sv[si], (si + d) % 2);
    bpc_assign_destroy(&a);
  }
  /* fewer blocks than processes */
  if (t_size > 2) {
    bpc_assign_t *a = NULL;
    bpc_assign_create(ctx, t_size - 1, BPC_ASSIGN_CONTIGUOUS, NULL, &a);
    for (int k = 0; k < na; k++)
      one(a, t_size - 1, 0, 0, tab[k].name, BPC__BDIST_RANDOM, 2, k % 2);
    bpc_assign_destroy(&a);
  }
  T_SYNC();
}
END_TEST

START_TEST(test_bcast_mesh10)
{
  /* a 10 x 10 mesh of blocks (on 4 processes in the issue; at every count here) */
  bpc_algo_info_t tab[16];
  const int na = algos(tab);
  bpc_assign_t *a = NULL;
  T_CHECK(bpc_assign_create(ctx, 100, BPC_ASSIGN_CONTIGUOUS, NULL, &a) == BPC_OK, "assign");
  const int sv[5] = {0, 1, 2, 50, 100};
  for (int k = 0; k < na; k++)
    for (int d = 0; d < BPC__BDIST_COUNT; d++)
      for (int si = 0; si < 5; si++)
        one(a, 100, 10, 10, tab[k].name, d, sv[si], (si + d) % 2);
  /* a non-square mesh view of the same blocks */
  for (int k = 0; k < na; k++)
    one(a, 100, 4, 25, tab[k].name, BPC__BDIST_CROSS, 30, 1);
  bpc_assign_destroy(&a);
  T_SYNC();
}
END_TEST

/* Many blocks: 4096 on the processes (the per-process plan must not grow
 * with the square of the block count). Light callbacks: a gid -> local
 * index map, items of g % 5 ints g * 7 + e. */
typedef struct mb_ud {
  int n, s;
  const int *src;
  int *lidx;  /* gid -> local index or -1 */
  int *pos;   /* per local block: next source index expected */
  bpc_buf_t *bufs;
  int *vals;
  long long bad;
} mb_ud_t;

static int mb_item(int g, const void **item, void *user)
{
  mb_ud_t *u = user;
  *item = &u->bufs[g];
  return 0;
}

static int mb_recv(int dst, int g, void *item, void *user)
{
  mb_ud_t *u = user;
  const bpc_buf_t *b = item;
  const int l = u->lidx[dst];
  if (l < 0 || u->pos[l] >= u->s || u->src[u->pos[l]] != g || b->count != (size_t)(g % 5)) {
    u->bad++;
    return 0;
  }
  u->pos[l]++;
  for (size_t e = 0; e < b->count; e++)
    u->bad += ((const int *)b->data)[e] != g * 7 + (int)e;
  return 0;
}

START_TEST(test_bcast_many_blocks)
{
  const int n = 4096;
  bpc_assign_t *a = NULL;
  T_CHECK(bpc_assign_create(ctx, n, BPC_ASSIGN_CONTIGUOUS, NULL, &a) == BPC_OK, "assign");
  const int *loc = NULL;
  int nl = 0;
  bpc_assign_local(a, &loc, &nl);
  mb_ud_t u;
  memset(&u, 0, sizeof u);
  u.n = n;
  u.lidx = malloc(sizeof(int) * (size_t)n);
  u.pos = calloc((size_t)nl + 1, sizeof(int));
  u.bufs = calloc((size_t)n, sizeof *u.bufs);
  u.vals = malloc(sizeof(int) * 5 * (size_t)n);
  for (int g = 0; g < n; g++) {
    u.lidx[g] = -1;
    for (int e = 0; e < 5; e++)
      u.vals[5 * g + e] = g * 7 + e;
    u.bufs[g].data = &u.vals[5 * g];
    u.bufs[g].count = (size_t)(g % 5);
  }
  for (int l = 0; l < nl; l++)
    u.lidx[loc[l]] = l;
  int *src = malloc(sizeof(int) * (size_t)n);
  bpc_algo_info_t tab[16];
  const int na = algos(tab);
  bpc_type_t t = bpc_type_contiguous(sizeof(int), MPI_INT);
  /* s = p (every block), s small, and one mid-size s repositioned and partitioned */
  const int sv[3] = {n, 3, 200}, dv[3] = {BPC__BDIST_ROW, BPC__BDIST_RANDOM, BPC__BDIST_BAND};
  for (int k = 0; k <= na; k++)
    for (int c = 0; c < 3; c++) {
      const char *algo = k < na ? tab[k].name : "auto";
      if (c == 2 && (k == na || strcmp(algo, "mpi") == 0))
        continue;
      T_CHECK(bpc__bcast_dist(dv[c], 64, 64, sv[c], 7u, src) == BPC_OK, "dist");
      u.s = sv[c];
      u.src = src;
      u.bad = 0;
      memset(u.pos, 0, sizeof(int) * (size_t)nl);
      bpc_bcast_params_t P = bpc_bcast_params_default();
      P.algorithm = algo;
      P.reposition = P.partition = c == 2;
      bpc_bcast_info_t info;
      int rc = bpc_bcast(ctx, a, &t, src, u.s, mb_item, mb_recv, &u, &P, &info);
      for (int l = 0; l < nl && rc == BPC_OK; l++)
        u.bad += u.pos[l] != u.s;
      T_CHECK(rc == BPC_OK && u.bad == 0, "4096 blocks, %s s=%d: %s, %lld bad", algo, u.s,
              bpc_err_name(rc), u.bad);
    }
  free(src);
  free(u.lidx);
  free(u.pos);
  free(u.bufs);
  free(u.vals);
  bpc_assign_destroy(&a);
  T_SYNC();
}
END_TEST

/* auto_call: every source's item is `len` bytes (byte i of source g's
 * item: g * 7 + i + len); recv checks each against that. */
typedef struct ac_ud {
  int len, bad;
  unsigned char *data; /* nblocks x len */
  bpc_buf_t *bufs;     /* per block */
} ac_ud_t;

static int ac_item(int src, const void **item, void *user)
{
  ac_ud_t *u = user;
  *item = &u->bufs[src];
  return 0;
}

static int ac_recv(int dst, int src, void *item, void *user)
{
  ac_ud_t *u = user;
  const bpc_buf_t *b = item;
  (void)dst;
  if (b == NULL ? u->len != 0 : b->count != (size_t)u->len) {
    u->bad++;
    return 0;
  }
  for (int i = 0; i < u->len; i++)
    u->bad += ((const unsigned char *)b->data)[i] != (unsigned char)(src * 7 + i + u->len);
  return 0;
}

/* One auto call (mesh rows x cols, 0 x 0: near-square), checked against
 * the reference; its choice in *info. */
static void auto_call(const bpc_assign_t *a, int n, const int *src, int s, int rows, int cols,
                      int len, bpc_bcast_info_t *info)
{
  ac_ud_t u;
  memset(&u, 0, sizeof u);
  u.len = len;
  u.data = malloc((size_t)n * (size_t)(len > 0 ? len : 1));
  u.bufs = calloc((size_t)n, sizeof *u.bufs);
  for (int g = 0; g < n; g++) {
    u.bufs[g].data = u.data + (size_t)g * (size_t)len;
    u.bufs[g].count = (size_t)len;
    for (int i = 0; i < len; i++)
      u.data[(size_t)g * (size_t)len + (size_t)i] = (unsigned char)(g * 7 + i + len);
  }
  bpc_type_t t = bpc_type_contiguous(1, MPI_BYTE);
  bpc_bcast_params_t P = bpc_bcast_params_default();
  P.rows = rows;
  P.cols = cols;
  int rc = bpc_bcast(ctx, a, &t, src, s, ac_item, ac_recv, &u, &P, info);
  T_CHECK(rc == BPC_OK && u.bad == 0, "auto n=%d s=%d len=%d: %s, %d bad bytes", n, s, len,
          bpc_err_name(rc), u.bad);
  free(u.data);
  free(u.bufs);
}

/* What the model picks without the cache, as bpc-bench names it. */
static void auto_pick(const bpc_assign_t *a, const int *src, int s, int rows, int cols, int len,
                      char *pick)
{
  double T = -1.0;
  T_CHECK(bpc__bcast_model_time(ctx, a, src, s, rows, cols, len, "auto", 0, 0, &T, pick, 48) ==
              BPC_OK && T >= 0.0, "bpc__bcast_model_time");
}

static void info_pick(const bpc_bcast_info_t *info, char *pick)
{
  snprintf(pick, 48, "%s%s%s%s", info->name, info->reposition || info->partition ? "+" : "",
           info->reposition ? "r" : "", info->partition ? "p" : "");
}

/* auto's decision cache: a cached decision equals the uncached model's
 * over a sweep of inputs (and with the cache off); every rank hits alike.
 * 25 blocks per process (up to 4 processes) cost most (ASan: 100 of the
 * suite's 150 s at 4 processes): there one process runs the whole sweep and
 * 2, 3 and 4 processes a third each, in turn, so that every input of the
 * sweep runs at some count above one. Likewise 3 blocks per process above
 * 4 processes (ASan: 35 of 58 s at 12): a third in turn (5, 7, 8 and 12
 * cover the three); whole up to 4. */
START_TEST(test_bcast_auto_cache)
{
  const int bpps[3] = {1, 3, 25};
  const int lens[2] = {32, 16384};
  for (int bi = 0; bi < 3; bi++) {
    if (bpps[bi] == 25 && t_size > 4)
      continue;
    const int n = bpps[bi] * t_size;
    int r = 1;
    for (int d = 1; d * d <= n; d++)
      if (n % d == 0)
        r = d;
    for (int mode = 0; mode < 2; mode++) {
      bpc_assign_t *a = NULL;
      T_CHECK(bpc_assign_create(ctx, n, mode ? BPC_ASSIGN_ROUND_ROBIN : BPC_ASSIGN_CONTIGUOUS,
                                NULL, &a) == BPC_OK, "assign");
      int *src = malloc(sizeof(int) * (size_t)n);
      const int sv[4] = {1, n >= 2 ? 2 : n, n / 2 > 0 ? n / 2 : 1, n};
      for (int d = 0; d < BPC__BDIST_COUNT; d++)
        for (int si = 0; si < 4; si++)
          for (int li = 0; li < 2; li++) {
            const int k = ((mode * BPC__BDIST_COUNT + d) * 4 + si) * 2 + li;
            if (((bpps[bi] == 25 && t_size > 1) || (bpps[bi] == 3 && t_size > 4)) &&
                k % 3 != t_size % 3)
              continue;
            const int s = sv[si], len = lens[li];
            T_CHECK(bpc__bcast_dist(d, r, n / r, s, 5u, src) == BPC_OK, "dist");
            char want[48] = "", got[48] = "";
            auto_pick(a, src, s, r, n / r, len, want);
            long long h0 = 0, m0 = 0, h1 = 0, m1 = 0, h2 = 0, m2 = 0;
            bpc_bcast_info_t info;
            for (int off = 0; off < 2; off++) {
              T_CHECK(bpc__bcast_cache(ctx, off, &h0, &m0) == BPC_OK, "cache");
              auto_call(a, n, src, s, 0, 0, len, &info);
              info_pick(&info, got);
              T_CHECK(strcmp(got, want) == 0, "n=%d %s s=%d len=%d off=%d: auto ran %s, model %s",
                      n, bpc__bcast_dist_name(d), s, len, off, got, want);
              auto_call(a, n, src, s, 0, 0, len, &info);
              info_pick(&info, got);
              T_CHECK(strcmp(got, want) == 0, "n=%d %s s=%d len=%d off=%d: again %s, model %s",
                      n, bpc__bcast_dist_name(d), s, len, off, got, want);
              T_CHECK(bpc__bcast_cache(ctx, -1, &h1, &m1) == BPC_OK, "cache");
              /* every rank hit and missed alike (the key holds agreed values only) */
              long long hm[2] = {h1, m1}, lo[2], hi[2];
              MPI_Allreduce(hm, lo, 2, MPI_LONG_LONG, MPI_MIN, MPI_COMM_WORLD);
              MPI_Allreduce(hm, hi, 2, MPI_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
              T_CHECK(lo[0] == hi[0] && lo[1] == hi[1],
                      "n=%d s=%d off=%d: ranks differ: hits %lld..%lld, misses %lld..%lld", n, s,
                      off, lo[0], hi[0], lo[1], hi[1]);
              /* on: the second call hits; off: both run the model */
              T_CHECK(off ? h1 == h0 && m1 == m0 + 2 : h1 >= h0 + 1 && h1 + m1 == h0 + m0 + 2,
                      "n=%d s=%d off=%d: hits %lld -> %lld, misses %lld -> %lld", n, s, off, h0,
                      h1, m0, m1);
            }
            T_CHECK(bpc__bcast_cache(ctx, 0, &h2, &m2) == BPC_OK, "cache on");
          }
      free(src);
      bpc_assign_destroy(&a);
    }
  }
  T_SYNC();
}
END_TEST

/* BPC_BCAST_ALPHA as the test found it, put back after a change. */
static char alpha_saved[64];
static int alpha_was_set = -1;
static void alpha_set(const char *v)
{
  if (alpha_was_set < 0) {
    const char *e = getenv("BPC_BCAST_ALPHA");
    alpha_was_set = e != NULL;
    snprintf(alpha_saved, sizeof alpha_saved, "%s", e != NULL ? e : "");
  }
  setenv("BPC_BCAST_ALPHA", v, 1);
}
static void alpha_restore(void)
{
  if (alpha_was_set > 0)
    setenv("BPC_BCAST_ALPHA", alpha_saved, 1);
  else if (alpha_was_set == 0)
    unsetenv("BPC_BCAST_ALPHA");
}

/* A changed input changes the key: sources, the largest item crossing a
 * rounding step (not within one), the mesh, alpha; the LRU bound. */
START_TEST(test_bcast_auto_key)
{
  const int n = 4 * t_size; /* near-square mesh: not 1 x n */
  bpc_assign_t *a = NULL;
  T_CHECK(bpc_assign_create(ctx, n, BPC_ASSIGN_CONTIGUOUS, NULL, &a) == BPC_OK, "assign");
  int src[2] = {0, n - 1}, src2[2] = {0, n - 2};
  bpc_bcast_info_t info;
  long long h = 0, m = 0, h0 = 0, m0 = 0;
#define AK_EXPECT(hit, what)                                                         \
  do {                                                                               \
    T_CHECK(bpc__bcast_cache(ctx, -1, &h, &m) == BPC_OK, "cache");                   \
    T_CHECK((hit) ? h == h0 + 1 && m == m0 : h == h0 && m == m0 + 1,                 \
            "%s: expected a %s (hits %lld -> %lld, misses %lld -> %lld)", what,       \
            (hit) ? "hit" : "miss", h0, h, m0, m);                                  \
    h0 = h;                                                                          \
    m0 = m;                                                                          \
  } while (0)
  T_CHECK(bpc__bcast_cache(ctx, -1, &h0, &m0) == BPC_OK && h0 == 0 && m0 == 0, "fresh cache");
  auto_call(a, n, src, 2, 0, 0, 32, &info);
  AK_EXPECT(0, "first call");
  auto_call(a, n, src, 2, 0, 0, 32, &info);
  AK_EXPECT(1, "same inputs");
  auto_call(a, n, src2, 2, 0, 0, 32, &info);
  AK_EXPECT(0, "other sources");
  auto_call(a, n, src, 1, 0, 0, 32, &info);
  AK_EXPECT(0, "fewer sources");
  auto_call(a, n, src, 2, 0, 0, 33, &info); /* 33 bytes: modelled as 40 */
  AK_EXPECT(0, "33 bytes");
  auto_call(a, n, src, 2, 0, 0, 40, &info);
  AK_EXPECT(1, "40 bytes (the same rounding step as 33)");
  auto_call(a, n, src, 2, 0, 0, 41, &info);
  AK_EXPECT(0, "41 bytes");
  auto_call(a, n, src, 2, 1, n, 32, &info);
  AK_EXPECT(0, "a 1 x n mesh");
  alpha_set("3e-6");
  auto_call(a, n, src, 2, 0, 0, 32, &info);
  AK_EXPECT(0, "another alpha");
  alpha_restore();
  auto_call(a, n, src, 2, 0, 0, 32, &info);
  AK_EXPECT(1, "alpha back");
  /* 8 other inputs push the first one out (least recently used) */
  for (int len = 1; len <= 8; len++) {
    auto_call(a, n, src, 2, 0, 0, len, &info);
    AK_EXPECT(0, "small sizes");
  }
  auto_call(a, n, src, 2, 0, 0, 32, &info);
  AK_EXPECT(0, "evicted");
  auto_call(a, n, src, 2, 0, 0, 8, &info);
  AK_EXPECT(1, "still cached");
#undef AK_EXPECT
  bpc_assign_destroy(&a);
  T_SYNC();
}
END_TEST

START_TEST(test_bcast_callback)
{
  const int n = 2 * t_size;
  bpc_assign_t *a = NULL;
  bpc_assign_create(ctx, n, BPC_ASSIGN_CONTIGUOUS, NULL, &a);
  int src[2] = {0, n - 1};
  int bad = 0;
  char why[256];
  int rc = br_run(ctx, a, src, 2, "br_lin", 0, 0, 0, 5, t_rank == t_size - 1, 0, &bad, why,
                  sizeof why, NULL);
  T_CHECK(rc == BPC_ECALLBACK, "got %s", bpc_err_name(rc));
  bpc_assign_destroy(&a);
  T_SYNC();
}
END_TEST

/* lib/comm's allgatherv of bytes (the mpi row's collective): rank r gives
 * (r % 3) * 5 bytes of value r, empty contributions included. */
START_TEST(test_allgatherv)
{
  size_t *counts = calloc((size_t)t_size, sizeof(size_t)), total = 0;
  for (int r = 0; r < t_size; r++) {
    counts[r] = (size_t)(r % 3) * 5;
    total += counts[r];
  }
  unsigned char *in = malloc(counts[t_rank] + 1), *out = malloc(total + 1);
  memset(in, t_rank, counts[t_rank]);
  int rc = bpc__allgatherv(ctx, in, counts[t_rank], out, counts);
  T_CHECK(rc == BPC_OK, "allgatherv: %s", bpc_err_name(rc));
  size_t off = 0;
  for (int r = 0; r < t_size && rc == BPC_OK; r++)
    for (size_t j = 0; j < counts[r]; j++, off++)
      T_CHECK(out[off] == (unsigned char)r, "allgatherv: byte %zu is %d, want %d", off,
              out[off], r);
  /* bytes != counts[me] is an argument error on that rank (every rank here) */
  rc = bpc__allgatherv(ctx, in, counts[t_rank] + 1, out, counts);
  T_CHECK(rc == BPC_EINVAL, "allgatherv with a wrong count: %s", bpc_err_name(rc));
  free(in);
  free(out);
  free(counts);
  T_SYNC();
}
END_TEST

static const bad_case_t bad_cases[] = {
    {"assign NULL", BPC_ENULL, 0, NULL},
    {"type NULL", BPC_ENULL, 0, NULL},
    {"item_of NULL", BPC_ENULL, 0, NULL},
    {"recv NULL", BPC_ENULL, 0, NULL},
    {"sources NULL", BPC_ENULL, 0, NULL},
    {"sources not ascending", BPC_EINVAL, 0, NULL},
    {"unknown algorithm", BPC_EALGO, 0, NULL},
    {"mesh does not fit", BPC_EDIVS, 0, NULL},
    {"nthreads negative", BPC_EINVAL, 0, NULL},
    {"sources differ", BPC_EMISMATCH, 1, "sources"},
    {"nsources differs", BPC_EMISMATCH, 1, "nsources"},
    {"type differs", BPC_EMISMATCH, 1, "type kind"},
    {"element size differs", BPC_EMISMATCH, 1, "element size"},
    {"algorithm differs", BPC_EMISMATCH, 1, "algorithm"},
    {"mesh differs", BPC_EMISMATCH, 1, "mesh rows"},
    {"reposition differs", BPC_EMISMATCH, 1, "reposition"},
    {"partition differs", BPC_EMISMATCH, 1, "partition"},
    {"BPC_BCAST_ALPHA differs", BPC_EMISMATCH, 1, "model alpha (ps)"},
};
#define NBAD ((int)(sizeof bad_cases / sizeof bad_cases[0]))

static int nop_item(int g, const void **item, void *u)
{
  (void)g;
  (void)u;
  *item = NULL;
  return 0;
}
static int nop_recv(int d, int g, void *item, void *u)
{
  (void)d;
  (void)g;
  (void)item;
  (void)u;
  return 0;
}

START_TEST(test_bcast_bad_rank)
{
  const int n = 4 * t_size;
  bpc_assign_t *a = NULL;
  bpc_assign_create(ctx, n, BPC_ASSIGN_CONTIGUOUS, NULL, &a);
  bpc_type_ops_t ops = str_ops();
  for (int c = 0; c < NBAD; c++)
    for (int m = 0; m < BAD_NMODES; m++) {
      const int bad = bad_here(m);
      bpc_type_t ti = bpc_type_contiguous(sizeof(int), MPI_INT);
      bpc_type_t td = bpc_type_contiguous(sizeof(double), MPI_DOUBLE);
      bpc_type_t tc = bpc_type_custom(&ops, NULL);
      const bpc_type_t *t = &ti;
      int good[3] = {0, 1, n - 1}, other[3] = {0, 2, n - 1}, unsorted[3] = {1, 0, n - 1};
      const int *src = good;
      int ns = 3;
      const bpc_assign_t *as = a;
      bpc_bcast_item_fn it = nop_item;
      bpc_bcast_recv_fn rv = nop_recv;
      bpc_bcast_params_t P = bpc_bcast_params_default();
      if (bad) {
        switch (c) {
        case 0: as = NULL; break;
        case 1: t = NULL; break;
        case 2: it = NULL; break;
        case 3: rv = NULL; break;
        case 4: src = NULL; break;
        case 5: src = unsorted; break;
        case 6: P.algorithm = "no_such_algorithm"; break;
        case 7: P.rows = 3; P.cols = n; break;
        case 8: P.nthreads = -2; break;
        case 9: src = other; break;
        case 10: ns = 2; break;
        case 11: t = &tc; break;
        case 12: t = &td; break;
        case 13: P.algorithm = "2step"; break;
        case 14: P.rows = 1; P.cols = n; break;
        case 15: P.reposition = 1; break;
        case 16: P.partition = 1; break;
        case 17: alpha_set("3e-6"); break;
        }
      }
      if (c == 13 && !bad)
        P.algorithm = "xor";
      if (c == 14)
        P.algorithm = "br_lin"; /* auto's choice depends on the mesh */
      if (c == 14 && !bad) {
        P.rows = 2;
        P.cols = n / 2;
      }
      int rc = bpc_bcast(ctx, as, t, src, ns, it, rv, NULL, &P, NULL);
      alpha_restore();
      bad_check(ctx, &bad_cases[c], m, rc);
    }
  bpc_assign_destroy(&a);
  T_SYNC();
}
END_TEST

static Suite *make(void)
{
  Suite *s = suite_create("bcast");
  TCase *tc = tcase_create("mpi");
  tcase_set_timeout(tc, 600);
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_test(tc, test_bcast_all);
  tcase_add_test(tc, test_bcast_mesh10);
  tcase_add_test(tc, test_bcast_auto_cache);
  tcase_add_test(tc, test_bcast_auto_key);
  tcase_add_test(tc, test_bcast_callback);
  tcase_add_test(tc, test_bcast_bad_rank);
  tcase_add_test(tc, test_allgatherv);
  suite_add_tcase(s, tc);
  /* the budget: 4096 blocks, every algorithm, s = p and small, in 120 s
   * at any count of tests/testlist (a correctness check; nothing timed) */
  TCase *big = tcase_create("many_blocks");
  tcase_set_timeout(big, 120);
  tcase_add_checked_fixture(big, setup, teardown);
  tcase_add_test(big, test_bcast_many_blocks);
  suite_add_tcase(s, big);
  return s;
}

BPC_T_MPI_MAIN(make)
