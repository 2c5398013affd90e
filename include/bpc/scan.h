/*
 * bpc/scan.h - distributed prefix scan of per-block sequences with an
 * expensive, order-sensitive operator. See doc/scan.md.
 *
 * Blocks sit at positions 0..n-1 (position p holds gid order[p], or gid p
 * without an order). Each block holds a sequence of items (count >= 0);
 * the scan runs over the concatenation of the sequences in position order.
 * Strategies: scan-then-propagate (local inclusive scan of each block's
 * sequence, a global exclusive scan of the block totals over the blocks
 * with the chosen algorithm, then the prefix is applied to every item of
 * the block), reduce-then-scan, the inclusive-global shortcut and the
 * successor round (deterministic successor probe). The association of every result depends only on the block
 * count, the order, the sequences and the algorithm, never on the process
 * or thread count: results are bit-identical across process counts. The
 * one exception is the global algorithm "mpi" (MPI_Exscan over the ranks),
 * whose association follows the ranks and the MPI library's algorithm.
 */
#ifndef BPC_SCAN_H
#define BPC_SCAN_H

#include <stddef.h>
#include <stdint.h>

#include "bpc/core.h"
#include "bpc/datatype.h"
#include "bpc/decomp.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * The operator: combine `left` (the earlier items) and `right` (the later
 * ones) into a new result. It is always called with the earlier operand
 * as `left`; it must be associative (up to rounding: different algorithms
 * associate differently) and need not be commutative.
 *  - contiguous types: left and right point to one element (elem_size
 *    bytes) each; `result` points to elem_size bytes to write (never
 *    overlapping left or right).
 *  - custom types: left and right are items; `result` is a void ** slot:
 *    store a new item there (the engine owns it and frees it with the
 *    type's destroy, or hands it to the caller as an output). Never modify
 *    left or right.
 * Threads: with more than one thread, calls for different blocks run
 * concurrently: the operator must be thread-safe.
 * Return 0, or nonzero to fail the call (BPC_ECALLBACK on every rank).
 */
typedef int (*bpc_scan_fn)(const void *left, const void *right, void *result, void *user);

typedef struct bpc_scan_op {
  bpc_scan_fn fn; /* the operator, or NULL for binary below (not both) */
  /* Nonzero: the operator is commutative. Informational (no algorithm
   * relies on it); agreed across ranks. */
  int commutative;
  /* Optional identity: contiguous types: elem_size bytes; custom: an item.
   * Used only to fill the exclusive result of the very first item (never
   * passed to the operator). NULL: that result is absent (see
   * bpc_scan). */
  const void *identity;
  void *user; /* passed to fn */
  /* With fn NULL: the binary operator of bpc/op.h (the one merge, swap and
   * compositing take, e.g. bpc_op_builtin's "sum"), called as
   * binary.fn(left, result, 1, 1, binary.user) on a copy of right: result
   * = left o right. The copy is a memcpy of one element for contiguous
   * types, and the type's pack + unpack for custom ones (the fn form
   * above avoids it). commutative is then binary.commutative. */
  bpc_op_t binary;
} bpc_scan_op_t;

typedef enum bpc_scan_mode { BPC_SCAN_INCLUSIVE = 0, BPC_SCAN_EXCLUSIVE = 1 } bpc_scan_mode_t;

/* Global-stage algorithms (ids of bpc_algorithms("scan")). */
typedef enum bpc_scan_algorithm {
  BPC_SCAN_AUTO = 0,
  BPC_SCAN_SERIAL = 1,      /* chain: P-1 rounds */
  BPC_SCAN_KOGGE_STONE = 2, /* shift form: round r receives from p - 2^r */
  BPC_SCAN_SKLANSKY = 3,    /* divide and conquer, fan-out */
  BPC_SCAN_BRENT_KUNG = 4,  /* up-sweep + inclusive down-sweep */
  BPC_SCAN_BLELLOCH = 5,    /* up-sweep + exclusive down-sweep */
  /* MPI_Exscan over the ranks with a user MPI_Op (contiguous types, blocks
   * at rank-ordered runs of positions; not bit-identical across process
   * counts; never chosen by "auto") */
  BPC_SCAN_MPI = 6
} bpc_scan_algorithm_t;

/* Distributed strategies (doc/scan.md). */
typedef enum bpc_scan_strategy {
  /* thesis Algorithm 7: local scan, global exclusive scan of the block
   * totals, propagate the prefix into every item (the default) */
  BPC_SCAN_SCAN_THEN_PROPAGATE = 0,
  /* thesis Algorithm 8: local reduction (no values kept), global exclusive
   * scan, then a sequential scan of each block starting from its prefix
   * (one more call per block, less memory) */
  BPC_SCAN_REDUCE_THEN_SCAN = 1,
  /* thesis Algorithm 9: scan-then-propagate, but an inclusive scan keeps
   * the global stage's inclusive prefix as the block's last result (one
   * call less per block). Same as scan-then-propagate for exclusive scans
   * and for Blelloch (whose global stage is exclusive). */
  BPC_SCAN_INCLUSIVE_GLOBAL = 2,
  /* thesis Algorithm 10 in a deterministic form: for inclusive scans, after
   * the global stage every block sends its exclusive prefix to the block at
   * the previous position, which always waits for it and takes it as the
   * result of its last item (one call less per block but the last, for
   * every algorithm, Blelloch included; one more message round). The
   * thesis takes the value only if it has already arrived, which would
   * make the association depend on message timing; bpc never races.
   * Same as scan-then-propagate for exclusive scans. */
  BPC_SCAN_SUCCESSOR = 3,
  /* Chosen per call (doc/scan.md "Choosing the strategy"): exclusive
   * scans scan-then-propagate; inclusive scans inclusive-global, or, when
   * the global algorithm is Blelloch (where inclusive-global saves
   * nothing) and the operator costs more than a message latency
   * (op_seconds, 0 = 1 ms, against BPC_SCAN_ALPHA), successor. Never
   * reduce-then-scan (it saves memory, not time). info.strategy says what
   * ran. The association, and so the rounding of an only approximately
   * associative operator, depends on the choice: name a strategy to fix
   * it. */
  BPC_SCAN_STRATEGY_AUTO = 4
} bpc_scan_strategy_t;

typedef struct bpc_scan_params {
  /* A name of bpc_algorithms("scan") ("serial", "kogge-stone", "sklansky",
   * "brent-kung", "blelloch", "mpi"; any case) or NULL / "auto": then
   * BPC_SCAN_ALGORITHM from the environment, else the cost model
   * (doc/scan.md, op_seconds below). Must be the same on every rank. */
  const char *algorithm;
  /* OpenMP threads for the operator work (local scans, global combines,
   * propagations; overlapped with the messages, doc/scan.md "Overlap";
   * BPC_SCAN_OVERLAP=0 in the environment: lock-step rounds, the same
   * results): 0 = OpenMP default, 1 = none. May differ between ranks. */
  int nthreads;
  /* Optional order: order[p] is the gid at position p (a permutation of
   * 0..n-1, the same on every rank). NULL: gid order. */
  const int *order;
  /* The distributed strategy (default scan-then-propagate; or
   * BPC_SCAN_STRATEGY_AUTO). Must be the same on every rank. */
  bpc_scan_strategy_t strategy;
  /* For "auto": the operator's cost in seconds per call (measured by the
   * caller), 0 = unknown (taken as 1 ms: an expensive operator). The model
   * (doc/scan.md) weighs it against the message latency alpha
   * (BPC_SCAN_ALPHA, seconds, default 5e-6). Must be the same on every
   * rank when the algorithm is "auto" or the strategy
   * BPC_SCAN_STRATEGY_AUTO. */
  double op_seconds;
} bpc_scan_params_t;

/* Parameters at their defaults (what params NULL means). */
bpc_scan_params_t bpc_scan_params_default(void);

/* What a call ran (filled on success). A rank may pass info NULL while
 * others pass one: the totals are reduced over every rank when any rank
 * asks for them (two small reductions), and not at all when none does. */
typedef struct bpc_scan_info {
  bpc_scan_algorithm_t algorithm; /* never AUTO */
  char name[16];
  bpc_algo_source_t source;
  /* Exclusive scans without identity: the gid and index of the one item
   * whose result is absent (the first item of the first non-empty block
   * in position order); -1 / -1 if there is none (inclusive, an identity,
   * or no items at all). */
  int absent_gid;
  long long absent_index;
  long long ops_local;  /* operator calls on this rank */
  long long ops_total;  /* operator calls on all ranks */
  long long ops_global; /* of which in the global stage (all ranks) */
  long long depth;      /* operator calls on the longest dependency chain of
                         * any result (max over ranks) */
  bpc_scan_strategy_t strategy; /* the strategy that ran (never AUTO) */
} bpc_scan_info_t;

/*
 * bpc_scan: inclusive or exclusive scan of the local blocks' sequences.
 * `in` and `out` have one entry per local block, in the order of
 * bpc_assign_local (ascending gids):
 *  - contiguous types: bpc_buf_t in[nlocal] (the sequence: count elements
 *    at data) and bpc_buf_t out[nlocal] (out[l].data has room for
 *    in[l].count elements; out[l].count is set; it may be in[l].data:
 *    results are written only after the scan). An absent result leaves
 *    its element unchanged.
 *  - custom types: const bpc_buf_t in[nlocal] whose data is a void *[count]
 *    array of items, and out[l].data a void *[count] array of slots that
 *    receive new items (the caller owns them: bpc_type_item_destroy). An absent
 *    result is a NULL slot. After a failure the slots hold new items or
 *    NULL (destroy the non-NULL ones); contiguous outputs are undefined.
 * Exclusive results: item i gets the combination of every earlier item;
 * the first item of all gets the identity (a copy) or, without identity,
 * nothing: info->absent_gid / absent_index name it.
 * Collective over ctx, same type, mode, op flags and params (but nthreads)
 * on every rank. Inputs stay the caller's and are never modified (unless
 * out aliases them).
 * Errors (the same on every rank): BPC_ENULL (ctx, assign, type or op
 * NULL, op->fn and op->binary.fn both NULL; in or out NULL on a rank with
 * blocks; data NULL with count > 0), BPC_EINVAL (assignment of another
 * context, op->fn and op->binary.fn both set, bad mode or strategy,
 * nthreads < 0),
 * BPC_ETYPE (also: a custom type with "mpi"), BPC_EALGO (unknown
 * algorithm), BPC_EINVAL ("mpi" when some rank's blocks are not one run of
 * positions or the runs do not ascend with rank), BPC_EPERM (order not a
 * permutation), BPC_EMISMATCH (mode, strategy, algorithm, order, identity presence, op_seconds,
 * op->commutative, type kind or element size differ between ranks),
 * BPC_ECALLBACK (the operator or a type callback failed on some rank: the
 * schedule is finished everywhere without further operator calls),
 * BPC_ENOMEM, BPC_EMPI.
 */
int bpc_scan(bpc_ctx_t *ctx, const bpc_assign_t *assign, const bpc_type_t *type,
             bpc_scan_mode_t mode, const bpc_buf_t *in, bpc_buf_t *out, const bpc_scan_op_t *op,
             const bpc_scan_params_t *params, bpc_scan_info_t *info);

#ifdef __cplusplus
}
#endif
#endif /* BPC_SCAN_H */
