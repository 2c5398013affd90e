/*
 * lib/composite/active.c - active pixels: the encoding of sparse image
 * pieces, and what each local block knows of its own non-empty pixels.
 *
 * A pixel is empty when it equals the empty pattern bit for bit (rgba all
 * +0.0f; depth, if present, the call's empty depth, +infinity by default)
 * and active otherwise. An empty pixel is the identity of every operator
 * (over, the z-buffer, and by contract the user's), so a piece can skip it.
 *
 * The encoding of a piece of n pixels (a range of the image, row-major;
 * row splits are ranges of whole rows), fields native-endian:
 *   uint64 n        pixels of the piece (checked by the receiver)
 *   uint64 nruns    runs of active pixels
 *   nruns x (uint32 start, uint32 len)   each run: first pixel (from the
 *                   piece's start) and length; sorted, disjoint, len >= 1
 *   the runs' pixels, stride floats each, in run order
 * 16 + 8 nruns + 4 stride (active pixels) bytes; an empty piece is 16.
 * A run may hold empty pixels too (it is then only larger, never wrong).
 *
 * Every schedule (radix-k, shift, ring: the sparse hooks of
 * lib/engines/swap/swap_common.h): each local
 * block keeps a sorted list of disjoint pixel runs that cover every active
 * pixel of its swap buffer (a superset). It is found once per call: by a
 * scan of the image, or of the user's valid rectangle only. A piece is
 * encoded from that list without looking at a single empty pixel; a
 * received encoded piece is blended straight into the block's buffer
 * touching only its runs (no decode, no dense pass), and its runs join the
 * block's list; a dense piece makes its whole range active in the list;
 * after each radix-k round the list is cut to the block's new range (shift
 * and ring keep the whole image's). So a round's work grows with the
 * active pixels, not with the piece.
 *
 * Planar (images with depth, every strategy): the swap works on the rgba plane
 * (in place, 16 bytes a pixel) and depth stays in its own plane; every
 * piece travels encoded, rgba and depth interleaved per pixel (a dense
 * image: one run), and is blended into both planes. No interleaved copy
 * of the image is made, and nothing is copied back.
 *
 * bpc__cp_unpack_runs writes an encoded piece out dense (the empty pattern,
 * then the runs): the sparse gather's receiver.
 */
#include "composite/composite_internal.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define px_empty bpc__cp_px_empty
#define fbits bpc__cp_fbits

double bpc__cp_active_fraction(const float *px, size_t npix, int stride, float empty_depth)
{
  /* an estimate from about 16 Ki pixels, every 7th or sparser (it only
   * decides whether encoding is worth trying; results never depend on it):
   * a large image is not read whole */
  if (npix == 0)
    return 0.0;
  const uint32_t ed = fbits(empty_depth);
  size_t step = npix / 16384;
  step = (step < 7 ? 7 : step) | 1;
  size_t act = 0, seen = 0;
  for (size_t i = 0; i < npix; i += step, seen++)
    act += !px_empty(px + i * (size_t)stride, stride, ed);
  return (double)act / (double)seen;
}

static inline void put32(unsigned char *p, size_t at, uint32_t v) { memcpy(p + at, &v, sizeof v); }
static inline void put64(unsigned char *p, size_t at, uint64_t v) { memcpy(p + at, &v, sizeof v); }
static inline uint32_t get32(const unsigned char *p, size_t at)
{
  uint32_t v;
  memcpy(&v, p + at, sizeof v);
  return v;
}
static inline uint64_t get64(const unsigned char *p, size_t at)
{
  uint64_t v;
  memcpy(&v, p + at, sizeof v);
  return v;
}

/* ------------------------------------------------------- the run lists */

/* Append run [s, e) to L (merged with the last run when they touch). */
static int runs_push(bpc__cp_runs_t *L, size_t s, size_t e)
{
  if (L->n > 0 && L->r[2 * L->n - 1] >= s) {
    if (e > L->r[2 * L->n - 1])
      L->r[2 * L->n - 1] = e;
    return 0;
  }
  if (L->n == L->cap) {
    size_t nc = L->cap > 0 ? 2 * L->cap : 64;
    size_t *nr = realloc(L->r, 2 * sizeof(size_t) * nc);
    if (nr == NULL)
      return -1;
    L->r = nr;
    L->cap = nc;
  }
  L->r[2 * L->n] = s;
  L->r[2 * L->n + 1] = e;
  L->n++;
  return 0;
}

/* Is pixel p empty: interleaved (dp NULL, st floats a pixel) or planar
 * (rgba 4 floats a pixel, depth in dp)? */
