/*
 * lib/composite/strategies/pipeline.c - parallel pipeline (Lee et al.), the
 * swap engine's ring schedule.
 *
 * Schedule: n-1 steps; partial composites of the n flat pieces travel
 * between neighbours in the visibility order, each step adding one more
 * block's share. Commutative operators (z-buffer) use the one-way ring; for
 * "over" the ring is cut at its seam and run both ways along the line
 * (partials [0..p] travel up, [p..n-1] down and meet at p), so only
 * neighbours in the order are ever combined.
 *
 * Cost for an image of N bytes: alpha * (n-1) + beta * N (n-1)/n + gamma *
 * N (n-1)/n; neighbours only (good on rings/meshes), no overlap, n-1 steps
 * of latency. Any n works.
 */
#include "composite/composite_internal.h"

int bpc__cp_pipeline(bpc_ctx_t *ctx, int n, const bpc_composite_params_t *P,
                     bpc_swap_params_t *sp, int *kbuf)
{
  (void)ctx;
  (void)n;
  (void)P;
  (void)kbuf;
  sp->algorithm = "ring";
  sp->k = NULL;
  sp->nk = 0;
  return BPC_OK;
}
