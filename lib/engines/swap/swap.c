/*
 * lib/engines/swap/swap.c - swap-reduce: the algorithm table and registry
 * entry, the plan of a call (argument checks, the choice of schedule and
 * k-vector, the order), its signature, its execution, the public entry
 * bpc_swap built from them (swap_internal.h shows the steps) and piece
 * ownership (bpc_swap_piece_of). The schedules are swap_radixk.c,
 * swap_shift.c and swap_ring.c; their shared helpers swap_common.c; the
 * tuning file swap_tuning.c.
 *
 * One call: plan (check every argument on this rank, pick the schedule),
 * one bpc__agree_args on the rank's code and the signature of what must
 * match (so a bad or differing argument on any rank fails everywhere before
 * anything is sent), open one exchange, run the schedule's row, close the
 * exchange, and agree on the final code (an operator failure anywhere is
 * BPC_ECALLBACK everywhere).
 */
#include "engines/swap/swap_internal.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "datatype/datatype.h"
#include "decomp/decomp.h"
#include "engines/swap/swap_common.h"
#include "threads/threads.h"

/* ----------------------------------------------------------- the table */

static const bpc__algo_t swap_rows[] = {
    {{BPC_SWAP_RADIXK, "radixk",
      "rounds of direct sends in groups of k[r] (k all 2: binary swap; one round: direct send)"},
     bpc__swap_radixk, &(const bpc__swap_row_t){1, 1, bpc__swap_radixk_piece}},
    {{BPC_SWAP_SHIFT, "shift",
      "n-1 shift-permutation stages; reduces stage s-1 while stage s is in flight"},
     bpc__swap_shift, &(const bpc__swap_row_t){0, 0, bpc__swap_flat_piece}},
    {{BPC_SWAP_RING, "ring",
      "parallel pipeline: partial pieces travel along a ring (two-way line if not commutative)"},
     bpc__swap_ring, &(const bpc__swap_row_t){0, 0, bpc__swap_flat_piece}},
};

const bpc__engine_t bpc__engine_swap = {"swap", "BPC_SWAP_ALGORITHM", swap_rows,
                                        BPC__NROWS(swap_rows), bpc__swap_tune};

bpc_swap_params_t bpc_swap_params_default(void)
{
  bpc_swap_params_t p;
  memset(&p, 0, sizeof p);
  p.algorithm = "auto";
  return p;
}

int bpc_swap_piece_of(const bpc_swap_info_t *info, size_t count, int pos, bpc_swap_piece_t *piece)
{
  if (info == NULL || piece == NULL)
    return BPC_ENULL;
  if (info->nblocks < 1)
    return BPC_EINVAL;
  if (pos < 0 || pos >= info->nblocks)
    return BPC_ERANGE;
  const bpc__algo_t *row = bpc__algo_by_id(&bpc__engine_swap, (int)info->algorithm);
  if (row == NULL)
    return BPC_EINVAL;
  return bpc__swap_row(row)->piece(info, count, pos, piece);
}

/* The first row whose rounds come from a k-vector: the built-in choice, and
 * the schedule of a call that gives a k-vector or a partial swap. */
static const bpc__algo_t *kvec_row(void)
{
  for (int i = 0; i < bpc__engine_swap.nrows; i++)
    if (bpc__swap_row(&bpc__engine_swap.rows[i])->kvec)
      return &bpc__engine_swap.rows[i];
  return NULL;
}

/* ------------------------------------------------------------ the plan */

/* Built-in rule for "auto": the k-vector row (radix-k), with rounds of at
 * most 8 members (the
 * Radix-k paper found k around 8 best at scale; on the 2-core test machine
 * every k-vector and schedule is within noise of the others, doc/swap.md).
 * bpc-tune finds the best choice for a given machine (BPC_TUNING_FILE). */
#define BUILTIN_K_TARGET 8

/* The schedule and, for a kvec row, the k-vector: forced by id, else the
 * registry's picker (a k-vector or a partial swap with "auto" and no
 * environment choice means the k-vector row, from the argument; the tuning
 * file is then not asked). */
