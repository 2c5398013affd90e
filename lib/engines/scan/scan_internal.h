/*
 * lib/engines/scan/scan_internal.h - the scan engine's registry entry, the
 * call state and the global-stage schedule interface (internal).
 * scan.c: entry, table, local stages and the round runner; one file per
 * global algorithm (scan_serial.c, scan_kogge_stone.c, scan_sklansky.c,
 * scan_brent_kung.c, scan_blelloch.c) with its schedule and run function.
 */
#ifndef BPC_LIB_ENGINES_SCAN_INTERNAL_H
#define BPC_LIB_ENGINES_SCAN_INTERNAL_H

#include "bpc/scan.h"
#include "comm/comm.h"
#include "core/core.h"
#include "core/registry.h"

extern const bpc__engine_t bpc__engine_scan;

/* A value of the global stage: an item (contiguous: malloc'd elem_size
 * bytes; custom: an item owned by the engine), or absent (present 0: the
 * empty prefix). depth: operator calls on its longest dependency chain. */
typedef struct bpc__scan_val {
  void *v;
  int present;
  long long depth;
} bpc__scan_val_t;

/* What a position does with the value v it receives in a round (its own
 * value is x; an absent operand is skipped, never passed to the operator). */
typedef enum bpc__scan_step {
  BPC__SCAN_NONE = 0,  /* nothing this round */
  BPC__SCAN_LEFT = 1,  /* x = v op x  (v covers earlier positions) */
  BPC__SCAN_RIGHT = 2, /* x = x op v  (x covers earlier positions) */
  BPC__SCAN_TAKE = 3,  /* x = v */
  BPC__SCAN_CLEAR = 4  /* x = absent (no message) */
} bpc__scan_step_t;

/*
 * A global-stage schedule over P positions: nrounds(P) rounds; in round r
 * position p receives at most one value, from position step(P, r, p,
 * &kind) (-1: none), and every sender sends its value as it was before the
 * round. `exclusive_out`: after the rounds every position holds its
 * exclusive prefix (Blelloch); else its inclusive prefix, and the runner
 * adds one shift round (p receives p - 1's value).
 */
typedef struct bpc__scan_sched {
  int (*nrounds)(int P);
  int (*step)(int P, int r, int p, bpc__scan_step_t *kind);
  int exclusive_out;
} bpc__scan_sched_t;

/* One call, as the entry hands it to the row (arguments agreed, exchange
 * open). */
typedef struct bpc__scan_call {
  bpc_ctx_t *ctx;
  bpc__exch_t *ex;
  const bpc_assign_t *assign;
  const bpc_type_t *type;
  bpc_scan_mode_t mode;
  bpc_scan_strategy_t strategy;
  const bpc_buf_t *in;
  bpc_buf_t *out;
  const bpc_scan_op_t *op;
  int nthreads;
  int nblocks;
  const int *order;  /* position -> gid (never NULL here) */
  const int *pos_of; /* gid -> position */
  /* results */
  long long ops_local, ops_global, depth;
  int absent_gid;
  long long absent_index;
} bpc__scan_call_t;

/* Run scan-then-propagate with this global schedule (scan.c). */
int bpc__scan_run(bpc__scan_call_t *C, const bpc__scan_sched_t *S);

/* The cost model of "auto" (scan.c, doc/scan.md): the algorithm id
 * minimising rounds * alpha + gamma * max(depth, calls / min(R, P)) for P
 * blocks on R processes, operator time gamma (<= 0: 1 ms). Ties: the
 * earlier of sklansky, kogge-stone, brent-kung, blelloch, serial. */
int bpc__scan_auto(int P, int R, double gamma, double alpha);

/* Smallest k with 2^k >= P. */
int bpc__scan_log2up(int P);

int bpc__scan_serial(void *call);
int bpc__scan_kogge_stone(void *call);
int bpc__scan_sklansky(void *call);
int bpc__scan_brent_kung(void *call);
int bpc__scan_blelloch(void *call);

#endif /* BPC_LIB_ENGINES_SCAN_INTERNAL_H */
