/*
 * lib/core/stats.c - per-rank counters: totals since reset, and the last
 * engine call split by round. Updated atomically so OpenMP threads may count.
 */
#include "core/core.h"

#include <string.h>

int bpc_stats_total(const bpc_ctx_t *ctx, bpc_counters_t *out)
{
  if (ctx == NULL || out == NULL)
    return BPC_ENULL;
  *out = ctx->total;
  return BPC_OK;
}

int bpc_stats_last_call(const bpc_ctx_t *ctx, bpc_call_stats_t *out)
{
  if (ctx == NULL || out == NULL)
    return BPC_ENULL;
  *out = ctx->last;
  return BPC_OK;
}

int bpc_stats_reset(bpc_ctx_t *ctx)
{
  if (ctx == NULL)
    return BPC_ENULL;
  memset(&ctx->total, 0, sizeof ctx->total);
  memset(&ctx->last, 0, sizeof ctx->last);
  ctx->cur_round = 0;
  return BPC_OK;
}

void bpc__stats_begin_call(bpc_ctx_t *ctx, const char *engine)
{
  ctx->stats_agreed = 0;
  memset(&ctx->last, 0, sizeof ctx->last);
  strncpy(ctx->last.engine, engine, sizeof ctx->last.engine - 1);
  ctx->cur_round = 0;
}

void bpc__stats_set_round(bpc_ctx_t *ctx, int round)
{
  if (round < 0)
    round = 0;
  ctx->cur_round = round;
  if (round + 1 > ctx->last.nrounds)
    ctx->last.nrounds = round + 1;
}

static bpc_counters_t *round_slot(bpc_ctx_t *ctx)
{
  int r = ctx->cur_round < BPC_STATS_MAX_ROUNDS ? ctx->cur_round : BPC_STATS_MAX_ROUNDS - 1;
  return &ctx->last.round[r];
}

#define BPC__ADD(field, v) __atomic_fetch_add(&(field), (v), __ATOMIC_RELAXED)

void bpc__stats_sent(bpc_ctx_t *ctx, uint64_t bytes, int local)
{
  bpc_counters_t *c[3] = {&ctx->total, &ctx->last.total, round_slot(ctx)};
  for (int i = 0; i < 3; i++) {
    if (local) {
      BPC__ADD(c[i]->local_bytes, bytes);
      BPC__ADD(c[i]->local_msgs, 1);
    } else {
      BPC__ADD(c[i]->bytes_sent, bytes);
      BPC__ADD(c[i]->msgs_sent, 1);
    }
  }
}

void bpc__stats_recv(bpc_ctx_t *ctx, uint64_t bytes, int local)
{
  if (local)
    return; /* a local transfer is counted once, on the send side */
  bpc_counters_t *c[3] = {&ctx->total, &ctx->last.total, round_slot(ctx)};
  for (int i = 0; i < 3; i++) {
    BPC__ADD(c[i]->bytes_recv, bytes);
    BPC__ADD(c[i]->msgs_recv, 1);
  }
}

void bpc__stats_ops(bpc_ctx_t *ctx, uint64_t n)
{
  bpc_counters_t *c[3] = {&ctx->total, &ctx->last.total, round_slot(ctx)};
  for (int i = 0; i < 3; i++)
    BPC__ADD(c[i]->op_calls, n);
}

void bpc__stats_depth(bpc_ctx_t *ctx, uint64_t depth)
{
  if (depth > ctx->last.op_depth)
    ctx->last.op_depth = depth;
}

void bpc__stats_coll(bpc_ctx_t *ctx)
{
  bpc_counters_t *c[3] = {&ctx->total, &ctx->last.total, round_slot(ctx)};
  for (int i = 0; i < 3; i++)
    BPC__ADD(c[i]->colls, 1);
}

void bpc__stats_wire(bpc_ctx_t *ctx, uint64_t n)
{
  bpc_counters_t *c[3] = {&ctx->total, &ctx->last.total, round_slot(ctx)};
  for (int i = 0; i < 3; i++)
    BPC__ADD(c[i]->wire_sent, n);
}
