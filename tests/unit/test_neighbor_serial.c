/*
 * tests/unit/test_neighbor_serial.c - the neighbour exchange on a serial
 * context (in-process transport, every block local, no MPI):
 *  - the bundles built in place by enqueue are byte for byte those of
 *    bpc__pack_many (lib/datatype) for the same items and keys, also when the
 *    index reservation is too small and when items are large;
 *  - rounds deliver every item, in order per source, sources ascending;
 *  - iterate ends (termination without MPI) with tokens relayed over a ring
 *    for many rounds, run by 1 and 4 threads enqueueing concurrently; a
 *    round limit stops it with BPC_ERANGE;
 *  - argument errors of the non-collective calls, and of the creators on a
 *    serial context (the in-process agreement returns the rank's own code);
 *  - the parameters: defaults (nthreads 0), the algorithm by argument or
 *    BPC_NEIGHBOR_ALGORITHM, names case-insensitive, every row of
 *    bpc_algorithms("neighbor").
 */
#include "unit_check.h"

#include <stdio.h>

#include "../common/neighbor_items.h"
#include "bpc.h"
#include "engines/neighbor/neighbor_internal.h"

static bpc_ctx_t *ctx;

static void setup(void) { ck_assert_int_eq(bpc_init_serial(NULL, &ctx), BPC_OK); }
static void teardown(void) { bpc_finalize(&ctx); }

/* n blocks; block g links to (g+1) mod n, (g+2) mod n and itself. */
static bpc_neighbor_t *make_ring(int n, const bpc_type_t *type, const bpc_neighbor_params_t *o,
                                 bpc_assign_t **a)
{
  bpc_neighbor_t *nb = NULL;
  ck_assert_int_eq(bpc_assign_create(ctx, n, BPC_ASSIGN_CONTIGUOUS, NULL, a), BPC_OK);
  int *off = malloc(sizeof(int) * (size_t)(n + 1)), *tgt = malloc(sizeof(int) * 3 * (size_t)n);
  off[0] = 0;
  for (int g = 0; g < n; g++) {
    tgt[3 * g] = (g + 1) % n;
    tgt[3 * g + 1] = (g + 2) % n;
    tgt[3 * g + 2] = g;
    off[g + 1] = 3 * (g + 1);
  }
  ck_assert_int_eq(bpc_neighbor_create_graph(ctx, *a, off, tgt, type, o, &nb), BPC_OK);
  free(off);
  free(tgt);
  return nb;
}

static void check_bundle_matches(int custom, int nitems, size_t big)
{
  bpc_type_t type = ni_type(custom);
  bpc_assign_t *a = NULL;
  bpc_neighbor_t *nb = make_ring(4, &type, NULL, &a);
  for (int round = 0; round < 2; round++) {
    void **items = calloc((size_t)nitems, sizeof *items);
    ni_item_t **its = calloc((size_t)nitems, sizeof *its);
    bpc_buf_t *bufs = calloc((size_t)nitems, sizeof *bufs);
    int64_t *keys = calloc((size_t)nitems, sizeof *keys);
    for (int i = 0; i < nitems; i++) {
      const int dsts[3] = {1, 2, 0}; /* from block 0: its links, itself included */
      int dst = dsts[i % 3];
      size_t len = (i == nitems / 2) ? big : (size_t)(i * 7 + round) % 13;
      ni_item_t *it = ni_item_new(len);
      for (size_t k = 0; k < len; k++)
        it->v[k] = (int64_t)(i * 1000 + (int)k + round);
      its[i] = it;
      bufs[i].data = it->v;
      bufs[i].count = len;
      items[i] = custom ? (void *)it : (void *)&bufs[i];
      ck_assert_int_eq(bpc_neighbor_enqueue(nb, 0, dst, items[i]), BPC_OK);
      keys[i] = (int64_t)dst; /* source gid 0 in the upper half */
    }
    const void *bundle;
    size_t bytes, cap;
    void *buf;
    ck_assert_int_eq(bpc__neighbor_chan_finish(nb, &nb->local, &bundle, &bytes, &buf, &cap),
                     BPC_OK);
    size_t want = 0, used = 0;
    ck_assert_int_eq(bpc__pack_many_size(ctx, &type, nitems, (const void *const *)items, &want),
                     BPC_OK);
    ck_assert_uint_eq(bytes, want);
    unsigned char *ref = malloc(want);
    memset(ref, 0xee, want);
    ck_assert_int_eq(bpc__pack_many(ctx, &type, nitems, (const void *const *)items, keys, ref,
                                    want, &used),
                     BPC_OK);
    ck_assert_uint_eq(used, want);
    ck_assert_msg(memcmp(ref, bundle, want) == 0, "bundle of %d items (round %d) differs",
                  nitems, round);
    ck_assert_uint_eq((uintptr_t)bundle % BPC__PACK_ALIGN, 0);
    int np = 0;
    bpc__part_t *parts = NULL;
    ck_assert_int_eq(bpc__unpack_many(ctx, (void *)bundle, bytes, &np, &parts), BPC_OK);
    ck_assert_int_eq(np, nitems);
    free(parts);
    free(ref);
    if (buf != NULL)
      bpc__pool_put(ctx, buf, cap);
    for (int i = 0; i < nitems; i++)
      free(its[i]);
    free(its);
    free(items);
    free(bufs);
    free(keys);
  }
  ck_assert_int_eq(bpc_neighbor_destroy(&nb), BPC_OK);
  bpc_assign_destroy(&a);
}

