/*
 * bpc/merge.h - merge-reduce: combine one item per block over all blocks of
 * an assignment, in rounds (DIY, Algorithm 1).
 *
 * Round r forms groups of k[r] blocks (the k-vector; its product is the
 * number of blocks). In each group one block, the root, receives the items of
 * the others and the user's merge callback combines them into the root's
 * item; the other blocks of the group are done. After all rounds one root
 * (gid order[0], gid 0 by default) holds the merge of every item. Running
 * fewer rounds is a partial reduction: several roots remain, each holding
 * the merge of its group of blocks (a contiguous run of positions with the
 * default algorithm). E.g. 16 blocks, k = {4, 2, 2}, 2 rounds: roots 0 and 8,
 * root 0 holding the merge of gids 0..7 and root 8 that of 8..15.
 *
 * Order. Blocks sit at positions 0..n-1 (position p holds gid order[p], or
 * gid p without an order). The callback receives a group's items by
 * increasing position; with distance doubling (the default) the items of a
 * group are the merges of consecutive runs of positions, so a merge that is
 * associative but not commutative (matrix products, "over" compositing) is
 * correct: the root's result after the call is items[0] op items[1] op ...
 * in position order. Distance halving forms strided groups; it is allowed
 * only for merges declared commutative (op->commutative).
 *
 * Items. `items` points to one item per local block, in the order of
 * bpc_assign_local (ascending gids):
 *  - contiguous types: an array of bpc_buf_t (bpc_buf_t items[nlocal]);
 *  - custom types: an array of the user's pointers (void *items[nlocal]).
 * After the call, each root's entry holds its merged item. A block that
 * was a root in the first rounds and then sent its item on holds the
 * partial merge it sent (of the blocks it had absorbed); a block that sent
 * in round 0 (a leaf) holds its own item, unchanged. The engine never
 * modifies an item after the block has sent it.
 */
#ifndef BPC_MERGE_H
#define BPC_MERGE_H

#include <stddef.h>

#include "bpc/core.h"
#include "bpc/datatype.h"
#include "bpc/decomp.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------- callback */

/*
 * One merge: the items of a group, by increasing position, and which of
 * them is the root's own item.
 *
 * Ownership and what the callback may do:
 *  - contiguous types: every items[i] is a bpc_buf_t *. items[root] is the
 *    root's buffer and is the output: write the merged result into
 *    items[root]->data. The other items are views of received data (in the
 *    engine's pooled receive buffers, or straight in the sending block's
 *    memory when it lives on the same process): read them in place and do
 *    not modify them; they are gone when the callback returns, so keep no
 *    pointer into them. Without segments (offset == 0 and
 *    nsegments == 1) the callback may also change items[root]->data and
 *    ->count (e.g. point it at a larger buffer the user owns); the changed
 *    bpc_buf_t is what the root's entry holds afterwards and what is sent
 *    in later rounds. With segments it must write in place.
 *  - custom types: items[root] is the root's own item (the user's). Leave
 *    the merged item in items[root]: modified in place, or a new item that
 *    replaces it (the callback then disposes of the old one as it likes);
 *    the engine stores items[root] back in the user's array. The other
 *    items were unpacked by the type's unpack callback and belong to the
 *    engine, which destroys them (type destroy) after the callback returns,
 *    except those the callback takes: set items[i] = NULL to keep item i
 *    (it is then the user's).
 *
 * Segments (op->elementwise with a contiguous type): the engine may
 * call the callback several times per group, each time on the same element
 * range [offset, offset + count) of every item (views of that range; all
 * items have the same count). Element e of a view is element offset + e of
 * the whole item.
 *
 * Threads: with more than one OpenMP thread, merges of different groups (or
 * segments) may run at the same time; the callback (and the type's unpack
 * and destroy) must then be thread-safe. Calls for one group and segment
 * are never concurrent with each other.
 *
 * Return 0 on success; any other value stops the merging: the schedule is
 * finished without further callbacks and bpc_merge returns BPC_ECALLBACK on
 * every rank, with the value in bpc_last_error.
 */
