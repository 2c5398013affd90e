/*
 * lib/engines/swap/swap_common.h - the call state of one swap-reduce run
 * and the helpers every schedule uses (send, accept, codec, operator,
 * trees, scratch; implemented in swap_common.c). Included by the schedule
 * files (swap_radixk.c, swap_shift.c, swap_ring.c) and by swap.c, which
 * fills the call; it includes nothing of the entry (swap_internal.h), so
 * there is no include cycle. Not installed.
 *
 * Error policy inside a schedule: a failure that leaves the messaging
 * usable (operator failure, a piece of the wrong size) is recorded in
 * c->err (first one wins, message via bpc__err) and the schedule goes on
 * without calling the operator again, so no peer waits forever; swap.c then
 * agrees on the code over all ranks. A messaging failure (MPI) is returned
 * at once.
 */
#ifndef BPC_LIB_ENGINES_SWAP_COMMON_H
#define BPC_LIB_ENGINES_SWAP_COMMON_H

#include "bpc/swap.h"
#include "comm/comm.h"
#include "core/core.h"
#include "patterns/patterns.h"
#include "threads/threads.h"

/*
 * Sparse pieces (internal; the compositing plug-in's active pixels, on
 * every schedule). A codec that knows what each local block's buffer
 * holds (here: a superset of its non-empty pixels) lets them skip the
 * dense decode:
 *  encode  encodes elements [off, off + count) of local block lb's buffer
 *          into dst (capacity cap = the dense size); returns the size, or 0
 *          (or >= cap) to send the piece dense;
 *  check   validates a received encoding of `count` elements (0: valid)
 *          before any thread blends it;
 *  blend   combines elements [lo, lo + len) of a valid encoded piece of
 *          `count` elements into local block lb's elements [off, off +
 *          count) (`inout` points at element off of its buffer) exactly as
 *          the operator would combine its decoding (in_first as the
 *          operator's in_left), touching only what the encoding holds: an
 *          element it does not hold must be the operator's identity;
 *          called concurrently on disjoint ranges;
 *  prepare (may be NULL) before a merge into elements [off, off + count)
 *          of local block lb, with the operand absorb will then get
 *          (serial, before any thread blends);
 *  absorb  after a merge into elements [off, off + count) of local block
 *          lb: src/bytes the encoded operand merged, or src NULL for a
 *          dense one (serial);
 *  keep    local block lb's range is now [off, off + count) (radix-k, after
 *          each round's sends; ring and shift keep the whole buffer);
 *  bound   NULL: a piece is sent encoded only when that is smaller than
 *          dense, and receivers tell the two apart by size. Else every
 *          piece travels encoded (the buffer then need not hold whole
 *          elements, e.g. colour only, with depth in a plane of the
 *          codec's own): encode gets cap = bound(count) and must not
 *          return 0, and every message is checked as an encoding.
 * Radix-k then keeps encoded pieces encoded and merges every piece straight
 * into the block's own buffer, nearest first on each side (see
 * swap_radixk.c); ring blends each arrival into the buffer (one fold);
 * shift too, but holds a non-commutative operator's wrapped pieces and
 * folds them behind its own piece at the end (swap_shift.c).
 */
typedef struct bpc__swap_sparse {
  size_t (*encode)(void *dst, size_t cap, int lb, size_t off, size_t count, void *user);
  int (*check)(const void *src, size_t bytes, size_t count, void *user);
  int (*blend)(int lb, size_t off, void *inout, size_t count, const void *src, size_t bytes,
               size_t lo, size_t len, int in_first, void *user);
  void (*prepare)(int lb, size_t off, size_t count, const void *src, size_t bytes, void *user);
  void (*absorb)(int lb, size_t off, size_t count, const void *src, size_t bytes, void *user);
  void (*keep)(int lb, size_t off, size_t count, void *user);
  size_t (*bound)(size_t count, void *user);
  void *user;
} bpc__swap_sparse_t;

/* One fold: pieces merged one after the other into a block's own buffer
 * (bpc__swap_fold). */
typedef struct bpc__swap_fold_op {
  const void *data; /* the piece: dense, or encoded (bytes > 0) */
  size_t bytes;     /* 0: dense; else the encoding's size */
  int in_first;     /* the piece is in front of the buffer */
} bpc__swap_fold_op_t;

typedef struct bpc__swap_fold {
  int b;                     /* local block */
  size_t off, count;         /* its range: elements [off, off + count) */
  const bpc__swap_fold_op_t *ops;
  int nops;
} bpc__swap_fold_t;