static int choose(bpc__swap_plan_t *pl, int n, bpc_swap_algorithm_t forced)
{
  bpc_ctx_t *ctx = pl->ctx;
  const bpc_swap_params_t *P = &pl->params;
  const int user_k = P->k != NULL && P->nk > 0;
  bpc__swap_tune_t tq;
  char msg[256];
  memset(&tq, 0, sizeof tq);

  if (forced != BPC_SWAP_AUTO) {
    pl->row = bpc__algo_by_id(&bpc__engine_swap, (int)forced);
    pl->source = BPC_SOURCE_ARGUMENT;
    if (pl->row == NULL)
      return bpc__err(ctx, BPC_EALGO, "swap: no schedule with id %d", (int)forced);
  } else {
    tq.nblocks = n;
    tq.nprocs = ctx->size;
    tq.bytes = pl->count * pl->es;
    tq.commutative = pl->op.commutative != 0;
    int rc = bpc__algo_pick(ctx, &bpc__engine_swap, P->algorithm,
                            user_k || P->rounds != 0 ? NULL : &tq, &pl->row, &pl->source);
    if (rc != BPC_OK)
      return rc;
    if (pl->row == NULL) {
      pl->row = kvec_row();
      if (pl->row == NULL) /* a table without a k-vector row */
        pl->row = &bpc__engine_swap.rows[0];
      if (user_k || P->rounds != 0)
        pl->source = BPC_SOURCE_ARGUMENT;
    }
  }

  if (!bpc__swap_row(pl->row)->kvec)
    return BPC_OK;
  if (pl->source == BPC_SOURCE_TUNING && tq.nk > 0 &&
      bpc__kvec_check(n, tq.k, tq.nk, NULL, 0) == BPC_OK) {
    memcpy(pl->k, tq.k, sizeof(int) * (size_t)tq.nk);
    pl->nk = tq.nk;
    return BPC_OK;
  }
  if (user_k) {
    if (P->nk > BPC_SWAP_MAX_K)
      return bpc__err(ctx, BPC_EKVEC, "swap: k-vector of %d rounds: at most %d are allowed",
                      P->nk, BPC_SWAP_MAX_K);
    if (bpc__kvec_check(n, P->k, P->nk, msg, sizeof msg) != BPC_OK)
      return bpc__err(ctx, BPC_EKVEC, "swap: %s", msg);
    memcpy(pl->k, P->k, sizeof(int) * (size_t)P->nk);
    pl->nk = P->nk;
    return BPC_OK;
  }
  if (bpc__kvec_auto(n, BUILTIN_K_TARGET, pl->k, BPC_SWAP_MAX_K, &pl->nk) != BPC_OK)
    return bpc__err(ctx, BPC_EKVEC, "swap: no automatic k-vector for %d blocks", n);
  return BPC_OK;
}

