/*
 * lib/engines/scan/scan.c - the scan engine: its table and registry entry,
 * params, the public entry bpc_scan and the cost model of "auto". The
 * scan-then-propagate strategy every row runs with its own global schedule
 * (bpc__scan_run) is described here and lives in scan_values.c (values,
 * messages), scan_steps.c (a block's steps, the lock-step driver, the
 * runner) and scan_flow.c (the dataflow driver).
 *
 * One call (the engine frame of doc/design.md): check every argument on
 * this rank, pick the global algorithm (argument, BPC_SCAN_ALGORITHM,
 * built-in rule), ONE bpc__agree_args on the rank's code and the signature
 * (algorithm, block count, mode, order, identity presence, commutative
 * flag, type), open one exchange, run the row, close, agree on the outcome.
 *
 * Strategy (the thesis' general strategy, Algorithm 7), per block of n
 * items: (1) local inclusive scan s_0 = x_0, s_i = s_{i-1} op x_i (n - 1
 * calls; blocks of this process in parallel);
 * (2) the global stage: the blocks' totals s_{n-1} are scanned over the
 * positions with the row's schedule, every position being one participant
 * (blocks of one process exchange through the in-process path), so the
 * association depends on the blocks only; the runner gives each position
 * its exclusive prefix E (absent for position 0 and after empty blocks
 * only); (3) propagate: inclusive r_i = E op s_i (n calls), exclusive r_0 =
 * E, r_i = E op s_{i-1} (n - 1 calls); with E absent the s values are the
 * results. An absent operand is never passed to the operator (empty blocks
 * and the empty prefix cost no call). Strategy reduce-then-scan
 * (Algorithm 8): (1) keeps no local values, (3) scans each block afresh
 * from E (one more call per block with E). Strategy inclusive-global
 * (Algorithm 9, inclusive scans with an inclusive global stage): the
 * global inclusive prefix, kept before the shift round, is the block's last
 * result (one call less per block). Strategy successor (Algorithm 10 in a
 * deterministic form, inclusive scans): after the global stage every
 * position sends its exclusive prefix to its predecessor, which always
 * waits for it and takes it as its last result (one call less per block
 * but the last, for every algorithm; one more message round). A failing operator stops further
 * calls on this rank; the schedule's messages still flow (no hang), and the
 * outcome agreement makes it BPC_ECALLBACK everywhere.
 * Drivers: the scheduled rows run the dataflow driver (scan_flow.c: each block
 * goes through the three steps on its own, overlapping operator work with
 * messages; doc/scan.md "Overlap"), or with BPC_SCAN_OVERLAP=0 lock-step
 * rounds (scan_steps.c: every local scan, then round by round over all
 * blocks, then every propagation); the same messages and results.
 */
#include "engines/scan/scan_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/coll.h"
#include "datatype/datatype.h"
#include "decomp/decomp.h"
#include "threads/threads.h"

static const bpc__algo_t scan_rows[] = {
    {{BPC_SCAN_SERIAL, "serial", "chain: P-1 rounds, P-1 calls (inclusive) + shift"},
     bpc__scan_serial, &(const bpc__scan_row_t){bpc__scan_model_serial, 4, 0, NULL, NULL}},
    {{BPC_SCAN_KOGGE_STONE, "kogge-stone",
      "shift form: round r from p-2^r; depth log2 P, P log2 P - P + 1 calls"},
     bpc__scan_kogge_stone,
     &(const bpc__scan_row_t){bpc__scan_model_kogge_stone, 1, 0, NULL, NULL}},
    {{BPC_SCAN_SKLANSKY, "sklansky", "fan-out halves; depth log2 P, (P/2) log2 P calls"},
     bpc__scan_sklansky, &(const bpc__scan_row_t){bpc__scan_model_sklansky, 0, 0, NULL, NULL}},
    {{BPC_SCAN_BRENT_KUNG, "brent-kung",
      "up-sweep + inclusive down-sweep; depth 2 log2 P - 1, 2P - log2 P - 2 calls"},
     bpc__scan_brent_kung,
     &(const bpc__scan_row_t){bpc__scan_model_brent_kung, 2, 0, NULL, NULL}},
    {{BPC_SCAN_BLELLOCH, "blelloch",
      "up-sweep + exclusive down-sweep; depth 2 log2 P, 2(P-1) - log2 P calls"},
     bpc__scan_blelloch, &(const bpc__scan_row_t){bpc__scan_model_blelloch, 3, 1, NULL, NULL}},
    {{BPC_SCAN_MPI, "mpi",
      "MPI_Exscan over ranks with a user MPI_Op; contiguous types, rank-ordered blocks"},
     bpc__scan_mpi,
     &(const bpc__scan_row_t){NULL, 0, 0, bpc__scan_mpi_check, bpc__scan_mpi_join}},
};

