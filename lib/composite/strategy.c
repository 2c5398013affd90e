/*
 * lib/composite/strategy.c - the compositing strategies as registry rows
 * (bpc_algorithms("composite")) and the pick: params.algorithm, else
 * BPC_COMPOSITE_ALGORITHM, else radixk with an automatic k-vector; names
 * case-insensitive (lib/core/registry.h).
 *
 * A strategy is one file in lib/composite/strategies/ defining its run (an
 * int (void *call) that sets the swap schedule of a bpc__composite_call_t: the
 * swap algorithm, the k-vector) plus one row below (and its declaration
 * above the table) and its line in Makefile.mk; see doc/contributing.md.
 */
#include "composite/composite_internal.h"

/* The strategies' runs (lib/composite/strategies/composite_<name>.c). */
int bpc__composite_radixk(void *call);
int bpc__composite_binary_swap(void *call);
int bpc__composite_direct_send(void *call);
int bpc__composite_shift(void *call);
int bpc__composite_pipeline(void *call);

static const bpc__algo_t rows[] = {
    {{BPC_COMPOSITE_RADIXK, "radixk", "radix-k rounds (k-vector given or automatic)"},
     bpc__composite_radixk,
     NULL},
    {{BPC_COMPOSITE_BINARY_SWAP, "binary-swap", "rounds of 2 (odd factors as extra rounds)"},
     bpc__composite_binary_swap,
     NULL},
    {{BPC_COMPOSITE_DIRECT_SEND, "direct-send", "one round: every piece straight to its owner"},
     bpc__composite_direct_send,
     NULL},
    {{BPC_COMPOSITE_SHIFT, "shift", "shift-permutation stages, compositing overlapped"},
     bpc__composite_shift,
     NULL},
    {{BPC_COMPOSITE_PIPELINE, "pipeline", "parallel pipeline: partials travel between neighbours"},
     bpc__composite_pipeline,
     NULL},
};

const bpc__engine_t bpc__engine_composite = {"composite", "BPC_COMPOSITE_ALGORITHM", rows,
                                             BPC__NROWS(rows), NULL};

int bpc__composite_pick(bpc_ctx_t *ctx, const char *name, const bpc__algo_t **row,
                        bpc_algo_source_t *source)
{
  int rc = bpc__algo_pick(ctx, &bpc__engine_composite, name, NULL, row, source);
  if (rc == BPC_OK && *row == NULL) /* the built-in rule: radixk */
    *row = bpc__algo_by_id(&bpc__engine_composite, BPC_COMPOSITE_RADIXK);
  return rc;
}