static inline int pl_empty(const float *px, const float *dp, size_t p, int st, uint32_t ed)
{
  if (dp == NULL)
    return px_empty(px + p * (size_t)st, st, ed);
  return px_empty(px + 4 * p, 4, ed) && fbits(dp[p]) == ed;
}

/* The first pixel of [p, p1) that is not empty (p1 if none); rgba is
 * tested a cache line (4 pixels) at a time. */
static size_t skip_empty(const float *px, const float *dp, size_t p, size_t p1, int st, uint32_t ed)
{
  if (st == 4 || dp != NULL) {
    while (p + 4 <= p1) {
      uint64_t w[8], o = 0;
      memcpy(w, px + 4 * p, sizeof w);
      for (int i = 0; i < 8; i++)
        o |= w[i];
      if (o != 0 || (dp != NULL && (fbits(dp[p]) != ed || fbits(dp[p + 1]) != ed ||
                                    fbits(dp[p + 2]) != ed || fbits(dp[p + 3]) != ed)))
        break;
      p += 4;
    }
  }
  while (p < p1 && pl_empty(px, dp, p, st, ed))
    p++;
  return p;
}

/* The active runs of pixels [p0, p1) of px, appended to L. */
static int runs_scan(bpc__cp_runs_t *L, const float *px, const float *dp, size_t p0, size_t p1,
                     int st, uint32_t ed)
{
  size_t p = p0;
  while (p < p1) {
    p = skip_empty(px, dp, p, p1, st, ed);
    if (p == p1)
      break;
    const size_t s = p;
    while (p < p1 && !pl_empty(px, dp, p, st, ed))
      p++;
    if (runs_push(L, s, p) != 0)
      return -1;
  }
  return 0;
}