typedef struct bpc_merge_group {
  int round;        /* round of this merge (0-based) */
  int nitems;       /* items in the group (k of the round) */
  int root;         /* index in items[] of the root's own item (0 with the built-in algorithms) */
  const int *gids;  /* gids[i]: the block whose item is items[i] (gids[root] is the root) */
  void **items;     /* the items, by increasing position (see above) */
  size_t offset;    /* element offset of a segment; 0 for whole items */
  int segment;      /* index of the segment (0 for whole items) */
  int nsegments;    /* segments per item (1 for whole items) */
} bpc_merge_group_t;

typedef int (*bpc_merge_fn)(bpc_merge_group_t *group, void *user);

/* ---------------------------------------------------------------- call */

/* The merge operator: the callback and what it promises, or a binary
 * operator the engine folds each group with. */
typedef struct bpc_merge_op {
  /* The merge callback: the general form (any number of items, items may
   * be replaced or kept). Give it or binary.fn, not both. */
  bpc_merge_fn fn;
  /* Nonzero: the merge is commutative (and associative): any grouping and
   * order give the same result. Allows distance halving. */
  int commutative;
  /* Nonzero (contiguous types only): element i of the result depends only
   * on element i of the inputs (sums, minima, pixel blends), and every item
   * has the same count. Lets the engine send large items in segments and
   * merge each segment as it arrives (transfer and merge overlap, also
   * across rounds), and split a merge over OpenMP threads. Costs one small
   * collective per call (the counts are checked on every rank) unless
   * params->count gives the count. */
  int elementwise;
  void *user; /* passed to the callback */
  /* With fn NULL: the binary operator of bpc/op.h (e.g. bpc_op_builtin's
   * "sum" or "over", the same one bpc_swap and compositing take). The
   * engine folds each group into the root's item in position order
   * (items[0] o items[1] o ...; in_left says the side): contiguous types on
   * `count` elements, with elementwise implied (every item must have the
   * same count); custom types on whole items (count 1, the root's item
   * modified in place). commutative and elementwise above are then taken
   * from binary.commutative and the type. */
  bpc_op_t binary;
} bpc_merge_op_t;

typedef struct bpc_merge_params {
  /* k-vector: nk entries, each >= 2, product == number of blocks. NULL (and
   * nk 0) chooses one automatically (bpc_merge_kvec_auto). */
  const int *k;
  int nk;
  /* Rounds to run: 0 = all (a full reduction); 1..nrounds-1 a partial one. */
  int rounds;
  /* Optional order of the blocks: order[p] is the gid at position p (a
   * permutation of 0..n-1, the same on every rank; copied). NULL: gid order. */
  const int *order;
  /* A name of bpc_algorithms("merge", ...) ("doubling", "halving"; any
   * case), or NULL / "auto": then the environment variable
   * BPC_MERGE_ALGORITHM, if set, names it, else the built-in rule chooses
   * (halving for full commutative reductions that cross processes less
   * with it, else doubling). */
  const char *algorithm;
  /* Segment size in bytes for element-wise merges of contiguous items
   * (rounded down to whole elements, at least one); 0 = default (1 MiB,
   * or BPC_MERGE_SEGMENT_BYTES from the environment); SIZE_MAX = never split. */
  size_t segment_bytes;
  /* OpenMP threads for merges on this process; 0 = the OpenMP default,
   * 1 = no threads. Messages are always sent and received by the calling
   * thread. May differ between ranks. */
  int nthreads;
  /* Element-wise merges only: the element count of every item, when the
   * caller knows it (the same on every rank). Saves the collective that
   * otherwise checks the counts before the schedule. 0 = unknown: the
   * engine agrees on it. */
  size_t count;
} bpc_merge_params_t;

/* Parameters with every field at its default (what params NULL means):
 * algorithm "auto", every other field zero. */
bpc_merge_params_t bpc_merge_params_default(void);

typedef struct bpc_merge_result bpc_merge_result_t;