typedef struct bpc__swap_call {
  bpc_ctx_t *ctx;
  bpc__exch_t *ex;
  const bpc_assign_t *assign; /* ranks of gids (bundling by process) */
  int n;             /* blocks */
  const int *order;  /* order[pos] = gid */
  const int *pos_of; /* pos_of[gid] = pos */
  int nlocal;
  const int *gids;   /* local gids (ascending) */
  const int *lpos;   /* position of each local block */
  char *const *buf;  /* each local block's buffer */
  /* a reads_src row (swap_internal.h) without sparse hooks, or NULL: each
   * local block's input, when
   * its buffer does not hold it yet (round 0 sends its pieces for other
   * processes from here, and copies into the buffer the range the block
   * keeps and its pieces for blocks of this process) */
  const char *const *src;
  size_t count;      /* elements per buffer */
  size_t es;         /* bytes per element */
  const bpc_op_t *op;
  int deterministic;
  const bpc__rounds_t *R; /* a kvec row's rounds (k-vector), else NULL */
  int nrounds;       /* a kvec row's rounds to perform (<= R->nrounds) */
  bpc__tree_t tree;  /* the ordered tree reduction (fn/arg wrap op) */
  bpc_swap_piece_t *pieces; /* out, per local block */
  int err;           /* first recorded (non-messaging) failure; BPC_OK */
  int cur_round;     /* for messages */
  const bpc_swap_codec_t *codec; /* optional piece codec, or NULL */
  const bpc__swap_sparse_t *sparse; /* sparse pieces (every schedule), or NULL */
  uint64_t piece_bytes; /* bytes of the pieces sent, as they travelled */
  void **scratch;    /* pool buffers of encoded pieces in flight */
  size_t *scratch_cap;
  int nscratch, scratch_max;
} bpc__swap_call_t;

/* Send `len` elements at `data` of local block b to dst_gid (seq): dense
 * (borrowed from the block's buffer) or, with a codec, encoded into a
 * scratch buffer kept until bpc__swap_scratch_free. len > 0. off: the
 * element offset of data in block b's buffer when the sparse hooks may
 * encode it (c->sparse), else BPC__SWAP_NOOFF (params.codec only). */
#define BPC__SWAP_NOOFF ((size_t)-1)

/* Least elements a thread works on (the tree's chunk, and compositing's
 * scans): BPC__TREE_MIN_CHUNK, or BPC_TREE_MIN_CHUNK from the environment
 * (tests lower it to exercise threads on small buffers), in 1..2^40. */
size_t bpc__swap_min_chunk(void);
int bpc__swap_send(bpc__swap_call_t *c, int b, int dst_gid, int seq, const void *data, size_t len,
                   size_t off);

/* The room a piece of len elements may take on the wire: the dense size,
 * or the sparse hooks' bound. */
size_t bpc__swap_piece_cap(const bpc__swap_call_t *c, size_t len);

/* Encode elements [off, off + len) of block b with the sparse hooks into
 * dst (capacity bpc__swap_piece_cap); 0 = send dense (never with a bound:
 * then an encoder's 0 is recorded as BPC_ESTATE). */
size_t bpc__swap_encode_sparse(bpc__swap_call_t *c, void *dst, int b, size_t off, size_t len);

/* With the sparse hooks: is message m a piece of `len` elements, dense
 * (*encoded = 0) or a valid encoding kept as it is (*encoded = 1)?
 * Records BPC_ETRUNC and returns it otherwise. */
int bpc__swap_accept_sparse(bpc__swap_call_t *c, bpc__msg_t *m, size_t len, int *encoded);

/* Run folds (one OpenMP region for all; element chunks of every fold
 * spread over the threads, each chunk through all of its fold's pieces in
 * order), then tell the sparse hooks what each block absorbed. Skipped
 * after a failure. Returns c->err. */
int bpc__swap_fold(bpc__swap_call_t *c, const bpc__swap_fold_t *jobs, int njobs);

/* Check that message m carries a piece of `len` elements: dense, or an
 * encoding that is expanded in place of m's payload (m->data then holds
 * len dense elements). Records BPC_ETRUNC and returns it otherwise. */
int bpc__swap_accept(bpc__swap_call_t *c, bpc__msg_t *m, size_t len);

/* Keep a pool buffer until bpc__swap_scratch_free (a bundle in flight).
 * BPC_OK or BPC_ENOMEM (recorded; the buffer is returned to the pool). */
int bpc__swap_keep(bpc__swap_call_t *c, void *buf, size_t cap);
/* Return the scratch buffers to the pool (after the exchange is closed). */
void bpc__swap_scratch_free(bpc__swap_call_t *c);

/* Apply the operator once (skipped when count is 0 or after a failure;
 * a failure is recorded as BPC_ECALLBACK). Returns c->err. */
int bpc__swap_op(bpc__swap_call_t *c, void *inout, const void *in, size_t count, int in_first,
                 int gid);

/* Run a batch of ordered trees (lib/threads; one OpenMP region for all,
 * threads as configured); each job's result lands in bufs[holder] (home,
 * or 0). Skipped after a failure (holders still set). Returns c->err. */
int bpc__swap_trees(bpc__swap_call_t *c, bpc__tree_job_t *jobs, int njobs);

/* Record a received message of the wrong size (BPC_ETRUNC); returns it. */
int bpc__swap_bad_size(bpc__swap_call_t *c, const bpc__msg_t *m, size_t expected);

/* Schedules (the rows' run functions; `call` is a bpc__swap_call_t): run
 * on every rank after the arguments were agreed; return a messaging error,
 * else BPC_OK (other failures are in c->err). Each fills c->pieces. */
int bpc__swap_radixk(void *call);
int bpc__swap_shift(void *call);
int bpc__swap_ring(void *call);

#endif /* BPC_LIB_ENGINES_SWAP_COMMON_H */
