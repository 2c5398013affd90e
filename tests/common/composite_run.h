/*
 * tests/common/composite_run.h - shared by the compositing tests (serial and
 * MPI): deterministic images per block (full, sparse, empty), an
 * independent serial reference composite, and one case that runs
 * bpc_composite and compares every block's piece (and the gathered image)
 * against the reference.
 */
#ifndef BPC_TESTS_COMPOSITE_RUN_H
#define BPC_TESTS_COMPOSITE_RUN_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bpc.h"

enum { CR_FULL = 0, CR_SPARSE = 1, CR_EMPTY = 2 };
/* The operators the tests composite with: built-in over and zbuffer, and
 * over written here as a user operator (cr_user_over). */
enum { CR_OVER = 0, CR_ZBUFFER = 1, CR_USER = 2 };

/* Over as a user's bpc_op_t on pixels of *(int *)u floats (4, or 5 with
 * depth; the depth of inout is kept). */
static inline int cr_user_over(const void *in, void *inout, size_t n, int in_left, void *u)
{
  const size_t stride = (size_t) * (const int *)u;
  for (size_t i = 0; i < n; i++) {
    float *o = (float *)inout + i * stride;
    const float *a = (const float *)in + i * stride;
    const float *f = in_left ? a : o, *b = in_left ? o : a;
    float r[4];
    for (int c = 0; c < 4; c++)
      r[c] = f[c] + (1.0f - f[3]) * b[c];
    memcpy(o, r, sizeof r);
  }
  return 0;
}

/* The bpc_op_t of a CR_ operator for images with or without depth. */
static inline bpc_op_t cr_op(int op, int depth)
{
  static int stride[2] = {4, 5};
  bpc_op_t o = {NULL, 0, NULL};
  if (op == CR_USER)
    return (bpc_op_t){cr_user_over, 0, &stride[depth != 0]};
  bpc_op_builtin(op == CR_ZBUFFER ? "zbuffer" : "over", MPI_FLOAT, &o);
  return o;
}
static const char *cr_kind_names[] __attribute__((unused)) = {"full", "sparse", "empty"};

static inline uint32_t cr_hash(uint32_t x)
{
  x ^= x >> 16;
  x *= 0x7feb352dU;
  x ^= x >> 15;
  x *= 0x846ca68bU;
  x ^= x >> 16;
  return x;
}

static inline float cr_unit(uint32_t a, uint32_t b, uint32_t c)
{
  return (float)(cr_hash(a * 0x9e3779b9U ^ cr_hash(b * 0x85ebca6bU ^ cr_hash(c))) >> 8) /
         16777216.0f;
}

/* Pixel p of block gid's image. Depth quantised to 6 levels so that the
 * z-buffer sees ties. Sparse: about 10% of the pixels, in a block-dependent
 * window plus a few scattered ones. */
static inline void cr_pixel(int gid, size_t p, int W, int H, int kind, int seed, float *rgba,
                            float *depth)
{
  int active = 0;
  const uint32_t g = (uint32_t)gid + 7919u * (uint32_t)seed;
  if (kind == CR_FULL) {
    active = cr_unit(g, (uint32_t)p, 1) < 0.97f;
  } else if (kind == CR_SPARSE) {
    const int x = (int)(p % (size_t)(W > 0 ? W : 1)), y = (int)(p / (size_t)(W > 0 ? W : 1));
    const int x0 = (int)(cr_unit(g, 5, 2) * (float)W), y0 = (int)(cr_unit(g, 6, 3) * (float)H);
    const int wx = W / 3 + 1, wy = H / 3 + 1;
    active = (x >= x0 && x < x0 + wx && y >= y0 && y < y0 + wy && cr_unit(g, (uint32_t)p, 4) < 0.9f) ||
             cr_unit(g, (uint32_t)p, 5) < 0.01f;
  }
  if (!active) {
    rgba[0] = rgba[1] = rgba[2] = rgba[3] = 0.0f;
    if (depth)
      *depth = INFINITY;
    return;
  }
  const float a = cr_unit(g, (uint32_t)p, 6);
  rgba[3] = a;
  rgba[0] = a * cr_unit(g, (uint32_t)p, 7);
  rgba[1] = a * cr_unit(g, (uint32_t)p, 8);
  rgba[2] = a * cr_unit(g, (uint32_t)p, 9);
  if (depth)
    *depth = (float)(cr_hash(g * 31u + (uint32_t)p) % 6u);
}

