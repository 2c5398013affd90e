/*
 * lib/engines/allreduce/allreduce_internal.h - the all-reduce engine's
 * registry entry, the call state its schedules run on and the helpers
 * they share (internal). allreduce.c has the entry, the table, the cost
 * rule and the helpers; one file per algorithm (allreduce_<name>.c) has
 * its schedule.
 */
#ifndef BPC_LIB_ENGINES_ALLREDUCE_INTERNAL_H
#define BPC_LIB_ENGINES_ALLREDUCE_INTERNAL_H

#include "bpc/allreduce.h"
#include "comm/comm.h"
#include "core/core.h"
#include "core/registry.h"
#include "decomp/decomp.h"
#include "patterns/patterns.h"

/* The registry entry (lib/engines/engines.c lists it). */
extern const bpc__engine_t bpc__engine_allreduce;

/* What an algorithm is besides its run (every row's `data`). */
typedef struct bpc__allreduce_row {
  /* Nonzero: contiguous types only (it cuts items into element ranges). */
  int contiguous_only;
  /* The modelled time (seconds) of a call with n blocks and items of L
   * bytes, for "auto" (alpha: per message, beta: per byte moved, gamma: per
   * byte combined); NULL: never chosen by auto. */
  double (*model)(int n, double L, double alpha, double beta, double gamma);
  /* Message rounds of the schedule for n blocks (info). */
  int (*rounds)(int n);
} bpc__allreduce_row_t;

static inline const bpc__allreduce_row_t *bpc__allreduce_row(const bpc__algo_t *row)
{
  return (const bpc__allreduce_row_t *)row->data;
}

/* One call, as the entry hands it to a schedule (after the arguments were
 * agreed; the exchange is open). Positions: pos -> gid through order. */
typedef struct bpc__allreduce_call {
  bpc_ctx_t *ctx;
  bpc__exch_t *ex;
  const bpc_assign_t *assign;
  const bpc_type_t *type;
  void *items; /* the user's array (bpc_buf_t[] or void *[]) */
  const bpc_op_t *op;
  int n;            /* blocks */
  const int *order; /* pos -> gid (NULL: identity) */
  const int *lpos;  /* lpos[l]: the position of local block l */
  int contig;       /* contiguous type */
  size_t count, es; /* contiguous: elements per item, bytes per element */
  int nthreads;     /* >= 1 */
  /* this rank's first failure that does not stop the schedule (an
   * operator or type callback, a malformed message): once set, no operator
   * or callback runs on this rank, messages still flow */
  int err;
  /* packed items sent this step (custom types), freed after the flush */
  void **tmp;
  int ntmp, captmp;
} bpc__allreduce_call_t;

/* The gid at position p. */
int bpc__allreduce_gid(const bpc__allreduce_call_t *C, int p);

/* Send elements [lo, lo + len) of the item of local block l (contiguous;
 * custom: the whole item, lo and len ignored) from position p to position
 * q with `seq`. The data must not change until bpc__allreduce_step_end.
 * Returns a messaging error (the schedule stops); a packing failure is
 * recorded in C->err and an empty message is sent instead. */
int bpc__allreduce_send(bpc__allreduce_call_t *C, int l, int p, int q, int seq, size_t lo,
                        size_t len);
/* Wait for the message from position q to position p with `seq`. */
int bpc__allreduce_recv(bpc__allreduce_call_t *C, int p, int q, int seq, bpc__msg_t **m);
/* Combine a received message into elements [lo, lo + len) of local block
 * l's item: inout = in o inout when in_left, else inout o in (custom: the
 * unpacked item into the whole item). Releases the message. After a
 * failure on this rank (C->err) it only releases. */
void bpc__allreduce_combine(bpc__allreduce_call_t *C, int l, bpc__msg_t *m, size_t lo, size_t len,
                            int in_left);
/* Store a received message as elements [lo, lo + len) of local block l's
 * item (custom: a new item replaces the old, which is destroyed).
 * Releases the message. */
void bpc__allreduce_store(bpc__allreduce_call_t *C, int l, bpc__msg_t *m, size_t lo, size_t len);
/* The end of a step: every send of it complete (the data may change),
 * packed buffers freed. */
int bpc__allreduce_step_end(bpc__allreduce_call_t *C);

/* The pairs of the power-of-two schedules (below): whole items odd ->
 * even, combined on the right (pre), or even -> odd, stored (post); one
 * step with `seq`. */
int bpc__allreduce_pairs(bpc__allreduce_call_t *C, int seq, int pre);

/* The participants of the power-of-two schedules: n blocks as m = the
 * largest power of two <= n virtual ranks; the first r = n - m pairs of
 * positions (2i, 2i + 1) fold into their even member first. Virtual rank v
 * of position p (-1 for the odd member of a pair), and its position. */
int bpc__allreduce_pow2(int n);
int bpc__allreduce_virt(int n, int p);
int bpc__allreduce_vpos(int n, int v);

/* Algorithms (rows' run functions; `call` is a bpc__allreduce_call_t).
 * They return a messaging error at once; other failures are left in
 * C->err for the entry, after the schedule ran to its end. */
int bpc__allreduce_doubling(void *call);
int bpc__allreduce_reduce_bcast(void *call);
int bpc__allreduce_swap_allgather(void *call);
/* Their models and round counts (for the table's rows). */
double bpc__allreduce_model_doubling(int n, double L, double alpha, double beta, double gamma);
double bpc__allreduce_model_reduce_bcast(int n, double L, double alpha, double beta, double gamma);
double bpc__allreduce_model_swap_allgather(int n, double L, double alpha, double beta,
                                           double gamma);
int bpc__allreduce_rounds_doubling(int n);
int bpc__allreduce_rounds_reduce_bcast(int n);
int bpc__allreduce_rounds_swap_allgather(int n);

#endif /* BPC_LIB_ENGINES_ALLREDUCE_INTERNAL_H */
