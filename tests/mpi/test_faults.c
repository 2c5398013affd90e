/*
 * tests/mpi/test_faults.c - running out of memory on one rank in the middle
 * of a collective call: the same error on every rank, never a hang, and a
 * correct result whenever the call says it succeeded.
 *
 * The suite is linked with -Wl,--wrap=malloc,calloc,realloc,aligned_alloc
 * (tests/Makefile.mk), so every allocation of the library (linked in from
 * the convenience library) goes through the wrappers below, and MPI's own
 * (a shared library) does not. A sweep runs a call again and again; run N
 * fails the N-th allocation the call makes on one rank (the victim) and
 * lets the others succeed, until a run makes fewer than N + 1 allocations.
 * Each run must end with the same code on every rank: BPC_OK with the
 * serial reference's result (a failure the library recovered from, e.g.
 * the active-pixel runs falling back to the whole image), or BPC_ENOMEM
 * with the failing rank's message, not one of a later error it caused. A
 * hang is caught by the suite's timeout.
 *
 * Calls: compositing with every strategy of the table, over and z-buffer,
 * sparse and dense images, with and without the gather, 1 or 2 blocks per
 * process, into outputs filled on demand (the swap engine's radix-k, shift
 * and ring schedules and the exchange under them); merge with every algorithm of the table but
 * halving (commutative merges only), a non-commutative product of 2x2
 * matrices, and every algorithm with commutative elementwise sums (and
 * "auto" as a persistent plan: init, two starts, free), 1 block
 * a process (contiguous) or 2 (round-robin); all-to-all
 * (automatic rounds and one round) and every broadcast algorithm, items of
 * 0-320 bytes that depend on source and destination; every scan strategy
 * (inclusive, 2x2 matrix products); each of these three also with
 * "auto", and broadcast and scan with their "mpi" rows, whose MPI
 * collectives every rank must join also after a failure (doc/comm.md). The
 * neighbour exchange: creation, rounds (bpc_neighbor_round), bpc_neighbor_iterate
 * and bare bpc_neighbor_exchange calls, synchrony 1 and 0.5, items by copy
 * and by reference, then bpc_neighbor_destroy (a failure fails the object
 * on every rank; the exchange alone does not agree, so the test does).
 * bpc_swap on its own: every schedule and "auto", non-commutative 2x2
 * matrix products, each owned piece checked against the serial product.
 * Checkpoints: bpc_io_write, and bpc_io_read of the file it wrote, the
 * test_io blocks (tests/common/io_items.h: doubles, empty blocks among
 * them), every one read back and compared when a call succeeds, with the
 * checksums inline and on the helper thread (BPC_IO_CRC_THREAD=1). A new
 * context: bpc_init, an assignment and its first exchange (an all-to-all).
 *
 * Calls run on 2 threads at one and two processes, 1 beyond
 * (FAULTS_THREADS sets it).
 *
 * To chase one case: FAULTS_ONLY=<part of its name> runs only the sweeps
 * whose name holds it, FAULTS_FROM=N starts them at allocation N, and
 * FAULTS_VERBOSE=1 prints every run before it starts (a hang's last line).
 */
#include "mpi_check.h"

#include <bpc/alltoall.h>
#include <bpc/bcast.h>
#include <bpc/io.h>
#include <bpc/merge.h>
#include <bpc/neighbor.h>
#include <bpc/scan.h>
#include <bpc/swap.h>

#include "../common/merge_items.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/composite_run.h"
#include "comm/comm.h"
#include "../common/io_items.h"

/* ------------------------------------------------ allocation wrappers */

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);
void *__real_aligned_alloc(size_t align, size_t n);

static int f_armed;     /* count (and maybe fail) allocations */
static long f_count;    /* allocations counted since armed */
static long f_fail_at;  /* the one to fail (-1: none) */
static int f_hit;       /* it was failed */

static int f_take(void)
{
  if (!__atomic_load_n(&f_armed, __ATOMIC_RELAXED))
    return 0;
  if (__atomic_fetch_add(&f_count, 1, __ATOMIC_RELAXED) != f_fail_at)
    return 0;
  __atomic_store_n(&f_hit, 1, __ATOMIC_RELAXED);
  return 1;
}

void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_realloc(void *p, size_t n);
void *__wrap_aligned_alloc(size_t align, size_t n);
void *__wrap_malloc(size_t n) { return f_take() ? NULL : __real_malloc(n); }
void *__wrap_calloc(size_t n, size_t size) { return f_take() ? NULL : __real_calloc(n, size); }
void *__wrap_realloc(void *p, size_t n) { return f_take() ? NULL : __real_realloc(p, n); }
void *__wrap_aligned_alloc(size_t align, size_t n)
{
  return f_take() ? NULL : __real_aligned_alloc(align, n);
}

static void f_arm(long fail_at)
{
  f_count = 0;
  f_hit = 0;
  f_fail_at = fail_at;
  __atomic_store_n(&f_armed, 1, __ATOMIC_RELEASE);
}
static void f_disarm(void) { __atomic_store_n(&f_armed, 0, __ATOMIC_RELEASE); }
/* armed again, counting on from where f_disarm left off */
static void f_resume(void) { __atomic_store_n(&f_armed, 1, __ATOMIC_RELEASE); }

/* ---------------------------------------------------------- the sweep */

/* Threads a call runs on: FAULTS_THREADS, else 2 at one and two processes
 * (the failure paths of the threaded loops: blocks, the local tree
 * reduction, the scan's local stages) and 1 beyond (more threads than
 * cores make the sweep 15x slower: OpenMP's waits spin). */
static int f_threads(void)
{
  const char *e = getenv("FAULTS_THREADS");
  return e != NULL && atoi(e) > 0 ? atoi(e) : t_size <= 2 ? 2 : 1;
}

static bpc_ctx_t *ctx;

static void setup(void) { ck_assert_int_eq(bpc_init(MPI_COMM_WORLD, NULL, &ctx), BPC_OK); }
static void teardown(void) { bpc_finalize(&ctx); }

/* One call: returns its code; *wrong counts result errors (checked only
 * when it returned BPC_OK). Allocations are armed around the library call
 * only (the call's own setup and check allocate unarmed). */
typedef int (*f_call_t)(void *arg, long fail_at, int *wrong);

/* Set by a call whose code is not its own rank's (the neighbour exchange
 * does not agree): this rank's own code, whose message is checked; and
 * whether a callback of the call saw BPC_ENOMEM from the library (on any
 * rank), which the call reports as BPC_ECALLBACK. */
static int f_own_rc = 1; /* 1: the same as the call's code */
static int f_cb_enomem;