static inline void cr_image(int gid, int W, int H, int kind, int seed, float *rgba, float *depth)
{
  const size_t n = (size_t)W * (size_t)H;
  for (size_t p = 0; p < n; p++)
    cr_pixel(gid, p, W, H, kind, seed, rgba + 4 * p, depth ? depth + p : NULL);
}

/* One step of the reference fold: the accumulated front pixel (acc, *ad)
 * combined with the next pixel behind it (b, bd). Over: the documented
 * formula, depth the front's unless the front is empty (rgba all zero bits
 * and the empty depth ed); z-buffer: the nearer, ties to the larger rgba
 * bit pattern. */
static inline void cr_step(int op, float *acc, float *ad, const float *b, float bd, float ed)
{
  if (op != CR_ZBUFFER) { /* over (or the tests' user over) */
    const float t = 1.0f - acc[3];
    uint32_t wa[4];
    memcpy(wa, acc, sizeof wa);
    if ((wa[0] | wa[1] | wa[2] | wa[3]) == 0 && memcmp(ad, &ed, sizeof ed) == 0)
      *ad = bd; /* an empty front */
    for (int c = 0; c < 4; c++)
      acc[c] = acc[c] + t * b[c];
    return;
  }
  int take = bd < *ad;
  if (!take && bd == *ad) {
    uint32_t wa[4], wb[4];
    memcpy(wa, acc, sizeof wa);
    memcpy(wb, b, sizeof wb);
    for (int c = 0; c < 4; c++)
      if (wa[c] != wb[c]) {
        take = wb[c] > wa[c];
        break;
      }
  }
  if (take) {
    memcpy(acc, b, 4 * sizeof(float));
    *ad = bd;
  }
}

/* Independent reference: fold the blocks front to back, pixel by pixel. */
static inline void cr_reference(int n, const int *order, int W, int H, int kind, int seed, int op,
                                float *rgba, float *depth)
{
  const size_t np = (size_t)W * (size_t)H;
  for (size_t p = 0; p < np; p++) {
    float acc[4], ad = INFINITY;
    cr_pixel(order ? order[0] : 0, p, W, H, kind, seed, acc, &ad);
    for (int pos = 1; pos < n; pos++) {
      float b[4], bd = INFINITY;
      cr_pixel(order ? order[pos] : pos, p, W, H, kind, seed, b, &bd);
      cr_step(op, acc, &ad, b, bd, INFINITY);
    }
    memcpy(rgba + 4 * p, acc, sizeof acc);
    if (depth)
      depth[p] = ad;
  }
}

/* Orders: 0 identity, 1 reversed, 2 random, 3 from a view (2-D grid). */
static inline void cr_order(int which, int n, uint32_t seed, int *order)
{
  for (int i = 0; i < n; i++)
    order[i] = which == 1 ? n - 1 - i : i;
  if (which == 2) {
    for (int i = n - 1; i > 0; i--) {
      int j = (int)(cr_hash(seed + (uint32_t)i) % (uint32_t)(i + 1));
      int t = order[i];
      order[i] = order[j];
      order[j] = t;
    }
  } else if (which == 3) {
    int d0 = 1;
    for (int f = 1; f * f <= n; f++)
      if (n % f == 0)
        d0 = f;
    int divs[2] = {n / d0, d0};
    double dir[2] = {seed % 2 ? 1.0 : -1.0, seed % 3 ? -0.5 : 0.7};
    double eye[2] = {0.5 * divs[0] + 0.3, -2.0};
    bpc_composite_order_view(2, divs, seed % 4 < 2 ? dir : NULL, seed % 4 < 2 ? NULL : eye, 0,
                             order);
  }
}

