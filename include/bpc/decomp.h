/*
 * bpc/decomp.h - blocks and where they live.
 *
 *  - bpc_assign_t: nblocks global block ids (gids 0..nblocks-1) mapped to the
 *    ranks of a context: contiguous (default), round-robin or a user map. Any
 *    relation works, including fewer blocks than ranks (a rank with no block
 *    still takes part in every collective call and returns correctly).
 *  - bpc_decomp_t: a regular n-D decomposition (dim 1..BPC_MAX_DIM) of an
 *    integer domain into nblocks blocks, with its own assignment.
 *  - bpc_blocks_t: the local block store (user data per local gid), with a
 *    foreach that runs over local blocks in parallel with OpenMP.
 *
 * Bounds are half-open: a block's core is [min, max) in every dimension.
 * Grid coordinates of a gid are row-major with dimension 0 fastest:
 * gid = c[0] + divs[0] * (c[1] + divs[1] * (c[2] + ...)).
 */
#ifndef BPC_DECOMP_H
#define BPC_DECOMP_H

#include "bpc/core.h"

#ifdef __cplusplus
extern "C" {
#endif

#define BPC_MAX_DIM 6
/* 3^6 - 1: the most neighbours a block can have. */
#define BPC_MAX_LINKS 728

/* ------------------------------------------------------------- assignment */

typedef enum bpc_assign_mode {
  BPC_ASSIGN_CONTIGUOUS = 0, /* rank r owns gids [r*n/P, (r+1)*n/P) */
  BPC_ASSIGN_ROUND_ROBIN = 1, /* gid g lives on rank g mod P */
  BPC_ASSIGN_USER = 2         /* map[g] is the rank of gid g */
} bpc_assign_mode_t;

typedef struct bpc_assign bpc_assign_t;

/*
 * Create an assignment of `nblocks` gids to the ranks of `ctx`. For
 * BPC_ASSIGN_USER, `map` has nblocks entries (the same on every rank) and is
 * copied; otherwise it must be NULL. Collective over the ranks of ctx
 * (one small reduction): every rank must call it, with the same arguments.
 * An argument error on any rank is that error on every rank (with that
 * rank's message), and valid arguments that differ between ranks are
 * BPC_EMISMATCH on every rank naming the field ("nblocks", "assignment
 * mode" or "assignment map": a hash of the whole gid -> rank relation); on
 * any error *out is NULL on every rank. Engines compare the same hash
 * again, so assignments made for different contexts or by different calls
 * are caught there too. Not allowed inside an engine's callback on the
 * same context (BPC_EBUSY).
 * Ownership: *out is freed with bpc_assign_destroy.
 * Errors: BPC_ENULL (a NULL ctx is reported on that rank only: it has no
 * ranks to tell), BPC_ENBLOCKS (nblocks < 1), BPC_EASSIGN (map NULL for a
 * user map, a rank out of [0, P), or an unknown mode), BPC_EMISMATCH,
 * BPC_EBUSY.
 */
int bpc_assign_create(bpc_ctx_t *ctx, int nblocks, bpc_assign_mode_t mode, const int *map,
                      bpc_assign_t **out);
int bpc_assign_destroy(bpc_assign_t **a);

/* Number of gids (blocks) the assignment spreads over the ranks.
 * Errors: BPC_ENULL. */
int bpc_assign_nblocks(const bpc_assign_t *a, int *nblocks);
/* Rank owning `gid`. Errors: BPC_ERANGE for a gid outside [0, nblocks). */
int bpc_assign_rank(const bpc_assign_t *a, int gid, int *rank);
/* The gids of this rank, ascending; *gids belongs to `a` (may be NULL when
 * *n is 0). */
int bpc_assign_local(const bpc_assign_t *a, const int **gids, int *n);
/* Local index of `gid` on this rank (0..n-1), or -1 if not local. */
int bpc_assign_local_index(const bpc_assign_t *a, int gid, int *index);
/* The context the assignment was made for. */
bpc_ctx_t *bpc_assign_ctx(const bpc_assign_t *a);

/* ---------------------------------------------------------- decomposition */

typedef struct bpc_bounds {
  int dim;
  int64_t min[BPC_MAX_DIM]; /* inclusive */
  int64_t max[BPC_MAX_DIM]; /* exclusive */
} bpc_bounds_t;

typedef struct bpc_decomp_params {
  int dim;                         /* 1..BPC_MAX_DIM */
  int64_t domain_min[BPC_MAX_DIM]; /* the domain is [domain_min, domain_max) */
  int64_t domain_max[BPC_MAX_DIM];
  int nblocks; /* >= 1 */
  /* Blocks per dimension; 0 = choose automatically. Given divisions must
   * divide nblocks, and the product of all must equal it. */
  int divs[BPC_MAX_DIM];
  /* Nonzero: neighbouring cores share their boundary point (the core of a
   * block that has an upper neighbour extends one point into it). */
  int share_face[BPC_MAX_DIM];
  /* Nonzero: periodic boundary in this dimension. */
  int wrap[BPC_MAX_DIM];
  /* Ghost width per dimension (>= 0). */
  int ghost[BPC_MAX_DIM];
  bpc_assign_mode_t assign; /* default contiguous */
  const int *map;           /* for BPC_ASSIGN_USER: nblocks ranks */
} bpc_decomp_params_t;

/* Parameters with dim=3, an empty domain and everything else zero/default. */
bpc_decomp_params_t bpc_decomp_params_default(void);

typedef struct bpc_decomp bpc_decomp_t;

/*
 * Create a regular decomposition. Automatic divisions are as near-cubic as
 * the factors of nblocks allow: among the factorisations that fit the domain
 * (no block thinner than one point), the one with the least total area of
 * internal faces, ties broken towards more blocks in lower dimensions.
 * Collective over the ranks of ctx, like bpc_assign_create: an argument
 * error on any rank is that error on every rank, and parameters that are
 * valid but differ between ranks are BPC_EMISMATCH on every rank naming
 * the first field that differs (dim, domain, divisions, share_face, wrap,
 * ghost, nblocks, assignment mode or map); on any error *out is NULL on
 * every rank. Not allowed inside an engine's callback on the same context
 * (BPC_EBUSY).
 * Ownership: *out is freed with bpc_decomp_destroy; params->map is copied.
 * Errors: BPC_ENULL, BPC_EDIM (dim outside 1..6), BPC_ENBLOCKS (nblocks < 1),
 * BPC_EINVAL (empty domain), BPC_EDIVS (divisions that do not multiply to
 * nblocks, are negative, or exceed the domain's extent; or no automatic
 * choice fits), BPC_EGHOST (negative ghost width), BPC_EASSIGN (see
 * bpc_assign_create), BPC_EMISMATCH, BPC_EBUSY.
 */
int bpc_decomp_create(bpc_ctx_t *ctx, const bpc_decomp_params_t *params, bpc_decomp_t **out);
int bpc_decomp_destroy(bpc_decomp_t **d);

/* The assignment owned by the decomposition (do not destroy it). */
const bpc_assign_t *bpc_decomp_assign(const bpc_decomp_t *d);
int bpc_decomp_dim(const bpc_decomp_t *d, int *dim);
int bpc_decomp_nblocks(const bpc_decomp_t *d, int *nblocks);
/* Blocks per dimension (dim entries written). Arrays of coordinates and
 * points below have (at least) dim entries. */
int bpc_decomp_divs(const bpc_decomp_t *d, int *divs);
int bpc_decomp_domain(const bpc_decomp_t *d, bpc_bounds_t *domain);

/* gid <-> grid coordinates. Errors: BPC_ERANGE. */
int bpc_decomp_gid_to_coords(const bpc_decomp_t *d, int gid, int *coords);
int bpc_decomp_coords_to_gid(const bpc_decomp_t *d, const int *coords, int *gid);

/* Core bounds (with share_face applied) and ghosted bounds (core grown by the
 * ghost width; clamped to the domain where the dimension does not wrap, left
 * outside it where it wraps). Either pointer may be NULL. Errors: BPC_ERANGE. */
int bpc_decomp_bounds(const bpc_decomp_t *d, int gid, bpc_bounds_t *core, bpc_bounds_t *ghosted);

/* The gid whose core (without share_face) contains the point. In wrapping
 * dimensions the point is first wrapped into the domain. Errors: BPC_ERANGE
 * for a point outside the domain in a non-wrapping dimension. */
int bpc_decomp_point_to_gid(const bpc_decomp_t *d, const int64_t *pt, int *gid);

typedef struct bpc_link {
  int gid;              /* the neighbour */
  int dir[BPC_MAX_DIM]; /* -1, 0 or +1 per dimension: where it lies */
  /* -1 / +1 where the step crossed the lower / upper periodic boundary, 0
   * otherwise. To place the neighbour next to this block, add
   * wrap[i] * extent[i] to its coordinates; to move a point of this block
   * into the neighbour's frame, subtract it. */
  int wrap[BPC_MAX_DIM];
  int nonzero; /* number of nonzero dir entries: 1 face, 2 edge, 3 corner... */
} bpc_link_t;

/*
 * Neighbours of `gid` (faces, edges and corners), in a fixed order: the
 * directions enumerated with dimension 0 fastest, -1 before 0 before +1.
 * A neighbour across a periodic boundary is listed with its wrap; with one
 * block in a wrapping dimension a block is its own neighbour. Writes at most
 * `cap` links and the total in *n; BPC_ERANGE if cap < total (*n still set).
 */
int bpc_decomp_links(const bpc_decomp_t *d, int gid, bpc_link_t *links, int cap, int *n);

/* ------------------------------------------------------------ block store */

/* Create the user data of a local block; return NULL on failure. */
typedef void *(*bpc_block_create_fn)(int gid, void *user);
/* Destroy what create made (may be NULL in bpc_blocks_create). */
typedef void (*bpc_block_destroy_fn)(void *block, int gid, void *user);
/* Work on one local block; nonzero stops the foreach (BPC_ECALLBACK). */
typedef int (*bpc_block_fn)(void *block, int gid, void *user);

typedef struct bpc_blocks bpc_blocks_t;

/*
 * Create the local blocks of assignment `a` (create is called once per local
 * gid, in gid order). `a` must outlive the store. Ownership: the store owns
 * the blocks and calls destroy on each in bpc_blocks_destroy.
 * Errors: BPC_ENULL, BPC_ECALLBACK (create returned NULL; the blocks made so
 * far are destroyed), BPC_ENOMEM; on any error *out is NULL (when out is
 * not NULL).
 */
int bpc_blocks_create(const bpc_assign_t *a, bpc_block_create_fn create,
                      bpc_block_destroy_fn destroy, void *user, bpc_blocks_t **out);
int bpc_blocks_destroy(bpc_blocks_t **b);
/* Number of local blocks, and the user data of local block i (gid order). */
int bpc_blocks_count(const bpc_blocks_t *b, int *n);
int bpc_blocks_at(const bpc_blocks_t *b, int i, void **block, int *gid);
/* The user data of local gid; BPC_ENOTFOUND if the gid is not local. */
int bpc_blocks_get(const bpc_blocks_t *b, int gid, void **block);
/* Call fn on every local block, in parallel (OpenMP) when nthreads != 1
 * (nthreads 0: the OpenMP default). All blocks are visited even if one
 * fails; the first failure in gid order is returned as BPC_ECALLBACK. */
int bpc_blocks_foreach(bpc_blocks_t *b, bpc_block_fn fn, void *user, int nthreads);

#ifdef __cplusplus
}
#endif
#endif /* BPC_DECOMP_H */
