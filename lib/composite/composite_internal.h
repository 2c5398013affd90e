/*
 * lib/composite/composite_internal.h - state shared by the compositing
 * plug-in's files (not installed). Includes only public and core/comm
 * headers, never another composite file, so there is no include cycle:
 *  composite.c  the entry: argument checks, agreement, run
 *  strategy.c   the strategy table (registry rows) and the pick
 *  strategies/  one file per strategy: its run (the swap schedule it uses)
 *  operators.c  the pixel operators (over, z-buffer, user)
 *  layout.c     the pixel layout handed to the swap engine, the one call
 *               into it, the owned pieces back, the gather of the image
 *  active.c     the active-pixel codec
 *  order.c      visibility orders (bpc_composite_order_view)
 */
#ifndef BPC_LIB_COMPOSITE_INTERNAL_H
#define BPC_LIB_COMPOSITE_INTERNAL_H

#include "bpc/composite.h"
#include "comm/coll.h"
#include "core/core.h"
#include "core/registry.h"

/* One compositing call's pixel format and codec counters (the `user` of
 * the operator and of the codec). */
typedef struct bpc__cp {
  bpc_composite_op_t op;
  int stride;             /* floats per pixel: 4 (rgba) or 5 (rgba, depth) */
  size_t px_per_elem;     /* pixels per swap element: 1, or width (rows) */
  bpc_composite_user_fn ufn;
  void *user;
  int encode;             /* active pixels on for this call */
  unsigned long long bytes_dense, bytes_sent; /* what this rank's sends cost */
  unsigned long long pieces_encoded;
} bpc__cp_t;

/* One call's state, from the entry to the strategy's run and the layout. */
typedef struct bpc__cp_call {
  bpc_ctx_t *ctx;
  const bpc_assign_t *assign;
  bpc_image_t *images;            /* nlocal of them */
  const bpc_composite_params_t *P;
  int rank, nblocks, nlocal;
  const int *lgids;
  /* the image format: this rank's until the agreement, then every rank's */
  int width, height, hasdepth;
  /* the schedule, set by the strategy row's run (before the agreement) */
  int swap_algo;                  /* bpc_swap_algorithm_t */
  const int *k;                   /* its k-vector (radixk), or NULL: automatic */
  int nk;
  int kbuf[BPC_SWAP_MAX_K];       /* room for a k-vector the run computes */
  /* the layout (layout.c) */
  bpc__cp_t cp;
  size_t npix, count, es;         /* pixels, swap elements, element bytes */
  void **bufs;                    /* per local block: the buffer the swap reduces */
  float **packed;                 /* per local block: rgba+depth interleaved, or NULL */
  bpc_swap_piece_t *sp;           /* per local block: the owned piece (elements) */
  int *pos_of;                    /* gather rank: pos_of[gid] */
  int sparse;                     /* some local image is less than half active */
  bpc_swap_info_t sinfo;          /* what the swap ran */
} bpc__cp_call_t;

/* The strategy table (strategy.c), listed in lib/engines/engines.c. */
extern const bpc__engine_t bpc__engine_composite;

/* Pick the strategy row (argument, BPC_COMPOSITE_ALGORITHM, else radixk);
 * BPC_EALGO with a message for an unknown name. */
int bpc__cp_pick(bpc_ctx_t *ctx, const char *name, const bpc__algo_t **row,
                 bpc_algo_source_t *source);

/* The pixel operators as a bpc_swap_op_fn; user is a bpc__cp_t
 * (operators.c). */
int bpc__cp_op(void *inout, const void *in, size_t count, int in_first, void *user);

/* Layout (layout.c). */
/* The swap buffers of this rank's blocks (rgba in place, or rgba+depth
 * interleaved into new buffers), the gather rank's position table, and the
 * sparse estimate; before the agreement, on this rank's own format.
 * BPC_ENOMEM with a message. */
int bpc__cp_pack(bpc__cp_call_t *c);
/* The pixel format and element counts from the agreed image format. */
void bpc__cp_format(bpc__cp_call_t *c);
/* Run the strategy's schedule on the swap engine (the one call into it). */
int bpc__cp_swap(bpc__cp_call_t *c);
/* The owned pieces back into the user's layout (and pieces[], if given). */
void bpc__cp_unpack(bpc__cp_call_t *c, bpc_composite_piece_t *pieces);
/* Gather the final image to P->gather_rank through the exchange (not
 * agreed: the caller agrees on the outcome). */
int bpc__cp_gather(bpc__cp_call_t *c);
/* Free what bpc__cp_pack made. */
void bpc__cp_free(bpc__cp_call_t *c);

/* Active-pixel codec (active.c), the bpc_swap_codec_t callbacks; user is a
 * bpc__cp_t. */
size_t bpc__cp_encode(void *dst, size_t cap, const void *src, size_t count, void *user);
int bpc__cp_decode(void *dst, size_t count, const void *src, size_t bytes, void *user);

/* Fraction of non-empty pixels of an image in the internal layout (npix
 * pixels of stride floats), estimated from every 7th pixel. */
double bpc__cp_active_fraction(const float *px, size_t npix, int stride);

/* Is the pixel empty (rgba all zero bits; depth, if any, +infinity)? */
int bpc__cp_empty(const float *px, int stride);

#endif /* BPC_LIB_COMPOSITE_INTERNAL_H */
