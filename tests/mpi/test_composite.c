/*
 * tests/mpi/test_composite.c - the compositing plug-in under MPI at every
 * process count of tests/testlist: every strategy x operator (over,
 * z-buffer) x (full, sparse, empty) images x 1..4 blocks per process, with
 * identity / reversed / random / view-derived visibility orders rotated so
 * that every strategy and operator meets each order, against a serial
 * reference composite computed on every rank; sparse images with and
 * without active pixels (identical results, fewer bytes); empty images
 * (almost no bytes); odd sizes (1x1, 3x7, 1000x1), images smaller than the
 * number of blocks, row splits, gather to rank 0; bad input (mismatched
 * image sizes on one rank, unknown strategy, NULL buffers) failing on every
 * rank alike without a hang.
 */
#include "mpi_check.h"

#include <stdio.h>
#include <string.h>

#include "../common/composite_run.h"

static bpc_ctx_t *ctx;

static void setup(void) { ck_assert_int_eq(bpc_init(MPI_COMM_WORLD, NULL, &ctx), BPC_OK); }
static void teardown(void) { bpc_finalize(&ctx); }

static const char *strats[] = {"radixk", "binary-swap", "direct-send", "shift", "pipeline"};

static bpc_assign_t *make_assign(int n, int rr)
{
  bpc_assign_t *a = NULL;
  int rc = bpc_assign_create(ctx, n, rr ? BPC_ASSIGN_ROUND_ROBIN : BPC_ASSIGN_CONTIGUOUS, NULL, &a);
  T_CHECK(rc == BPC_OK, "assign %d: %s", n, bpc_last_error(ctx));
  return a;
}

static int run_case(bpc_assign_t *a, cr_case_t *c, const char *what, cr_out_t *out)
{
  char tag[256];
  int n = 0;
  bpc_assign_nblocks(a, &n);
  snprintf(tag, sizeof tag, "[rank %d/%d] %s n=%d %dx%d %s op=%d split=%d strat=%s ap=%d",
           t_rank, t_size, what, n, c->W, c->H, cr_kind_names[c->kind], c->op, c->split,
           c->P.strategy, c->P.active_pixels);
  memset(out, 0, sizeof *out);
  int f = cr_run(ctx, a, c, tag, out);
  T_CHECK(f == 0, "%s: %d failure(s)", tag, f);
  return f;
}

