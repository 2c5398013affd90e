/*
 * lib/composite/operators.c - the pixel operators, as the swap engine's
 * operator on elements of px_per_elem pixels of `stride` floats: "over"
 * (front + (1 - front.a) * back, depth from the front unless it is fully
 * transparent), the z-buffer (smaller depth wins; ties to the larger rgba
 * bit pattern, so it commutes exactly) and the user's operator.
 */
#include "composite/composite_internal.h"

#include <stdint.h>
#include <string.h>

int bpc__cp_op(void *inout, const void *in, size_t count, int in_first, void *user)
{
  const bpc__cp_t *cp = user;
  const size_t n = count * cp->px_per_elem;
  const int st = cp->stride;
  float *o = inout;
  const float *a = in;
  if (cp->op == BPC_COMPOSITE_USER)
    return cp->ufn(o, a, n, st, in_first, cp->user);
  if (cp->op == BPC_COMPOSITE_OVER) {
    if (st == 4) {
      if (in_first) {
        for (size_t i = 0; i < 4 * n; i += 4) {
          const float t = 1.0f - a[i + 3];
          o[i] = a[i] + t * o[i];
          o[i + 1] = a[i + 1] + t * o[i + 1];
          o[i + 2] = a[i + 2] + t * o[i + 2];
          o[i + 3] = a[i + 3] + t * o[i + 3];
        }
      } else {
        for (size_t i = 0; i < 4 * n; i += 4) {
          const float t = 1.0f - o[i + 3];
          o[i] = o[i] + t * a[i];
          o[i + 1] = o[i + 1] + t * a[i + 1];
          o[i + 2] = o[i + 2] + t * a[i + 2];
          o[i + 3] = o[i + 3] + t * a[i + 3];
        }
      }
    } else {
      for (size_t i = 0; i < 5 * n; i += 5) {
        const float *f = in_first ? a + i : o + i; /* front */
        const float *b = in_first ? o + i : a + i; /* back */
        const float t = 1.0f - f[3];
        float r[5];
        for (int c = 0; c < 4; c++)
          r[c] = f[c] + t * b[c];
        r[4] = f[3] != 0.0f ? f[4] : b[4];
        memcpy(o + i, r, sizeof r);
      }
    }
    return 0;
  }
  /* z-buffer: smaller depth wins; ties go to the larger rgba bit pattern */
  for (size_t i = 0; i < 5 * n; i += 5) {
    int take = a[i + 4] < o[i + 4];
    if (!take && a[i + 4] == o[i + 4]) {
      uint32_t wa[4], wo[4];
      memcpy(wa, a + i, sizeof wa);
      memcpy(wo, o + i, sizeof wo);
      for (int c = 0; c < 4; c++)
        if (wa[c] != wo[c]) {
          take = wa[c] > wo[c];
          break;
        }
    }
    if (take)
      memcpy(o + i, a + i, 5 * sizeof(float));
  }
  return 0;
}
