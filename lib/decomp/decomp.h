/*
 * lib/decomp/decomp.h - internal view of assignments, decompositions and
 * block stores, for engines. Not installed.
 */
#ifndef BPC_LIB_DECOMP_H
#define BPC_LIB_DECOMP_H

#include "bpc/decomp.h"
#include "core/core.h"

struct bpc_assign {
  bpc_ctx_t *ctx;
  int nblocks;
  int nranks;
  int rank;
  bpc_assign_mode_t mode;
  int *map;   /* user map (BPC_ASSIGN_USER), else NULL */
  int *local; /* local gids, ascending */
  int nlocal;
};

/* Rank of gid (no range check: 0 <= gid < nblocks). */
int bpc__assign_rank(const bpc_assign_t *a, int gid);
/* Same, with the signature bpc__exch_open wants (arg is the assignment). */
int bpc__assign_rank_cb(const void *a, int gid);
/* Local index of gid, or -1. */
int bpc__assign_local_index(const bpc_assign_t *a, int gid);

#endif /* BPC_LIB_DECOMP_H */