/*
 * bpc_merge: merge-reduce the items of assignment `assign` (of context
 * `ctx`) with operator `op` (see the top of this file for `items` and the
 * order; the callback contract is at bpc_merge_group_t). Collective over
 * ctx: every rank calls it with the same type, op flags and params (except
 * items, the callbacks, the user pointers and nthreads), even ranks with no
 * blocks. The
 * arguments are checked on every rank and agreed on before any message, so
 * a bad argument on some ranks fails the call on every rank. Blocks of one
 * process merge without MPI; roots of different groups on one process merge
 * in parallel (OpenMP), and a root merges as soon as its group's items are
 * there, not round by round. `params` may be NULL (defaults).
 *
 * `result` (may be NULL): on success *result says what ran (bpc_merge_info)
 * and which gids each root absorbed (bpc_merge_is_root, bpc_merge_absorbed
 * ...); free it with bpc_merge_result_destroy. NULL on failure.
 *
 * Ownership: `items` stays the caller's (see bpc_merge_group_t for what the
 * engine does with received items); params->k and params->order are copied.
 * Every pointer in op and params need only live for the call.
 *
 * Errors (the same code on every rank, with the failing rank's message):
 *  BPC_ENULL     ctx NULL (returned at once, on that rank only); assign,
 *                type or op NULL, op->fn and op->binary.fn both NULL;
 *                items NULL on a rank with blocks; a custom item NULL
 *                with op->binary;
 *                a contiguous item with data NULL and count > 0
 *  BPC_EINVAL    the assignment belongs to another context; op->fn and
 *                op->binary.fn both set; distance
 *                halving without op->commutative; op->elementwise with a
 *                custom type, with items of different counts, or with an
 *                item whose count is not params->count
 *  BPC_ETYPE     the type fails bpc_type_check
 *  BPC_EKVEC     the k-vector does not multiply to the block count (or an
 *                entry < 2): the message of the check, e.g. "k-vector 4x3
 *                multiplies to 12, but there are 16 blocks"
 *  BPC_ERANGE    rounds < 0 or beyond the full reduction
 *  BPC_EALGO     unknown algorithm name (argument or BPC_MERGE_ALGORITHM)
 *  BPC_EPERM     order is not a permutation of 0..n-1
 *  BPC_EMISMATCH valid arguments that differ between ranks (block count, k-vector,
 *                rounds, order, algorithm, op->commutative,
 *                op->elementwise, the type's kind or element size, segment
 *                bytes, params->count): the message names the field
 *  BPC_ECALLBACK the merge callback (or the type's packed_size, pack or
 *                unpack) returned nonzero on some rank: the schedule is
 *                finished everywhere, no further merge runs on that rank,
 *                and every rank returns BPC_ECALLBACK; bpc_last_error names
 *                the value, rank, gid and round
 *  BPC_ETRUNC    a received item is not a whole number of elements, or a
 *                segment has the wrong size
 *  BPC_ENOMEM, BPC_EMPI
 * Argument errors fail before any message or callback; after a later
 * failure the items of roots may hold partial merges.
 */
int bpc_merge(bpc_ctx_t *ctx, const bpc_assign_t *assign, const bpc_type_t *type, void *items,
              const bpc_merge_op_t *op, const bpc_merge_params_t *params,
              bpc_merge_result_t **result);

/* --------------------------------------------------- persistent plans */

/*
 * bpc_merge_init: prepare bpc_merge(ctx, assign, type, items, op, params)
 * as a persistent plan (bpc/core.h: bpc_plan_start, bpc_plan_free). Every
 * argument is checked and agreed on, the algorithm, k-vector and segments
 * chosen, as bpc_merge does, once; collective, with the same errors as
 * bpc_merge (and BPC_ENULL for plan NULL, BPC_ENOMEM). *plan is NULL on
 * failure.
 *
 * Each bpc_plan_start(plan) then merges the items as they are at that
 * moment: `items` (the array) is the one given here, and its entries may
 * change between starts: contiguous items' data and count (element-wise
 * merges: the count must stay the one agreed here, params->count or the
 * items' count at init), custom items' pointers. A start checks them on
 * this rank (bpc_merge's checks: data NULL with a count, a changed
 * element-wise count: BPC_ENULL / BPC_EINVAL on every rank, before any
 * message) and agrees on them and on the plan in one small reduction.
 * Everything else (assignment, type, op including fn and user, params) is
 * fixed; params->k and params->order are copied, assign, type and items
 * must outlive the plan. Nothing is allocated by a start once the
 * context's buffers have grown to the plan's messages (the first start).
 */