/* strategy x op x kind x blocks per process; orders rotate */
START_TEST(test_matrix)
{
  int order[64], idx = 0;
  for (int bpp = 1; bpp <= 4; bpp++) {
    const int n = bpp * t_size;
    bpc_assign_t *a = make_assign(n, bpp == 2);
    for (int s = 0; s < 5; s++)
      for (int op = 0; op < 2; op++)
        for (int kind = 0; kind < 3; kind++, idx++) {
          cr_case_t c;
          memset(&c, 0, sizeof c);
          c.W = 19;
          c.H = 11;
          c.kind = kind;
          c.seed = idx;
          c.op = op == 0 ? BPC_COMPOSITE_OVER : BPC_COMPOSITE_ZBUFFER;
          c.split = idx % 5 == 4 ? BPC_COMPOSITE_ROWS : BPC_COMPOSITE_PIXELS;
          c.gather = idx % 3 == 0;
          c.P = bpc_composite_params_default();
          c.P.strategy = strats[s];
          c.P.nthreads = 1;
          cr_order((idx + bpp) % 4, n, (uint32_t)(77 + idx), order);
          c.P.order = order;
          cr_out_t o1, o2;
          run_case(a, &c, "matrix", &o1);
          if (kind == CR_SPARSE) {
            /* the dense path gives the same pieces (checked against the same
             * reference) and sends more */
            c.P.active_pixels = 0;
            run_case(a, &c, "matrix-dense", &o2);
            unsigned long long l[2] = {o1.info.bytes_sent, o2.info.bytes_sent}, g[2];
            MPI_Allreduce(l, g, 2, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
            if (n > 1)
              T_CHECK(g[0] < g[1], "sparse %s n=%d: %llu bytes with active pixels, %llu dense",
                      strats[s], n, g[0], g[1]);
            T_CHECK(o2.info.bytes_saved == 0, "dense path saved %llu", o2.info.bytes_saved);
          }
          if (kind == CR_EMPTY) {
            /* a 16-byte header per message, at most n-1 messages per block */
            T_CHECK(o1.info.bytes_sent <= 16ull * (unsigned long long)(n - 1) * (unsigned long long)bpp,
                    "empty %s n=%d: %llu bytes sent", strats[s], n, o1.info.bytes_sent);
          }
        }
    bpc_assign_destroy(&a);
  }
  T_SYNC();
}
END_TEST

/* radixk with a user k-vector; binary swap with non-powers of two; a user op */
static int user_over(float *io, const float *in, size_t n, int stride, int in_first, void *u)
{
  (void)u;
  for (size_t i = 0; i < n; i++) {
    float *o = io + i * (size_t)stride;
    const float *a = in + i * (size_t)stride;
    const float *f = in_first ? a : o, *b = in_first ? o : a;
    float r[4];
    for (int c = 0; c < 4; c++)
      r[c] = f[c] + (1.0f - f[3]) * b[c];
    memcpy(o, r, sizeof r);
  }
  return 0;
}

START_TEST(test_kvec_user)
{
  int order[64];
  const int n = 2 * t_size;
  bpc_assign_t *a = make_assign(n, 0);
  int k[8], nk = 0, m = n;
  for (int f = 2; m > 1; f++)
    while (m % f == 0) {
      k[nk++] = f;
      m /= f;
    }
  cr_case_t c;
  memset(&c, 0, sizeof c);
  c.W = 23;
  c.H = 5;
  c.kind = CR_FULL;
  c.op = BPC_COMPOSITE_OVER;
  c.gather = 1;
  c.P = bpc_composite_params_default();
  c.P.strategy = "radixk";
  c.P.k = k;
  c.P.nk = nk;
  cr_order(2, n, 5, order);
  c.P.order = order;
  cr_out_t o;
  run_case(a, &c, "kvec", &o);
  T_CHECK(o.info.swap.nk == nk, "nk %d, want %d", o.info.swap.nk, nk);
  /* binary swap's k-vector: 2s then odd primes */
  c.P.strategy = "binary-swap";
  c.P.k = NULL;
  c.P.nk = 0;
  run_case(a, &c, "binary-swap", &o);
  int prod = 1;
  for (int r = 0; r < o.info.swap.nk; r++)
    prod *= o.info.swap.k[r];
  T_CHECK(prod == n, "binary swap k-vector multiplies to %d, not %d", prod, n);
  /* a user operator (over, written here) */
  c.op = BPC_COMPOSITE_USER;
  c.P.user_fn = user_over;
  c.P.strategy = "shift";
  run_case(a, &c, "user-op", &o);
  c.op = BPC_COMPOSITE_OVER;
  /* over with depth (depth follows the front non-transparent pixel) */
  c.depth = 1;
  c.P.strategy = "direct-send";
  run_case(a, &c, "over-depth", &o);
  T_SYNC();
  bpc_assign_destroy(&a);
}
END_TEST

START_TEST(test_odd_sizes)
{
  const int sizes[][2] = {{1, 1}, {3, 7}, {1000, 1}, {0, 0}, {2, 1}};
  int order[64];
  for (int bpp = 1; bpp <= 3; bpp += 2) {
    const int n = bpp * t_size;
    bpc_assign_t *a = make_assign(n, 0);
    for (int si = 0; si < 5; si++)
      for (int s = 0; s < 5; s++) {
        cr_case_t c;
        memset(&c, 0, sizeof c);
        c.W = sizes[si][0];
        c.H = sizes[si][1];
        c.kind = (si + s) % 2 ? CR_SPARSE : CR_FULL;
        c.seed = si * 5 + s;
        c.op = s % 2 ? BPC_COMPOSITE_ZBUFFER : BPC_COMPOSITE_OVER;
        c.split = (si + s) % 3 == 0 ? BPC_COMPOSITE_ROWS : BPC_COMPOSITE_PIXELS;
        c.gather = 1;
        c.P = bpc_composite_params_default();
        c.P.strategy = strats[s];
        cr_order(1 + s % 3, n, 9, order);
        c.P.order = order;
        cr_out_t o;
        run_case(a, &c, "odd", &o);
      }
    bpc_assign_destroy(&a);
  }
  T_SYNC();
}
END_TEST

/* ranks with no block: fewer blocks than ranks */
START_TEST(test_few_blocks)
{
  const int n = t_size > 2 ? t_size - 2 : 1;
  bpc_assign_t *a = make_assign(n, 0);
  for (int s = 0; s < 5; s++) {
    cr_case_t c;
    memset(&c, 0, sizeof c);
    c.W = 9;
    c.H = 4;
    c.kind = CR_SPARSE;
    c.op = BPC_COMPOSITE_OVER;
    c.gather = 1;
    c.P = bpc_composite_params_default();
    c.P.strategy = strats[s];
    cr_out_t o;
    run_case(a, &c, "few", &o);
  }
  T_SYNC();
  bpc_assign_destroy(&a);
}
END_TEST

START_TEST(test_bad_input)
{
  const int n = 2 * t_size;
  bpc_assign_t *a = make_assign(n, 0);
  const int *gids = NULL;
  int nl = 0;
  bpc_assign_local(a, &gids, &nl);
  bpc_image_t im[2];
  float buf[2][4 * 12];
  memset(buf, 0, sizeof buf);
  for (int i = 0; i < nl; i++) {
    im[i].width = 4;
    im[i].height = 3;
    im[i].rgba = buf[i];
    im[i].depth = NULL;
  }
  bpc_composite_params_t P = bpc_composite_params_default();
  /* mismatched sizes on the last rank's last block */
  if (t_rank == t_size - 1)
    im[nl - 1].width = 3;
  int rc = bpc_composite(ctx, a, im, &P, NULL, NULL);
  T_CHECK(rc == BPC_EINVAL, "mismatched sizes: %s", bpc_err_name(rc));
  T_CHECK(strstr(bpc_last_error(ctx), "differ") != NULL, "message: %s", bpc_last_error(ctx));
  im[nl - 1].width = 4;
  /* unknown strategy */
  P.strategy = "binary-swop";
  rc = bpc_composite(ctx, a, im, &P, NULL, NULL);
  T_CHECK(rc == BPC_EALGO, "unknown strategy: %s", bpc_err_name(rc));
  T_CHECK(strstr(bpc_last_error(ctx), "binary-swop") != NULL, "message: %s", bpc_last_error(ctx));
  P.strategy = "auto";
  /* NULL buffers on one rank */
  rc = bpc_composite(ctx, a, t_rank == 0 ? NULL : im, &P, NULL, NULL);
  T_CHECK(rc == BPC_ENULL, "NULL images: %s", bpc_err_name(rc));
  if (t_rank == t_size - 1)
    im[0].rgba = NULL;
  rc = bpc_composite(ctx, a, im, &P, NULL, NULL);
  T_CHECK(rc == BPC_ENULL, "NULL rgba: %s", bpc_err_name(rc));
  im[0].rgba = buf[0];
  /* z-buffer without depth */
  P.op = BPC_COMPOSITE_ZBUFFER;
  rc = bpc_composite(ctx, a, im, &P, NULL, NULL);
  T_CHECK(rc == BPC_EINVAL, "z-buffer without depth: %s", bpc_err_name(rc));
  P.op = BPC_COMPOSITE_OVER;
  /* gather with no buffer on the root */
  P.gather_rank = 0;
  rc = bpc_composite(ctx, a, im, &P, NULL, NULL);
  T_CHECK(rc == BPC_ENULL, "gather without buffer: %s", bpc_err_name(rc));
  P.gather_rank = -1;
  /* a bad k-vector comes back from the swap engine, on every rank */
  int k[1] = {n + 1};
  P.strategy = "radixk";
  P.k = k;
  P.nk = 1;
  rc = bpc_composite(ctx, a, im, &P, NULL, NULL);
  T_CHECK(rc == BPC_EKVEC, "bad k-vector: %s", bpc_err_name(rc));
  /* and the call still works afterwards */
  P.k = NULL;
  P.nk = 0;
  rc = bpc_composite(ctx, a, im, &P, NULL, NULL);
  T_CHECK(rc == BPC_OK, "good call after errors: %s %s", bpc_err_name(rc), bpc_last_error(ctx));
  T_SYNC();
  bpc_assign_destroy(&a);
}
END_TEST

static Suite *suite(void)
{
  Suite *s = suite_create("composite");
  TCase *tc = tcase_create("composite");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_matrix);
  tcase_add_test(tc, test_kvec_user);
  tcase_add_test(tc, test_odd_sizes);
  tcase_add_test(tc, test_few_blocks);
  tcase_add_test(tc, test_bad_input);
  suite_add_tcase(s, tc);
  return s;
}

BPC_T_MPI_MAIN(suite)