static int plan_checks(bpc__swap_plan_t *pl, const bpc_assign_t *a, const bpc_type_t *type,
                       const bpc_op_t *op, bpc_swap_algorithm_t forced)
{
  bpc_ctx_t *ctx = pl->ctx;
  const bpc_swap_params_t *P = &pl->params;
  char msg[256];
  if (a == NULL || type == NULL || op == NULL || op->fn == NULL)
    return bpc__err(ctx, BPC_ENULL, "bpc_swap: %s is NULL",
                    a == NULL ? "assign" : type == NULL ? "type" : op == NULL ? "op" : "op->fn");
  if (a->ctx != ctx)
    return bpc__err(ctx, BPC_EINVAL, "bpc_swap: the assignment belongs to another context");
  pl->op = *op;
  const int n = a->nblocks;
  int rc = bpc_type_check(ctx, type);
  if (rc != BPC_OK)
    return rc;
  if (type->kind != BPC_TYPE_CONTIGUOUS)
    return bpc__err(ctx, BPC_ETYPE, "bpc_swap reduces contiguous buffers: the type must be "
                                    "contiguous (bpc_type_contiguous), not custom");
  pl->es = type->elem_size;
  if (pl->count > (size_t)INT64_MAX / pl->es)
    return bpc__err(ctx, BPC_ERANGE, "bpc_swap: count %zu of %zu-byte elements overflows",
                    pl->count, pl->es);
  if (P->nthreads < 0)
    return bpc__err(ctx, BPC_EINVAL, "bpc_swap: nthreads %d is negative (0 = OpenMP default)",
                    P->nthreads);
  if (P->k != NULL && P->nk < 0)
    return bpc__err(ctx, BPC_EKVEC, "bpc_swap: k-vector length %d is negative", P->nk);
  rc = choose(pl, n, forced);
  if (rc != BPC_OK)
    return rc;
  if (bpc__swap_row(pl->row)->kvec) {
    if (bpc__rounds_init(&pl->R, n, pl->k, pl->nk, msg, sizeof msg) != BPC_OK)
      return bpc__err(ctx, BPC_EKVEC, "swap: %s", msg);
    if (P->rounds < 0 || P->rounds > pl->nk)
      return bpc__err(ctx, BPC_ERANGE, "bpc_swap: rounds %d is outside 0..%d (k-vector of %d "
                                       "rounds; 0 = all)", P->rounds, pl->nk, pl->nk);
    pl->nrounds = P->rounds == 0 ? pl->nk : P->rounds;
  } else if (P->rounds != 0) {
    return bpc__err(ctx, BPC_EINVAL, "bpc_swap: a partial swap (rounds %d) needs a schedule in "
                                     "rounds of a k-vector (radixk), not %s",
                    P->rounds, pl->row->info.name);
  } else {
    pl->nrounds = 1;
  }

  pl->order = bpc__malloc(sizeof(int) * (size_t)n);
  pl->pos_of = bpc__malloc(sizeof(int) * (size_t)n);
  pl->lpos = bpc__malloc(sizeof(int) * (size_t)(a->nlocal > 0 ? a->nlocal : 1));
  if (pl->order == NULL || pl->pos_of == NULL || pl->lpos == NULL)
    return bpc__err(ctx, BPC_ENOMEM, "bpc_swap: out of memory for %d blocks", n);
  if (P->order != NULL) {
    rc = bpc__perm_check(P->order, n, msg, sizeof msg);
    if (rc != BPC_OK)
      return bpc__err(ctx, rc, "bpc_swap: visibility order: %s", msg);
    memcpy(pl->order, P->order, sizeof(int) * (size_t)n);
  } else {
    for (int i = 0; i < n; i++)
      pl->order[i] = i;
  }
  bpc__perm_invert(pl->order, n, pl->pos_of);
  for (int i = 0; i < a->nlocal; i++)
    pl->lpos[i] = pl->pos_of[a->local[i]];
  return BPC_OK;
}

int bpc__swap_plan_by_id(bpc_ctx_t *ctx, const bpc_assign_t *a, const bpc_type_t *type,
                         size_t count, const bpc_op_t *op, const bpc_swap_params_t *params,
                         bpc_swap_algorithm_t algorithm, bpc__swap_plan_t *plan)
{
  if (plan == NULL)
    return ctx != NULL ? bpc__err(ctx, BPC_ENULL, "swap: plan is NULL") : BPC_ENULL;
  memset(plan, 0, sizeof *plan);
  plan->ctx = ctx;
  plan->assign = a;
  plan->count = count;
  plan->params = params != NULL ? *params : bpc_swap_params_default();
  plan->params.order = NULL; /* copied into plan->order; the caller's may go */
  plan->params.k = NULL;     /* copied into plan->k */
  plan->source = BPC_SOURCE_BUILTIN;
  if (ctx == NULL) {
    plan->rc = BPC_ENULL;
    return plan->rc;
  }
  if (params != NULL) { /* the checks read the caller's order and k-vector */
    plan->params.order = params->order;
    plan->params.k = params->k;
  }
  plan->rc = plan_checks(plan, a, type, op, algorithm);
  plan->params.order = NULL;
  plan->params.k = NULL;
  if (plan->rc != BPC_OK)
    plan->row = NULL;
  return plan->rc;
}

