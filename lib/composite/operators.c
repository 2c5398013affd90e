/*
 * lib/composite/operators.c - the pixel operators, as the swap engine's
 * operator on elements of px_per_elem pixels of `stride` floats: "over"
 * (front + (1 - front.a) * back, depth from the front unless the front is
 * empty), the z-buffer (smaller depth wins; ties to the larger rgba bit
 * pattern, so it commutes exactly) and the user's operator. Without depth
 * and on interleaved depth they are the built-in operators of
 * bpc_op_builtin (lib/datatype/op.c); "over" with depth and planar depth
 * are here. The empty pixel (rgba 0, the empty depth) is an identity of
 * over and the z-buffer (bit for bit, for finite pixels without negative
 * zeros and depths not above the empty depth), which is what lets active.c
 * skip it.
 */
#include "composite/composite_internal.h"

#include <stdint.h>
#include <string.h>

#include "datatype/datatype.h"

bpc__composite_kind_t bpc__composite_kind(const bpc_op_t *op)
{
  if (op->fn == bpc__op_over)
    return BPC__COMPOSITE_OVER;
  if (op->fn == bpc__op_zbuffer)
    return BPC__COMPOSITE_ZBUFFER;
  return BPC__COMPOSITE_USER;
}

int bpc__composite_op(const void *in, void *inout, size_t count, int in_first, void *user)
{
  const bpc__composite_t *cp = user;
  if (cp->planar) /* planar pieces only ever meet the buffer through the blend */
    return -1;
  return bpc__composite_px(cp, inout, in, count * cp->px_per_elem, in_first);
}

int bpc__composite_px(const bpc__composite_t *cp, float *o, const float *a, size_t n, int in_first)
{
  if (cp->op == BPC__COMPOSITE_USER)
    return cp->uop.fn(a, o, n, in_first, cp->uop.user);
  if (cp->op == BPC__COMPOSITE_ZBUFFER) {
    bpc__op_zbuffer_n(a, o, n);
    return 0;
  }
  if (cp->stride == 4) {
    bpc__op_over_px(a, o, n, in_first);
    return 0;
  }
  const uint32_t ed = bpc__composite_fbits(cp->empty_depth);
  for (size_t i = 0; i < 5 * n; i += 5) {
    const float *f = in_first ? a + i : o + i; /* front */
    const float *b = in_first ? o + i : a + i; /* back */
    const float t = 1.0f - f[3];
    float r[5];
    for (int c = 0; c < 4; c++)
      r[c] = f[c] + t * b[c];
    r[4] = bpc__composite_px_empty(f, 5, ed) ? b[4] : f[4];
    memcpy(o + i, r, sizeof r);
  }
  return 0;
}

int bpc__composite_px_planar(const bpc__composite_t *cp, float *o4, float *od, const float *a,
                             size_t n, int in_first)
{
  const uint32_t ed = bpc__composite_fbits(cp->empty_depth);
  if (cp->op == BPC__COMPOSITE_USER) { /* through an interleaved scratch */
    enum { CH = 64 };
    float t[5 * CH];
    for (size_t i0 = 0; i0 < n; i0 += CH) {
      const size_t m = n - i0 < CH ? n - i0 : CH;
      for (size_t i = 0; i < m; i++) {
        memcpy(t + 5 * i, o4 + 4 * (i0 + i), 4 * sizeof(float));
        t[5 * i + 4] = od[i0 + i];
      }
      int rc = cp->uop.fn(a + 5 * i0, t, m, in_first, cp->uop.user);
      if (rc != 0)
        return rc;
      for (size_t i = 0; i < m; i++) {
        memcpy(o4 + 4 * (i0 + i), t + 5 * i, 4 * sizeof(float));
        od[i0 + i] = t[5 * i + 4];
      }
    }
    return 0;
  }
  if (cp->op == BPC__COMPOSITE_OVER) {
    for (size_t i = 0; i < n; i++) {
      float *o = o4 + 4 * i;
      const float *x = a + 5 * i;
      float f[5], b[5], r[4];
      memcpy(in_first ? f : b, x, 5 * sizeof(float));
      memcpy(in_first ? b : f, o, 4 * sizeof(float));
      (in_first ? b : f)[4] = od[i];
      const float t = 1.0f - f[3];
      for (int c = 0; c < 4; c++)
        r[c] = f[c] + t * b[c];
      od[i] = bpc__composite_px_empty(f, 5, ed) ? b[4] : f[4];
      memcpy(o, r, sizeof r);
    }
    return 0;
  }
  /* z-buffer (the built-in's choice, on the planes) */
  for (size_t i = 0; i < n; i++) {
    const float *x = a + 5 * i;
    float *o = o4 + 4 * i;
    if (bpc__op_zbuffer_wins(x, o, od[i])) {
      memcpy(o, x, 4 * sizeof(float));
      od[i] = x[4];
    }
  }
  return 0;
}