START_TEST(test_bundle_format)
{
  check_bundle_matches(0, 1, 3);
  check_bundle_matches(1, 3, 0);
  check_bundle_matches(0, 50, 5000); /* index reservation too small, big payload */
  check_bundle_matches(1, 200, 100000);
}
END_TEST

START_TEST(test_rounds)
{
  for (int custom = 0; custom <= 1; custom++) {
    bpc_type_t type = ni_type(custom);
    bpc_assign_t *a = NULL;
    const int n = 5;
    bpc_neighbor_t *nb = make_ring(n, &type, NULL, &a);
    const int tgt[3] = {1, 2, 0};
    for (int r = 0; r < 3; r++) {
      for (int g = 0; g < n; g++)
        for (int j = 0; j < 3; j++)
          for (int t = 0; t < ni_count(g, j, r, custom); t++)
            ck_assert_int_eq(ni_enqueue(nb, custom, g, j == 2 ? g : (g + tgt[j]) % n, j, t, r,
                                        custom),
                             BPC_OK);
      ck_assert_int_eq(bpc_neighbor_exchange(nb), BPC_OK);
      for (int d = 0; d < n; d++) {
        const int *srcs;
        int ns;
        ck_assert_int_eq(bpc_neighbor_incoming(nb, d, &srcs, &ns), BPC_OK);
        int prev = -1;
        for (int k = 0; k < ns; k++) {
          ck_assert_int_gt(srcs[k], prev);
          prev = srcs[k];
        }
        /* sources of d: d-1 (link 0), d-2 (link 1), d (link 2) */
        for (int j = 0; j < 3; j++) {
          int s = j == 2 ? d : (d - tgt[j] + 2 * n) % n;
          for (int t = 0; t < ni_count(s, j, r, custom); t++) {
            void *item;
            int got;
            ck_assert_int_eq(bpc_neighbor_dequeue(nb, d, s, &item, &got), BPC_OK);
            ck_assert(got);
            ck_assert_int_eq(ni_check(&type, custom, item, s, j, t, r, custom), 0);
          }
        }
      }
    }
    ck_assert_int_eq(bpc_neighbor_destroy(&nb), BPC_OK);
    bpc_assign_destroy(&a);
  }
}
END_TEST

typedef struct relay {
  int n;
  long long *arrived; /* per block: tokens that ended there */
} relay_t;

