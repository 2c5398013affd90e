/*
 * tests/unit/test_composite_serial.c - the compositing plug-in without MPI
 * (a serial context, every block local): visibility orders from a view
 * checked against rays marched through the block grid (orthographic and
 * perspective, eye inside and outside the grid, 2-D and 3-D); every
 * strategy with 1..9 blocks against the serial reference; active pixels
 * bit-identical to the dense path; the active-fraction estimate against the
 * true fraction; the strategy table
 * (bpc_algorithms("composite")) and BPC_COMPOSITE_ALGORITHM.
 */
#include "unit_check.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../common/composite_run.h"
#include "composite/composite_internal.h"

/* March a ray; the positions of the cells it visits must increase. */
static int ray_ok(int dim, const int *divs, const int *pos_of, const double *o, const double *d)
{
  int last = -1, lastcell = -1;
  for (double t = 0.0; t < 60.0; t += 0.01) {
    int c[3], inside = 1, g = 0;
    for (int a = 0; a < dim; a++) {
      double x = o[a] + t * d[a];
      c[a] = (int)floor(x);
      if (x < 0 || c[a] >= divs[a])
        inside = 0;
    }
    if (!inside)
      continue;
    for (int a = dim - 1; a >= 0; a--)
      g = g * divs[a] + c[a];
    if (g != lastcell) {
      if (pos_of[g] <= last)
        return 0;
      last = pos_of[g];
      lastcell = g;
    }
  }
  return 1;
}

START_TEST(test_order_view)
{
  const int grids[][3] = {{4, 3, 2}, {5, 1, 1}, {3, 3, 3}, {2, 4, 1}};
  for (int gi = 0; gi < 4; gi++) {
    const int dim = gi == 3 ? 2 : 3;
    const int *divs = grids[gi];
    int n = 1;
    for (int a = 0; a < dim; a++)
      n *= divs[a];
    int order[64], pos_of[64];
    for (int trial = 0; trial < 40; trial++) {
      double dir[3], eye[3];
      for (int a = 0; a < 3; a++) {
        dir[a] = 2.0 * cr_unit((uint32_t)trial, (uint32_t)a, 11) - 1.0;
        if (trial % 7 == a)
          dir[a] = 0.0;
        eye[a] = (cr_unit((uint32_t)trial, (uint32_t)a, 12) * 3.0 - 1.0) * divs[a];
      }
      const int persp = trial % 2;
      ck_assert_int_eq(bpc_composite_order_view(dim, divs, dir, persp ? eye : NULL, 0, order),
                       BPC_OK);
      for (int p = 0; p < n; p++)
        pos_of[order[p]] = p;
      for (int r = 0; r < 30; r++) {
        double o[3], d[3];
        for (int a = 0; a < 3; a++) {
          const double tgt = cr_unit((uint32_t)trial, (uint32_t)(r * 3 + a), 13) * divs[a];
          if (persp) {
            o[a] = eye[a];
            d[a] = tgt - eye[a];
          } else {
            d[a] = dir[a];
            o[a] = tgt - 20.0 * dir[a];
          }
        }
        ck_assert_msg(ray_ok(dim, divs, pos_of, o, d), "grid %d trial %d ray %d: order not valid",
                      gi, trial, r);
      }
      /* back to front is the reverse */
      int rev[64];
      bpc_composite_order_view(dim, divs, dir, persp ? eye : NULL, 1, rev);
      for (int p = 0; p < n; p++)
        ck_assert_int_eq(rev[p], order[n - 1 - p]);
    }
  }
  int divs[2] = {2, 0}, order[4];
  double dir[2] = {1, 0};
  ck_assert_int_eq(bpc_composite_order_view(2, divs, dir, NULL, 0, order), BPC_EINVAL);
  ck_assert_int_eq(bpc_composite_order_view(2, NULL, dir, NULL, 0, order), BPC_ENULL);
}
END_TEST

