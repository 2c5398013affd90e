/*
 * tests/mpi/test_alloc.c - a call in steady state allocates nothing
 * (issue: the latency path): once the context's caches have grown to a
 * call's messages (the first calls), repeating the call makes no malloc,
 * calloc, realloc or aligned_alloc of the library's.
 *
 * The suite is linked with -Wl,--wrap=malloc,calloc,realloc,aligned_alloc
 * (tests/Makefile.mk), like test_faults: every allocation of the library
 * (linked in from the convenience library) and of this file goes through
 * the counting wrappers below; MPI's and the OpenMP runtime's (shared
 * libraries) do not. Each case makes warm-up calls, then counts the
 * allocations of its next calls (armed around the calls only: the test's
 * own refills and checks allocate nothing either way) and checks the last
 * call's result against the serial reference, so a call that did nothing
 * cannot pass.
 *
 * What a call holds at once (message records, receive buffers, requests in
 * flight) depends on when its messages arrive: the context's caches grow
 * to the most a call has needed so far. The warm-up therefore makes every
 * rank in turn start late (20 ms after the others), so that everything
 * that can reach it before it takes anything has arrived: the most it can
 * hold at once, whatever the timing later.
 *
 * Cases: merge as a persistent plan (bpc_merge_init, bpc_plan_start) and
 * as bpc_merge, float sums element-wise (16 B, 64 KiB, 1 MiB, and up to 4
 * processes 4 MiB in 1 MiB segments) and whole, 2x2 matrix products in a reversed block
 * order (not commutative), 1 and 2 blocks per process, 1 and 2 threads.
 */
#include "bad_rank.h"
#include "mpi_check.h"

#define MI_CHECK(cond, ...) T_CHECK(cond, __VA_ARGS__)
#include "../common/merge_items.h"
#include "bpc.h"

#include <unistd.h>

/* ------------------------------------------------ allocation wrappers */

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);
void *__real_aligned_alloc(size_t align, size_t n);

static int a_armed;
static long a_count;

static void a_take(void)
{
  if (__atomic_load_n(&a_armed, __ATOMIC_RELAXED))
    __atomic_fetch_add(&a_count, 1, __ATOMIC_RELAXED);
}

void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_realloc(void *p, size_t n);
void *__wrap_aligned_alloc(size_t align, size_t n);
void *__wrap_malloc(size_t n)
{
  a_take();
  return __real_malloc(n);
}
void *__wrap_calloc(size_t n, size_t size)
{
  a_take();
  return __real_calloc(n, size);
}
void *__wrap_realloc(void *p, size_t n)
{
  a_take();
  return __real_realloc(p, n);
}
void *__wrap_aligned_alloc(size_t align, size_t n)
{
  a_take();
  return __real_aligned_alloc(align, n);
}

static bpc_ctx_t *ctx;

static void setup(void) { ck_assert_int_eq(bpc_init(MPI_COMM_WORLD, NULL, &ctx), BPC_OK); }
static void teardown(void) { bpc_finalize(&ctx); }

enum { COUNTED = 8 };

/* One merge configuration: kind MI_SUM (element-wise or whole) or MI_MAT
 * (reversed order), `count` elements per item, bpp blocks a process. */
typedef struct acase {
  int kind, ew, bpp, nthreads, plan;
  size_t count, seg;
} acase_t;

