/*
 * bpc/swap.h - swap-reduce (a reduce-scatter of divisible buffers). See
 * doc/swap.md. The all-to-all exchange is bpc/alltoall.h.
 *
 * Swap-reduce. Every block holds a contiguous buffer of `count` elements (a
 * contiguous bpc_type_t: element size + MPI datatype). The blocks' buffers
 * are reduced element by element with a user operator "o" in the order of a
 * visibility order (position 0 first). When the call returns, every block
 * owns one finished, contiguous piece of the reduced buffer, stored in place
 * in its own buffer at [offset, offset + count) (elements), and the pieces
 * of all blocks tile [0, count) exactly once. The rest of every buffer is
 * scratch (overwritten with partial results).
 *
 * Which piece a block owns is a function of its position in the visibility
 * order, the schedule and the k-vector only (never of ranks or timing):
 * bpc_swap_piece_of() computes it for any position, so code that gathers the
 * result (the compositing plug-in) knows where every piece lives.
 *  - shift, ring: position p owns piece p of the flat split of [0, count)
 *    into nblocks ranges: [floor(p*count/n), floor((p+1)*count/n)).
 *  - radixk with k-vector k[0..R-1]: write p in mixed radix with digit r in
 *    round r counted from the least significant end (p = d0 + k0*(d1 +
 *    k1*(d2 + ...))); start from [0, count) and, for r = 0, 1, ..., cut the
 *    current range into k[r] ranges the same floor way and keep range d_r.
 *    With every k = 2 this is binary swap's bit-reversed ownership; with one
 *    round (direct send) it is the flat split again.
 *
 * Partial swap (radixk only): with rounds = r' < R, groups of
 * g = k[0]*...*k[r'-1] consecutive positions ([p - p%g, p - p%g + g)) are
 * each reduced among themselves; block p owns the piece given by its digits
 * d0..d_{r'-1} of the reduction of its group only.
 */
#ifndef BPC_SWAP_H
#define BPC_SWAP_H

#include "bpc/core.h"
#include "bpc/datatype.h"
#include "bpc/decomp.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Longest k-vector (rounds) the swap engine accepts. */
#define BPC_SWAP_MAX_K 64

/* The reduction operator is a bpc_op_t (bpc/op.h): count elements of the
 * type, in_left telling which side the incoming piece is on. */

/* Schedules (the ids of the algorithm table: bpc_algorithms("swap", ...)
 * lists them with their names and descriptions). */
typedef enum bpc_swap_algorithm {
  BPC_SWAP_AUTO = 0,
  BPC_SWAP_RADIXK = 1, /* rounds of direct sends in groups of k (binary swap .. direct send) */
  BPC_SWAP_SHIFT = 2,  /* n-1 shift-permutation stages, overlapping reduction */
  BPC_SWAP_RING = 3    /* parallel pipeline: partials travel along a ring */
} bpc_swap_algorithm_t;

/*
 * Optional piece codec (used by the compositing plug-in for active pixels).
 * When params.codec is set, every piece a schedule sends is first offered to
 * encode(): it writes an encoding of the `count` elements at src into dst
 * (capacity `cap` = the dense size in bytes) and returns its size, which is
 * sent instead of the dense piece if it is > 0 and < cap; 0 (or >= cap)
 * sends the piece dense, as without a codec. A receiver tells the two apart
 * by size (dense = count * elem_size bytes) and expands an encoded piece
 * with decode() into `count` dense elements at dst before the operator sees
 * it, so the result is exactly that of the dense path as long as
 * decode(encode(x)) == x. decode returns 0, or nonzero for a malformed
 * encoding (BPC_ETRUNC). Both are called by one thread at a time (the
 * thread that called bpc_swap). The codec must be the same on every rank.
 */
typedef struct bpc_swap_codec {
  size_t (*encode)(void *dst, size_t cap, const void *src, size_t count, void *user);
  int (*decode)(void *dst, size_t count, const void *src, size_t bytes, void *user);
  void *user;
} bpc_swap_codec_t;

typedef struct bpc_swap_params {
  /* "radixk", "shift", "ring" or "auto" (NULL = "auto"; names are
   * case-insensitive). "auto" uses BPC_SWAP_ALGORITHM from the environment
   * if set (a name, or "auto"), else radixk if k or rounds is given, else
   * the tuning file named by BPC_TUNING_FILE (see bpc-tune) when it has an
   * entry for this block and process count, else the built-in choice
   * (radixk with an automatic k-vector). The schedule chosen must be the
   * same on every rank. */
  const char *algorithm;
  /* radixk: the k-vector (nk entries >= 2 whose product is nblocks), or
   * NULL / nk 0 for an automatic one (any block count, primes included).
   * Ignored by the other schedules. */
  const int *k;
  int nk;
  /* radixk: rounds to perform (1..R) for a partial swap; 0 = all. Other
   * schedules accept only 0. */
  int rounds;
  /* Visibility order: order[pos] = gid, a permutation of 0..nblocks-1
   * (copied during the call; the same on every rank); NULL = identity. */
  const int *order;
  /* OpenMP threads for local reductions: 0 = OpenMP default
   * (OMP_NUM_THREADS), 1 = none. */
  int nthreads;
  /* radixk: nonzero = reduce each round's pieces in one fixed tree once
   * they have all arrived (results bit-identical from run to run and for
   * any thread or process count, also for floating point); zero (default)
   * = reduce pieces as soon as they are adjacent in the order to what has
   * arrived (faster; the association then depends on arrival order, which
   * only matters for operators that are not exactly associative, e.g.
   * floating-point rounding). shift and ring always reduce in a fixed order. */
  int deterministic;
  /* Optional piece codec (see bpc_swap_codec_t); NULL = dense pieces. */
  const bpc_swap_codec_t *codec;
} bpc_swap_params_t;

