/*
 * bpc/op.h - the binary operator every reducing engine takes: swap-reduce
 * (bpc_swap), merge-reduce (bpc_merge_op_t.binary), the prefix scan
 * (bpc_scan_op_t.binary) and compositing (bpc_composite_params_t.op). One
 * "over" or matrix product is written once and given to all of them.
 *
 * Order of the operands. The arguments come in MPI_User_function's order
 * (in, inout, count). MPI always folds the earlier operand into the later
 * one (inout = in o inout); bpc also folds later pieces into a block's own
 * data (a swap receives pieces from earlier and later positions), so the
 * operator is told which side `in` is on:
 *   in_left != 0:  inout = in o inout   (in is the earlier operand: MPI's case)
 *   in_left == 0:  inout = inout o in   (in is the later operand)
 * A commutative operator may ignore in_left.
 *
 * What `count` and the pointers mean depends on where the operator runs:
 *  - contiguous types (swap, merge, scan): count elements of the type's
 *    elem_size bytes each (count >= 1; scan calls it with count 1);
 *  - custom types (merge, scan): count is 1 and in / inout are items;
 *  - compositing: count pixels of 4 floats (rgba) or, for images with
 *    depth, 5 floats (rgba then depth).
 * `in` is read in place (from a receive buffer or another block's memory):
 * never modify it or keep the pointer after returning.
 *
 * Contract: "o" is associative (up to rounding: different algorithms
 * associate differently) and acts element by element (element e of the
 * result depends only on element e of both operands), so any range may be
 * reduced on its own and large ranges may be cut across OpenMP threads; it
 * must be thread-safe for disjoint ranges. Return 0, or a nonzero value to
 * fail the call (BPC_ECALLBACK on every rank, with the value in
 * bpc_last_error() on the rank where it happened).
 */
#ifndef BPC_OP_H
#define BPC_OP_H

#include <stddef.h>

#include "bpc/core.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef int (*bpc_op_fn)(const void *in, void *inout, size_t count, int in_left, void *user);

typedef struct bpc_op {
  bpc_op_fn fn;
  /* Nonzero: a o b == b o a, operands may be combined in any order. Zero:
   * engines only ever combine operands that are adjacent in the order. */
  int commutative;
  void *user; /* passed to fn */
} bpc_op_t;

/*
 * bpc_op_builtin: a built-in operator by name, for elements of MPI type
 * `elem`:
 *  - "sum", "prod", "min", "max": element-wise arithmetic (commutative) on
 *    MPI_FLOAT, MPI_DOUBLE, MPI_INT, MPI_UNSIGNED, MPI_LONG, MPI_UNSIGNED_LONG,
 *    MPI_LONG_LONG, MPI_UNSIGNED_LONG_LONG, MPI_INT32_T, MPI_UINT32_T,
 *    MPI_INT64_T and MPI_UINT64_T (integers wrap as unsigned arithmetic
 *    does; min and max of floats return the first operand when the pair is
 *    unordered, i.e. a NaN, and of -0 and +0: they commute only for data
 *    without NaNs and signed zeros);
 *  - "over" (elem MPI_FLOAT; an element is 4 floats, premultiplied rgba):
 *    front + (1 - front.alpha) * back per channel, `in` in front when
 *    in_left is set; not commutative;
 *  - "zbuffer" (elem MPI_FLOAT; an element is 5 floats, rgba then depth):
 *    the smaller depth wins, ties go to the larger rgba bit pattern, so it
 *    commutes exactly (for depths that are not NaN).
 * Compositing knows "over" and "zbuffer" and applies them to its pixel
 * format (with depth, "over" keeps the depth of the nearest non-empty
 * pixel; see bpc/composite.h); elsewhere they act on the elements above.
 * Names are case-insensitive. The operator's user pointer is NULL.
 * Errors: BPC_ENULL (name or op NULL), BPC_EINVAL (unknown name; *op is
 * cleared), BPC_ETYPE (a name not defined for elem; *op is cleared).
 */
int bpc_op_builtin(const char *name, MPI_Datatype elem, bpc_op_t *op);

#ifdef __cplusplus
}
#endif
#endif /* BPC_OP_H */
