/*
 * lib/datatype/op.c - the built-in operators of bpc_op_builtin: sum, prod,
 * min and max on the fixed-size numbers, and the pixel operators "over"
 * (4-float premultiplied rgba) and "zbuffer" (5 floats, rgba then depth),
 * which compositing applies itself as well (bpc__op_over, bpc__op_zbuffer).
 */
#include "datatype/datatype.h"

#include <stdint.h>
#include <string.h>
#include <strings.h>

/* ------------------------------------------------------------- arithmetic */

/* x is the element of `in`, y that of `inout`. */
#define OP_LOOP(NAME, T, EXPR)                                                                     \
  static int NAME(const void *in, void *inout, size_t count, int in_left, void *user)              \
  {                                                                                                \
    const T *a = in;                                                                               \
    T *o = inout;                                                                                  \
    (void)in_left;                                                                                 \
    (void)user;                                                                                    \
    for (size_t i = 0; i < count; i++) {                                                           \
      const T x = a[i], y = o[i];                                                                  \
      o[i] = (EXPR);                                                                               \
    }                                                                                              \
    return 0;                                                                                      \
  }

/* min / max keep the earlier operand when the pair compares false both
 * ways (a NaN). */
#define OP_MINMAX(T, S)                                                                            \
  OP_LOOP(op_min_##S, T, in_left ? (y < x ? y : x) : (x < y ? x : y))                              \
  OP_LOOP(op_max_##S, T, in_left ? (y > x ? y : x) : (x > y ? x : y))

/* Integer sums and products run in the unsigned type of the same width
 * (wrapping, never undefined; the bits are those of two's-complement
 * arithmetic), so only min and max have signed variants. */
OP_LOOP(op_sum_f32, float, x + y)
OP_LOOP(op_prod_f32, float, x *y)
OP_LOOP(op_sum_f64, double, x + y)
OP_LOOP(op_prod_f64, double, x *y)
OP_LOOP(op_sum_u32, uint32_t, (uint32_t)(x + y))
OP_LOOP(op_prod_u32, uint32_t, (uint32_t)((uint64_t)x *y))
OP_LOOP(op_sum_u64, uint64_t, x + y)
OP_LOOP(op_prod_u64, uint64_t, x *y)
OP_MINMAX(float, f32)
OP_MINMAX(double, f64)
OP_MINMAX(int32_t, i32)
OP_MINMAX(uint32_t, u32)
OP_MINMAX(int64_t, i64)
OP_MINMAX(uint64_t, u64)

/* ----------------------------------------------------------------- pixels */

int bpc__op_over(const void *in, void *inout, size_t count, int in_left, void *user)
{
  (void)user;
  bpc__op_over_px(in, inout, count, in_left);
  return 0;
}

int bpc__op_zbuffer(const void *in, void *inout, size_t count, int in_left, void *user)
{
  (void)in_left;
  (void)user;
  bpc__op_zbuffer_n(in, inout, count);
  return 0;
}

/* ----------------------------------------------------------------- lookup */

enum { K_F32, K_F64, K_I32, K_U32, K_I64, K_U64, K_N };

/* The number kind of an MPI type, or -1. */
static int elem_kind(MPI_Datatype t)
{
  if (t == MPI_FLOAT)
    return K_F32;
  if (t == MPI_DOUBLE)
    return K_F64;
  if (t == MPI_INT32_T || (t == MPI_INT && sizeof(int) == 4))
    return K_I32;
  if (t == MPI_UINT32_T || (t == MPI_UNSIGNED && sizeof(unsigned) == 4))
    return K_U32;
  if (t == MPI_INT64_T || (t == MPI_LONG_LONG && sizeof(long long) == 8) ||
      (t == MPI_LONG && sizeof(long) == 8))
    return K_I64;
  if (t == MPI_UINT64_T || (t == MPI_UNSIGNED_LONG_LONG && sizeof(unsigned long long) == 8) ||
      (t == MPI_UNSIGNED_LONG && sizeof(unsigned long) == 8))
    return K_U64;
  if (t == MPI_LONG && sizeof(long) == 4)
    return K_I32;
  if (t == MPI_UNSIGNED_LONG && sizeof(unsigned long) == 4)
    return K_U32;
  return -1;
}

int bpc_op_builtin(const char *name, MPI_Datatype elem, bpc_op_t *op)
{
  static const struct {
    const char *name;
    bpc_op_fn fn[K_N];
  } arith[] = {
      {"sum", {op_sum_f32, op_sum_f64, op_sum_u32, op_sum_u32, op_sum_u64, op_sum_u64}},
      {"prod", {op_prod_f32, op_prod_f64, op_prod_u32, op_prod_u32, op_prod_u64, op_prod_u64}},
      {"min", {op_min_f32, op_min_f64, op_min_i32, op_min_u32, op_min_i64, op_min_u64}},
      {"max", {op_max_f32, op_max_f64, op_max_i32, op_max_u32, op_max_i64, op_max_u64}},
  };
  if (name == NULL || op == NULL)
    return BPC_ENULL;
  memset(op, 0, sizeof *op);
  const int kind = elem_kind(elem);
  for (size_t i = 0; i < sizeof arith / sizeof arith[0]; i++)
    if (strcasecmp(name, arith[i].name) == 0) {
      if (kind < 0)
        return BPC_ETYPE;
      op->fn = arith[i].fn[kind];
      op->commutative = 1;
      return BPC_OK;
    }
  const int over = strcasecmp(name, "over") == 0;
  if (over || strcasecmp(name, "zbuffer") == 0) {
    if (kind != K_F32)
      return BPC_ETYPE;
    op->fn = over ? bpc__op_over : bpc__op_zbuffer;
    op->commutative = !over;
    return BPC_OK;
  }
  return BPC_EINVAL;
}