START_TEST(test_serial_strategies)
{
  bpc_ctx_t *ctx = NULL;
  ck_assert_int_eq(bpc_init_serial(NULL, &ctx), BPC_OK);
  /* every strategy of the table, then "auto" */
  bpc_algo_info_t table[16];
  int nt = 0;
  ck_assert_int_eq(bpc_algorithms("composite", table, 16, &nt), BPC_OK);
  ck_assert_int_ge(nt, 5);
  const char *strats[17];
  for (int i = 0; i < nt; i++)
    strats[i] = table[i].name;
  strats[nt] = "auto";
  int order[16];
  for (int n = 1; n <= 9; n++) {
    bpc_assign_t *a = NULL;
    ck_assert_int_eq(bpc_assign_create(ctx, n, BPC_ASSIGN_CONTIGUOUS, NULL, &a), BPC_OK);
    for (int s = 0; s <= nt; s++)
      for (int kind = 0; kind < 3; kind++)
        for (int op = 0; op < 2; op++) {
          cr_case_t c;
          memset(&c, 0, sizeof c);
          c.W = 13 + n;
          c.H = 7;
          c.kind = kind;
          c.seed = n * 100 + s * 10 + kind;
          c.op = op ? CR_ZBUFFER : CR_OVER;
          c.split = (s + kind) % 2;
          c.gather = 1;
          c.P = bpc_composite_params_default();
          c.P.algorithm = strats[s];
          cr_order((s + kind + op) % 4, n, (uint32_t)(n + s), order);
          c.P.order = order;
          cr_out_t o;
          memset(&o, 0, sizeof o);
          int f = cr_run(ctx, a, &c, "serial", &o);
          ck_assert_msg(f == 0, "n=%d %s %s op %d: %d failures", n, strats[s],
                        cr_kind_names[kind], op, f);
          /* one process without valid rectangles: every piece goes dense
           * without depth, encoded with it (doc/composite.md, "One process") */
          if (kind == CR_SPARSE && n > 1 && !op)
            ck_assert_msg(o.info.bytes_saved == 0 && o.info.bytes_sent >= o.info.bytes_dense,
                          "sparse n=%d %s, one process: %llu bytes saved", n, strats[s],
                          o.info.bytes_saved);
          if (kind == CR_SPARSE && n > 1 && op)
            ck_assert_msg(o.info.bytes_saved > 0, "sparse z-buffer n=%d %s: nothing saved", n,
                          strats[s]);
        }
    bpc_assign_destroy(&a);
  }
  bpc_finalize(&ctx);
}
END_TEST

/* the encoded path reproduces the dense path bit for bit */
START_TEST(test_active_identical)
{
  bpc_ctx_t *ctx = NULL;
  ck_assert_int_eq(bpc_init_serial(NULL, &ctx), BPC_OK);
  const int n = 6, W = 37, H = 29;
  bpc_assign_t *a = NULL;
  ck_assert_int_eq(bpc_assign_create(ctx, n, BPC_ASSIGN_CONTIGUOUS, NULL, &a), BPC_OK);
  for (int op = 0; op < 2; op++)
    for (int split = 0; split < 2; split++) {
      float *res[2];
      unsigned long long sent[2];
      for (int ap = 0; ap < 2; ap++) {
        bpc_image_t im[6];
        bpc_composite_rect_t valid[6];
        for (int i = 0; i < n; i++) {
          im[i].width = W;
          im[i].height = H;
          im[i].rgba = malloc(sizeof(float) * 4 * W * H);
          im[i].depth = malloc(sizeof(float) * W * H);
          cr_image(i, W, H, CR_SPARSE, 3, im[i].rgba, im[i].depth);
          /* the window of cr_pixel only (its scattered pixels cleared): its
           * valid rectangle leaves a ninth of the pixels to look at, so
           * active pixels are used on one process too */
          const uint32_t g = (uint32_t)i + 7919u * 3u;
          const int x0 = (int)(cr_unit(g, 5, 2) * (float)W), y0 = (int)(cr_unit(g, 6, 3) * (float)H);
          const int x1 = x0 + W / 3 + 1 < W ? x0 + W / 3 + 1 : W;
          const int y1 = y0 + H / 3 + 1 < H ? y0 + H / 3 + 1 : H;
          for (int y = 0; y < H; y++)
            for (int x = 0; x < W; x++)
              if (x < x0 || x >= x1 || y < y0 || y >= y1) {
                memset(im[i].rgba + 4 * (y * W + x), 0, 4 * sizeof(float));
                im[i].depth[y * W + x] = INFINITY;
              }
          valid[i] = (bpc_composite_rect_t){x0, y0, x1 - x0, y1 - y0};
        }
        bpc_composite_params_t P = bpc_composite_params_default();
        P.op = cr_op(op ? CR_ZBUFFER : CR_OVER, 1);
        P.split = (bpc_composite_split_t)split;
        P.active_pixels = ap;
        P.algorithm = "binary-swap";
        P.valid = valid;
        P.gather_rank = 0;
        res[ap] = malloc(sizeof(float) * 4 * W * H);
        P.gather_rgba = res[ap];
        bpc_composite_info_t info;
        ck_assert_int_eq(bpc_composite(ctx, a, im, &P, NULL, &info), BPC_OK);
        sent[ap] = info.bytes_sent;
        ck_assert(info.bytes_saved ==
                  (info.bytes_dense > info.bytes_sent ? info.bytes_dense - info.bytes_sent : 0));
        for (int i = 0; i < n; i++) {
          free(im[i].rgba);
          free(im[i].depth);
        }
      }
      ck_assert_msg(memcmp(res[0], res[1], sizeof(float) * 4 * W * H) == 0,
                    "op %d split %d: active pixels changed the result", op, split);
      ck_assert_msg(sent[1] < sent[0], "op %d split %d: %llu bytes encoded vs %llu dense", op,
                    split, sent[1], sent[0]);
      free(res[0]);
      free(res[1]);
    }
  bpc_assign_destroy(&a);
  bpc_finalize(&ctx);
}
END_TEST

