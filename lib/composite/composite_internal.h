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

#include <stdint.h>
#include <string.h>

#include "bpc/composite.h"
#include "comm/coll.h"
#include "core/core.h"
#include "core/registry.h"

/* A sorted list of disjoint pixel runs [r[2i], r[2i+1]) (active.c). */
typedef struct bpc__composite_runs {
  size_t *r;
  size_t n, cap;
} bpc__composite_runs_t;

/* Which operator a call runs: the built-in "over" or "zbuffer" (bpc_op_builtin;
 * applied with compositing's own pixel kernels, depth included) or the
 * user's. */
typedef enum bpc__composite_kind {
  BPC__COMPOSITE_OVER,
  BPC__COMPOSITE_ZBUFFER,
  BPC__COMPOSITE_USER
} bpc__composite_kind_t;

/* The kind of params.op (its fn non-NULL). */
bpc__composite_kind_t bpc__composite_kind(const bpc_op_t *op);

/* One compositing call's pixel format and codec counters (the `user` of
 * the operator and of the codec). */
typedef struct bpc__cp {
  bpc__composite_kind_t op;
  int stride;             /* floats per pixel: 4 (rgba) or 5 (rgba, depth) */
  size_t px_per_elem;     /* pixels per swap element: 1, or width (rows) */
  bpc_op_t uop;           /* the user's operator (op == BPC__COMPOSITE_USER) */
  float empty_depth;      /* depth of an empty pixel (stride 5) */
  size_t npix;            /* pixels of an image */
  int encode;             /* active pixels on for this call */
  /* radix-k's sparse hooks: per local block its swap buffer and a superset
   * of its active pixels as runs (NULL when not used) */
  int nlocal;
  float **px;
  bpc__composite_runs_t *runs;
  /* what the lists are known to cover (active.c "Found when sent"): per
   * block the ranges its list covers completely (scanned, or everything),
   * and the ranges a dense piece was folded into (non-empty pixels may lie
   * outside the valid rectangle there) */
  bpc__composite_runs_t *known, *dirty;
  /* outputs filled on demand (active.c; params.output with valid
   * rectangles): per block the ranges of its buffer that hold the call's
   * data, or NULL when all of it does */
  bpc__composite_runs_t *init;
  const bpc_composite_rect_t *valid; /* per local block, or NULL */
  size_t width;           /* pixels of an image row */
  int nthreads;           /* threads a scan may use (>= 1) */
  size_t min_chunk;       /* least pixels a thread scans */
  void *units;            /* a threaded scan's chunks and their lists (active.c),
                           * kept for the call's next scans */
  size_t nunits;
  /* planar (images with depth): px holds rgba only (4 floats a
   * pixel) and dpx each block's depth plane; pieces always travel encoded
   * (5 floats a pixel) */
  int planar;
  float **dpx;
  bpc__composite_runs_t tmp, tmp2;            /* spare lists, reused: unions are built in them
                                               * and swapped with the block's list */
  unsigned long long bytes_dense, bytes_sent; /* what this rank's sends cost */
  unsigned long long pieces_encoded;
} bpc__composite_t;

/* One call's state, from the entry to the strategy's run and the layout. */
typedef struct bpc__composite_call {
  bpc_ctx_t *ctx;
  const bpc_assign_t *assign;
  bpc_image_t *images;            /* nlocal of them */
  const bpc_composite_params_t *P;
  int rank, nranks, nblocks, nlocal;
  const int *lgids;
  /* the image format: this rank's until the agreement, then every rank's */
  int width, height, hasdepth;
  /* the schedule, set by the strategy row's run (before the agreement) */
  int swap_algo;                  /* bpc_swap_algorithm_t */
  const int *k;                   /* its k-vector (radixk), or NULL: automatic */
  int nk;
  int kbuf[BPC_SWAP_MAX_K];       /* room for a k-vector the run computes */
  /* the layout (layout.c) */
  bpc__composite_t cp;
  size_t npix, count, es;         /* pixels, swap elements, element bytes */
  void **bufs;                    /* per local block: the buffer the swap reduces */
  const void **out_src;           /* per local block: its input, when the swap reads
                                   * round 0 from it into an output (layout.c) */
  float **packed;                 /* per local block: rgba+depth interleaved, or NULL */
  size_t *packed_cap;             /* their pool capacities */
  bpc_swap_piece_t *sp;           /* per local block: the owned piece (elements) */
  int *pos_of;                    /* gather rank: pos_of[gid] */
  int sparse;                     /* some local image is less than half active */
  int planar;                     /* depth: rgba and depth stay apart */
  bpc_swap_info_t sinfo;          /* what the swap ran */
} bpc__composite_call_t;

/* The strategy table (strategy.c), listed in lib/engines/engines.c. */
extern const bpc__engine_t bpc__engine_composite;

/* Pick the strategy row (argument, BPC_COMPOSITE_ALGORITHM, else radixk);
 * BPC_EALGO with a message for an unknown name. */
int bpc__composite_pick(bpc_ctx_t *ctx, const char *name, const bpc__algo_t **row,
                        bpc_algo_source_t *source);

/* The pixel operators as a bpc_op_fn on swap elements; user is a
 * bpc__composite_t (operators.c). */
int bpc__composite_op(const void *in, void *inout, size_t count, int in_first, void *user);
/* The same on npix pixels (the one place the operators are computed). */
int bpc__composite_px(const bpc__composite_t *cp, float *o, const float *a, size_t npix,
                      int in_first);
