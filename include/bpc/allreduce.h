/*
 * bpc/allreduce.h - all-reduce over blocks: every block ends with the
 * reduction of all blocks' items.
 *
 * Blocks sit at positions 0..n-1 (position p holds gid order[p], or gid p
 * without an order). Every block ends with items[order[0]] o
 * items[order[1]] o ... o items[order[n-1]] under a bpc_op_t (bpc/op.h),
 * associated as the algorithm's schedule does, so the operator need not
 * be commutative; every block gets the same bits.
 *
 * Items, in the order of bpc_assign_local (ascending gids):
 *  - contiguous types: bpc_buf_t items[nlocal], every item (over all
 *    ranks) of the same count; the result is written into data in place.
 *  - custom types: void *items[nlocal]. The operator combines whole items
 *    in place (count 1), so no item may be NULL. A block whose item was
 *    combined into keeps it; a block that receives the result instead gets
 *    a new item (the type's unpack) and its old one is destroyed (the
 *    type's destroy): read items[] after the call. "swap-allgather" takes
 *    contiguous types only.
 */
#ifndef BPC_ALLREDUCE_H
#define BPC_ALLREDUCE_H

#include "bpc/core.h"
#include "bpc/datatype.h"
#include "bpc/decomp.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Algorithms (the ids of the table: bpc_algorithms("allreduce")). */
typedef enum bpc_allreduce_algorithm {
  BPC_ALLREDUCE_AUTO = 0,
  BPC_ALLREDUCE_DOUBLING = 1,      /* recursive doubling: log2 m rounds of whole items (+2) */
  BPC_ALLREDUCE_REDUCE_BCAST = 2,  /* binomial reduce to position 0, then binomial broadcast */
  BPC_ALLREDUCE_SWAP_ALLGATHER = 3 /* reduce-scatter by halves, then allgather (contiguous) */
} bpc_allreduce_algorithm_t;
/* (m: the largest power of two <= n blocks; +2: when n is not a power of
 * two, the first n - m pairs of positions fold first and get the result
 * back last) */

typedef struct bpc_allreduce_params {
  /* A name of bpc_algorithms("allreduce") ("doubling", "reduce-bcast",
   * "swap-allgather"; any case) or "auto" (NULL = "auto"). "auto" uses
   * BPC_ALLREDUCE_ALGORITHM from the environment if set, else the cost
   * rule of doc/allreduce.md (item size and block count). The same on
   * every rank. */
  const char *algorithm;
  /* Order of the blocks: order[pos] = gid, a permutation (the same on every
   * rank); NULL = gid order. */
  const int *order;
  /* OpenMP threads for the operator on large contiguous items (0 = OpenMP
   * default, 1 = none): a call is cut into element ranges. */
  int nthreads;
} bpc_allreduce_params_t;

/* Parameters with every field at its default ("auto", gid order, OpenMP
 * default threads). */
bpc_allreduce_params_t bpc_allreduce_params_default(void);

/* What a call ran (filled by bpc_allreduce). */
typedef struct bpc_allreduce_info {
  bpc_allreduce_algorithm_t algorithm; /* never AUTO */
  char name[16];
  bpc_algo_source_t source; /* argument, BPC_ALLREDUCE_ALGORITHM or built-in */
  int rounds;               /* message rounds of the schedule */
} bpc_allreduce_info_t;

/*
 * bpc_allreduce: every block's item becomes the reduction of all blocks'
 * items (see the top of this file). Collective over ctx: every rank calls
 * it (also ranks without blocks) with the same assignment, type, item
 * count (contiguous), operator commutativity and params (but nthreads).
 * Blocks of one process exchange without MPI. The operator runs on the
 * calling thread, or on nthreads threads for one large contiguous item.
 * Ownership: items stay the caller's (custom types: see the top);
 * params->order is read during the call only. info may be NULL.
 * Errors (the same code on every rank, with the failing rank's message;
 * nothing is sent before the arguments agree):
 *  BPC_ENULL (ctx, assign, type, op or op->fn NULL; items NULL on a rank
 *  with blocks; a contiguous item with data NULL and count > 0; a custom
 *  item NULL), BPC_EINVAL (an assignment of another context, contiguous
 *  items of different counts on one rank, nthreads < 0), BPC_ETYPE (the
 *  type fails bpc_type_check; a custom type with "swap-allgather"),
 *  BPC_EALGO (unknown algorithm, also in BPC_ALLREDUCE_ALGORITHM),
 *  BPC_EPERM (order not a permutation), BPC_EMISMATCH (block count,
 *  assignment, order, algorithm, type, item count or commutativity
 *  differ between ranks), BPC_ECALLBACK (the operator or a type callback
 *  failed on some rank; the schedule is still completed), BPC_ETRUNC (a
 *  message of the wrong size), BPC_ENOMEM, BPC_EMPI.
 */
int bpc_allreduce(bpc_ctx_t *ctx, const bpc_assign_t *assign, const bpc_type_t *type, void *items,
                  const bpc_op_t *op, const bpc_allreduce_params_t *params,
                  bpc_allreduce_info_t *info);

#ifdef __cplusplus
}
#endif
#endif /* BPC_ALLREDUCE_H */