const bpc__engine_t bpc__engine_scan = {"scan", "BPC_SCAN_ALGORITHM", scan_rows,
                                        BPC__NROWS(scan_rows), NULL};

bpc_scan_params_t bpc_scan_params_default(void)
{
  bpc_scan_params_t p;
  memset(&p, 0, sizeof p);
  p.algorithm = "auto";
  return p;
}

/* ------------------------------------------------------------- auto */

/* Message latency of the model: BPC_SCAN_ALPHA (seconds) or 5e-6. */
static double scan_alpha(void)
{
  const char *e = getenv("BPC_SCAN_ALPHA");
  double a = e != NULL ? strtod(e, NULL) : 0.0;
  return a > 0.0 && a < 1.0 ? a : 5e-6;
}

/* The overlapped driver unless BPC_SCAN_OVERLAP is 0 (the same messages and
 * results either way: ranks may differ). */
static int scan_overlap(void)
{
  const char *e = getenv("BPC_SCAN_OVERLAP");
  return e == NULL || strcmp(e, "0") != 0;
}

int bpc__scan_auto(int P, int R, double gamma, double alpha)
{
  if (!(gamma > 0.0))
    gamma = 1e-3;
  if (R < 1)
    R = 1;
  const double cores = R < P ? R : P;
  const bpc__algo_t *best = NULL;
  double tbest = 0;
  for (int i = 0; i < bpc__engine_scan.nrows; i++) {
    const bpc__algo_t *row = &bpc__engine_scan.rows[i];
    const bpc__scan_row_t *tr = bpc__scan_row(row);
    if (tr->model == NULL)
      continue;
    double rounds, depth, calls;
    tr->model(P, &rounds, &depth, &calls);
    const double work = calls / cores;
    const double t = rounds * alpha + gamma * (depth > work ? depth : work);
    /* equal within rounding: the preferred row */
    if (best == NULL || t < tbest * (1 - 1e-12) ||
        (t <= tbest * (1 + 1e-12) && tr->prefer < bpc__scan_row(best)->prefer)) {
      best = row;
      tbest = t;
    }
  }
  return best != NULL ? best->info.id : 0;
}

bpc_scan_strategy_t bpc__scan_strategy_auto(bpc_scan_mode_t mode, int algorithm, double gamma,
                                            double alpha)
{
  if (mode != BPC_SCAN_INCLUSIVE)
    return BPC_SCAN_SCAN_THEN_PROPAGATE; /* the others are the same or cost a call more */
  const bpc__algo_t *row = bpc__algo_by_id(&bpc__engine_scan, algorithm);
  if (row == NULL || !bpc__scan_row(row)->exclusive)
    return BPC_SCAN_INCLUSIVE_GLOBAL; /* a call less per block, no message more */
  if (!(gamma > 0.0))
    gamma = 1e-3;
  /* Blelloch's global stage is exclusive: only the successor's message
   * saves the last item's call, at one more message round */
  return gamma > alpha ? BPC_SCAN_SUCCESSOR : BPC_SCAN_SCAN_THEN_PROPAGATE;
}

/* ------------------------------------------------------------- entry */

