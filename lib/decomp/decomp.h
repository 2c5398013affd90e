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
  /* A 63-bit hash of the whole gid -> rank relation (mode, ranks and the
   * user map), made once at creation, so an engine's argument agreement can
   * compare assignments across ranks without touching the map again
   * (bpc__sig_assign in lib/comm/coll.h). */
  long long fingerprint;
};

/* The local work of bpc_assign_create and bpc_decomp_create (checks and
 * construction on this rank only, no message; errors are recorded with
 * the public names). The public creators (lib/engines/creators.c) call
 * these and then agree across ranks, which this layer cannot do. */
int bpc__assign_make(bpc_ctx_t *ctx, int nblocks, bpc_assign_mode_t mode, const int *map,
                     bpc_assign_t **out);
int bpc__decomp_make(bpc_ctx_t *ctx, const bpc_decomp_params_t *params, bpc_decomp_t **out);

/* Rank of gid (no range check: 0 <= gid < nblocks). */
int bpc__assign_rank(const bpc_assign_t *a, int gid);
/* Same, with the signature bpc__exch_open wants (arg is the assignment). */
int bpc__assign_rank_cb(const void *a, int gid);
/* Local index of gid, or -1. */
int bpc__assign_local_index(const bpc_assign_t *a, int gid);

struct bpc_decomp {
  bpc_ctx_t *ctx;
  int dim;
  int nblocks;
  int64_t dmin[BPC_MAX_DIM]; /* domain [dmin, dmax) */
  int64_t dmax[BPC_MAX_DIM];
  int divs[BPC_MAX_DIM];
  int share_face[BPC_MAX_DIM]; /* 0 or 1 */
  int wrap[BPC_MAX_DIM];       /* 0 or 1 */
  int ghost[BPC_MAX_DIM];
  bpc_assign_t *assign; /* owned */
};

struct bpc_blocks {
  const bpc_assign_t *assign; /* not owned */
  int n;                      /* local blocks (assign->nlocal) */
  void **data;                /* user data per local block, gid order */
  bpc_block_destroy_fn destroy;
  void *user;
};

/* Start (offset from the domain minimum) of piece i of an extent cut into n
 * nearly equal pieces: floor(i * extent / n), without overflow. */
int64_t bpc__decomp_piece_start(int64_t extent, int n, int i);

/* Automatic divisions: fill the zero entries of divs[0..dim) so that the
 * product is nblocks and divs[d] <= extent[d], minimising the total area of
 * internal faces (ties: more blocks in lower dimensions). Returns 0 on
 * success, -1 if the given entries do not divide nblocks or nothing fits.
 * Pure function of its arguments; no allocation. */
int bpc__decomp_auto_divs(int dim, const int64_t extent[BPC_MAX_DIM], int nblocks,
                          int divs[BPC_MAX_DIM]);

#endif /* BPC_LIB_DECOMP_H */
