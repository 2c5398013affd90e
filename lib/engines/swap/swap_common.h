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
  size_t count;      /* elements per buffer */
  size_t es;         /* bytes per element */
  const bpc_swap_op_t *op;
  int deterministic;
  const bpc__rounds_t *R; /* radixk: the rounds (k-vector), else NULL */
  int nrounds;       /* radixk: rounds to perform (<= R->nrounds) */
  bpc__tree_t tree;  /* the ordered tree reduction (fn/arg wrap op) */
  bpc_swap_piece_t *pieces; /* out, per local block */
  int err;           /* first recorded (non-messaging) failure; BPC_OK */
  int cur_round;     /* for messages */
  const bpc_swap_codec_t *codec; /* optional piece codec, or NULL */
  void **scratch;    /* pool buffers of encoded pieces in flight */
  size_t *scratch_cap;
  int nscratch, scratch_max;
} bpc__swap_call_t;

/* Send `len` elements at `data` of local block b to dst_gid (seq): dense
 * (borrowed from the block's buffer) or, with a codec, encoded into a
 * scratch buffer kept until bpc__swap_scratch_free. len > 0. */
int bpc__swap_send(bpc__swap_call_t *c, int b, int dst_gid, int seq, const void *data, size_t len);

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