static int scan_check(bpc_ctx_t *ctx, const bpc_assign_t *assign, const bpc_type_t *type,
                      bpc_scan_mode_t mode, const bpc_buf_t *in, const bpc_buf_t *out,
                      const bpc_scan_op_t *op, const bpc_scan_params_t *P, int *pos_of,
                      const bpc__algo_t **row, bpc_algo_source_t *source)
{
  if (assign == NULL || type == NULL || op == NULL || (op->fn == NULL && op->binary.fn == NULL))
    return bpc__err(ctx, BPC_ENULL, "bpc_scan: %s is NULL",
                    assign == NULL ? "assign"
                    : type == NULL ? "type"
                    : op == NULL   ? "op"
                                   : "op->fn (and op->binary.fn)");
  if (op->fn != NULL && op->binary.fn != NULL)
    return bpc__err(ctx, BPC_EINVAL, "bpc_scan: op->fn and op->binary.fn are both set (give one)");
  if (assign->ctx != ctx)
    return bpc__err(ctx, BPC_EINVAL, "bpc_scan: the assignment belongs to another context");
  int rc = bpc_type_check(ctx, type);
  if (rc != BPC_OK)
    return rc;
  if (mode != BPC_SCAN_INCLUSIVE && mode != BPC_SCAN_EXCLUSIVE)
    return bpc__err(ctx, BPC_EINVAL, "bpc_scan: mode %d is neither inclusive nor exclusive",
                    (int)mode);
  if (P->nthreads < 0)
    return bpc__err(ctx, BPC_EINVAL, "bpc_scan: nthreads %d is negative", P->nthreads);
  if (P->strategy != BPC_SCAN_SCAN_THEN_PROPAGATE && P->strategy != BPC_SCAN_REDUCE_THEN_SCAN &&
      P->strategy != BPC_SCAN_INCLUSIVE_GLOBAL && P->strategy != BPC_SCAN_SUCCESSOR &&
      P->strategy != BPC_SCAN_STRATEGY_AUTO)
    return bpc__err(ctx, BPC_EINVAL, "bpc_scan: unknown strategy %d", (int)P->strategy);
  if (assign->nlocal > 0 && (in == NULL || out == NULL))
    return bpc__err(ctx, BPC_ENULL, "bpc_scan: %s is NULL on a rank with blocks",
                    in == NULL ? "in" : "out");
  for (int l = 0; l < assign->nlocal; l++)
    if (in[l].count > 0 && (in[l].data == NULL || out[l].data == NULL))
      return bpc__err(ctx, BPC_ENULL, "bpc_scan: block %d has %zu items but %s data is NULL",
                      assign->local[l], in[l].count, in[l].data == NULL ? "in" : "out");
  const int nb = assign->nblocks;
  for (int g = 0; g < nb; g++)
    pos_of[g] = -1;
  for (int p = 0; p < nb; p++) {
    int g = P->order != NULL ? P->order[p] : p;
    if (g < 0 || g >= nb || pos_of[g] >= 0)
      return bpc__err(ctx, BPC_EPERM, "bpc_scan: order is not a permutation of 0..%d "
                                      "(entry %d is %d)", nb - 1, p, g);
    pos_of[g] = p;
  }
  if (!(P->op_seconds >= 0.0) || P->op_seconds > 1e9)
    return bpc__err(ctx, BPC_EINVAL, "bpc_scan: op_seconds %g is not a cost in seconds",
                    P->op_seconds);
  rc = bpc__algo_pick(ctx, &bpc__engine_scan, P->algorithm, NULL, row, source);
  if (rc != BPC_OK)
    return rc;
  if (*row == NULL) {
    int R = 1;
    bpc_ctx_size(ctx, &R);
    *row = bpc__algo_by_id(&bpc__engine_scan, bpc__scan_auto(nb, R, P->op_seconds,
                                                             scan_alpha()));
  }
  if (bpc__scan_row(*row)->check != NULL)
    return bpc__scan_row(*row)->check(ctx, assign, type, pos_of);
  return BPC_OK;
}