/* A token is an int64 hop count; it moves to gid+1 until it reaches 0. */
static int relay_cb(void *block, int gid, bpc_neighbor_t *nb, void *user, int *more)
{
  relay_t *rl = user;
  (void)block;
  (void)more;
  int rc = 0;
  if (rl->arrived[gid] < 0) {
    /* first round: every block starts one token of 40 + gid hops */
    rl->arrived[gid] = 0;
    int64_t h = 40 + gid;
    bpc_buf_t b = {&h, 1};
    return bpc_neighbor_enqueue(nb, gid, (gid + 1) % rl->n, &b);
  }
  const int *srcs;
  int ns;
  bpc_neighbor_incoming(nb, gid, &srcs, &ns);
  for (int k = 0; k < ns; k++) {
    void *it;
    int got;
    while (bpc_neighbor_dequeue(nb, gid, srcs[k], &it, &got) == BPC_OK && got) {
      int64_t h = ((int64_t *)((bpc_buf_t *)it)->data)[0] - 1;
      if (h == 0) {
        rl->arrived[gid]++;
        continue;
      }
      bpc_buf_t b = {&h, 1};
      rc = bpc_neighbor_enqueue(nb, gid, (gid + 1) % rl->n, &b);
      if (rc != BPC_OK)
        return rc;
    }
  }
  return 0;
}

START_TEST(test_iterate_threads)
{
  for (int nt = 1; nt <= 4; nt += 3) {
    const int n = 16;
    bpc_type_t type = bpc_type_contiguous(sizeof(int64_t), MPI_INT64_T);
    bpc_neighbor_params_t o = bpc_neighbor_params_default();
    o.nthreads = nt;
    bpc_assign_t *a = NULL;
    bpc_neighbor_t *nb = make_ring(n, &type, &o, &a);
    relay_t rl = {n, malloc(sizeof(long long) * n)};
    for (int g = 0; g < n; g++)
      rl.arrived[g] = -1;
    long long rounds = 0;
    ck_assert_int_eq(bpc_neighbor_iterate(nb, NULL, relay_cb, &rl, &rounds), BPC_OK);
    ck_assert_int_ge(rounds, 40 + n);
    /* the token of block g is received 40 + g times: it ends at 2 g + 40 */
    long long want[16] = {0};
    for (int g = 0; g < n; g++)
      want[(2 * g + 40) % n]++;
    for (int g = 0; g < n; g++)
      ck_assert_int_eq(rl.arrived[g], want[g]);
    bpc_neighbor_stats_t st;
    bpc_neighbor_stats(nb, &st);
    ck_assert_int_eq(st.items_sent, st.items_recv);
    ck_assert_int_eq(bpc_neighbor_destroy(&nb), BPC_OK);
    bpc_assign_destroy(&a);
    free(rl.arrived);
  }
  /* a round limit below what the relay needs: BPC_ERANGE */
  {
    const int n = 16;
    bpc_type_t type = bpc_type_contiguous(sizeof(int64_t), MPI_INT64_T);
    bpc_neighbor_params_t o = bpc_neighbor_params_default();
    o.max_rounds = 5;
    bpc_assign_t *a = NULL;
    bpc_neighbor_t *nb = make_ring(n, &type, &o, &a);
    relay_t rl = {n, malloc(sizeof(long long) * n)};
    for (int g = 0; g < n; g++)
      rl.arrived[g] = -1;
    long long rounds = 0;
    ck_assert_int_eq(bpc_neighbor_iterate(nb, NULL, relay_cb, &rl, &rounds), BPC_ERANGE);
    ck_assert_int_ge(rounds, 5);
    ck_assert_ptr_nonnull(strstr(bpc_last_error(ctx), "max_rounds"));
    bpc_neighbor_destroy(&nb);
    bpc_assign_destroy(&a);
    free(rl.arrived);
  }
}
END_TEST

