/*
 * lib/engines/swap/swap_internal.h - the swap-reduce engine as the library
 * sees it: its registry entry, its tuning hook, and the entry split into
 * steps for callers that make their own agreement (the compositing
 * plug-in). Not installed. The schedules' call state and helpers are in
 * swap_common.h (this header does not include it).
 *
 * bpc_swap is exactly these steps (swap.c):
 *
 *   bpc__swap_plan_t plan;
 *   bpc__sig_t sig;
 *   int rc = bpc__swap_plan(ctx, assign, type, count, op, params, &plan);
 *   (bpc_swap also checks bufs and pieces here)
 *   bpc__sig_init(&sig);
 *   bpc__swap_plan_sig(&plan, &sig);
 *   rc = bpc__agree_args(ctx, "swap", rc, &sig);
 *   if (rc == BPC_OK)
 *     rc = bpc__swap_exec(&plan, bufs, pieces, info);
 *   bpc__swap_plan_free(&plan);
 *
 * A caller with its own arguments may instead plan first, add its own
 * fields and the plan's to ONE signature, agree once and execute. The
 * compositing plug-in does it the other way round, because ranks without
 * blocks learn the image size (hence the swap's count) only from its
 * agreement: it agrees on its own signature (which determines the whole
 * schedule), then plans with the agreed values, agrees once on the plan's
 * outcome (bpc__agree: an allocation may fail on one rank) and executes.
 * Either way swap neither picks by name nor hashes the schedule again. To
 * force a schedule
 * (compositing maps each of its strategies to a swap schedule), use
 * bpc__swap_plan_by_id with the schedule's id (bpc_swap_algorithm_t) and
 * the k-vector in params->k / params->nk (NULL / 0: automatic);
 * params->algorithm, BPC_SWAP_ALGORITHM and the tuning file are then not
 * consulted and info.source is BPC_SOURCE_ARGUMENT.
 */
#ifndef BPC_LIB_ENGINES_SWAP_INTERNAL_H
#define BPC_LIB_ENGINES_SWAP_INTERNAL_H

#include "bpc/swap.h"
#include "comm/coll.h"
#include "core/core.h"
#include "core/registry.h"
#include "patterns/patterns.h"

/* The registry entry: table radixk / shift / ring, BPC_SWAP_ALGORITHM, the
 * tuning file (lib/engines/engines.c lists it). */
extern const bpc__engine_t bpc__engine_swap;

/*
 * What a schedule is besides its run: every row's `data` (swap.c's table).
 * The plan, the info, bpc_swap_piece_of and the tuning file read these
 * traits and never the schedule's id, so a new schedule is its file and its
 * row (doc/contributing.md).
 */
typedef struct bpc__swap_row {
  /* Its rounds come from a k-vector (params k/nk, a tuning entry or the
   * automatic one): the plan checks it and builds plan->R, a partial swap
   * (params.rounds > 0) is allowed, and info reports k and the group of the
   * rounds run. 0: one stage over all blocks (info.rounds 1, info.group
   * nblocks); a k-vector is then ignored and a partial swap refused. The
   * built-in choice ("auto" with nothing else deciding) and a call that
   * gives a k-vector or rounds run the table's first row with kvec set. */
  int kvec;
  /* Without sparse hooks, reads round 0's pieces straight from plan->src
   * (bpc__swap_call_t.src); 0: the input is copied into the buffers before
   * the run. */
  int reads_src;
  /* The piece position `pos` owns after the call `info` describes (count
   * elements a buffer; info->algorithm is this row's id). BPC_EINVAL when
   * info's fields cannot come from this schedule. */
  int (*piece)(const bpc_swap_info_t *info, size_t count, int pos, bpc_swap_piece_t *piece);
} bpc__swap_row_t;

/* The traits of a row of bpc__engine_swap. */
static inline const bpc__swap_row_t *bpc__swap_row(const bpc__algo_t *row)
{
  return (const bpc__swap_row_t *)row->data;
}

/* The pieces of the schedules (swap_radixk.c: radix-k's; swap_common.c:
 * equal ranges by position, shift's and ring's). */
int bpc__swap_radixk_piece(const bpc_swap_info_t *info, size_t count, int pos,
                           bpc_swap_piece_t *piece);
int bpc__swap_flat_piece(const bpc_swap_info_t *info, size_t count, int pos,
                         bpc_swap_piece_t *piece);

/*
 * A planned call: everything bpc__swap_plan decided, owned by the plan
 * (free with bpc__swap_plan_free). Fields are read-only for callers; the
 * ones they may read: rc, row, source, k/nk, nrounds. A caller may set
 * `engine` (the name of the statistics record bpc__swap_exec starts;
 * "swap" by default) between planning and executing.
 */