static int scan_entry(bpc_ctx_t *ctx, const bpc_assign_t *assign, const bpc_type_t *type,
                      bpc_scan_mode_t mode, const bpc_buf_t *in, bpc_buf_t *out, const bpc_scan_op_t *op,
                      const bpc_scan_params_t *params, bpc_scan_info_t *info)
{
  if (ctx == NULL)
    return BPC_ENULL;
  const bpc_scan_params_t Pm = params != NULL ? *params : bpc_scan_params_default();
  const bpc__algo_t *row = NULL;
  bpc_algo_source_t source = BPC_SOURCE_BUILTIN;
  const int nb = assign != NULL ? assign->nblocks : 0;
  int *pos_of = malloc(sizeof(int) * (size_t)(nb > 0 ? nb : 1));
  int *order = malloc(sizeof(int) * (size_t)(nb > 0 ? nb : 1));
  int rc = (pos_of == NULL || order == NULL)
               ? bpc__err(ctx, BPC_ENOMEM, "bpc_scan: no memory for %d positions", nb)
               : scan_check(ctx, assign, type, mode, in, out, op, &Pm, pos_of, &row, &source);
  if (rc == BPC_OK)
    for (int g = 0; g < nb; g++)
      order[pos_of[g]] = g;
  bpc_scan_strategy_t strategy = Pm.strategy;
  if (rc == BPC_OK && strategy == BPC_SCAN_STRATEGY_AUTO)
    strategy = bpc__scan_strategy_auto(mode, row->info.id, Pm.op_seconds, scan_alpha());

  bpc__sig_t sig;
  bpc__sig_init(&sig);
  bpc__sig_int(&sig, "algorithm", rc == BPC_OK ? row->info.id : 0);
  bpc__sig_int(&sig, "nblocks", rc == BPC_OK ? nb : 0);
  bpc__sig_assign(&sig, rc == BPC_OK ? assign : NULL);
  bpc__sig_int(&sig, "mode", rc == BPC_OK ? (int)mode : 0);
  /* a model chooses (the algorithm's or the strategy's auto): the same
   * input on every rank */
  if (rc == BPC_OK &&
      (source == BPC_SOURCE_BUILTIN || Pm.strategy == BPC_SCAN_STRATEGY_AUTO))
    bpc__sig_bytes(&sig, "op_seconds", &Pm.op_seconds, sizeof Pm.op_seconds);
  else
    bpc__sig_open(&sig, "op_seconds");
  /* the strategy that will run (ranks whose BPC_SCAN_ALPHA made auto choose
   * differently get BPC_EMISMATCH here) */
  bpc__sig_int(&sig, "strategy", rc == BPC_OK ? (int)strategy : 0);
  bpc__sig_bytes(&sig, "order", rc == BPC_OK ? order : NULL,
                 rc == BPC_OK ? sizeof(int) * (size_t)nb : 0);
  bpc__sig_int(&sig, "identity", rc == BPC_OK && op->identity != NULL);
  bpc__sig_int(&sig, "op->commutative",
               rc == BPC_OK && (op->fn != NULL ? op->commutative : op->binary.commutative) != 0);
  bpc__sig_type(&sig, rc == BPC_OK ? type : NULL);
  /* info's totals are reductions: made when any rank asked for them, so a
   * rank passing NULL where another passes info joins them */
  const int info_field = sig.n;
  bpc__sig_max(&sig, "info", info != NULL);
  long long vals[BPC__SIG_MAX];
  rc = bpc__agree_args_vals(ctx, "scan", rc, &sig, vals);
  if (rc != BPC_OK) {
    free(pos_of);
    free(order);
    return rc;
  }

  bpc__scan_call_t C;
  memset(&C, 0, sizeof C);
  C.ctx = ctx;
  C.assign = assign;
  C.type = type;
  C.mode = mode;
  C.strategy = strategy;
  C.in = in;
  C.out = out;
  C.op = op;
  C.nthreads = bpc__threads_resolve(Pm.nthreads);
  C.nblocks = nb;
  C.order = order;
  C.pos_of = pos_of;
  C.absent_gid = -1;
  C.absent_index = -1;
  C.overlap = scan_overlap();
  rc = bpc__exch_open(ctx, "scan", bpc__assign_rank_cb, assign, &C.ex);
  if (rc == BPC_OK) {
    /* a round's values for blocks of one process travel as one message
     * (lib/comm/comm.h); the dataflow driver pushes at the end of each
     * poll, so a value waits at most until then */
    bpc__exch_bundle(C.ex, 1);
    rc = row->run(&C);
  } else if (bpc__scan_row(row)->join != NULL) {
    /* its MPI collectives need every rank: this one joins them as failed
     * (its stage alone: without an exchange nothing else can run) */
    bpc__scan_fail(&C, rc);
    bpc__scan_row(row)->join(&C);
  }
  /* the outcome, the same everywhere (a failure anywhere stops the others'
   * waits) */
  rc = bpc__exch_end(ctx, &C.ex, rc);
  free(pos_of);
  free(order);
  bpc__stats_depth(ctx, (uint64_t)C.depth); /* this rank's results' longest chain */
  if (rc == BPC_OK && vals[info_field] > 0) {
    long long v[5] = {C.ops_local, C.ops_global, C.depth, C.absent_gid, C.absent_index};
    long long w[5];
    rc = bpc__allreduce_ll(ctx, v, w, 2, BPC__RED_SUM);
    if (rc == BPC_OK)
      rc = bpc__allreduce_ll(ctx, v + 2, w + 2, 3, BPC__RED_MAX);
    if (rc == BPC_OK && info != NULL) {
      memset(info, 0, sizeof *info);
      info->algorithm = (bpc_scan_algorithm_t)row->info.id;
      snprintf(info->name, sizeof info->name, "%s", row->info.name);
      info->source = source;
      info->ops_local = C.ops_local;
      info->ops_total = w[0];
      info->ops_global = w[1];
      info->depth = w[2];
      info->absent_gid = (int)w[3];
      info->absent_index = w[4];
      info->strategy = strategy;
    }
  }
  return rc;
}

/* The public entry: the re-entrancy guard (bpc__enter) around the call. */
int bpc_scan(bpc_ctx_t *ctx, const bpc_assign_t *assign, const bpc_type_t *type,
             bpc_scan_mode_t mode, const bpc_buf_t *in, bpc_buf_t *out, const bpc_scan_op_t *op,
             const bpc_scan_params_t *params, bpc_scan_info_t *info)
{
  BPC__GUARDED_RETURN(ctx, "bpc_scan",
      scan_entry(ctx, assign, type, mode, in, out, op, params, info));
}
