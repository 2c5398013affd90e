/*
 * tests/common/swap_ops.h - operators, input data and serial references for
 * the swap-reduce and tree-reduction suites (header-only, static).
 *
 * Operators (all element-wise, associative):
 *  - SO_SUM:  float sum; inputs are small integers, so every association
 *             gives the exact same float (commutative).
 *  - SO_OVER: premultiplied RGBA float "over" (4 floats per element);
 *             front o back = front + (1 - front.a) * back. Not commutative;
 *             rounding depends on the association, so compare with a
 *             tolerance (a wrong order is off by far more).
 *  - SO_MAT:  2x2 matrices of uint32 multiplied modulo 2^32 (4 words per
 *             element): exact and not commutative, so a wrong order fails
 *             bit-exact comparison.
 * The serial reference folds positions 0..n-1 of the order left to right.
 */
#ifndef BPC_TESTS_SWAP_OPS_H
#define BPC_TESTS_SWAP_OPS_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bpc.h"

enum { SO_SUM = 0, SO_OVER = 1, SO_MAT = 2, SO_NOPS = 3 };

static const char *const so_names[SO_NOPS] = {"sum", "over", "mat2"};

/* The swap schedules, from the registry (bpc_algorithms("swap")): their
 * names into names[0..], at most cap - 1, followed by "auto"; returns the
 * number of schedules (without "auto"). Tests loop over these instead of
 * listing names, so a new schedule is tested by adding its row. */
static inline int so_algos(const char **names, int cap)
{
  bpc_algo_info_t t[16];
  int n = 0, m = 0;
  if (bpc_algorithms("swap", t, 16, &n) != BPC_OK)
    n = 0;
  for (int i = 0; i < n && m < cap - 1; i++)
    names[m++] = t[i].name;
  if (m < cap)
    names[m] = "auto";
  return m;
}

static inline size_t so_elem_size(int op) { return op == SO_SUM ? sizeof(float) : 16; }

static inline uint32_t so_hash(uint32_t a, uint32_t b, uint32_t c)
{
  uint64_t x = ((uint64_t)a * 0x9E3779B1u) ^ ((uint64_t)b << 21) ^ ((uint64_t)c * 0x85EBCA77u);
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  x ^= x >> 33;
  return (uint32_t)x;
}

/* The operator's identity element into out. */
static inline void so_identity(int op, void *out)
{
  if (op == SO_MAT) {
    const uint32_t one[4] = {1u, 0u, 0u, 1u};
    memcpy(out, one, sizeof one);
  } else {
    memset(out, 0, op == SO_SUM ? 4 : 16);
  }
}

/* Sparse inputs (tests/common/swap_sparse.h): nonzero makes three of four
 * elements of every input the identity, as empty pixels of an image. */
static int so_holes __attribute__((unused)) = 0;

/* Element e of block gid's input, written to out (elem_size bytes). */
static inline void so_input(int op, int gid, size_t e, void *out)
{
  uint32_t h = so_hash((uint32_t)gid, (uint32_t)e, (uint32_t)(e >> 32) + 17u);
  if (so_holes && so_hash(h, 11u, 7u) % 4u != 0u) {
    so_identity(op, out);
    return;
  }
  if (op == SO_SUM) {
    float v = (float)(h % 16u);
    memcpy(out, &v, sizeof v);
  } else if (op == SO_OVER) {
    float px[4];
    float a = 0.05f + 0.9f * (float)(h % 1000u) / 1000.0f;
    px[3] = a;
    for (int c = 0; c < 3; c++)
      px[c] = a * (float)(so_hash(h, (uint32_t)c, 3u) % 1000u) / 1000.0f;
    memcpy(out, px, sizeof px);
  } else {
    uint32_t m[4];
    for (int c = 0; c < 4; c++)
      m[c] = so_hash(h, (uint32_t)c, 5u) | 1u;
    memcpy(out, m, sizeof m);
  }
}

static inline void so_fill(int op, int gid, void *buf, size_t count)
{
  const size_t es = so_elem_size(op);
  for (size_t e = 0; e < count; e++)
    so_input(op, gid, e, (char *)buf + e * es);
}

