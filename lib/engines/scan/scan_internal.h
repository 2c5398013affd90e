/*
 * lib/engines/scan/scan_internal.h - the scan engine's registry entry, the
 * call state and the global-stage schedule interface (internal).
 * scan.c: entry, table and the cost model; scan_values.c, scan_steps.c,
 * scan_flow.c: the driver (values and messages, a block's steps with the
 * lock-step driver and the runner, the dataflow driver); one file per
 * global algorithm (scan_serial.c, scan_kogge_stone.c, scan_sklansky.c,
 * scan_brent_kung.c, scan_blelloch.c, scan_mpi.c) with its schedule and run
 * function.
 */
#ifndef BPC_LIB_ENGINES_SCAN_INTERNAL_H
#define BPC_LIB_ENGINES_SCAN_INTERNAL_H

#include "bpc/scan.h"
#include "comm/comm.h"
#include "core/core.h"
#include "core/registry.h"
#include "patterns/patterns.h"

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
 * round. recvs(P, r, s, c) names the positions that may receive from
 * position s in round r, as two ranges [c[0], c[1]) and [c[2], c[3]) with
 * bounds in [0, P] (computed in 64 bits and clamped: bpc__scan_clamp)
 * (a superset: the runner keeps those whose step is s; a true receiver
 * left out is never sent to: a hang, or BPC_ESTATE for a local one), so a
 * process finds its sends from its own positions, not by a pass over all
 * P positions in every round; NULL: every position is a candidate.
 * sends(P, s, r) (NULL: every round) says the rounds in which s may send
 * or receive: [r[0], r[1]) (the serial chain's position s receives in
 * round s - 1 and sends in round s); the overlapped driver moves a block
 * straight past the others (to the shift round), so the serial chain
 * costs a process O(local blocks) steps, not O(local blocks x P); the
 * lock-step driver (BPC_SCAN_OVERLAP=0) still steps every round.
 * `exclusive_out`: after the rounds every position holds its
 * exclusive prefix (Blelloch); else its inclusive prefix, and the runner
 * adds one shift round (p receives p - 1's value).
 * A row without rounds (nrounds NULL: "mpi") gives `stage` instead, which
 * runs the whole global stage at once (below).
 */
struct bpc__scan_call;
typedef struct bpc__scan_sched {
  int (*nrounds)(int P);
  int (*step)(int P, int r, int p, bpc__scan_step_t *kind);
  void (*recvs)(int P, int r, int s, int c[4]);
  void (*sends)(int P, int s, int r[2]);
  int exclusive_out;
  /* tot[l]: local block l's total (absent for an empty block); leave its
   * exclusive prefix there and, when incl is not NULL, its inclusive prefix
   * in incl[l] (blocks with items only). Returns BPC_OK or a transport
   * error; operator failures go to bpc__scan_fail. A rank that failed
   * before it (recorded by bpc__scan_fail) still calls it, with tot NULL
   * when it has no totals: the stage's collective calls need every rank. */
  int (*stage)(struct bpc__scan_call *C, bpc__scan_val_t *tot, bpc__scan_val_t *incl);
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
  /* the overlapped (dataflow) driver runs the scheduled rows (scan_flow.c;
   * BPC_SCAN_OVERLAP=0: lock-step rounds, scan_steps.c) */
  int overlap;
  /* a callback failed on this rank (no more operator calls) and its code */
  int failed, fail_code;
  /* results */
  long long ops_local, ops_global, depth;
  int absent_gid;
  long long absent_index;
} bpc__scan_call_t;

/* Record a failure on this rank (the first code stays); no operator runs
 * after it. Code BPC_OK stops the calls without an error of this rank's
 * own (another rank failed and reports). A first BPC_ENOMEM gets its
 * message here (other codes come with theirs). Thread-safe. */
void bpc__scan_fail(bpc__scan_call_t *C, int code);
/* The same with the failure's message (NULL: as bpc__scan_fail), set only
 * by the first failure, under the same lock (callbacks fail on several
 * threads at once). */
void bpc__scan_fail_msg(bpc__scan_call_t *C, int code, const char *msg);
int bpc__scan_failed(bpc__scan_call_t *C);
/* Free an owned value (absent afterwards). */
void bpc__scan_val_free(const bpc__scan_call_t *C, bpc__scan_val_t *x);
/* out = a op b (a new owned value; a copy of the other when one operand is
 * absent; absent after a failure), counted as a global-stage call when
 * `global`. */
void bpc__scan_combine(bpc__scan_call_t *C, const bpc__scan_val_t *a, const bpc__scan_val_t *b,
                       bpc__scan_val_t *out, int global);

/* Run scan-then-propagate with this global schedule (scan_steps.c). */
int bpc__scan_run(bpc__scan_call_t *C, const bpc__scan_sched_t *S);

/* The cost model of "auto" (scan.c, doc/scan.md): the id of the row with
 * a model minimising rounds * alpha + gamma * max(depth, calls / min(R, P))
 * for P blocks on R processes, operator time gamma (<= 0: 1 ms). Ties: the
 * row with the smaller `prefer` (sklansky, kogge-stone, brent-kung,
 * blelloch, serial). */
int bpc__scan_auto(int P, int R, double gamma, double alpha);
/* The strategy BPC_SCAN_STRATEGY_AUTO runs (doc/scan.md "Choosing the
 * strategy"): from the mode, the global algorithm's id (its row's
 * `exclusive` trait), the operator's cost gamma (0 = 1 ms) and the message
 * latency alpha. */
bpc_scan_strategy_t bpc__scan_strategy_auto(bpc_scan_mode_t mode, int algorithm, double gamma,
                                            double alpha);

/* v clamped to [0, P] (a schedule's candidate range, computed in 64 bits:
 * positions near INT_MAX plus a power of two pass it). */
static inline int bpc__scan_clamp(long long v, int P)
{
  return v < 0 ? 0 : v > P ? P : (int)v;
}

/* The schedules of the rows with rounds (their files), for the rows and
 * the tests. */
extern const bpc__scan_sched_t bpc__scan_sched_serial, bpc__scan_sched_kogge_stone,
    bpc__scan_sched_sklansky, bpc__scan_sched_brent_kung, bpc__scan_sched_blelloch;

int bpc__scan_serial(void *call);
int bpc__scan_kogge_stone(void *call);
int bpc__scan_sklansky(void *call);
int bpc__scan_brent_kung(void *call);
int bpc__scan_blelloch(void *call);
int bpc__scan_mpi(void *call);
/* The "mpi" row's stage alone, on a rank that failed (recorded with
 * bpc__scan_fail) before the row could run: it joins MPI_Exscan with its
 * failure flag, so that no rank waits there for it. */
int bpc__scan_mpi_join(bpc__scan_call_t *C);

/* Whether "mpi" applies (scan_mpi.c): contiguous type, every rank's blocks
 * one run of positions, the runs ascending with rank. Else an error
 * (BPC_ETYPE or BPC_EINVAL) with its message, the same on every rank. */
int bpc__scan_mpi_check(bpc_ctx_t *ctx, const bpc_assign_t *assign, const bpc_type_t *type,
                        const int *pos_of);

/* The rows' cost models (their files): the global stage over P blocks as
 * message rounds (the shift round included), operator depth and calls
 * (doc/scan.md's table). */
void bpc__scan_model_serial(int P, double *rounds, double *depth, double *calls);
void bpc__scan_model_kogge_stone(int P, double *rounds, double *depth, double *calls);
void bpc__scan_model_sklansky(int P, double *rounds, double *depth, double *calls);
void bpc__scan_model_brent_kung(int P, double *rounds, double *depth, double *calls);
void bpc__scan_model_blelloch(int P, double *rounds, double *depth, double *calls);

/*
 * What an algorithm is besides its run: every row's `data` (scan.c's
 * table). The entry and "auto" read these traits and never the row's id,
 * so a new algorithm is its file and its row (doc/contributing.md).
 */
typedef struct bpc__scan_row {
  /* The global stage's cost model, or NULL: "auto" never picks the row. */
  void (*model)(int P, double *rounds, double *depth, double *calls);
  /* Among rows of equal modelled time "auto" takes the smallest. */
  int prefer;
  /* The global stage leaves exclusive prefixes (Blelloch): the strategy's
   * "auto" weighs the successor's message against a call. */
  int exclusive;
  /* Checks of this rank's arguments the row needs beyond the entry's, or
   * NULL (an error code with its message, the same on every rank). */
  int (*check)(bpc_ctx_t *ctx, const bpc_assign_t *assign, const bpc_type_t *type,
               const int *pos_of);
  /* A row made of MPI collectives: on a rank whose exchange did not open,
   * joins them as failed (recorded with bpc__scan_fail), so no rank waits
   * there for it. NULL: a point-to-point row. */
  int (*join)(bpc__scan_call_t *C);
} bpc__scan_row_t;

static inline const bpc__scan_row_t *bpc__scan_row(const bpc__algo_t *row)
{
  return (const bpc__scan_row_t *)row->data;
}

/* ------------------------------------------------ the driver (internal) */

/* One call's driver state (scan_values.c, scan_steps.c, scan_flow.c). */
typedef struct scan_flow scan_flow_t;

typedef struct scan_state {
  bpc__scan_call_t *C;
  void **sendbufs; /* packed messages, freed after the flush */
  int nsend, capsend;
  /* per local block l: s[l] its local inclusive scan (reduce-then-scan:
   * s[l][0] as scratch only), tot[l] its global-stage value, got[l] the
   * value received in the current round and kinds[l] what to do with it,
   * incl[l] the last item's result when a strategy provides it */
  bpc__scan_val_t **s, *tot, *got, *incl;
  int *kinds;
  int rts, shortcut, succ; /* the strategy (see bpc__scan_run) */
  scan_flow_t *flow;       /* the dataflow driver while it runs, else NULL */
} scan_state_t;

/* Values and messages (scan_values.c). */
/* A copy of an item (contiguous: one element; custom: pack + unpack). */
int bpc__scan_item_copy(scan_state_t *S, const void *item, void **out);
int bpc__scan_val_copy(scan_state_t *S, const bpc__scan_val_t *a, bpc__scan_val_t *out);
/* out = a op b; a and b stay the caller's (see bpc__scan_combine). */
void bpc__scan_combine_ref(scan_state_t *S, const bpc__scan_val_t *a, const bpc__scan_val_t *b,
                           bpc__scan_val_t *out, int global);
/* Item i of local block l's input, as a borrowed value. */
bpc__scan_val_t bpc__scan_in_item(const bpc__scan_call_t *C, int l, size_t i);
int bpc__scan_send_val(scan_state_t *S, int src_gid, int dst_gid, int seq,
                       const bpc__scan_val_t *x);
int bpc__scan_take_val(scan_state_t *S, bpc__msg_t *m, bpc__scan_val_t *x);
int bpc__scan_recv_val(scan_state_t *S, int dst_gid, int src_gid, int seq, bpc__scan_val_t *x);

/* A block's steps (scan_steps.c): (1) its local scan, (3) its
 * propagation, a global round's source and destinations, the step that
 * applies a received value, keeping the inclusive prefix, and taking the
 * successor's message. */
void bpc__scan_local_block(scan_state_t *S, int l);
void bpc__scan_propagate_block(scan_state_t *S, int l);
int bpc__scan_round_src(const bpc__scan_sched_t *sched, int P, int nr, int r, int p,
                        bpc__scan_step_t *k);
void bpc__scan_round_dests(const bpc__scan_sched_t *sched, int P, int nr, int r, int s, int c[4]);
void bpc__scan_apply_step(scan_state_t *S, int l);
void bpc__scan_keep_incl(scan_state_t *S, int l);
int bpc__scan_take_succ(scan_state_t *S, int l, bpc__msg_t *m);

/* The dataflow driver (scan_flow.c), and its progress hook that the
 * steps call after each operator call while it runs. */
int bpc__scan_run_flow(scan_state_t *S, const bpc__scan_sched_t *sched);
void bpc__scan_flow_hook(scan_state_t *S);

#endif /* BPC_LIB_ENGINES_SCAN_INTERNAL_H */