START_TEST(test_errors)
{
  bpc_type_t type = bpc_type_contiguous(sizeof(int), MPI_INT);
  bpc_assign_t *a = NULL;
  bpc_neighbor_t *nb = make_ring(4, &type, NULL, &a);
  int v = 3;
  bpc_buf_t b = {&v, 1};
  ck_assert_int_eq(bpc_neighbor_enqueue(nb, 0, 3, &b), BPC_EINVAL);
  ck_assert_int_eq(bpc_neighbor_enqueue(nb, 9, 0, &b), BPC_ENOTFOUND);
  ck_assert_int_eq(bpc_neighbor_enqueue(NULL, 0, 1, &b), BPC_ENULL);
  const int *srcs;
  int n;
  ck_assert_int_eq(bpc_neighbor_incoming(nb, 7, &srcs, &n), BPC_ENOTFOUND);
  void *it;
  int got = 5;
  ck_assert_int_eq(bpc_neighbor_dequeue(nb, 1, 0, &it, &got), BPC_OK);
  ck_assert_int_eq(got, 0);
  ck_assert_int_eq(bpc_neighbor_set_synchrony(nb, -0.1), BPC_EINVAL);
  ck_assert_int_eq(bpc_neighbor_set_synchrony(nb, 0.25), BPC_OK);
  const bpc_link_t *l;
  ck_assert_int_eq(bpc_neighbor_links(nb, 2, &l, &n), BPC_OK);
  ck_assert_int_eq(n, 3);
  ck_assert_int_eq(l[0].gid, 3);
  ck_assert_int_eq(bpc_neighbor_round(nb, NULL, NULL, NULL), BPC_ENULL);
  ck_assert_int_eq(bpc_neighbor_destroy(&nb), BPC_OK);
  ck_assert_ptr_null(nb);
  ck_assert_int_eq(bpc_neighbor_destroy(&nb), BPC_OK);
  /* graph with bad offsets */
  int off[5] = {0, 2, 1, 3, 3}, tgt[3] = {1, 2, 3};
  ck_assert_int_eq(bpc_neighbor_create_graph(ctx, a, off, tgt, &type, NULL, &nb), BPC_EINVAL);
  off[0] = 1;
  ck_assert_int_eq(bpc_neighbor_create_graph(ctx, a, off, tgt, &type, NULL, &nb), BPC_EINVAL);
  ck_assert_int_eq(bpc_neighbor_create_graph(ctx, a, NULL, tgt, &type, NULL, &nb), BPC_ENULL);
  bpc_assign_destroy(&a);
}
END_TEST