/* The active-fraction estimate (it decides whether encoding is tried) is
 * near the true fraction on patterns whose periods could line up with a
 * regular sampling (columns every other, 3rd or 7th pixel, a checkerboard,
 * stripes, rows) at widths where a fixed step or a golden-ratio offset
 * does line up (1974 and 610 columns over 1024 rows, 1366 x 768), a disk,
 * half the image; over the whole image and a sub-rectangle; exact on small
 * rectangles and on empty or full images. */
static int est_active(int kind, int x, int y, int W, int H)
{
  const int r = (W < H ? W : H) / 4, dx = x - W / 3, dy = y - H / 2;
  switch (kind) {
  case 0: return x % 2 == 0;
  case 1: return x % 7 == 0;
  case 2: return (x / 32) % 2 == 0;
  case 3: return y % 2 == 1;
  case 4: return dx * dx + dy * dy < r * r;
  case 5: return x < W / 2;
  case 6: return (x + y) % 2 == 0;
  case 7: return x % 3 == 0;
  case 8: return 0;
  default: return 1;
  }
}

START_TEST(test_active_estimate)
{
  const int sizes[][2] = {{1024, 1024}, {1974, 1024}, {610, 1024}, {1366, 768},
                          {65, 4096},   {513, 700},   {30, 20}};
  const int nsizes = (int)(sizeof sizes / sizeof sizes[0]);
  const float ed = INFINITY;
  for (int s = 0; s < nsizes; s++)
    for (int kind = 0; kind < 10; kind++)
      for (int stride = 4; stride <= 5; stride++) {
        const int W = sizes[s][0], H = sizes[s][1];
        float *px = calloc((size_t)W * H * stride, sizeof(float));
        ck_assert_ptr_nonnull(px);
        /* the rectangle: the whole image, then an inner one */
        const int rx[2] = {0, W / 5}, ry[2] = {0, H / 3}, rw[2] = {W, W / 2}, rh[2] = {H, H / 2};
        for (int y = 0; y < H; y++)
          for (int x = 0; x < W; x++) {
            float *p = px + ((size_t)y * W + x) * stride;
            if (stride == 5)
              p[4] = ed;
            if (est_active(kind, x, y, W, H)) {
              /* one active channel: alpha, or colour only (emissive), or
               * (stride 5) only a depth in front */
              if (stride == 5 && (x + y) % 3 == 0)
                p[4] = 0.5f;
              else
                p[(x + 2 * y) % 4] = 0.25f;
            }
          }
        for (int r = 0; r < 2; r++) {
          size_t act = 0;
          for (int y = ry[r]; y < ry[r] + rh[r]; y++)
            for (int x = rx[r]; x < rx[r] + rw[r]; x++)
              act += (size_t)est_active(kind, x, y, W, H);
          const size_t n = (size_t)rw[r] * (size_t)rh[r];
          const double truth = (double)act / (double)n;
          const double f =
              bpc__composite_active_fraction(px, (size_t)W, (size_t)rx[r], (size_t)ry[r],
                                             (size_t)rw[r], (size_t)rh[r], stride, ed);
          /* exact where every pixel is sampled, and for empty or full;
           * else within 0.06 (random sampling of 1024: a standard deviation
           * of at most 0.016) */
          const double tol = n <= BPC__CP_SAMPLES || kind >= 8 ? 0.0 : 0.06;
          ck_assert_msg(fabs(f - truth) <= tol,
                        "%d x %d, pattern %d, stride %d, rect %d: estimate %.4f, true %.4f", W, H,
                        kind, stride, r, f, truth);
        }
        free(px);
      }
  ck_assert(bpc__composite_active_fraction(NULL, 8, 0, 0, 0, 4, 4, ed) == 0.0);
  ck_assert(bpc__composite_active_fraction(NULL, 8, 0, 0, 8, 0, 4, ed) == 0.0);
}
END_TEST