/* The message of the first failure, not of one that followed it: every
 * error name in it ("BPC_ENOMEM: on rank 1: BPC_ENOMEM: ...") is BPC_ENOMEM. */
static int only_enomem(const char *msg)
{
  int names = 0;
  for (const char *p = strstr(msg, "BPC_E"); p != NULL; p = strstr(p + 1, "BPC_E"), names++)
    if (strncmp(p, "BPC_ENOMEM", 10) != 0)
      return 0;
  return names > 0;
}

/* Run `call` with the N-th allocation failed on `victim`, N = 0, 1, ...
 * until a run fails nothing. Returns the number of runs. */
static int sweep(const char *what, f_call_t call, void *arg, int victim)
{
  int runs = 0;
  const char *only = getenv("FAULTS_ONLY");
  if (only != NULL && strstr(what, only) == NULL)
    return 0;
  long n0 = getenv("FAULTS_FROM") != NULL ? atol(getenv("FAULTS_FROM")) : 0;
  for (long n = n0; n < 100000; n++, runs++) {
    int wrong = 0;
    f_own_rc = 1;
    f_cb_enomem = 0;
    if (getenv("FAULTS_VERBOSE") != NULL)
      fprintf(stderr, "[%d] %s: allocation %ld on rank %d\n", t_rank, what, n, victim);
    const int rc = call(arg, t_rank == victim ? n : -1, &wrong);
    const int hit = f_hit;
    const int own = f_own_rc == 1 ? rc : f_own_rc;
    const int cb = f_cb_enomem && rc == BPC_ECALLBACK; /* an enqueue failed */
    long long v[4] = {rc, -(long long)rc, hit, wrong}, w[4];
    MPI_Allreduce(v, w, 4, MPI_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
    const long long rcmax = w[0], rcmin = -w[1];
    T_CHECK(rcmin == rcmax, "%s, allocation %ld failed on rank %d: codes %lld..%lld differ "
            "between ranks", what, n, victim, rcmin, rcmax);
    T_CHECK(rc == BPC_OK || rc == BPC_ENOMEM || cb, "%s, allocation %ld failed on rank %d: %s "
            "(%s)", what, n, victim, bpc_err_name(rc), bpc_last_error(ctx));
    T_CHECK(own == BPC_OK || cb || only_enomem(bpc_last_error(ctx)),
            "%s, allocation %ld failed on rank %d: message '%s'", what, n, victim,
            bpc_last_error(ctx));
    T_CHECK(rc != BPC_OK || wrong == 0, "%s, allocation %ld failed on rank %d: BPC_OK with %d "
            "wrong value(s)", what, n, victim, wrong);
    /* the first problem is enough; or nothing was failed: done (decided
     * together: a rank leaving the sweep alone would hang the others) */
    int stop = t_fail_local > 0 || w[2] == 0, any = 0;
    MPI_Allreduce(&stop, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (any)
      break;
  }
  return runs;
}

/* ------------------------------------------------------- compositing */

typedef struct fc_case {
  const char *strategy;
  int kind, op, gather, bpp;
  bpc_assign_t *a;
  int output; /* into outputs (starting as garbage) with valid rectangles: filled on demand */
} fc_case_t;

static int call_composite(void *arg, long fail_at, int *wrong)
{
  const fc_case_t *k = arg;
  const int W = 61, H = 37, seed = 5;
  const size_t np = (size_t)W * H;
  int n = 0, nl = 0;
  const int *gids = NULL;
  bpc_assign_nblocks(k->a, &n);
  bpc_assign_local(k->a, &gids, &nl);
  const int depth = k->op == CR_ZBUFFER;
  bpc_image_t im[4], out[4];
  bpc_composite_rect_t valid[4];
  bpc_composite_piece_t pc[4];
  for (int i = 0; i < nl; i++) {
    im[i].width = W;
    im[i].height = H;
    im[i].rgba = malloc(np * 4 * sizeof(float));
    im[i].depth = depth ? malloc(np * sizeof(float)) : NULL;
    cr_image(gids[i], W, H, k->kind, seed, im[i].rgba, im[i].depth);
    out[i] = (bpc_image_t){W, H, k->output ? malloc(np * 4 * sizeof(float)) : NULL,
                           k->output && depth ? malloc(np * sizeof(float)) : NULL};
    if (k->output) {
      cr_garbage(out[i].rgba, out[i].depth, np);
      valid[i] = cr_bbox(im[i].rgba, im[i].depth, W, H, INFINITY);
    }
  }
  float *gat = malloc(np * 4 * sizeof(float)), *gatd = malloc(np * sizeof(float));
  float *ref = malloc(np * 4 * sizeof(float)), *refd = malloc(np * sizeof(float));
  bpc_composite_params_t P = bpc_composite_params_default();
  P.algorithm = k->strategy;
  P.op = cr_op(k->op, depth);
  P.nthreads = f_threads();
  if (k->output) {
    P.output = out;
    P.valid = valid;
  }
  if (k->gather) {
    P.gather_rank = 0;
    P.gather_rgba = t_rank == 0 ? gat : NULL;
    P.gather_depth = t_rank == 0 && depth ? gatd : NULL;
  }
  f_arm(fail_at);
  const int rc = bpc_composite(ctx, k->a, im, &P, pc, NULL);
  f_disarm();
  if (rc == BPC_OK) {
    cr_reference(n, NULL, W, H, k->kind, seed, k->op, ref, refd);
    for (int i = 0; i < nl; i++)
      for (size_t p = pc[i].offset; p < pc[i].offset + pc[i].count && p < np; p++)
        for (int c = 0; c < 4; c++)
          *wrong += !(fabsf((k->output ? out : im)[i].rgba[4 * p + c] - ref[4 * p + c]) <= 1e-5f);
    if (k->gather && t_rank == 0)
      for (size_t p = 0; p < 4 * np; p++)
        *wrong += !(fabsf(gat[p] - ref[p]) <= 1e-5f);
  }
  for (int i = 0; i < nl; i++) {
    free(im[i].rgba);
    free(im[i].depth);
    free(out[i].rgba);
    free(out[i].depth);
  }
  free(gat);
  free(gatd);
  free(ref);
  free(refd);
  return rc;
}

START_TEST(test_composite_oom)
{
  bpc_algo_info_t table[16];
  int ns = 0;
  ck_assert_int_eq(bpc_algorithms("composite", table, 16, &ns), BPC_OK);
  int idx = 0, runs = 0;
  for (int bpp = 1; bpp <= 2; bpp++) {
    bpc_assign_t *a = NULL;
    T_CHECK(bpc_assign_create(ctx, bpp * t_size, BPC_ASSIGN_CONTIGUOUS, NULL, &a) == BPC_OK,
            "assign: %s", bpc_last_error(ctx));
    for (int s = 0; s < ns && a != NULL; s++)
      for (int v = 0; v < 4; v++, idx++) {
        /* sparse over with and without the gather (without it, at two
         * blocks a process: into outputs with valid rectangles, filled on
         * demand), sparse z-buffer (into such outputs at one block a
         * process), dense over */
        const int kinds[4] = {CR_SPARSE, CR_SPARSE, CR_SPARSE, CR_FULL};
        const int ops[4] = {CR_OVER, CR_OVER, CR_ZBUFFER, CR_OVER};
        fc_case_t k = {table[s].name, kinds[v], ops[v], v == 1 || (v == 2 && bpp == 2), bpp, a,
                       (v == 2 && bpp == 1) || (v == 0 && bpp == 2)};
        char what[160];
        /* the victim moves over the ranks: the last one, rank 0, ... */
        const int victim = (t_size - 1 + idx) % t_size;
        snprintf(what, sizeof what, "composite %s %s %s%s%s, %d block(s) a process", table[s].name,
                 k.kind == CR_SPARSE ? "sparse" : "dense", k.op == CR_OVER ? "over" : "z-buffer",
                 k.gather ? " gather" : "", k.output ? " into outputs" : "", bpp);
        runs += sweep(what, call_composite, &k, victim);
      }
    bpc_assign_destroy(&a);
  }
  if (t_rank == 0)
    printf("compositing: %d runs, each with one allocation failed on one rank\n", runs);
  T_CHECK(runs > 20 * ns || getenv("FAULTS_ONLY") != NULL,
          "only %d runs: the wrappers saw no allocation?", runs);
  T_SYNC();
}
END_TEST

/* ------------------------------------------------------------- merge */

/* Items: m 2x2 matrices of uint64 (mod 2^64) a block; the merge multiplies
 * them in position order (associative, not commutative), so a wrong order
 * or a lost item changes the root's product. */
enum { FM_M = 300 };

static void fm_mul(uint64_t *acc, const uint64_t *b)
{
  const uint64_t r[4] = {acc[0] * b[0] + acc[1] * b[2], acc[0] * b[1] + acc[1] * b[3],
                         acc[2] * b[0] + acc[3] * b[2], acc[2] * b[1] + acc[3] * b[3]};
  memcpy(acc, r, sizeof r);
}

static void fm_item(int gid, uint64_t *m)
{
  for (int e = 0; e < FM_M; e++)
    for (int j = 0; j < 4; j++)
      m[4 * e + j] = cr_hash((uint32_t)(gid * 7919 + e * 4 + j)) % 97u;
}

static int fm_merge(bpc_merge_group_t *g, void *user)
{
  (void)user;
  bpc_buf_t *root = g->items[g->root];
  for (int i = 0; i < g->nitems; i++) {
    if (i == g->root)
      continue;
    const bpc_buf_t *b = g->items[i];
    uint64_t *acc = root->data;
    const uint64_t *x = b->data;
    /* items come by increasing position: the root's own is first */
    for (size_t e = 0; e < b->count; e++)
      fm_mul(acc + 4 * e, x + 4 * e);
  }
  return 0;
}

/* The commutative, elementwise one: sums (what distance halving needs;
 * elementwise adds the engine's count check, a collective). */
static int fm_sum(bpc_merge_group_t *g, void *user)
{
  (void)user;
  bpc_buf_t *root = g->items[g->root];
  for (int i = 0; i < g->nitems; i++) {
    const bpc_buf_t *b = g->items[i];
    for (size_t e = 0; i != g->root && e < 4 * b->count; e++)
      ((uint64_t *)root->data)[e] += ((const uint64_t *)b->data)[e];
  }
  return 0;
}

typedef struct fm_case {
  const char *algorithm;
  bpc_assign_t *a;
  int sum;  /* fm_sum, else fm_merge's products */
  int plan; /* as a persistent plan: bpc_merge_init, two starts (the
             * second on new items), bpc_plan_free, all armed */
} fm_case_t;

static int call_merge(void *arg, long fail_at, int *wrong)
{
  const fm_case_t *k = arg;
  int n = 0, nl = 0;
  const int *gids = NULL;
  bpc_assign_nblocks(k->a, &n);
  bpc_assign_local(k->a, &gids, &nl);
  bpc_buf_t items[4];
  for (int i = 0; i < nl; i++) {
    items[i].data = malloc(sizeof(uint64_t) * 4 * FM_M);
    items[i].count = FM_M;
    fm_item(gids[i], items[i].data);
  }
  bpc_type_t t = bpc_type_contiguous(4 * sizeof(uint64_t), MPI_BYTE);
  bpc_merge_op_t op = {
      .fn = k->sum ? fm_sum : fm_merge, .commutative = k->sum, .elementwise = k->sum};
  bpc_merge_params_t P = bpc_merge_params_default();
  P.algorithm = k->algorithm;
  P.nthreads = f_threads();
  /* every run a first one: what the calls before kept is freed, and the
   * reservations are off, so a call allocates as its messages come (the
   * paths of a failed reservation; a plan keeps them: its init and first
   * start are what is swept) */
  bpc__comm_trim(ctx);
  bpc__comm_set_reserve(ctx, k->plan);
  f_arm(fail_at);
  int rc;
  if (k->plan) {
    bpc_plan_t *plan = NULL;
    rc = bpc_merge_init(ctx, k->a, &t, items, &op, &P, &plan);
    if (rc == BPC_OK)
      rc = bpc_plan_start(plan);
    if (rc == BPC_OK) {
      f_disarm();
      for (int i = 0; i < nl; i++) /* the first start's result goes */
        fm_item(gids[i], items[i].data);
      f_resume();
      rc = bpc_plan_start(plan);
    }
    bpc_plan_free(&plan);
  } else {
    rc = bpc_merge(ctx, k->a, &t, items, &op, &P, NULL);
  }
  f_disarm();
  bpc__comm_set_reserve(ctx, 1);
  for (int i = 0; i < nl; i++) {
    if (rc == BPC_OK && gids[i] == 0) { /* the root of the full reduction */
      uint64_t *ref = malloc(sizeof(uint64_t) * 4 * FM_M), *x = malloc(sizeof(uint64_t) * 4 * FM_M);
      fm_item(0, ref);
      for (int g = 1; g < n; g++) {
        fm_item(g, x);
        for (int e = 0; e < FM_M; e++)
          if (k->sum)
            for (int j = 0; j < 4; j++)
              ref[4 * e + j] += x[4 * e + j];
          else
            fm_mul(ref + 4 * e, x + 4 * e);
      }
      *wrong += items[i].count != FM_M ||
                memcmp(items[i].data, ref, sizeof(uint64_t) * 4 * FM_M) != 0;
      free(ref);
      free(x);
    }
    free(items[i].data);
  }
  return rc;
}

START_TEST(test_merge_oom)
{
  bpc_algo_info_t table[16];
  int na = 0, idx = 0, runs = 0;
  ck_assert_int_eq(bpc_algorithms("merge", table, 16, &na), BPC_OK);
  for (int bpp = 1; bpp <= 2; bpp++) {
    bpc_assign_t *a = NULL;
    T_CHECK(bpc_assign_create(ctx, bpp * t_size, bpp == 2 ? BPC_ASSIGN_ROUND_ROBIN
                                                          : BPC_ASSIGN_CONTIGUOUS, NULL, &a) == BPC_OK,
            "assign: %s", bpc_last_error(ctx));
    for (int s = 0; s <= na + 1 && a != NULL; s++) /* every row, "auto", "auto" planned */
      for (int sum = 0; sum <= 1; sum++, idx++) {
        fm_case_t k = {s < na ? table[s].name : "auto", a, sum, s == na + 1};
        if (!sum && mi_row_commutative_only(k.algorithm))
          continue; /* commutative merges only (halving): the product is not */
        char what[128];
        snprintf(what, sizeof what, "merge %s%s, %s, %d block(s) a process", k.algorithm,
                 k.plan ? " (plan)" : "", sum ? "sums" : "products", bpp);
        runs += sweep(what, call_merge, &k, (t_size - 1 + idx) % t_size);
      }
    bpc_assign_destroy(&a);
  }
  if (t_rank == 0)
    printf("merge: %d runs, each with one allocation failed on one rank\n", runs);
  T_SYNC();
}
END_TEST

/* ------------------------------------------------- all-to-all, bcast */

static uint64_t fv(int a, int b, size_t i)
{
  return ((uint64_t)cr_hash((uint32_t)(a * 92821 + b * 613 + (int)i)) << 20) ^ (uint64_t)i;
}

/* The item block s gives block d (all-to-all) or source s gives everyone
 * (d = -1, broadcast): its length and values depend on both. */
static size_t fa_len(int s, int d) { return (size_t)((s * 5 + d * 3 + 9) % 9) * 40; }

typedef struct fa_case {
  const char *algorithm;
  int direct; /* all-to-all: one round (k = nblocks) */
  bpc_assign_t *a;
  int n, nl;
  const int *gids;
  bpc_buf_t *out;   /* all-to-all: [local src][dst] items; bcast: [source] */
  long long got, wrong;
  int custom; /* bcast: strings of a custom type (packed, unpacked) */
  int resume; /* all-to-all: go on counting allocations (call_context) */
} fa_case_t;

/* Broadcast's custom type: source src's string, 40-200 characters. */
static char *fs_string(int src)
{
  const size_t n = 40 + (size_t)(src * 37) % 160;
  char *s = __real_malloc(n + 1);
  for (size_t i = 0; i < n; i++)
    s[i] = (char)('a' + (src * 7 + (int)i) % 26);
  s[n] = '\0';
  return s;
}
static int fs_unpack_failed; /* the test's own unpack ran out of memory */
static int fs_unpack(const void *buf, size_t bytes, void **item, void *user)
{
  const int r = str_unpack(buf, bytes, item, user); /* its malloc is wrapped too */
  if (r != 0)
    fs_unpack_failed = 1;
  return r;
}
static void fa_fill(bpc_buf_t *b, int s, int d)
{
  b->count = fa_len(s, d);
  b->data = malloc(sizeof(uint64_t) * (b->count + 1));
  for (size_t i = 0; i < b->count; i++)
    ((uint64_t *)b->data)[i] = fv(s, d, i);
}

static void fa_check(fa_case_t *k, int s, int d, const bpc_buf_t *b)
{
  k->got++;
  int bad = b->count != fa_len(s, d);
  for (size_t i = 0; !bad && i < b->count; i++)
    bad = ((const uint64_t *)b->data)[i] != fv(s, d, i);
  k->wrong += bad;
}

static int fa_send(int src, int dst, const void **item, void *user)
{
  fa_case_t *k = user;
  int l = 0;
  while (k->gids[l] != src)
    l++;
  *item = &k->out[(size_t)l * (size_t)k->n + (size_t)dst];
  return 0;
}

static int fa_recv(int dst, int src, void *item, void *user)
{
  fa_check(user, src, dst, item);
  return 0;
}

static int call_alltoall(void *arg, long fail_at, int *wrong)
{
  fa_case_t *k = arg;
  bpc_assign_nblocks(k->a, &k->n);
  bpc_assign_local(k->a, &k->gids, &k->nl);
  k->out = calloc((size_t)(k->nl * k->n + 1), sizeof *k->out);
  for (int l = 0; l < k->nl; l++)
    for (int d = 0; d < k->n; d++)
      fa_fill(&k->out[(size_t)l * (size_t)k->n + (size_t)d], k->gids[l], d);
  k->got = k->wrong = 0;
  bpc_type_t t = bpc_type_contiguous(sizeof(uint64_t), MPI_UINT64_T);
  bpc_alltoall_params_t P = bpc_alltoall_params_default();
  P.algorithm = k->algorithm;
  P.nthreads = f_threads();
  if (k->direct && k->n >= 2) { /* k = {1} is no k-vector */
    P.k = &k->n;
    P.nk = 1;
  }
  if (k->resume)
    f_resume();
  else
    f_arm(fail_at);
  const int rc = bpc_alltoall(ctx, k->a, &t, fa_send, fa_recv, k, &P, NULL);
  f_disarm();
  if (rc == BPC_OK)
    *wrong = (int)k->wrong + (k->got != (long long)k->nl * k->n);
  for (int i = 0; i < k->nl * k->n; i++)
    free(k->out[i].data);
  free(k->out);
  return rc;
}

static int fb_item(int src, const void **item, void *user)
{
  fa_case_t *k = user;
  *item = k->custom ? k->out[src].data : (const void *)&k->out[src];
  return 0;
}

static int fb_recv(int dst, int src, void *item, void *user)
{
  (void)dst;
  fa_case_t *k = user;
  if (k->custom) {
    k->wrong += strcmp(item, k->out[src].data) != 0;
    k->got++;
    return 0;
  }
  fa_check(user, src, -1, item);
  return 0;
}

static int call_bcast(void *arg, long fail_at, int *wrong)
{
  fa_case_t *k = arg;
  bpc_assign_nblocks(k->a, &k->n);
  bpc_assign_local(k->a, &k->gids, &k->nl);
  /* sources: the first, the middle and the last block (ascending, distinct) */
  int src[3], ns = 0;
  const int cand[3] = {0, k->n / 2, k->n - 1};
  for (int i = 0; i < 3; i++)
    if (ns == 0 || cand[i] > src[ns - 1])
      src[ns++] = cand[i];
  k->out = calloc((size_t)k->n, sizeof *k->out);
  for (int i = 0; i < ns; i++)
    if (k->custom)
      k->out[src[i]].data = fs_string(src[i]);
    else
      fa_fill(&k->out[src[i]], src[i], -1);
  k->got = k->wrong = 0;
  fs_unpack_failed = 0;
  bpc_type_ops_t ops = str_ops();
  ops.unpack = fs_unpack;
  bpc_type_t t = k->custom ? bpc_type_custom(&ops, NULL)
                           : bpc_type_contiguous(sizeof(uint64_t), MPI_UINT64_T);
  bpc_bcast_params_t P = bpc_bcast_params_default();
  P.algorithm = k->algorithm;
  P.nthreads = f_threads();
  f_arm(fail_at);
  const int rc = bpc_bcast(ctx, k->a, &t, src, ns, fb_item, fb_recv, k, &P, NULL);
  f_disarm();
  int any = 0; /* BPC_ECALLBACK from the test's own unpack is expected */
  MPI_Allreduce(&fs_unpack_failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  f_cb_enomem = any;
  if (rc == BPC_OK)
    *wrong = (int)k->wrong + (k->got != (long long)k->nl * ns);
  for (int i = 0; i < k->n; i++)
    free(k->out[i].data);
  free(k->out);
  return rc;
}

/* Every algorithm of `engine`'s table on 1 and 2 blocks a process. */
static int sweep_table(const char *engine, f_call_t call, int rr2, int direct_too)
{
  bpc_algo_info_t table[16];
  int na = 0, idx = 0, runs = 0;
  T_CHECK(bpc_algorithms(engine, table, 16, &na) == BPC_OK, "%s table", engine);
  for (int bpp = 1; bpp <= 2; bpp++) {
    bpc_assign_t *a = NULL;
    T_CHECK(bpc_assign_create(ctx, bpp * t_size, bpp == 2 && rr2 ? BPC_ASSIGN_ROUND_ROBIN
                                                                 : BPC_ASSIGN_CONTIGUOUS,
                              NULL, &a) == BPC_OK,
            "assign: %s", bpc_last_error(ctx));
    for (int s = 0; s <= na && a != NULL; s++) /* every row, then "auto" */
      for (int direct = 0; direct <= direct_too; direct++, idx++) {
        fa_case_t k;
        memset(&k, 0, sizeof k);
        k.algorithm = s < na ? table[s].name : "auto";
        k.direct = direct;
        k.a = a;
        char what[128];
        snprintf(what, sizeof what, "%s %s%s, %d block(s) a process", engine, k.algorithm,
                 direct ? " (one round)" : "", bpp);
        runs += sweep(what, call, &k, (t_size - 1 + idx) % t_size);
      }
    bpc_assign_destroy(&a);
  }
  if (t_rank == 0)
    printf("%s: %d runs, each with one allocation failed on one rank\n", engine, runs);
  return runs;
}

/* A new context: bpc_init, an assignment and the context's first exchange
 * (an all-to-all: the exchange kept aside for out-of-memory is made then),
 * every allocation counted from bpc_init on. */
static int call_context(void *arg, long fail_at, int *wrong)
{
  fa_case_t *k = arg;
  bpc_ctx_t *c = NULL, *world = ctx;
  bpc_assign_t *a = NULL;
  f_arm(fail_at);
  const int irc = bpc_init(MPI_COMM_WORLD, NULL, &c);
  int rc = irc;
  if (rc == BPC_OK)
    rc = bpc_assign_create(c, 2 * t_size, BPC_ASSIGN_ROUND_ROBIN, NULL, &a);
  f_disarm();
  if (rc == BPC_OK) {
    k->a = a;
    k->resume = 1;
    ctx = c;
    rc = call_alltoall(k, fail_at, wrong);
    ctx = world;
  }
  /* the messages are c's (gone below): checked here, not by the sweep */
  f_own_rc = BPC_OK;
  T_CHECK(c == NULL || rc == BPC_OK || only_enomem(bpc_last_error(c)),
          "new context, allocation %ld failed on rank %d: message '%s'", fail_at, t_rank,
          bpc_last_error(c));
  T_CHECK((irc == BPC_OK) == (c != NULL), "bpc_init: %s but context %p", bpc_err_name(irc),
          (void *)c);
  bpc_assign_destroy(&a);
  T_CHECK(bpc_finalize(&c) == BPC_OK, "finalize");
  return rc;
}

START_TEST(test_context_oom)
{
  int runs = 0;
  for (int v = 0; v < t_size && v < 3; v++) {
    fa_case_t k;
    memset(&k, 0, sizeof k);
    k.algorithm = "auto";
    runs += sweep("new context", call_context, &k, (t_size - 1 + v) % t_size);
  }
  if (t_rank == 0)
    printf("context: %d runs, each with one allocation failed on one rank\n", runs);
  T_SYNC();
}
END_TEST

START_TEST(test_alltoall_oom)
{
  sweep_table("alltoall", call_alltoall, 1, 1);
  T_SYNC();
}
END_TEST

START_TEST(test_bcast_oom)
{
  sweep_table("bcast", call_bcast, 1, 0);
  /* a custom type too (items packed, unpacked), on the "mpi" row, a row of
   * messages and auto */
  static const char *rows[] = {"mpi", "br_lin", "auto"};
  int runs = 0;
  for (int bpp = 1; bpp <= 2; bpp++) {
    bpc_assign_t *a = NULL;
    T_CHECK(bpc_assign_create(ctx, bpp * t_size, BPC_ASSIGN_CONTIGUOUS, NULL, &a) == BPC_OK,
            "assign: %s", bpc_last_error(ctx));
    for (int r = 0; r < 3 && a != NULL; r++) {
      fa_case_t k;
      memset(&k, 0, sizeof k);
      k.algorithm = rows[r];
      k.a = a;
      k.custom = 1;
      char what[128];
      snprintf(what, sizeof what, "bcast %s, strings, %d block(s) a process", rows[r], bpp);
      runs += sweep(what, call_bcast, &k, (t_size - 1 + r + bpp) % t_size);
    }
    bpc_assign_destroy(&a);
  }
  if (t_rank == 0)
    printf("bcast (strings): %d runs, each with one allocation failed on one rank\n", runs);
  T_SYNC();
}
END_TEST

/* --------------------------------------------------------------- scan */

enum { FS_M = 5 }; /* elements a block; an element is a 2x2 matrix */

static int fs_op(const void *left, const void *right, void *result, void *user)
{
  (void)user;
  uint64_t r[4];
  memcpy(r, left, sizeof r);
  fm_mul(r, right);
  memcpy(result, r, sizeof r);
  return 0;
}

static int call_scan(void *arg, long fail_at, int *wrong)
{
  fa_case_t *k = arg;
  bpc_assign_nblocks(k->a, &k->n);
  bpc_assign_local(k->a, &k->gids, &k->nl);
  bpc_buf_t in[4], out[4];
  for (int l = 0; l < k->nl; l++) {
    in[l].count = FS_M;
    in[l].data = malloc(sizeof(uint64_t) * 4 * FS_M);
    out[l].data = malloc(sizeof(uint64_t) * 4 * FS_M);
    out[l].count = 0;
    for (int e = 0; e < FS_M; e++)
      for (int j = 0; j < 4; j++)
        ((uint64_t *)in[l].data)[4 * e + j] = fv(k->gids[l], e, (size_t)j) % 89u;
  }
  bpc_type_t t = bpc_type_contiguous(4 * sizeof(uint64_t), MPI_BYTE);
  bpc_scan_op_t op;
  memset(&op, 0, sizeof op);
  op.fn = fs_op;
  bpc_scan_params_t P = bpc_scan_params_default();
  P.algorithm = k->algorithm;
  P.nthreads = f_threads();
  f_arm(fail_at);
  const int rc = bpc_scan(ctx, k->a, &t, BPC_SCAN_INCLUSIVE, in, out, &op, &P, NULL);
  f_disarm();
  if (rc == BPC_OK) {
    /* the reference: products in (gid, element) order */
    uint64_t acc[4] = {1, 0, 0, 1};
    for (int g = 0, l = 0; g < k->n; g++)
      for (int e = 0; e < FS_M; e++) {
        uint64_t x[4];
        for (int j = 0; j < 4; j++)
          x[j] = fv(g, e, (size_t)j) % 89u;
        fm_mul(acc, x);
        while (l < k->nl && k->gids[l] < g)
          l++;
        if (l < k->nl && k->gids[l] == g)
          *wrong += out[l].count != FS_M ||
                    memcmp((uint64_t *)out[l].data + 4 * e, acc, sizeof acc) != 0;
      }
  }
  for (int l = 0; l < k->nl; l++) {
    free(in[l].data);
    free(out[l].data);
  }
  return rc;
}

START_TEST(test_scan_oom)
{
  /* contiguous assignments: the "mpi" algorithm needs ranks' blocks in one
   * ascending run */
  sweep_table("scan", call_scan, 0, 0);
  T_SYNC();
}
END_TEST

/* ------------------------------------------------------ swap (direct) */

enum { FW_COUNT = 37 }; /* elements a buffer (2x2 matrices): uneven pieces */

static int fw_op(const void *in, void *inout, size_t count, int in_first, void *user)
{
  (void)user;
  uint64_t *io = inout;
  const uint64_t *x = in;
  for (size_t e = 0; e < count; e++) {
    uint64_t r[4];
    if (in_first) { /* inout = in o inout */
      memcpy(r, x + 4 * e, sizeof r);
      fm_mul(r, io + 4 * e);
    } else {
      memcpy(r, io + 4 * e, sizeof r);
      fm_mul(r, x + 4 * e);
    }
    memcpy(io + 4 * e, r, sizeof r);
  }
  return 0;
}

static uint64_t fw_val(int gid, size_t e, int j)
{
  return cr_hash((uint32_t)(gid * 131 + (int)e * 4 + j)) % 89u;
}

static int call_swap(void *arg, long fail_at, int *wrong)
{
  fa_case_t *k = arg;
  bpc_assign_nblocks(k->a, &k->n);
  bpc_assign_local(k->a, &k->gids, &k->nl);
  void *bufs[4];
  bpc_swap_piece_t pieces[4];
  for (int l = 0; l < k->nl; l++) {
    uint64_t *b = malloc(sizeof(uint64_t) * 4 * FW_COUNT);
    for (size_t e = 0; e < FW_COUNT; e++)
      for (int j = 0; j < 4; j++)
        b[4 * e + j] = fw_val(k->gids[l], e, j);
    bufs[l] = b;
  }
  bpc_type_t t = bpc_type_contiguous(4 * sizeof(uint64_t), MPI_BYTE);
  bpc_op_t op = {fw_op, 0, NULL};
  bpc_swap_params_t P = bpc_swap_params_default();
  P.algorithm = k->algorithm;
  P.nthreads = f_threads();
  f_arm(fail_at);
  const int rc = bpc_swap(ctx, k->a, &t, bufs, FW_COUNT, &op, &P, pieces, NULL);
  f_disarm();
  for (int l = 0; l < k->nl; l++) {
    for (size_t e = pieces[l].offset; rc == BPC_OK && e < pieces[l].offset + pieces[l].count;
         e++) {
      uint64_t ref[4] = {1, 0, 0, 1}, x[4];
      for (int g = 0; g < k->n; g++) { /* identity order: positions are gids */
        for (int j = 0; j < 4; j++)
          x[j] = fw_val(g, e, j);
        fm_mul(ref, x);
      }
      *wrong += memcmp((uint64_t *)bufs[l] + 4 * e, ref, sizeof ref) != 0;
    }
    free(bufs[l]);
  }
  return rc;
}

START_TEST(test_swap_oom)
{
  sweep_table("swap", call_swap, 1, 0);
  T_SYNC();
}
END_TEST


/* --------------------------------------------------- neighbour exchange */

enum { FN_ROUNDS = 3, FN_BIG = 2560, FN_HDR = 5 }; /* FN_BIG words: sent by reference */

typedef struct fn_case {
  int mode; /* 0 bpc_neighbor_round, 1 bpc_neighbor_iterate, 2 bpc_neighbor_exchange */
  double sync;
  bpc_decomp_t *d;
  const int *gids;
  int nl;
  long indeg[4];    /* links into each local block, over all blocks */
  uint64_t *big[4]; /* each local block's item by reference (valid across a round) */
} fn_case_t;

typedef struct fn_run {
  fn_case_t *k;
  int t[4];       /* rounds that enqueued, per local block */
  long recv[4];   /* items dequeued, per local block */
  int wrong;
  int enq_enomem; /* an enqueue returned BPC_ENOMEM */
} fn_run_t;

static size_t fn_len(int s, int d, int t, int j)
{
  return j == 0 ? FN_BIG : (size_t)((s * 3 + d * 5 + t + j) % 7);
}

static void fn_item(uint64_t *w, int s, int d, int t, int j)
{
  const size_t len = fn_len(s, d, t, j);
  w[0] = (uint64_t)s;
  w[1] = (uint64_t)d;
  w[2] = (uint64_t)t;
  w[3] = (uint64_t)j;
  w[4] = len;
  for (size_t i = 0; i < len; i++)
    w[FN_HDR + i] = fv(s * 7 + j, d * 5 + t, i);
}

/* Dequeue everything for block li (checking every item), then, while it
 * has rounds left, enqueue one item per link: link 0's large one by
 * reference, the others small ones by copy. */
static int fn_step(fn_run_t *R, bpc_neighbor_t *nb, int li, int *more)
{
  const int gid = R->k->gids[li];
  const int *srcs = NULL;
  int ns = 0;
  if (bpc_neighbor_incoming(nb, gid, &srcs, &ns) != BPC_OK)
    return 1;
  for (int i = 0; i < ns; i++) {
    for (;;) {
      void *it = NULL;
      int got = 0;
      if (bpc_neighbor_dequeue(nb, gid, srcs[i], &it, &got) != BPC_OK)
        return 1;
      if (!got)
        break;
      const bpc_buf_t *b = it;
      const uint64_t *w = b->data;
      uint64_t ref[FN_HDR + FN_BIG];
      int bad = b->count < FN_HDR || w[0] != (uint64_t)srcs[i] || w[1] != (uint64_t)gid ||
                w[2] >= FN_ROUNDS || w[4] != b->count - FN_HDR || w[4] > FN_BIG;
      if (!bad) {
        fn_item(ref, srcs[i], gid, (int)w[2], (int)w[3]);
        bad = memcmp(ref, w, sizeof(uint64_t) * b->count) != 0;
      }
      R->wrong += bad;
      R->recv[li]++;
    }
  }
  if (R->t[li] < FN_ROUNDS) {
    const bpc_link_t *links = NULL;
    int nlinks = 0;
    if (bpc_neighbor_links(nb, gid, &links, &nlinks) != BPC_OK)
      return 1;
    for (int j = 0; j < nlinks; j++) {
      uint64_t small[FN_HDR + 8];
      uint64_t *w = j == 0 ? R->k->big[li] : small;
      fn_item(w, gid, links[j].gid, R->t[li], j);
      bpc_buf_t b = {w, FN_HDR + fn_len(gid, links[j].gid, R->t[li], j)};
      int rc = j == 0 ? bpc_neighbor_enqueue_ref(nb, gid, links[j].gid, &b)
                      : bpc_neighbor_enqueue(nb, gid, links[j].gid, &b);
      if (rc != BPC_OK) {
        if (rc == BPC_ENOMEM)
          R->enq_enomem = 1;
        return 1;
      }
    }
    R->t[li]++;
  }
  *more = R->t[li] < FN_ROUNDS;
  return 0;
}

static int fn_cb(void *block, int gid, bpc_neighbor_t *nb, void *user, int *more)
{
  (void)block;
  fn_run_t *R = user;
  int li = 0;
  while (R->k->gids[li] != gid)
    li++;
  return fn_step(R, nb, li, more);
}

static int call_neighbor(void *arg, long fail_at, int *wrong)
{
  fn_case_t *k = arg;
  fn_run_t R;
  memset(&R, 0, sizeof R);
  R.k = k;
  bpc_type_t t = bpc_type_contiguous(sizeof(uint64_t), MPI_UINT64_T);
  bpc_neighbor_params_t P = bpc_neighbor_params_default();
  P.synchrony = k->sync;
  P.nthreads = f_threads();
  bpc_neighbor_t *nb = NULL;
  f_arm(fail_at);
  int rc = bpc_neighbor_create_decomp(ctx, k->d, &t, &P, &nb); /* agreed */
  if (rc != BPC_OK) {
    f_disarm();
    return rc;
  }
  char first_msg[256] = "";
  if (k->mode == 1) {
    rc = bpc_neighbor_iterate(nb, NULL, fn_cb, &R, NULL);
    snprintf(first_msg, sizeof first_msg, "%s", bpc_last_error(ctx));
  } else {
    /* FN_ROUNDS rounds that enqueue, then two at synchrony 1 that deliver
     * the late items and dequeue the last ones. The exchange alone is not
     * agreed: every rank goes on calling it after an error of its own, as
     * a program must (rc keeps the first error). */
    for (int r = 0; r < FN_ROUNDS + 2 && (rc == BPC_OK || k->mode == 2); r++) {
      if (r == FN_ROUNDS)
        bpc_neighbor_set_synchrony(nb, 1.0);
      int xrc = BPC_OK;
      if (k->mode == 0) {
        xrc = bpc_neighbor_round(nb, NULL, fn_cb, &R);
      } else {
        for (int li = 0; li < k->nl && rc == BPC_OK; li++) {
          int more = 0;
          if (fn_step(&R, nb, li, &more) != 0)
            xrc = R.enq_enomem ? BPC_ENOMEM : BPC_ECALLBACK;
        }
        int erc = bpc_neighbor_exchange(nb);
        if (xrc == BPC_OK)
          xrc = erc;
      }
      if (rc == BPC_OK && xrc != BPC_OK)
        snprintf(first_msg, sizeof first_msg, "%s", bpc_last_error(ctx));
      if (rc == BPC_OK)
        rc = xrc;
    }
  }
  /* round and iterate agree: every rank has the message of the rank whose
   * allocation failed, not a peer's "rank N failed ... (its message says
   * why)" that only followed it */
  T_CHECK(k->mode == 2 || rc != BPC_ENOMEM ||
              (only_enomem(first_msg) && strstr(first_msg, "its message says why") == NULL),
          "neighbour %s: the agreed message is not the failure's own: '%s'",
          k->mode == 0 ? "round" : "iterate", first_msg);
  const int drc = bpc_neighbor_destroy(&nb);
  f_disarm();
  if (rc == BPC_OK)
    rc = drc;
  int counts = 0; /* blocks that did not get every item */
  for (int li = 0; li < k->nl; li++)
    counts += R.recv[li] != FN_ROUNDS * k->indeg[li];
  int e = R.enq_enomem, any = 0;
  MPI_Allreduce(&e, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  f_cb_enomem = any;
  if (k->mode == 2) {
    /* not agreed: a rank whose every call succeeded has every item right,
     * and all of them unless an enqueue failed somewhere (that item, and
     * the failing rank's later ones, were never sent); the sweep gets the
     * lowest code (the test's own agreement) */
    T_CHECK(rc != BPC_OK || (R.wrong == 0 && (any || counts == 0)),
            "neighbour exchange: every call returned BPC_OK on rank %d, with %d wrong item(s) "
            "and %d block(s) missing items", t_rank, R.wrong, counts);
    f_own_rc = rc;
    int low = rc;
    MPI_Allreduce(&rc, &low, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    rc = low;
  }
  *wrong = R.wrong + counts;
  return rc;
}

START_TEST(test_neighbor_oom)
{
  static const char *mode_name[] = {"round", "iterate", "exchange"};
  int runs = 0, idx = 0;
  for (int bpp = 1; bpp <= 2; bpp++) {
    bpc_decomp_params_t p = bpc_decomp_params_default();
    p.dim = 1;
    p.nblocks = bpp * t_size;
    p.domain_max[0] = 64 * p.nblocks;
    p.wrap[0] = 1;
    fn_case_t k;
    memset(&k, 0, sizeof k);
    T_CHECK(bpc_decomp_create(ctx, &p, &k.d) == BPC_OK, "decomp: %s", bpc_last_error(ctx));
    if (k.d == NULL)
      break;
    bpc_assign_local(bpc_decomp_assign(k.d), &k.gids, &k.nl);
    for (int s = 0; s < p.nblocks; s++) {
      bpc_link_t links[BPC_MAX_LINKS];
      int nl = 0;
      bpc_decomp_links(k.d, s, links, BPC_MAX_LINKS, &nl);
      for (int j = 0; j < nl; j++)
        for (int li = 0; li < k.nl; li++)
          k.indeg[li] += links[j].gid == k.gids[li];
    }
    for (int li = 0; li < k.nl; li++)
      k.big[li] = malloc(sizeof(uint64_t) * (FN_HDR + FN_BIG));
    for (k.mode = 0; k.mode < 3; k.mode++)
      for (int sy = 0; sy < 2; sy++, idx++) {
        k.sync = sy ? 0.5 : 1.0;
        char what[128];
        snprintf(what, sizeof what, "neighbour %s, synchrony %.1f, %d block(s) a process",
                 mode_name[k.mode], k.sync, bpp);
        runs += sweep(what, call_neighbor, &k, (t_size - 1 + idx) % t_size);
      }
    for (int li = 0; li < k.nl; li++)
      free(k.big[li]);
    bpc_decomp_destroy(&k.d);
  }
  if (t_rank == 0)
    printf("neighbor: %d runs, each with one allocation failed on one rank\n", runs);
  T_SYNC();
}
END_TEST

/* --------------------------------------------------------- checkpoints */

typedef struct fi_case {
  int read; /* 0: bpc_io_write swept; 1: bpc_io_read of a file written before */
  bpc_assign_t *a;
  bpc_blocks_t *b;
  char path[64];
} fi_case_t;

static int call_io(void *arg, long fail_at, int *wrong)
{
  fi_case_t *k = arg;
  bpc_type_t t = io_type(0);
  bpc_blocks_t *out = NULL;
  int rc;
  f_arm(fail_at);
  if (k->read)
    rc = bpc_io_read(ctx, k->path, k->a, &t, &out);
  else
    rc = bpc_io_write(ctx, k->path, k->b, &t, NULL, "meta", 4);
  f_disarm();
  if (rc == BPC_OK && !k->read) { /* what was written reads back */
    int r2 = bpc_io_read(ctx, k->path, k->a, &t, &out);
    T_CHECK(r2 == BPC_OK, "reading back: %s", bpc_last_error(ctx));
  }
  if (rc == BPC_OK && out != NULL)
    *wrong += io_count_wrong(out, 0, 0);
  bpc_blocks_destroy(&out);
  return rc;
}

START_TEST(test_io_oom)
{
  int runs = 0, idx = 0;
  /* bpp 3 and 4: 1 and 2 blocks with the checksums on the helper thread
   * (BPC_IO_CRC_THREAD=1; its queue's allocations fail too) */
  for (int bpp = 1; bpp <= 4; bpp++) {
    const int thread = bpp > 2, per = thread ? bpp - 2 : bpp;
    if (thread)
      setenv("BPC_IO_CRC_THREAD", "1", 1);
    fi_case_t k;
    memset(&k, 0, sizeof k);
    snprintf(k.path, sizeof k.path, "test_faults-%d.ckpt", t_size);
    T_CHECK(bpc_assign_create(ctx, per * t_size + 1, BPC_ASSIGN_ROUND_ROBIN, NULL, &k.a) ==
                BPC_OK, "assign: %s", bpc_last_error(ctx));
    io_gen_t G = {0, 0}; /* generation 0, doubles */
    T_CHECK(bpc_blocks_create(k.a, io_create, io_destroy, &G, &k.b) == BPC_OK, "blocks");
    for (k.read = 0; k.read <= 1 && k.b != NULL; k.read++, idx++) {
      char what[96];
      snprintf(what, sizeof what, "checkpoint %s, %d block(s) a process (+1)%s",
               k.read ? "read" : "write", per, thread ? ", checksum thread" : "");
      runs += sweep(what, call_io, &k, (t_size - 1 + idx) % t_size);
    }
    bpc_blocks_destroy(&k.b);
    bpc_assign_destroy(&k.a);
    MPI_Barrier(MPI_COMM_WORLD);
    if (t_rank == 0) {
      unlink(k.path);
      char tmp[96];
      snprintf(tmp, sizeof tmp, "%s.tmp.bpc", k.path);
      unlink(tmp);
    }
    unsetenv("BPC_IO_CRC_THREAD");
  }
  if (t_rank == 0)
    printf("io: %d runs, each with one allocation failed on one rank\n", runs);
  T_SYNC();
}
END_TEST

static Suite *suite(void)
{
  Suite *s = suite_create("faults");
  TCase *tc = tcase_create("faults");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 240);
  tcase_add_test(tc, test_composite_oom);
  tcase_add_test(tc, test_merge_oom);
  tcase_add_test(tc, test_context_oom);
  tcase_add_test(tc, test_alltoall_oom);
  tcase_add_test(tc, test_bcast_oom);
  tcase_add_test(tc, test_scan_oom);
  tcase_add_test(tc, test_swap_oom);
  tcase_add_test(tc, test_neighbor_oom);
  tcase_add_test(tc, test_io_oom);
  suite_add_tcase(s, tc);
  return s;
}

BPC_T_MPI_MAIN(suite)