START_TEST(test_params)
{
  bpc_neighbor_params_t p = bpc_neighbor_params_default();
  ck_assert_str_eq(p.algorithm, "auto");
  ck_assert_int_eq(p.nthreads, 0);
  ck_assert_int_eq(p.max_rounds, 0);
  ck_assert(p.synchrony < 0);
  bpc_type_t type = bpc_type_contiguous(sizeof(int), MPI_INT);
  bpc_algo_info_t al[8];
  int n = 0;
  ck_assert_int_eq(bpc_algorithms("Neighbor", al, 8, &n), BPC_OK);
  ck_assert_int_ge(n, 1);
  ck_assert_str_eq(al[0].name, "packed");
  for (int i = 0; i < n; i++) {
    /* by argument, in any case */
    char upper[64];
    snprintf(upper, sizeof upper, "%s", al[i].name);
    for (char *c = upper; *c; c++)
      *c = (char)(*c >= 'a' && *c <= 'z' ? *c - 'a' + 'A' : *c);
    p.algorithm = upper;
    bpc_assign_t *a = NULL;
    bpc_neighbor_t *nb = make_ring(4, &type, &p, &a);
    bpc_neighbor_info_t info;
    ck_assert_int_eq(bpc_neighbor_info(nb, &info), BPC_OK);
    ck_assert_str_eq(info.name, al[i].name);
    ck_assert_int_eq(info.algorithm, al[i].id);
    ck_assert_int_eq(info.source, BPC_SOURCE_ARGUMENT);
    ck_assert_int_eq(bpc_neighbor_destroy(&nb), BPC_OK);
    bpc_assign_destroy(&a);
    /* by the environment */
    p.algorithm = NULL;
    setenv("BPC_NEIGHBOR_ALGORITHM", upper, 1);
    nb = make_ring(4, &type, &p, &a);
    ck_assert_int_eq(bpc_neighbor_info(nb, &info), BPC_OK);
    ck_assert_str_eq(info.name, al[i].name);
    ck_assert_int_eq(info.source, BPC_SOURCE_ENV);
    ck_assert_int_eq(bpc_neighbor_destroy(&nb), BPC_OK);
    bpc_assign_destroy(&a);
  }
  /* an unknown name from the environment names its source */
  setenv("BPC_NEIGHBOR_ALGORITHM", "nope", 1);
  bpc_assign_t *a = NULL;
  bpc_neighbor_t *nb = NULL;
  int off[5] = {0, 1, 2, 3, 4}, tgt[4] = {1, 2, 3, 0};
  ck_assert_int_eq(bpc_assign_create(ctx, 4, BPC_ASSIGN_CONTIGUOUS, NULL, &a), BPC_OK);
  ck_assert_int_eq(bpc_neighbor_create_graph(ctx, a, off, tgt, &type, NULL, &nb), BPC_EALGO);
  ck_assert_ptr_nonnull(strstr(bpc_last_error(ctx), "BPC_NEIGHBOR_ALGORITHM"));
  ck_assert_ptr_null(nb);
  /* "auto" in the environment: the built-in choice */
  setenv("BPC_NEIGHBOR_ALGORITHM", "AUTO", 1);
  ck_assert_int_eq(bpc_neighbor_create_graph(ctx, a, off, tgt, &type, NULL, &nb), BPC_OK);
  bpc_neighbor_info_t info;
  ck_assert_int_eq(bpc_neighbor_info(nb, &info), BPC_OK);
  ck_assert_str_eq(info.name, "packed");
  ck_assert_int_eq(info.source, BPC_SOURCE_BUILTIN);
  ck_assert_int_eq(bpc_neighbor_info(nb, NULL), BPC_ENULL);
  ck_assert_int_eq(bpc_neighbor_info(NULL, &info), BPC_ENULL);
  ck_assert_int_eq(bpc_neighbor_destroy(&nb), BPC_OK);
  unsetenv("BPC_NEIGHBOR_ALGORITHM");
  /* bad parameters, one at a time */
  p = bpc_neighbor_params_default();
  p.nthreads = -1;
  ck_assert_int_eq(bpc_neighbor_create_graph(ctx, a, off, tgt, &type, &p, &nb), BPC_EINVAL);
  ck_assert_ptr_nonnull(strstr(bpc_last_error(ctx), "nthreads is -1"));
  p = bpc_neighbor_params_default();
  p.max_rounds = -1;
  ck_assert_int_eq(bpc_neighbor_create_graph(ctx, a, off, tgt, &type, &p, &nb), BPC_EINVAL);
  p = bpc_neighbor_params_default();
  p.synchrony = 2.0;
  ck_assert_int_eq(bpc_neighbor_create_graph(ctx, a, off, tgt, &type, &p, &nb), BPC_EINVAL);
  ck_assert_int_eq(bpc_neighbor_create_graph(ctx, a, off, tgt, NULL, NULL, &nb), BPC_ENULL);
  ck_assert_int_eq(bpc_neighbor_create_graph(ctx, a, off, tgt, &type, NULL, NULL), BPC_ENULL);
  ck_assert_int_eq(bpc_neighbor_create_graph(NULL, a, off, tgt, &type, NULL, &nb), BPC_ENULL);
  bpc_assign_destroy(&a);
}
END_TEST

static Suite *neighbor_serial_suite(void)
{
  Suite *s = suite_create("neighbor_serial");
  TCase *tc = tcase_create("serial");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_test(tc, test_bundle_format);
  tcase_add_test(tc, test_params);
  tcase_add_test(tc, test_rounds);
  tcase_add_test(tc, test_iterate_threads);
  tcase_add_test(tc, test_errors);
  suite_add_tcase(s, tc);
  return s;
}

BPC_T_UNIT_MAIN(neighbor_serial_suite)