START_TEST(test_table_env)
{
  bpc_algo_info_t t[16];
  int n = 0;
  ck_assert_int_eq(bpc_algorithms("composite", t, 16, &n), BPC_OK);
  /* the five built-in strategies are rows (a new one is one more row: no
   * test edit) */
  const char *const builtin[] = {"radixk", "binary-swap", "direct-send", "shift", "pipeline"};
  for (int b = 0; b < 5; b++) {
    int found = 0;
    for (int i = 0; i < n; i++)
      found += strcmp(t[i].name, builtin[b]) == 0;
    ck_assert_msg(found == 1, "strategy %s is listed %d times", builtin[b], found);
  }
  const int nrows = n;
  ck_assert_int_eq(bpc_algorithms("Composite", NULL, 0, &n), BPC_OK);
  ck_assert_int_eq(n, nrows);
  bpc_ctx_t *ctx = NULL;
  ck_assert_int_eq(bpc_init_serial(NULL, &ctx), BPC_OK);
  bpc_assign_t *a = NULL;
  ck_assert_int_eq(bpc_assign_create(ctx, 3, BPC_ASSIGN_CONTIGUOUS, NULL, &a), BPC_OK);
  float px[3][8];
  memset(px, 0, sizeof px);
  bpc_image_t im[3] = {{2, 1, px[0], NULL}, {2, 1, px[1], NULL}, {2, 1, px[2], NULL}};
  bpc_composite_info_t info;
  bpc_composite_params_t P = bpc_composite_params_default();
  for (int i = 0; i < n; i++) {
    /* from the environment, any case */
    char upper[32];
    snprintf(upper, sizeof upper, "%s", t[i].name);
    for (char *c = upper; *c; c++)
      *c = (char)(*c >= 'a' && *c <= 'z' ? *c - 32 : *c);
    setenv("BPC_COMPOSITE_ALGORITHM", upper, 1);
    ck_assert_int_eq(bpc_composite(ctx, a, im, NULL, NULL, &info), BPC_OK);
    ck_assert_int_eq(info.algorithm, t[i].id);
    ck_assert_str_eq(info.name, t[i].name);
    ck_assert_int_eq(info.source, BPC_SOURCE_ENV);
    /* the argument wins over the environment */
    P.algorithm = t[(i + 1) % n].name;
    ck_assert_int_eq(bpc_composite(ctx, a, im, &P, NULL, &info), BPC_OK);
    ck_assert_int_eq(info.algorithm, t[(i + 1) % n].id);
    ck_assert_int_eq(info.source, BPC_SOURCE_ARGUMENT);
  }
  setenv("BPC_COMPOSITE_ALGORITHM", "nope", 1);
  ck_assert_int_eq(bpc_composite(ctx, a, im, NULL, NULL, &info), BPC_EALGO);
  ck_assert_ptr_nonnull(strstr(bpc_last_error(ctx), "BPC_COMPOSITE_ALGORITHM"));
  unsetenv("BPC_COMPOSITE_ALGORITHM");
  ck_assert_int_eq(bpc_composite(ctx, a, im, NULL, NULL, &info), BPC_OK);
  ck_assert_str_eq(info.name, "radixk");
  ck_assert_int_eq(info.source, BPC_SOURCE_BUILTIN);
  bpc_assign_destroy(&a);
  bpc_finalize(&ctx);
}
END_TEST

static Suite *suite(void)
{
  Suite *s = suite_create("composite_serial");
  TCase *tc = tcase_create("composite_serial");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_order_view);
  tcase_add_test(tc, test_serial_strategies);
  tcase_add_test(tc, test_active_identical);
  tcase_add_test(tc, test_active_estimate);
  tcase_add_test(tc, test_table_env);
  suite_add_tcase(s, tc);
  return s;
}

BPC_T_UNIT_MAIN(suite)