typedef struct cr_case {
  int W, H, kind, seed, op, depth, split, gather;
  bpc_composite_params_t P; /* strategy, order, active_pixels, k... */
} cr_case_t;

/* The bounding box of an image's non-empty pixels (rgba not all zero
 * bits, or depth, if any, other than ed's bits); 0 x 0 when none. */
static inline bpc_composite_rect_t cr_bbox(const float *rgba, const float *depth, int W, int H,
                                           float ed)
{
  int x0 = W, x1 = 0, y0 = H, y1 = 0;
  for (size_t p = 0; p < (size_t)W * (size_t)H; p++) {
    uint32_t w[4];
    memcpy(w, rgba + 4 * p, sizeof w);
    if ((w[0] | w[1] | w[2] | w[3]) == 0 &&
        (depth == NULL || memcmp(depth + p, &ed, sizeof ed) == 0))
      continue;
    const int x = (int)(p % (size_t)W), y = (int)(p / (size_t)W);
    x0 = x < x0 ? x : x0;
    x1 = x + 1 > x1 ? x + 1 : x1;
    y0 = y < y0 ? y : y0;
    y1 = y + 1 > y1 ? y + 1 : y1;
  }
  return x1 > x0 ? (bpc_composite_rect_t){x0, y0, x1 - x0, y1 - y0}
                 : (bpc_composite_rect_t){0, 0, 0, 0};
}

/* Garbage in an output image before a call (rgba 1234.5, depth -1e30: it
 * wins every z-test and shows through over), so a pixel the call reads
 * before it writes it shows in the result. */
static inline void cr_garbage(float *rgba, float *depth, size_t np)
{
  for (size_t p = 0; p < 4 * np; p++)
    rgba[p] = 1234.5f;
  for (size_t p = 0; depth != NULL && p < np; p++)
    depth[p] = -1e30f;
}

typedef struct cr_out {
  int rc;
  bpc_composite_info_t info;
  unsigned long long sum_checked;
} cr_out_t;

/* Run one case on the local blocks of `a`; return the number of failures
 * (printed with tag). The reference is computed locally. */
