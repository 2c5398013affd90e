/*
 * tests/common/swap_run.h - run one bpc_swap case and check every local
 * block's piece against the serial reference (tests/common/swap_ops.h).
 * Used by the serial and the MPI swap suites. Header-only, static.
 *
 * Checks: the call returns BPC_OK; each block's piece equals
 * bpc_swap_piece_of(info, its position); the pieces of all positions tile
 * [0, count) exactly once (within each partial group the group's own
 * reduction); every element of the piece equals the reference reduction of
 * the block's group (the whole order, or its partial group) in order.
 */
#ifndef BPC_TESTS_SWAP_RUN_H
#define BPC_TESTS_SWAP_RUN_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "swap_ops.h"
#include "swap_sparse.h"

typedef struct so_case {
  int op;
  size_t count;
  bpc_swap_params_t params;
  /* 0: bpc_swap on full inputs; 1, 2: inputs with holes through the
   * sparse hooks (swap_sparse.h: 1 encoded when smaller, 2 always) */
  int sparse;
} so_case_t;

/* Pieces this rank encoded in the last sparse so_run. */
static long so_last_encoded __attribute__((unused)) = 0;

/* Run the case on assignment `a`. Returns the number of failed checks on
 * this rank (messages to stderr with `tag`). *rc_out gets bpc_swap's code,
 * *info_out (may be NULL) what ran. If keep != NULL, the local buffers are
 * returned there (caller frees each and the array) instead of being freed. */
static inline int so_run(bpc_ctx_t *ctx, const bpc_assign_t *a, const so_case_t *c,
                         const char *tag, int *rc_out, bpc_swap_info_t *info_out, void ***keep)
{
  const int *gids = NULL;
  int nl = 0, n = 0, fails = 0;
  bpc_assign_local(a, &gids, &nl);
  bpc_assign_nblocks(a, &n);
  const size_t es = so_elem_size(c->op);
  void **bufs = calloc((size_t)(nl > 0 ? nl : 1), sizeof(void *));
  bpc_swap_piece_t *pieces = calloc((size_t)(nl > 0 ? nl : 1), sizeof *pieces);
  int *order = malloc(sizeof(int) * (size_t)n);
  int *pos_of = malloc(sizeof(int) * (size_t)n);
  for (int i = 0; i < n; i++)
    order[i] = c->params.order ? c->params.order[i] : i;
  for (int i = 0; i < n; i++)
    pos_of[order[i]] = i;
  so_holes = c->sparse != 0; /* the inputs and the reference alike */
  for (int i = 0; i < nl; i++) {
    bufs[i] = malloc(c->count * es + 1);
    so_fill(c->op, gids[i], bufs[i], c->count);
  }
  bpc_type_t type = bpc_type_contiguous(es, so_mpi_type(c->op));
  bpc_op_t op = so_op(c->op);
  bpc_swap_info_t info;
  memset(&info, 0, sizeof info);
  int rc = c->sparse ? so_swap_sparse(ctx, a, &type, bufs, c->count, &op, c->op, &c->params,
                                      pieces, &info, c->sparse, &so_last_encoded)
                     : bpc_swap(ctx, a, &type, bufs, c->count, &op, &c->params, pieces, &info);
  *rc_out = rc;
  if (info_out)
    *info_out = info;
  if (rc != BPC_OK) {
    fprintf(stderr, "%s: bpc_swap failed: %s (%s)\n", tag, bpc_err_name(rc), bpc_last_error(ctx));
    fails++;
    goto done;
  }
  /* tiling (pure function of info), within each group */
  {
    const int g = info.group > 0 ? info.group : n;
    unsigned char *cover = calloc(c->count + 1, 1);
    for (int g0 = 0; g0 < n && fails < 5; g0 += g) {
      memset(cover, 0, c->count + 1);
      for (int p = g0; p < g0 + g; p++) {
        bpc_swap_piece_t pc;
        if (bpc_swap_piece_of(&info, c->count, p, &pc) != BPC_OK ||
            pc.offset + pc.count > c->count) {
          fprintf(stderr, "%s: piece_of(pos %d) invalid\n", tag, p);
          fails++;
          continue;
        }
        for (size_t e = pc.offset; e < pc.offset + pc.count; e++)
          cover[e]++;
      }
      for (size_t e = 0; e < c->count; e++)
        if (cover[e] != 1) {
          fprintf(stderr, "%s: element %zu covered %d times in group at %d\n", tag, e, cover[e],
                  g0);
          fails++;
          break;
        }
    }
    free(cover);
  }
  for (int i = 0; i < nl && fails < 5; i++) {
    const int p = pos_of[gids[i]];
    bpc_swap_piece_t pc;
    bpc_swap_piece_of(&info, c->count, p, &pc);
    if (pc.offset != pieces[i].offset || pc.count != pieces[i].count) {
      fprintf(stderr, "%s: block %d (pos %d) got piece [%zu,+%zu), piece_of says [%zu,+%zu)\n",
              tag, gids[i], p, pieces[i].offset, pieces[i].count, pc.offset, pc.count);
      fails++;
      continue;
    }
    const int g = info.group > 0 ? info.group : n;
    const int g0 = p - p % g;
    for (size_t e = pieces[i].offset; e < pieces[i].offset + pieces[i].count; e++) {
      unsigned char ref[16];
      so_reference(c->op, order, g0, g0 + g, e, ref);
      if (!so_equal(c->op, (char *)bufs[i] + e * es, ref)) {
        fprintf(stderr, "%s: block %d (pos %d) element %zu differs from the reference\n", tag,
                gids[i], p, e);
        fails++;
        break;
      }
    }
  }
done:
  so_holes = 0;
  if (keep != NULL) {
    *keep = bufs;
  } else {
    for (int i = 0; i < nl; i++)
      free(bufs[i]);
    free(bufs);
  }
  free(pieces);
  free(order);
  free(pos_of);
  return fails;
}

#endif /* BPC_TESTS_SWAP_RUN_H */