int bpc__swap_plan(bpc_ctx_t *ctx, const bpc_assign_t *a, const bpc_type_t *type, size_t count,
                   const bpc_op_t *op, const bpc_swap_params_t *params, bpc__swap_plan_t *plan)
{
  return bpc__swap_plan_by_id(ctx, a, type, count, op, params, BPC_SWAP_AUTO, plan);
}

void bpc__swap_plan_sig(const bpc__swap_plan_t *pl, bpc__sig_t *sig)
{
  const int n = pl->assign != NULL && pl->rc == BPC_OK ? pl->assign->nblocks : 0;
  bpc__sig_int(sig, "algorithm", pl->row != NULL ? pl->row->info.id : 0);
  bpc__sig_int(sig, "block count", n);
  bpc__sig_assign(sig, pl->rc == BPC_OK ? pl->assign : NULL);
  bpc__sig_int(sig, "count", (long long)(pl->count > (size_t)INT64_MAX ? INT64_MAX : pl->count));
  bpc__sig_int(sig, "element size", (long long)pl->es);
  bpc__sig_int(sig, "commutative", pl->op.commutative != 0);
  bpc__sig_bytes(sig, "k-vector", pl->k, sizeof(int) * (size_t)pl->nk);
  bpc__sig_int(sig, "rounds", pl->nrounds);
  bpc__sig_bytes(sig, "order", pl->order, pl->order != NULL ? sizeof(int) * (size_t)n : 0);
  bpc__sig_int(sig, "deterministic", pl->params.deterministic != 0);
  bpc__sig_int(sig, "codec", pl->params.codec != NULL);
}

size_t bpc__swap_min_chunk(void)
{
  const long long mc = bpc__env_ll("BPC_TREE_MIN_CHUNK", (long long)BPC__TREE_MIN_CHUNK);
  return mc < 1 ? 1 : mc > (1ll << 40) ? (size_t)1 << 40 : (size_t)mc;
}

static void fill_info(const bpc__swap_plan_t *pl, bpc_swap_info_t *info)
{
  memset(info, 0, sizeof *info);
  info->algorithm = (bpc_swap_algorithm_t)pl->row->info.id;
  snprintf(info->name, sizeof info->name, "%s", pl->row->info.name);
  info->nblocks = pl->assign->nblocks;
  info->source = pl->source;
  if (bpc__swap_row(pl->row)->kvec) {
    info->nk = pl->nk;
    memcpy(info->k, pl->k, sizeof(int) * (size_t)pl->nk);
    info->rounds = pl->nrounds;
    info->group = 1;
    for (int r = 0; r < pl->nrounds; r++)
      info->group *= pl->k[r];
  } else {
    info->rounds = 1;
    info->group = info->nblocks;
  }
}

int bpc__swap_exec(bpc__swap_plan_t *pl, void *const *bufs, bpc_swap_piece_t *pieces,
                   bpc_swap_info_t *info)
{
  if (pl == NULL)
    return BPC_ENULL;
  if (pl->rc != BPC_OK || pl->row == NULL)
    return pl->rc != BPC_OK ? pl->rc : BPC_ESTATE;
  bpc_ctx_t *ctx = pl->ctx;
  const bpc_assign_t *a = pl->assign;
  bpc__swap_call_t c;
  memset(&c, 0, sizeof c);
  c.ctx = ctx;
  c.assign = a;
  c.n = a->nblocks;
  c.order = pl->order;
  c.pos_of = pl->pos_of;
  c.nlocal = a->nlocal;
  c.gids = a->local;
  c.lpos = pl->lpos;
  c.buf = (char *const *)bufs;
  c.count = pl->count;
  c.es = pl->es;
  c.op = &pl->op;
  c.deterministic = pl->params.deterministic != 0;
  c.R = bpc__swap_row(pl->row)->kvec ? &pl->R : NULL;
  c.nrounds = pl->nrounds;
  c.tree.fn = pl->op.fn;
  c.tree.arg = pl->op.user;
  c.tree.elem_size = pl->es;
  c.tree.nthreads = bpc__threads_resolve(pl->params.nthreads);
  c.tree.min_chunk = bpc__swap_min_chunk();
  c.pieces = pieces;
  c.err = BPC_OK;
  c.codec = pl->params.codec;
  /* the sparse hooks: every schedule (radix-k, shift, ring) */
  c.sparse = pl->sparse;
  /* an input apart from the buffers: a reads_src row reads round 0 from
   * it, any other is given it in the buffers */
  if (pl->src != NULL && (!bpc__swap_row(pl->row)->reads_src || c.sparse != NULL)) {
    for (int b = 0; b < c.nlocal && pl->count > 0; b++)
      memcpy(c.buf[b], pl->src[b], pl->count * pl->es);
  } else {
    c.src = (const char *const *)pl->src;
  }

  int rc = bpc__exch_open(ctx, pl->engine != NULL ? pl->engine : "swap", bpc__assign_rank_cb, a,
                           &c.ex);
  if (rc == BPC_OK) {
    rc = pl->row->run(&c);
    if (rc == BPC_OK)
      rc = c.err;
  }
  /* the outcome, the same everywhere (a failure anywhere stops the others'
   * waits), then the buffers the sends used */
  rc = bpc__exch_end(ctx, &c.ex, rc);
  bpc__swap_scratch_free(&c);
  pl->bytes_sent = c.piece_bytes;
  if (info != NULL)
    fill_info(pl, info);
  return rc;
}