/* front o back for one element into res (res may alias either). */
static inline void so_combine1(int op, const void *front, const void *back, void *res)
{
  if (op == SO_SUM) {
    float a, b;
    memcpy(&a, front, 4);
    memcpy(&b, back, 4);
    a = a + b;
    memcpy(res, &a, 4);
  } else if (op == SO_OVER) {
    float f[4], b[4], r[4];
    memcpy(f, front, 16);
    memcpy(b, back, 16);
    const float t = 1.0f - f[3];
    for (int c = 0; c < 4; c++)
      r[c] = f[c] + t * b[c];
    memcpy(res, r, 16);
  } else {
    uint32_t x[4], y[4], r[4];
    memcpy(x, front, 16);
    memcpy(y, back, 16);
    r[0] = x[0] * y[0] + x[1] * y[2];
    r[1] = x[0] * y[1] + x[1] * y[3];
    r[2] = x[2] * y[0] + x[3] * y[2];
    r[3] = x[2] * y[1] + x[3] * y[3];
    memcpy(res, r, 16);
  }
}

/* The bpc operator; user points at an int holding the op id. */
static inline int so_apply(int op, const void *in, void *inout, size_t count, int in_first)
{
  const size_t es = so_elem_size(op);
  char *io = inout;
  const char *x = in;
  if (op == SO_OVER) {
    float *o = inout;
    const float *v = in;
    if (in_first)
      for (size_t e = 0; e < count; e++) {
        const float t = 1.0f - v[4 * e + 3];
        for (int c = 0; c < 4; c++)
          o[4 * e + c] = v[4 * e + c] + t * o[4 * e + c];
      }
    else
      for (size_t e = 0; e < count; e++) {
        const float t = 1.0f - o[4 * e + 3];
        for (int c = 0; c < 4; c++)
          o[4 * e + c] = o[4 * e + c] + t * v[4 * e + c];
      }
    return 0;
  }
  for (size_t e = 0; e < count; e++) {
    if (in_first)
      so_combine1(op, x + e * es, io + e * es, io + e * es);
    else
      so_combine1(op, io + e * es, x + e * es, io + e * es);
  }
  return 0;
}

static inline int so_op_sum(const void *in, void *io, size_t n, int f, void *u)
{
  (void)u;
  return so_apply(SO_SUM, in, io, n, f);
}
static inline int so_op_over(const void *in, void *io, size_t n, int f, void *u)
{
  (void)u;
  return so_apply(SO_OVER, in, io, n, f);
}
static inline int so_op_mat(const void *in, void *io, size_t n, int f, void *u)
{
  (void)u;
  return so_apply(SO_MAT, in, io, n, f);
}

static inline bpc_op_t so_op(int op)
{
  bpc_op_t o;
  memset(&o, 0, sizeof o);
  o.fn = op == SO_SUM ? so_op_sum : op == SO_OVER ? so_op_over : so_op_mat;
  o.commutative = op == SO_SUM;
  o.user = NULL;
  return o;
}

static inline MPI_Datatype so_mpi_type(int op)
{
  return op == SO_SUM ? MPI_FLOAT : MPI_BYTE;
}

/* Reference element e of the reduction over positions [p0, p1) of order. */
static inline void so_reference(int op, const int *order, int p0, int p1, size_t e, void *out)
{
  unsigned char acc[16], x[16];
  so_input(op, order[p0], e, acc);
  for (int p = p0 + 1; p < p1; p++) {
    so_input(op, order[p], e, x);
    so_combine1(op, acc, x, acc);
  }
  memcpy(out, acc, so_elem_size(op));
}

/* Compare one element: exact for SUM and MAT, relative tolerance for OVER.
 * Returns 1 if equal. */
static inline int so_equal(int op, const void *a, const void *b)
{
  if (op != SO_OVER)
    return memcmp(a, b, so_elem_size(op)) == 0;
  float x[4], y[4];
  memcpy(x, a, 16);
  memcpy(y, b, 16);
  for (int c = 0; c < 4; c++) {
    const float d = x[c] > y[c] ? x[c] - y[c] : y[c] - x[c];
    const float m = y[c] > 0 ? y[c] : -y[c];
    if (!(d <= 1e-4f * (1.0f + m)))
      return 0;
  }
  return 1;
}

/* Simple deterministic shuffle (same on every rank for the same seed). */
static inline void so_shuffle(int *v, int n, uint32_t seed)
{
  for (int i = n - 1; i > 0; i--) {
    int j = (int)(so_hash(seed, (uint32_t)i, 99u) % (uint32_t)(i + 1));
    int t = v[i];
    v[i] = v[j];
    v[j] = t;
  }
}

/* Orders: 0 identity, 1 reversed, 2 random (seed). */
static inline void so_order(int kind, int n, uint32_t seed, int *order)
{
  for (int i = 0; i < n; i++)
    order[i] = kind == 1 ? n - 1 - i : i;
  if (kind == 2)
    so_shuffle(order, n, seed);
}

#endif /* BPC_TESTS_SWAP_OPS_H */
