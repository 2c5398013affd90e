/*
 * lib/engines/alltoall/alltoall_internal.h - the all-to-all engine's
 * registry entry and the call state its routings run on (internal).
 * alltoall.c has the entry and the table, one file per routing
 * (alltoall_rounds.c) has its run function.
 */
#ifndef BPC_LIB_ENGINES_ALLTOALL_INTERNAL_H
#define BPC_LIB_ENGINES_ALLTOALL_INTERNAL_H

#include "bpc/alltoall.h"
#include "comm/comm.h"
#include "core/core.h"
#include "core/registry.h"
#include "patterns/patterns.h"

/* The registry entry: table "rounds", BPC_ALLTOALL_ALGORITHM, no tuning
 * file (lib/engines/engines.c lists it). */
extern const bpc__engine_t bpc__engine_alltoall;

/* One call, as the entry hands it to a routing's run function (after the
 * arguments were agreed; the exchange is open). */
typedef struct bpc__alltoall_call {
  bpc_ctx_t *ctx;
  bpc__exch_t *ex;
  const bpc_assign_t *assign;
  const bpc_type_t *type;
  bpc_a2a_send_fn send;
  bpc_a2a_recv_fn recv;
  void *user;
  const bpc__rounds_t *R; /* the k-vector's rounds (distance doubling) */
  int nthreads;           /* resolved (>= 1) */
  /* pool buffers lent to the exchange (BPC__SEND_BORROW), in the order
   * lent: the routing adds them (bpc__alltoall_lend) and gives back those it no
   * longer needs (bpc__alltoall_unlend); the entry returns the rest to the pool
   * after closing the exchange */
  struct bpc__alltoall_lent {
    void *buf;
    size_t cap;
  } * lent;
  int nlent, caplent;
  unsigned long long held, peak; /* capacity lent now, and at most (info) */
} bpc__alltoall_call_t;

/* Keep a pool buffer until it is given back (alltoall.c). BPC_OK or
 * BPC_ENOMEM (the buffer is then not kept; no message recorded). */
int bpc__alltoall_lend(bpc__alltoall_call_t *C, void *buf, size_t cap);

/* Return the buffers lent[from .. to) to the pool (their sends must have
 * completed and no message may still point into them); later ones move
 * down to index from. */
void bpc__alltoall_unlend(bpc__alltoall_call_t *C, int from, int to);

/* Routings (rows' run functions; `call` is a bpc__alltoall_call_t). Return a
 * messaging error at once; other failures (callbacks, malformed bundles)
 * are returned after the routing has completed, so no peer waits forever. */
int bpc__alltoall_rounds(void *call);

#endif /* BPC_LIB_ENGINES_ALLTOALL_INTERNAL_H */