typedef struct bpc__swap_plan {
  bpc_ctx_t *ctx;
  const bpc_assign_t *assign;
  size_t count;              /* elements per buffer */
  size_t es;                 /* bytes per element */
  bpc_op_t op;               /* copy of the operator */
  bpc_swap_params_t params;  /* copy; params.codec must stay valid until exec */
  const bpc__algo_t *row;    /* the schedule (NULL after an error) */
  bpc_algo_source_t source;  /* where the choice came from */
  int k[BPC_SWAP_MAX_K];     /* a kvec row's k-vector (all rounds) */
  int nk;
  bpc__rounds_t R;           /* a kvec row's rounds of k */
  int nrounds;               /* a kvec row's rounds to perform; else 1 */
  int *order;                /* order[pos] = gid (a copy) */
  int *pos_of;               /* pos_of[gid] = pos */
  int *lpos;                 /* position of each local block */
  int rc;                    /* the first error found on this rank, or BPC_OK */
  const char *engine;        /* statistics record name ("swap") */
  /* sparse-piece hooks (swap_common.h; every schedule), set by the caller
   * after planning (the compositing plug-in), or NULL */
  const struct bpc__swap_sparse *sparse;
  /* optional, set by the caller after planning: each local block's input
   * when its buffer does not hold it (the compositing plug-in's inputs,
   * its buffers being the outputs). A reads_src row without sparse hooks
   * (radix-k) sends round 0's pieces for other processes straight from it
   * and copies the range each block keeps and its pieces for blocks of this
   * process; for any other the input is copied into the buffers first. NULL: the buffers
   * hold the input. */
  const void *const *src;
  /* out (bpc__swap_exec): bytes of the pieces this rank's blocks sent, as
   * they travelled (dense, or encoded), bundle framing not counted */
  uint64_t bytes_sent;
} bpc__swap_plan_t;

/*
 * Plan a call on this rank: every local argument check of bpc_swap except
 * bufs and pieces (see bpc_swap for the codes), the choice of schedule
 * (params->algorithm, BPC_SWAP_ALGORITHM, tuning file, built-in rule), the
 * k-vector and rounds, the order and the positions. No message, no
 * collective. Never returns early: *plan is always initialised (free it
 * with bpc__swap_plan_free), and its rc and the return value are the first
 * error found (message recorded with bpc__err) or BPC_OK. params may be
 * NULL (defaults). ctx NULL is BPC_ENULL (nothing recorded).
 */
int bpc__swap_plan(bpc_ctx_t *ctx, const bpc_assign_t *a, const bpc_type_t *type, size_t count,
                   const bpc_op_t *op, const bpc_swap_params_t *params, bpc__swap_plan_t *plan);

/* The same with the schedule forced by id (BPC_SWAP_RADIXK, _SHIFT,
 * _RING; BPC_SWAP_AUTO = choose as bpc__swap_plan does). An unknown id is
 * BPC_EALGO. */
int bpc__swap_plan_by_id(bpc_ctx_t *ctx, const bpc_assign_t *a, const bpc_type_t *type,
                         size_t count, const bpc_op_t *op, const bpc_swap_params_t *params,
                         bpc_swap_algorithm_t algorithm, bpc__swap_plan_t *plan);

/* Add the fields that must match on every rank to sig (after the caller's
 * own): algorithm, nblocks, count, element size, commutative, k-vector,
 * rounds, order, deterministic, codec. 10 fields. */
void bpc__swap_plan_sig(const bpc__swap_plan_t *plan, bpc__sig_t *sig);

/*
 * Run a planned call, after bpc__agree_args returned BPC_OK on every rank
 * (collective: every rank calls it). bufs and pieces as in bpc_swap; they
 * are not checked here (bpc_swap checks them before agreeing; callers that
 * pass their own must pass valid ones: one buffer of count elements per
 * local block and one piece each, where this rank has blocks). Opens one
 * exchange, runs the schedule, closes it and agrees on the outcome
 * (BPC_ECALLBACK, BPC_ETRUNC, ... on every rank alike). Fills info (may be
 * NULL). Returns plan->rc at once if the plan failed.
 */
int bpc__swap_exec(bpc__swap_plan_t *plan, void *const *bufs, bpc_swap_piece_t *pieces,
                   bpc_swap_info_t *info);

/* Free what the plan owns (idempotent; the plan stays zeroed). */
void bpc__swap_plan_free(bpc__swap_plan_t *plan);

/*
 * The tuning hook (swap_tuning.c), bpc__engine_swap.tune: `arg` is a
 * bpc__swap_tune_t describing the call; on an entry of BPC_TUNING_FILE for
 * it, sets *id and, for a kvec row, the entry's k-vector in arg->k / arg->nk
 * (nk 0: none given), and returns 1; else 0. The file is read once per
 * context.
 */
typedef struct bpc__swap_tune {
  int nblocks, nprocs;
  size_t bytes;
  int commutative;
  int k[BPC_SWAP_MAX_K]; /* out */
  int nk;                /* out */
} bpc__swap_tune_t;

int bpc__swap_tune(bpc_ctx_t *ctx, void *arg, int *id);

#endif /* BPC_LIB_ENGINES_SWAP_INTERNAL_H */
