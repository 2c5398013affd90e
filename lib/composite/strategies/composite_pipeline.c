/*
 * lib/composite/strategies/composite_pipeline.c - parallel pipeline (Lee et al.), the
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

int bpc__composite_pipeline(void *call)
{
  bpc__composite_call_t *c = call;
  c->swap_algo = BPC_SWAP_RING;
  c->k = NULL;
  c->nk = 0;
  return BPC_OK;
}