/* The same into planar pixels: rgba o4 (4 floats each) and depth od, with
 * `a` interleaved (5 floats each). */
int bpc__composite_px_planar(const bpc__composite_t *cp, float *o4, float *od, const float *a,
                             size_t npix, int in_first);

/* Layout (layout.c). */
/* The swap buffers of this rank's blocks (rgba in place, or rgba+depth
 * interleaved into new buffers), the gather rank's position table, and the
 * sparse estimate; before the agreement, on this rank's own format.
 * BPC_ENOMEM with a message. */
int bpc__composite_pack(bpc__composite_call_t *c);
/* The internal test switch BPC_COMPOSITE_INTERLEAVE=1 (depth interleaved,
 * the layout of images over 2^32 pixels): in the call's signature, since
 * it changes the messages. */
int bpc__composite_interleave_env(void);
/* The pixel format and element counts from the agreed image format. */
void bpc__composite_format(bpc__composite_call_t *c);
/* Run the strategy's schedule on the swap engine (the one call into it). */
int bpc__composite_swap(bpc__composite_call_t *c);
/* The owned pieces back into the user's layout (and pieces[], if given). */
void bpc__composite_unpack(bpc__composite_call_t *c, bpc_composite_piece_t *pieces);
/* Gather the final image to P->gather_rank through an exchange, whose end
 * agrees on the outcome (the same code on every rank). */
int bpc__composite_gather(bpc__composite_call_t *c);
/* With active pixels (or planar depth): each local block's run lists
 * (active.c), empty until the pieces are sent (found when sent; planar
 * without active pixels: the whole image, unscanned); BPC_ENOMEM with a
 * message. */
int bpc__composite_runs(bpc__composite_call_t *c);
/* Free what bpc__composite_pack and bpc__composite_runs made. */
void bpc__composite_free(bpc__composite_call_t *c);

/* Active pixels (active.c). The swap engine's sparse hooks
 * (bpc__swap_sparse_t; user is a bpc__composite_t with px and runs set): */
size_t bpc__composite_encode_block(void *dst, size_t cap, int lb, size_t off, size_t count,
                                   void *user);
int bpc__composite_check(const void *src, size_t bytes, size_t count, void *user);
int bpc__composite_blend(int lb, size_t off, void *inout, size_t count, const void *src,
                         size_t bytes, size_t lo, size_t len, int in_first, void *user);
/* Planar: the most bytes a piece of count elements encodes into. */
size_t bpc__composite_bound(size_t count, void *user);
void bpc__composite_prepare(int lb, size_t off, size_t count, const void *src, size_t bytes,
                            void *user);
void bpc__composite_absorb(int lb, size_t off, size_t count, const void *src, size_t bytes,
                           void *user);
void bpc__composite_keep(int lb, size_t off, size_t count, void *user);
/* Set up the lists of cp->nlocal blocks (cp->px, valid, width, nthreads,
 * min_chunk, encode set): nothing known yet (with active pixels; found when
 * sent), or every pixel active (planar without them). -1: out of memory. */
int bpc__composite_runs_init(bpc__composite_t *cp);
void bpc__composite_runs_free(bpc__composite_t *cp);
/* Outputs filled on demand (after bpc__composite_runs_init, with cp->valid and
 * encoding on; px/dpx the outputs): copy each block's valid rectangle from
 * its input image in[i] (rgba; depth too when planar) and note that only
 * that is filled; the rest is written as the call needs it (the empty
 * pattern, what the input holds there). -1: out of memory (nothing noted:
 * the caller copies the whole images). */
int bpc__composite_outputs_on_demand(bpc__composite_t *cp, const bpc_image_t *in);
/* The block's final piece, elements [off, off + count), filled (after the
 * swap, before its pieces are read). */
void bpc__composite_finish(bpc__composite_t *cp, int lb, size_t off, size_t count);
/* Write a checked encoding of np pixels out as the empty pattern plus its
 * runs: rgba 4 floats per pixel every rs floats, depth (if not NULL) every
 * ds floats (planes or interleaved). */
void bpc__composite_unpack_runs(const bpc__composite_t *cp, const void *src, size_t np, float *rgba,
                                size_t rs, float *depth, size_t ds);

/* Fraction of non-empty pixels in the rectangle (x0, y0, w, h) of an image
 * width pixels wide in the internal layout (stride floats a pixel),
 * estimated from BPC__CP_SAMPLES pixels spread over it (all of them in a
 * smaller rectangle). The rectangle lies inside the image; px may be NULL
 * only when w * h is 0 (the result is then 0). */
#define BPC__CP_SAMPLES 1024
double bpc__composite_active_fraction(const float *px, size_t width, size_t x0, size_t y0, size_t w,
                                      size_t h, int stride, float empty_depth);

/* Is the pixel empty (rgba all zero bits; depth, if any, the empty depth
 * whose bits are edbits)? */
static inline int bpc__composite_px_empty(const float *px, int stride, uint32_t edbits)
{
  uint64_t a, b;
  memcpy(&a, px, sizeof a);
  memcpy(&b, px + 2, sizeof b);
  if ((a | b) != 0)
    return 0;
  if (stride == 5) {
    uint32_t d;
    memcpy(&d, px + 4, sizeof d);
    return d == edbits;
  }
  return 1;
}
static inline uint32_t bpc__composite_fbits(float f)
{
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

#endif /* BPC_LIB_COMPOSITE_INTERNAL_H */