int bpc_merge_init(bpc_ctx_t *ctx, const bpc_assign_t *assign, const bpc_type_t *type,
                   void *items, const bpc_merge_op_t *op, const bpc_merge_params_t *params,
                   bpc_plan_t **plan);

/* What a merge plan runs: the result object bpc_merge returns (roots,
 * absorbed gids, bpc_merge_info), the same for every start. Local. Free it
 * with bpc_merge_result_destroy. Errors: BPC_ENULL, BPC_EINVAL (a plan of
 * another engine), BPC_ENOMEM. */
int bpc_merge_plan_result(const bpc_plan_t *plan, bpc_merge_result_t **result);

/* ------------------------------------------------------------ results */

/* Free a result (NULL and *r == NULL allowed); sets *r to NULL. */
int bpc_merge_result_destroy(bpc_merge_result_t **r);

/* Is `gid` a root after the call (its item holds a merge, and was not sent
 * on)? Any gid of the assignment may be asked. Errors: BPC_ENULL,
 * BPC_ERANGE (gid outside [0, n)). */
int bpc_merge_is_root(const bpc_merge_result_t *r, int gid, int *is_root);

/* The root whose item absorbed the item of `gid` (gid itself for a root). */
int bpc_merge_root_of(const bpc_merge_result_t *r, int gid, int *root);

/*
 * The gids whose items the item of root `gid` absorbed (itself included), in
 * position order (the order they were merged in, for doubling). Writes at
 * most `cap` gids to `gids` (may be NULL with cap 0) and the total to *n
 * (0 if gid is not a root); gids NULL with cap 0 asks for the count only.
 * Errors: BPC_ENULL, BPC_ERANGE (gid out of range, or cap < *n other than
 * the size query: *n is still set and the first cap gids written).
 */
int bpc_merge_absorbed(const bpc_merge_result_t *r, int gid, int *gids, int cap, int *n);

/* ---------------------------------------------------- algorithms, k */

/* The algorithms of bpc_algorithms("merge", ...). */
typedef enum bpc_merge_algorithm {
  BPC_MERGE_DOUBLING = 1, /* contiguous groups, nearest first (default) */
  BPC_MERGE_HALVING = 2   /* strided groups, farthest first (commutative merges) */
} bpc_merge_algorithm_t;

/* Most rounds of a k-vector (a valid one for n < 2^31 has at most 30). */
#define BPC_MERGE_MAX_ROUNDS 64

/* What a call ran (bpc_merge_info). */
typedef struct bpc_merge_info {
  bpc_merge_algorithm_t algorithm;
  char name[16];               /* the algorithm's name, e.g. "doubling" */
  bpc_algo_source_t source;    /* where the choice came from */
  int nk;                      /* k-vector length (a full reduction) */
  int k[BPC_MERGE_MAX_ROUNDS]; /* the k-vector, given or automatic */
  int rounds;                  /* rounds run (nk for a full reduction) */
} bpc_merge_info_t;

/*
 * What ran: the algorithm (id, name and the source of the choice), the
 * k-vector and the number of rounds run. Errors: BPC_ENULL (r or info NULL).
 */
int bpc_merge_info(const bpc_merge_result_t *r, bpc_merge_info_t *info);

/*
 * The k-vector bpc_merge chooses when none is given, for the blocks of `a`
 * and items of about `item_bytes` bytes (0: unknown). Depends only on the
 * block count, the assignment and item_bytes, so it is the same on every
 * rank. bpc_merge passes the item size when it knows it on every rank
 * (op->elementwise with a contiguous type), else 0. Writes at most
 * `cap` entries and the count to *nk (0 for one block).
 * Errors: BPC_ENULL, BPC_EINVAL (cap too small).
 */
int bpc_merge_kvec_auto(const bpc_assign_t *a, size_t item_bytes, int *k, int cap, int *nk);

#ifdef __cplusplus
}
#endif
#endif /* BPC_MERGE_H */