static inline int cr_run(bpc_ctx_t *ctx, const bpc_assign_t *a, const cr_case_t *c,
                         const char *tag, cr_out_t *out)
{
  int fails = 0, n = 0, nl = 0, rank = 0;
  const int *gids = NULL;
  bpc_assign_nblocks(a, &n);
  bpc_assign_local(a, &gids, &nl);
  bpc_ctx_rank(ctx, &rank);
  const size_t np = (size_t)c->W * (size_t)c->H;
  const int needd = c->depth || c->op == CR_ZBUFFER;
  bpc_image_t *im = calloc((size_t)(nl > 0 ? nl : 1), sizeof *im);
  bpc_composite_piece_t *pc = calloc((size_t)(nl > 0 ? nl : 1), sizeof *pc);
  float *ref = malloc(np * 4 * sizeof(float) + 16), *refd = malloc(np * sizeof(float) + 16);
  float *gat = NULL, *gatd = NULL;
  for (int i = 0; i < nl; i++) {
    im[i].width = c->W;
    im[i].height = c->H;
    im[i].rgba = malloc(np * 4 * sizeof(float) + 16);
    im[i].depth = needd ? malloc(np * sizeof(float) + 16) : NULL;
    cr_image(gids[i], c->W, c->H, c->kind, c->seed, im[i].rgba, im[i].depth);
  }
  bpc_composite_params_t P = c->P;
  P.op = cr_op(c->op, needd);
  P.split = c->split;
  if (c->gather) {
    P.gather_rank = 0;
    if (rank == 0) {
      gat = malloc(np * 4 * sizeof(float) + 16);
      gatd = malloc(np * sizeof(float) + 16);
      for (size_t p = 0; p < 4 * np; p++)
        gat[p] = -1.0f;
      P.gather_rgba = gat;
      P.gather_depth = needd ? gatd : NULL;
    }
  }
  out->rc = bpc_composite(ctx, a, im, &P, pc, &out->info);
  if (out->rc != BPC_OK) {
    fprintf(stderr, "%s: bpc_composite returned %s: %s\n", tag, bpc_err_name(out->rc),
            bpc_last_error(ctx));
    fails++;
    goto done;
  }
  cr_reference(n, P.order, c->W, c->H, c->kind, c->seed, c->op, ref, refd);
  {
    int *pos_of = malloc(sizeof(int) * (size_t)n);
    for (int p = 0; p < n; p++)
      pos_of[P.order ? P.order[p] : p] = p;
    const float tol = c->op != CR_ZBUFFER ? 1e-5f : 0.0f;
    for (int i = 0; i < nl && fails < 5; i++) {
      bpc_composite_piece_t want;
      bpc_composite_piece_of(&out->info, c->W, c->H, c->split, pos_of[gids[i]], &want);
      if (want.offset != pc[i].offset || want.count != pc[i].count) {
        fprintf(stderr, "%s: block %d piece %zu+%zu, piece_of says %zu+%zu\n", tag, gids[i],
                pc[i].offset, pc[i].count, want.offset, want.count);
        fails++;
      }
      if (c->split == BPC_COMPOSITE_ROWS && c->W > 0 && (pc[i].offset % (size_t)c->W != 0 ||
                                                        pc[i].count % (size_t)c->W != 0)) {
        fprintf(stderr, "%s: block %d piece is not whole rows\n", tag, gids[i]);
        fails++;
      }
      for (size_t p = pc[i].offset; p < pc[i].offset + pc[i].count && p < np; p++) {
        for (int ch = 0; ch < 4; ch++)
          if (!(fabsf(im[i].rgba[4 * p + ch] - ref[4 * p + ch]) <= tol)) {
            fprintf(stderr, "%s: block %d pixel %zu ch %d: %g, reference %g\n", tag, gids[i], p,
                    ch, im[i].rgba[4 * p + ch], ref[4 * p + ch]);
            fails++;
            p = np;
            break;
          }
        if (p < np && needd && im[i].depth[p] != refd[p]) {
          fprintf(stderr, "%s: block %d pixel %zu depth %g, reference %g\n", tag, gids[i], p,
                  im[i].depth[p], refd[p]);
          fails++;
          break;
        }
        out->sum_checked++;
      }
    }
    if (c->gather && rank == 0) {
      for (size_t p = 0; p < np && fails < 5; p++) {
        for (int ch = 0; ch < 4; ch++)
          if (!(fabsf(gat[4 * p + ch] - ref[4 * p + ch]) <= tol)) {
            fprintf(stderr, "%s: gathered pixel %zu ch %d: %g, reference %g\n", tag, p, ch,
                    gat[4 * p + ch], ref[4 * p + ch]);
            fails++;
            break;
          }
        if (needd && gatd[p] != refd[p]) {
          fprintf(stderr, "%s: gathered depth %zu: %g, reference %g\n", tag, p, gatd[p], refd[p]);
          fails++;
        }
      }
    }
    free(pos_of);
  }
done:
  for (int i = 0; i < nl; i++) {
    free(im[i].rgba);
    free(im[i].depth);
  }
  free(im);
  free(pc);
  free(ref);
  free(refd);
  free(gat);
  free(gatd);
  return fails;
}

#endif /* BPC_TESTS_COMPOSITE_RUN_H */