/* Parameters with every field at its default (auto, automatic k, full,
 * identity order, OpenMP default threads, arrival order). */
bpc_swap_params_t bpc_swap_params_default(void);

/* The piece a block owns: elements [offset, offset + count) of its buffer. */
typedef struct bpc_swap_piece {
  size_t offset;
  size_t count;
} bpc_swap_piece_t;

/* What a call actually ran (filled by bpc_swap; feed it to
 * bpc_swap_piece_of). */
typedef struct bpc_swap_info {
  bpc_swap_algorithm_t algorithm; /* never AUTO */
  char name[16];
  int nblocks;
  int nk;                  /* radixk: k-vector used (all R rounds) */
  int k[BPC_SWAP_MAX_K];
  int rounds;              /* radixk: rounds performed (<= nk); else 1 */
  int group;               /* blocks reduced into each piece: nblocks, or
                              k[0]*...*k[rounds-1] for a partial swap */
  bpc_algo_source_t source; /* where the choice came from: argument,
                               BPC_SWAP_ALGORITHM, tuning file, built-in */
} bpc_swap_info_t;

/*
 * bpc_swap: reduce-scatter the local blocks' buffers. Collective over the
 * context: every rank calls it (also ranks without blocks), with the same
 * assignment, type, count, operator commutativity and params.
 *  assign: the blocks (nblocks = all blocks; this rank's local gids in
 *    ascending order, as bpc_assign_local gives them).
 *  type:   a contiguous type (elem_size, mpi_type); custom types are
 *    BPC_ETYPE.
 *  bufs:   one buffer per local block, in local order, each `count`
 *    elements, 64-byte alignment not required. Read and overwritten in
 *    place (the owned piece ends up at its offset; the rest is scratch).
 *    Buffers stay the caller's. May be NULL when this rank has no blocks or
 *    count is 0.
 *  pieces: out, one per local block (local order): the owned piece. May be
 *    NULL when this rank has no blocks.
 *  info:   out (may be NULL): what ran.
 * Buffers are sent straight from user memory (no copy); received pieces
 * are reduced in place in pooled receive buffers reused across calls.
 * Errors (on every rank alike, with the failing rank's message; nothing is
 * sent before arguments agree, so a bad argument on some ranks only never
 * hangs):
 *  BPC_ENULL (ctx, assign, type, op or op->fn NULL; bufs, a buffer or pieces
 *  NULL where needed), BPC_ETYPE (not a contiguous type), BPC_EALGO (unknown
 *  algorithm name, also in BPC_SWAP_ALGORITHM), BPC_EKVEC (k-vector does not
 *  multiply to nblocks, a k < 2, a negative nk, or more than BPC_SWAP_MAX_K
 *  rounds), BPC_EPERM (order is not a permutation), BPC_ERANGE (rounds out
 *  of range, or count * elem_size overflows), BPC_EINVAL (nthreads < 0; a
 *  partial swap with shift or ring; an assignment of another context),
 *  BPC_EMISMATCH (arguments valid on each rank but different between ranks:
 *  block count, count, k-vector, rounds, order, schedule, element size, commutativity,
 *  deterministic, codec present or not; the message names the field),
 *  BPC_ECALLBACK (the operator failed on some block; the schedule is still
 *  completed), BPC_ETRUNC (a piece of the wrong size arrived, or
 *  params.codec could not decode one), BPC_ENOMEM, BPC_EMPI.
 */
int bpc_swap(bpc_ctx_t *ctx, const bpc_assign_t *assign, const bpc_type_t *type, void *const *bufs,
             size_t count, const bpc_op_t *op, const bpc_swap_params_t *params,
             bpc_swap_piece_t *pieces, bpc_swap_info_t *info);

/*
 * The piece owned by the block at position `pos` (0..nblocks-1) after a call
 * described by `info`, for buffers of `count` elements (see the top of this
 * header). Pure function; no context needed.
 * Errors: BPC_ENULL, BPC_ERANGE (pos out of range), BPC_EINVAL (info not
 * filled by bpc_swap).
 */
int bpc_swap_piece_of(const bpc_swap_info_t *info, size_t count, int pos, bpc_swap_piece_t *piece);

#ifdef __cplusplus
}
#endif
#endif /* BPC_SWAP_H */