/* First run of L whose end is after pixel p. */
static size_t runs_find(const bpc__cp_runs_t *L, size_t p)
{
  size_t lo = 0, hi = L->n;
  while (lo < hi) {
    const size_t mid = lo + (hi - lo) / 2;
    if (L->r[2 * mid + 1] <= p)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

/* L becomes the single run [p0, p1) (always possible: cap >= 1). */
static void runs_whole(bpc__cp_runs_t *L, size_t p0, size_t p1)
{
  L->n = 0;
  if (p1 > p0 && L->cap >= 1) {
    L->r[0] = p0;
    L->r[1] = p1;
    L->n = 1;
  }
}

int bpc__cp_runs_build(bpc__cp_t *cp, int lb, size_t width, size_t height,
                       const bpc_composite_rect_t *valid)
{
  bpc__cp_runs_t *L = &cp->runs[lb];
  const float *px = cp->px[lb], *dp = cp->planar ? cp->dpx[lb] : NULL;
  const int st = cp->stride;
  const uint32_t ed = fbits(cp->empty_depth);
  L->n = 0;
  if (L->cap == 0) {
    L->r = malloc(2 * sizeof(size_t) * 64);
    if (L->r == NULL)
      return -1;
    L->cap = 64;
  }
  if (!cp->encode) { /* planar without active pixels: all of it, unscanned */
    runs_whole(L, 0, width * height);
    return 0;
  }
  if (valid == NULL)
    return runs_scan(L, px, dp, 0, width * height, st, ed);
  for (size_t y = (size_t)valid->y; y < (size_t)valid->y + (size_t)valid->height; y++)
    if (runs_scan(L, px, dp, y * width + (size_t)valid->x,
                  y * width + (size_t)valid->x + (size_t)valid->width, st, ed) != 0)
      return -1;
  return 0;
}

void bpc__cp_runs_free(bpc__cp_t *cp)
{
  for (int i = 0; cp->runs != NULL && i < cp->nlocal; i++)
    free(cp->runs[i].r);
  free(cp->runs);
  cp->runs = NULL;
  free(cp->tmp.r);
  cp->tmp = (bpc__cp_runs_t){NULL, 0, 0};
}

/* -------------------------------------------------- the sparse hooks */

/* Write the encoding of pixels [p0, p1) from the runs of L (from index
 * `first`, clipped to the range): n runs, px the pixels of L's index space
 * (stride floats each, or rgba 4 floats with depth in dp). Returns its size. */
static size_t runs_write(const bpc__cp_t *cp, unsigned char *o, const bpc__cp_runs_t *L,
                         size_t first, size_t n, size_t p0, size_t p1, const float *px,
                         const float *dp)
{
  const size_t st = (size_t)cp->stride, ps = sizeof(float) * st;
  put64(o, 0, p1 - p0);
  put64(o, 8, n);
  size_t rec = 16, at = 16 + 8 * n;
  for (size_t i = first; i < L->n && L->r[2 * i] < p1; i++) {
    const size_t s = L->r[2 * i] > p0 ? L->r[2 * i] : p0;
    const size_t e = L->r[2 * i + 1] < p1 ? L->r[2 * i + 1] : p1;
    put32(o, rec, (uint32_t)(s - p0));
    put32(o, rec + 4, (uint32_t)(e - s));
    rec += 8;
    if (dp == NULL) {
      memcpy(o + at, px + s * st, (e - s) * ps);
    } else { /* rgba and depth of each pixel together */
      float *w = (float *)(o + at);
      for (size_t q = s; q < e; q++, w += 5) {
        memcpy(w, px + 4 * q, 4 * sizeof(float));
        w[4] = dp[q];
      }
    }
    at += (e - s) * ps;
  }
  return at;
}

/* Runs of L from index `first` that meet [p0, p1): their count and pixels. */
static void runs_count(const bpc__cp_runs_t *L, size_t first, size_t p0, size_t p1, size_t *n,
                       size_t *act)
{
  *n = *act = 0;
  for (size_t i = first; i < L->n && L->r[2 * i] < p1; i++) {
    const size_t s = L->r[2 * i] > p0 ? L->r[2 * i] : p0;
    const size_t e = L->r[2 * i + 1] < p1 ? L->r[2 * i + 1] : p1;
    (*n)++;
    *act += e - s;
  }
}

size_t bpc__cp_encode_block(void *dst, size_t cap, int lb, size_t off, size_t count, void *user)
{
  bpc__cp_t *cp = user;
  const bpc__cp_runs_t *L = &cp->runs[lb];
  const size_t ps = sizeof(float) * (size_t)cp->stride;
  const size_t p0 = off * cp->px_per_elem, p1 = (off + count) * cp->px_per_elem;
  cp->bytes_dense += cp->planar ? (p1 - p0) * ps : cap;
  const size_t first = runs_find(L, p0);
  size_t n = 0, act = 0;
  runs_count(L, first, p0, p1, &n, &act);
  const size_t size = 16 + 8 * n + ps * act;
  if (!cp->planar && (!cp->encode || p1 - p0 > UINT32_MAX || size >= cap)) {
    cp->bytes_sent += cap; /* send dense (planar: always encoded, cap is the bound) */
    return 0;
  }
  runs_write(cp, dst, L, first, n, p0, p1, cp->px[lb], cp->planar ? cp->dpx[lb] : NULL);
  cp->bytes_sent += size;
  cp->pieces_encoded++;
  return size;
}

int bpc__cp_check(const void *src, size_t bytes, size_t count, void *user)
{
  const bpc__cp_t *cp = user;
  const unsigned char *in = src;
  const size_t ps = sizeof(float) * (size_t)cp->stride;
  if (bytes < 16)
    return 1;
  const uint64_t np = get64(in, 0), n = get64(in, 8);
  if (np != (uint64_t)count * cp->px_per_elem)
    return 2;
  if (n > (bytes - 16) / 8)
    return 3;
  uint64_t end = 0, act = 0;
  for (uint64_t i = 0; i < n; i++) {
    const uint64_t s = get32(in, 16 + 8 * i), l = get32(in, 16 + 8 * i + 4);
    if (l == 0 || s < end || s + l > np)
      return 4;
    end = s + l;
    act += l;
  }
  if (act > (bytes - 16 - 8 * n) / ps || 16 + 8 * n + act * ps != bytes)
    return 5;
  return 0;
}

size_t bpc__cp_bound(size_t count, void *user)
{
  const bpc__cp_t *cp = user;
  const size_t np = count * cp->px_per_elem;
  /* runs are at least a pixel apart: at most (np + 1) / 2 of them */
  return 16 + 8 * ((np + 1) / 2) + sizeof(float) * (size_t)cp->stride * np;
}

int bpc__cp_blend(int lb, size_t off, void *inout, size_t count, const void *src, size_t bytes,
                  size_t lo, size_t len, int in_first, void *user)
{
  (void)count;
  (void)bytes;
  const bpc__cp_t *cp = user;
  float *od = cp->planar ? cp->dpx[lb] + off * cp->px_per_elem : NULL;
  const unsigned char *in = src;
  const size_t st = (size_t)cp->stride;
  const size_t w0 = lo * cp->px_per_elem, w1 = (lo + len) * cp->px_per_elem;
  const uint64_t n = get64(in, 8);
  const float *data = (const float *)(in + 16 + 8 * n); /* 8-aligned: 16 + 8 n */
  float *o = inout;
  size_t d = 0; /* pixels of data before the current run */
  for (uint64_t i = 0; i < n; i++) {
    const size_t s = get32(in, 16 + 8 * i), l = get32(in, 16 + 8 * i + 4);
    if (s >= w1)
      break;
    const size_t cs = s > w0 ? s : w0, ce = s + l < w1 ? s + l : w1;
    if (cs < ce) {
      int rc = od != NULL ? bpc__cp_px_planar(cp, o + cs * 4, od + cs, data + (d + cs - s) * st,
                                              ce - cs, in_first)
                          : bpc__cp_px(cp, o + cs * st, data + (d + cs - s) * st, ce - cs, in_first);
      if (rc != 0)
        return rc;
    }
    d += l;
  }
  return 0;
}

void bpc__cp_absorb(int lb, size_t off, size_t count, const void *src, size_t bytes, void *user)
{
  (void)bytes;
  bpc__cp_t *cp = user;
  bpc__cp_runs_t *L = &cp->runs[lb];
  const size_t p0 = off * cp->px_per_elem, p1 = (off + count) * cp->px_per_elem;
  const unsigned char *in = src;
  /* the new runs: the encoding's (from p0), or all of [p0, p1) for a dense
   * piece; joined with the list, which may extend beyond the range (ring
   * keeps the whole buffer) */
  const size_t n = src != NULL ? (size_t)get64(in, 8) : 1;
  if (n == 0 || p1 == p0)
    return;
  bpc__cp_runs_t M = cp->tmp; /* built in the spare list, then swapped with L */
  M.n = 0;
  size_t i = 0, j = 0;
  int bad = 0;
  while (!bad && (i < L->n || j < n)) {
    size_t s, e;
    const size_t js = j >= n ? SIZE_MAX : src != NULL ? p0 + get32(in, 16 + 8 * j) : p0;
    if (i < L->n && L->r[2 * i] <= js) {
      s = L->r[2 * i];
      e = L->r[2 * i + 1];
      i++;
    } else {
      s = js;
      e = src != NULL ? js + get32(in, 16 + 8 * j + 4) : p1;
      j++;
    }
    bad = runs_push(&M, s, e) != 0;
  }
  if (bad) { /* no memory for the union: the whole image (a superset) */
    cp->tmp = M;
    runs_whole(L, 0, cp->npix);
    return;
  }
  cp->tmp = *L;
  *L = M;
}

void bpc__cp_keep(int lb, size_t off, size_t count, void *user)
{
  bpc__cp_t *cp = user;
  bpc__cp_runs_t *L = &cp->runs[lb];
  const size_t p0 = off * cp->px_per_elem, p1 = (off + count) * cp->px_per_elem;
  const size_t first = runs_find(L, p0);
  size_t last = first;
  while (last < L->n && L->r[2 * last] < p1)
    last++;
  const size_t n = last - first;
  if (n > 0 && first > 0)
    memmove(L->r, L->r + 2 * first, 2 * sizeof(size_t) * n);
  L->n = n;
  if (n > 0) {
    if (L->r[0] < p0)
      L->r[0] = p0;
    if (L->r[2 * n - 1] > p1)
      L->r[2 * n - 1] = p1;
  }
}

/* ------------------------------------------------- unpacking runs */

void bpc__cp_unpack_runs(const bpc__cp_t *cp, const void *src, size_t np, float *rgba,
                         size_t rs, float *depth, size_t ds)
{
  const size_t st = (size_t)cp->stride;
  /* the empty pattern everywhere */
  if (rs == 4) {
    memset(rgba, 0, np * 4 * sizeof(float));
  } else {
    for (size_t i = 0; i < np; i++)
      memset(rgba + i * rs, 0, 4 * sizeof(float));
  }
  for (size_t i = 0; depth != NULL && i < np; i++)
    depth[i * ds] = cp->empty_depth;
  /* the runs */
  const unsigned char *in = src;
  const uint64_t n = get64(in, 8);
  const float *px = (const float *)(in + 16 + 8 * n);
  const int whole = rs == st && (depth == NULL ? st == 4 : depth == rgba + 4 && ds == st);
  for (uint64_t i = 0; i < n; i++) {
    const size_t s = get32(in, 16 + 8 * i), l = get32(in, 16 + 8 * i + 4);
    if (whole) { /* the encoding's layout: one copy */
      memcpy(rgba + s * rs, px, l * st * sizeof(float));
    } else {
      for (size_t q = s; q < s + l; q++) {
        memcpy(rgba + q * rs, px + (q - s) * st, 4 * sizeof(float));
        if (depth != NULL && st == 5)
          depth[q * ds] = px[(q - s) * st + 4];
      }
    }
    px += l * st;
  }
}