static void run_case(const acase_t *ac)
{
  const int n = ac->bpp * t_size;
  char txt[160];
  snprintf(txt, sizeof txt, "%s %s, %zu elements%s, %d block(s)/process, %d thread(s)",
           ac->plan ? "plan" : "bpc_merge", mi_kind_name[ac->kind], ac->count,
           ac->ew ? " element-wise" : "", ac->bpp, ac->nthreads);
  bpc_assign_t *a = NULL;
  ck_assert_int_eq(bpc_assign_create(ctx, n, BPC_ASSIGN_CONTIGUOUS, NULL, &a), BPC_OK);
  const int *gids;
  int nl;
  bpc_assign_local(a, &gids, &nl);
  mi_user_t u;
  memset(&u, 0, sizeof u);
  u.kind = ac->kind;
  u.fail_gid = -1;
  void *items = mi_make_items(ac->kind, gids, nl, ac->count);
  bpc_type_t type = ac->kind == MI_MAT ? bpc_type_contiguous(sizeof(mi_mat_t), MPI_BYTE)
                                       : bpc_type_contiguous(sizeof(float), MPI_FLOAT);
  bpc_merge_op_t op = mi_kind_op(ac->kind, &u);
  op.elementwise = ac->ew;
  bpc_merge_params_t p = bpc_merge_params_default();
  p.nthreads = ac->nthreads;
  p.segment_bytes = ac->seg;
  int order[64], set[64];
  ck_assert_int_le(n, 64);
  for (int i = 0; i < n; i++) {
    order[i] = ac->kind == MI_MAT ? n - 1 - i : i;
    set[i] = order[i];
  }
  p.order = order;
  bpc_plan_t *plan = NULL;
  int rc = BPC_OK;
  if (ac->plan)
    rc = bpc_merge_init(ctx, a, &type, items, &op, &p, &plan);
  T_CHECK(rc == BPC_OK, "%s: init %s", txt, bpc_last_error(ctx));
  long counted = 0;
  const int warm = t_size + 1; /* each rank late once, then one in step */
  for (int r = 0; r < warm + COUNTED && rc == BPC_OK; r++) {
    mi_remake_items(ac->kind, items, gids, nl, ac->count);
    if (r < t_size && r == t_rank)
      usleep(20000);
    const int armed = r >= warm;
    __atomic_store_n(&a_count, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&a_armed, armed, __ATOMIC_RELEASE);
    rc = ac->plan ? bpc_plan_start(plan) : bpc_merge(ctx, a, &type, items, &op, &p, NULL);
    __atomic_store_n(&a_armed, 0, __ATOMIC_RELEASE);
    if (armed)
      counted += __atomic_load_n(&a_count, __ATOMIC_RELAXED);
    T_CHECK(rc == BPC_OK, "%s: call %d: %s (%s)", txt, r, bpc_err_name(rc), bpc_last_error(ctx));
  }
  T_CHECK(counted == 0, "%s: %ld allocation(s) in %d calls after %d warm-up calls", txt, counted,
          COUNTED, warm);
  /* the last call's result: the root (position 0) holds the merge of all */
  for (int i = 0; i < nl && rc == BPC_OK; i++) {
    if (gids[i] != order[0])
      continue;
    char why[160] = "";
    T_CHECK(mi_verify(ac->kind, items, i, gids[i], set, n, ac->count, why, sizeof why), "%s: %s",
            txt, why);
  }
  T_CHECK(u.bad == 0, "%s: the callback saw %d bad group(s)", txt, u.bad);
  bpc_plan_free(&plan);
  mi_free_items(ac->kind, items, nl);
  bpc_assign_destroy(&a);
}

START_TEST(test_merge_steady)
{
  static const size_t counts[] = {4, 16384, 262144, 1048576};
  /* 4 MiB items (four segments) up to 4 processes: beyond, eight or twelve
   * processes on two cores only make the suite slow (it is the same
   * schedule, deeper) */
  const int nc = t_size <= 4 ? 4 : 3;
  for (int plan = 1; plan >= 0; plan--)
    for (int bpp = 1; bpp <= 2; bpp++)
      for (int ci = 0; ci < nc; ci++) {
        acase_t ac = {MI_SUM, 1, bpp, 1, plan, counts[ci], 0};
        run_case(&ac);
        if (ci == 1) { /* whole items; two threads */
          ac.ew = 0;
          run_case(&ac);
          ac.ew = 1;
          ac.nthreads = 2;
          run_case(&ac);
        }
      }
  T_SYNC();
}
END_TEST

START_TEST(test_merge_steady_order)
{
  /* not commutative, a reversed order (the plan keeps a copy of it) */
  for (int plan = 1; plan >= 0; plan--)
    for (int bpp = 1; bpp <= 2; bpp++) {
      acase_t ac = {MI_MAT, 0, bpp, 1, plan, 3, 0};
      run_case(&ac);
    }
  T_SYNC();
}
END_TEST

static Suite *suite(void)
{
  Suite *s = suite_create("alloc");
  TCase *tc = tcase_create("alloc");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 240);
  tcase_add_test(tc, test_merge_steady);
  tcase_add_test(tc, test_merge_steady_order);
  suite_add_tcase(s, tc);
  return s;
}

BPC_T_MPI_MAIN(suite)
