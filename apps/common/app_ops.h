/*
 * apps/common/app_ops.h - the element-wise operators the swap benchmarks
 * reduce with, as bpc_swap_op_fn (header-only, static): a float sum
 * (commutative) and premultiplied RGBA float "over" (4 floats an element,
 * not commutative): front over back = front + (1 - front.alpha) * back,
 * the piece `in` in front when in_first is set.
 */
#ifndef BPC_APPS_COMMON_APP_OPS_H
#define BPC_APPS_COMMON_APP_OPS_H

#include <stddef.h>

static inline int app_op_sum(void *inout, const void *in, size_t count, int in_first,
                             void *user)
{
  float *o = inout;
  const float *v = in;
  (void)in_first;
  (void)user;
  for (size_t i = 0; i < count; i++)
    o[i] += v[i];
  return 0;
}

static inline int app_op_over(void *inout, const void *in, size_t count, int in_first,
                              void *user)
{
  float *o = inout;
  const float *v = in;
  (void)user;
  if (in_first) {
    for (size_t i = 0; i < count; i++, o += 4, v += 4) {
      const float t = 1.0f - v[3];
      o[0] = v[0] + t * o[0];
      o[1] = v[1] + t * o[1];
      o[2] = v[2] + t * o[2];
      o[3] = v[3] + t * o[3];
    }
  } else {
    for (size_t i = 0; i < count; i++, o += 4, v += 4) {
      const float t = 1.0f - o[3];
      o[0] += t * v[0];
      o[1] += t * v[1];
      o[2] += t * v[2];
      o[3] += t * v[3];
    }
  }
  return 0;
}

#endif /* BPC_APPS_COMMON_APP_OPS_H */