void bpc__swap_plan_free(bpc__swap_plan_t *pl)
{
  if (pl == NULL)
    return;
  free(pl->order);
  free(pl->pos_of);
  free(pl->lpos);
  memset(pl, 0, sizeof *pl);
}

/* -------------------------------------------------------------- entry */

/* The buffers and pieces this rank must pass (bpc_swap only: callers of
 * bpc__swap_exec bring their own). */
static int check_bufs(bpc_ctx_t *ctx, const bpc_assign_t *a, void *const *bufs, size_t count,
                      const bpc_swap_piece_t *pieces)
{
  if (a->nlocal == 0)
    return BPC_OK;
  if (pieces == NULL)
    return bpc__err(ctx, BPC_ENULL, "bpc_swap: pieces is NULL but this rank has %d block(s)",
                    a->nlocal);
  if (count > 0 && bufs == NULL)
    return bpc__err(ctx, BPC_ENULL, "bpc_swap: bufs is NULL but this rank has %d block(s)",
                    a->nlocal);
  for (int i = 0; i < a->nlocal && count > 0; i++)
    if (bufs[i] == NULL)
      return bpc__err(ctx, BPC_ENULL, "bpc_swap: the buffer of block %d (local %d) is NULL",
                      a->local[i], i);
  return BPC_OK;
}

static int swap_entry(bpc_ctx_t *ctx, const bpc_assign_t *assign, const bpc_type_t *type,
                      void *const *bufs, size_t count, const bpc_op_t *op,
                      const bpc_swap_params_t *params, bpc_swap_piece_t *pieces,
                      bpc_swap_info_t *info)
{
  if (ctx == NULL)
    return BPC_ENULL;
  bpc__swap_plan_t plan;
  bpc__sig_t sig;
  int rc = bpc__swap_plan(ctx, assign, type, count, op, params, &plan);
  if (rc == BPC_OK)
    rc = check_bufs(ctx, assign, bufs, count, pieces);
  bpc__sig_init(&sig);
  bpc__swap_plan_sig(&plan, &sig);
  rc = bpc__agree_args(ctx, "swap", rc, &sig);
  if (rc == BPC_OK)
    rc = bpc__swap_exec(&plan, bufs, pieces, info);
  bpc__swap_plan_free(&plan);
  return rc;
}

/* The public entry: the re-entrancy guard (bpc__enter) around the call. */
int bpc_swap(bpc_ctx_t *ctx, const bpc_assign_t *assign, const bpc_type_t *type, void *const *bufs,
             size_t count, const bpc_op_t *op, const bpc_swap_params_t *params,
             bpc_swap_piece_t *pieces, bpc_swap_info_t *info)
{
  BPC__GUARDED_RETURN(ctx, "bpc_swap",
      swap_entry(ctx, assign, type, bufs, count, op, params, pieces, info));
}
