/*
 * lib/composite/active.c - active-pixel encoding of image pieces (the
 * bpc_swap_codec_t the compositing plug-in hands to the swap engine).
 *
 * A piece is `count` swap elements of px_per_elem pixels each: with row
 * splits a piece is a rectangle of count rows x width pixels, with pixel
 * splits one row of count pixels. A pixel is empty when it equals the empty
 * pattern bit for bit (rgba all +0.0f; depth, if present, +infinity) and
 * active otherwise. Encoding (uint32 fields, then floats):
 *   r0 r1 c0 c1    bounding rectangle of the active pixels, half-open, in
 *                  piece rows/columns (r0 == r1: no active pixel at all)
 *   then runs over the rectangle scanned row by row, each
 *     skip len     skip empty pixels, then len active pixels,
 *     len pixels   stride floats each,
 *   up to the end of the message.
 * An empty piece costs 16 bytes. Two passes: the rectangle (cheap for
 * sparse pieces: each row is scanned from both ends), then the runs, given
 * up as soon as the encoding would not be smaller than the dense piece (the
 * encoder then returns 0: send dense). Decoding writes the empty pattern
 * everywhere and the active pixels at their places, so the decoded piece
 * equals the original bit for bit and compositing gives exactly the result
 * of the dense path.
 */
#include "composite/composite_internal.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

static inline int px_empty(const float *px, int stride)
{
  uint64_t a, b;
  memcpy(&a, px, sizeof a);
  memcpy(&b, px + 2, sizeof b);
  if ((a | b) != 0)
    return 0;
  if (stride == 5) {
    const float inf = INFINITY;
    return memcmp(px + 4, &inf, sizeof inf) == 0;
  }
  return 1;
}

int bpc__cp_empty(const float *px, int stride)
{
  return px_empty(px, stride);
}

double bpc__cp_active_fraction(const float *px, size_t npix, int stride)
{
  /* an estimate from every 7th pixel (it only decides whether encoding is
   * worth trying; results never depend on it) */
  if (npix == 0)
    return 0.0;
  size_t act = 0, seen = 0;
  for (size_t i = 0; i < npix; i += 7, seen++)
    act += !px_empty(px + i * (size_t)stride, stride);
  return (double)act / (double)seen;
}

static inline void put32(unsigned char *p, size_t at, uint32_t v)
{
  memcpy(p + at, &v, sizeof v);
}

static inline uint32_t get32(const unsigned char *p, size_t at)
{
  uint32_t v;
  memcpy(&v, p + at, sizeof v);
  return v;
}

size_t bpc__cp_encode(void *dst, size_t cap, const void *src, size_t count, void *user)
{
  bpc__cp_t *cp = user;
  const int st = cp->stride;
  const size_t ps = sizeof(float) * (size_t)st;
  size_t W = cp->px_per_elem, H = count;
  if (W == 1) { /* pixel split: one row */
    W = count;
    H = 1;
  }
  cp->bytes_dense += cap;
  if (!cp->encode || W * H > UINT32_MAX || cap <= 16) {
    cp->bytes_sent += cap;
    return 0;
  }
  const float *px = src;
  /* pass 1: the bounding rectangle (rows scanned from both ends) */
  size_t r0 = H, r1 = 0, c0 = W, c1 = 0;
  for (size_t r = 0; r < H; r++) {
    const float *row = px + r * W * (size_t)st;
    size_t first = 0;
    while (first < W && px_empty(row + first * (size_t)st, st))
      first++;
    if (first == W)
      continue;
    size_t last = W;
    while (last > first + 1 && px_empty(row + (last - 1) * (size_t)st, st))
      last--;
    if (r0 == H)
      r0 = r;
    r1 = r + 1;
    if (first < c0)
      c0 = first;
    if (last > c1)
      c1 = last;
  }
  unsigned char *o = dst;
  if (r0 == H)
    r0 = r1 = c0 = c1 = 0;
  put32(o, 0, (uint32_t)r0);
  put32(o, 4, (uint32_t)r1);
  put32(o, 8, (uint32_t)c0);
  put32(o, 12, (uint32_t)c1);
  /* pass 2: runs, given up once no longer smaller than dense */
  size_t at = 16, rec = 0;
  uint32_t skip = 0, len = 0;
  for (size_t r = r0; r < r1; r++) {
    const float *row = px + r * W * (size_t)st;
    for (size_t c = c0; c < c1; c++) {
      const float *p = row + c * (size_t)st;
      if (px_empty(p, st)) {
        if (len > 0) {
          put32(o, rec + 4, len);
          len = 0;
          skip = 0;
        }
        skip++;
        continue;
      }
      if (len == 0) { /* open a run: its record, then its pixels */
        if (at + 8 + ps >= cap)
          goto dense;
        rec = at;
        put32(o, rec, skip);
        at += 8;
      } else if (at + ps >= cap) {
        goto dense;
      }
      memcpy(o + at, p, ps);
      at += ps;
      len++;
    }
  }
  if (len > 0)
    put32(o, rec + 4, len);
  cp->bytes_sent += at;
  cp->pieces_encoded++;
  return at;
dense:
  cp->bytes_sent += cap;
  return 0;
}

int bpc__cp_decode(void *dst, size_t count, const void *src, size_t bytes, void *user)
{
  bpc__cp_t *cp = user;
  const int st = cp->stride;
  const size_t ps = sizeof(float) * (size_t)st;
  size_t W = cp->px_per_elem, H = count;
  if (W == 1) {
    W = count;
    H = 1;
  }
  const unsigned char *in = src;
  float *px = dst;
  if (bytes < 16)
    return 1;
  const size_t r0 = get32(in, 0), r1 = get32(in, 4), c0 = get32(in, 8), c1 = get32(in, 12);
  if (r0 > r1 || r1 > H || c0 > c1 || c1 > W)
    return 2;
  /* the empty pattern everywhere */
  if (st == 4) {
    memset(px, 0, W * H * ps);
  } else {
    const float e[5] = {0.0f, 0.0f, 0.0f, 0.0f, INFINITY};
    for (size_t i = 0; i < W * H; i++)
      memcpy(px + i * 5, e, sizeof e);
  }
  const size_t cw = c1 - c0, area = cw * (r1 - r0);
  size_t pos = 0, at = 16;
  while (at < bytes) {
    if (at + 8 > bytes)
      return 3;
    const size_t skip = get32(in, at), len = get32(in, at + 4);
    at += 8;
    pos += skip;
    if (pos + len > area || at + len * ps > bytes)
      return 4;
    size_t left = len;
    while (left > 0) { /* a run may span rows of the rectangle */
      const size_t r = r0 + pos / cw, c = c0 + pos % cw;
      const size_t m = left < c1 - c ? left : c1 - c;
      memcpy(px + (r * W + c) * (size_t)st, in + at, m * ps);
      at += m * ps;
      pos += m;
      left -= m;
    }
  }
  return 0;
}
