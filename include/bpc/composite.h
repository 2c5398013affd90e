/*
 * bpc/composite.h - the image-compositing plug-in (sort-last parallel
 * rendering) on the swap engine's schedules. See doc/composite.md.
 *
 * Every block holds a full-size image (width x height RGBA float,
 * premultiplied alpha, 16 bytes per pixel, optional float depth); the
 * images are combined pixel by pixel with an operator ("over" in a
 * visibility order, z-buffer, or a user operator) and every block ends up
 * owning one contiguous piece of the final image (a range of pixels, or of
 * whole rows), in place in its own image. Optionally the whole image is
 * gathered to one rank. Strategies (one file each in
 * lib/composite/strategies/, listed by bpc_algorithms("composite")):
 * radix-k, binary swap, direct send, shift-based, parallel pipeline.
 * Active pixels: pieces travel as runs of non-empty pixels; with every
 * strategy they are blended straight into the receiving image touching
 * only those runs, and each block remembers where
 * its non-empty pixels are from round to round, so sparse images cost work
 * in proportion to their non-empty pixels. See doc/composite.md.
 */
#ifndef BPC_COMPOSITE_H
#define BPC_COMPOSITE_H

#include "bpc/core.h"
#include "bpc/decomp.h"
#include "bpc/swap.h"

#ifdef __cplusplus
extern "C" {
#endif

/* An image: pixel (x, y) is at index y * width + x (row 0 first). */
typedef struct bpc_image {
  int width, height; /* >= 0 (0 x 0 is an empty frame) */
  float *rgba;       /* width * height * 4 floats, premultiplied alpha */
  float *depth;      /* width * height floats, or NULL (no depth) */
} bpc_image_t;

/* A rectangle of pixels: columns [x, x + width), rows [y, y + height). */
typedef struct bpc_composite_rect {
  int x, y, width, height;
} bpc_composite_rect_t;

/*
 * Operators (params.op, a bpc_op_t of bpc/op.h). An empty pixel is rgba all
 * +0.0f and, with depth, depth equal to params.empty_depth (bit for bit;
 * +infinity by default): it is the identity of every operator, so
 * compositing skips it. The built-in ones (bpc_op_builtin(name, MPI_FLOAT,
 * &op)), applied with compositing's own kernels:
 *  - "over" (the default): front + (1 - front.a) * back per channel
 *    (premultiplied), in the visibility order (position 0 in front); not
 *    commutative. Depth, when present, becomes the front's depth unless
 *    the front pixel is empty, then the back's (the depth of the nearest
 *    non-empty pixel; a pixel with alpha 0 and colour > 0, or with rgba 0
 *    and another depth, is not empty).
 *  - "zbuffer": the pixel with the smaller depth wins (ties: the larger
 *    rgba bit pattern wins, so the operator commutes exactly); needs depth.
 *    Depths must not exceed the empty depth (an empty pixel would win over
 *    them).
 * Any other operator is the user's: count pixels of 4 floats (rgba) or, for
 * images with depth, 5 (rgba then depth); in_left != 0: inout = in o inout,
 * else inout = inout o in. It must be associative, pixel-wise and
 * thread-safe for disjoint ranges, and the empty pixel must be its
 * identity when active pixels are on (every strategy then skips empty
 * incoming pixels; pieces sent dense still pass them).
 */

/* How the final image is cut into the blocks' pieces. */
typedef enum bpc_composite_split {
  BPC_COMPOSITE_PIXELS = 0, /* ranges of pixels (row-major) */
  BPC_COMPOSITE_ROWS = 1    /* ranges of whole rows */
} bpc_composite_split_t;

/* Strategies (the ids of the strategy table, bpc_algorithms("composite")). */
typedef enum bpc_composite_strategy {
  BPC_COMPOSITE_AUTO = 0,
  BPC_COMPOSITE_RADIXK = 1,      /* "radixk": k-vector rounds (given or automatic) */
  BPC_COMPOSITE_BINARY_SWAP = 2, /* "binary-swap": rounds of 2 (odd factors: see doc) */
  BPC_COMPOSITE_DIRECT_SEND = 3, /* "direct-send": one round of n */
  BPC_COMPOSITE_SHIFT = 4,       /* "shift": shift permutation stages */
  BPC_COMPOSITE_PIPELINE = 5     /* "pipeline": parallel pipeline (ring) */
} bpc_composite_strategy_t;

typedef struct bpc_composite_params {
  /* A strategy name of bpc_algorithms("composite") ("radixk",
   * "binary-swap", "direct-send", "shift", "pipeline"; any case) or "auto"
   * (NULL = "auto"). "auto" takes BPC_COMPOSITE_ALGORITHM from the
   * environment if set, else radixk with an automatic k-vector. */
  const char *algorithm;
  bpc_op_t op; /* the operator (see above); default "over" */
  /* radixk: k-vector (product = number of blocks), or NULL / 0 = automatic */
  const int *k;
  int nk;
  /* visibility order, front to back: order[pos] = gid (a permutation; the
   * same on every rank); NULL = gid order. See bpc_composite_order_view. */
  const int *order;
  bpc_composite_split_t split;
  /* nonzero (default): encode sparse pieces (on one process, for images
   * without depth, only with valid rectangles that leave less than half of
   * the pixels to look at and under a quarter of them estimated active:
   * else dense is cheaper there); 0: dense */
  int active_pixels;
  /* Depth of an empty pixel (images with depth): +infinity by default; e.g.
   * 1.0f for a [0, 1] depth range (IceT's convention). The same on every
   * rank. Pixels with rgba 0 and another depth are not empty. */
  float empty_depth;
  /* Optional: one rectangle per local block (local order) that holds every
   * non-empty pixel of that block's image (e.g. the screen-space bounds of
   * the block's data; IceT's valid viewport); the block's own pixels
   * outside it are never looked at, so finding the non-empty pixels of
   * what it sends shrinks to the rectangle (other blocks' pixels that
   * reach the image later are found wherever they land). A width or
   * height of 0 says the image is empty. NULL = unknown (what is sent is
   * scanned whole). A rectangle too small is the
   * caller's error: pixels outside it are then dropped from what other
   * blocks receive, and the result is unspecified. Rectangles outside the
   * image are BPC_EINVAL. Not compared across ranks. */
  const bpc_composite_rect_t *valid;
  /* Optional: one output image per local block (same size and depth
   * presence as the input). NULL (default): the call works in place in
   * `images` (no copy). Given: `images` are only read and the outputs
   * receive what the input would have: the block's piece of the final
   * image at pieces[i].offset, scratch elsewhere. What is copied from
   * the inputs (doc/composite.md, "Input and output"): on a call that
   * encodes its pieces (active pixels on and used) with valid rectangles,
   * only the rectangles (the rest of an output is written where the call
   * needs it, with the empty pattern); on one that does not, for images
   * without depth and a radix-k strategy, only what each block keeps and
   * its pieces for blocks of its own process (the others are sent from
   * the input); otherwise each input whole (one pass over each image). */
  bpc_image_t *output;
  /* Gather the final image to this rank (-1 = no gather, the default):
   * gather_rgba (width*height*4 floats) and, when the images have depth,
   * gather_depth (width*height, may be NULL to skip it) on that rank. */
  int gather_rank;
  float *gather_rgba;
  float *gather_depth;
  int nthreads; /* OpenMP threads for the reductions and the scans for non-empty
                 * pixels: 0 = OpenMP default, 1 none, n */
} bpc_composite_params_t;

/* Defaults: auto, over, automatic k, identity order, pixel ranges, active
 * pixels on, empty depth +infinity, no valid rectangles, in place, no
 * gather, default threads. */
bpc_composite_params_t bpc_composite_params_default(void);

/* The piece of the final image a block owns. */
typedef struct bpc_composite_piece {
  size_t offset; /* first pixel (row-major index) */
  size_t count;  /* pixels (a multiple of width with BPC_COMPOSITE_ROWS) */
} bpc_composite_piece_t;

/* What a call did (this rank). */
typedef struct bpc_composite_info {
  bpc_composite_strategy_t algorithm; /* the strategy that ran (never AUTO) */
  char name[16];                      /* its name */
  bpc_algo_source_t source;           /* where the choice came from */
  bpc_swap_info_t swap;      /* the swap schedule that ran */
  unsigned long long bytes_dense;   /* bytes this rank's pieces would take dense */
  unsigned long long bytes_sent;    /* bytes actually sent by this rank's pieces */
  unsigned long long bytes_saved;   /* bytes_dense - bytes_sent (active pixels), or 0 when
                                     * encoding cost more (with depth every piece
                                     * is encoded: 24 bytes more for a dense one) */
} bpc_composite_info_t;

/*
 * bpc_composite: composite the local blocks' images. Collective over the
 * context (every rank calls it, also ranks without blocks) with the same
 * assignment and params (except gather buffers).
 *  images: one per local block (local order); all images of all blocks must
 *    have the same width, height and depth presence. Without
 *    params.output, rgba is read and overwritten: on return the block's
 *    piece of the final image is at pixel `pieces[i].offset` of
 *    images[i].rgba (and .depth); the rest of rgba (and, with depth,
 *    depth) is scratch. With params.output the images are only read and
 *    the outputs get all of that instead. May be NULL when this rank has
 *    no blocks.
 *  pieces: out, one per local block (may be NULL).
 *  info:   out (may be NULL).
 * With a gather, the pieces travel to the gather rank through bpc's
 * exchange (counted in bpc_stats_last_call, as a round after the swap's).
 * Errors (the same code on every rank, with the failing rank's message;
 * nothing is sent before they are found):
 *  BPC_ENULL (ctx, assign, images or an image's rgba NULL where needed,
 *  op.fn NULL, gather_rgba NULL on the gather
 *  rank, an output's rgba NULL),
 *  BPC_EINVAL (images of different sizes or depth presence among this
 *  rank's blocks, an output of another size or depth presence than its
 *  input, negative sizes, z-buffer without depth, unknown split,
 *  gather_rank out of range, nthreads < 0, a valid rectangle not inside
 *  the image), BPC_EALGO (unknown
 *  strategy, also in BPC_COMPOSITE_ALGORITHM), BPC_EKVEC (params.k does not
 *  fit the block count), BPC_EPERM (order is not a permutation),
 *  BPC_EMISMATCH (valid values that differ between ranks: image width,
 *  height or depth presence, op (built-in over, built-in zbuffer or a
 *  user's), split, strategy, k-vector, order, active_pixels, empty_depth,
 *  gather_rank, the operator's commutativity), and
 *  bpc_swap's errors (BPC_ECALLBACK, ...). Running out of memory on some
 *  ranks during the call is BPC_ENOMEM on every rank (the others stop
 *  waiting for their pieces).
 */
int bpc_composite(bpc_ctx_t *ctx, const bpc_assign_t *assign, bpc_image_t *images,
                  const bpc_composite_params_t *params, bpc_composite_piece_t *pieces,
                  bpc_composite_info_t *info);

/*
 * The piece owned by the block at position `pos` of the order after a call
 * described by `info`, for images of width x height with the given split.
 * Errors: BPC_ENULL, BPC_ERANGE, BPC_EINVAL.
 */
int bpc_composite_piece_of(const bpc_composite_info_t *info, int width, int height,
                           bpc_composite_split_t split, int pos, bpc_composite_piece_t *piece);

/*
 * Visibility order of a regular block grid (gid = c0 + divs[0] * (c1 +
 * divs[1] * c2 ...), bpc_decomp's numbering): order[pos] = gid, front to
 * back (position 0 nearest the viewer) if back_to_front is 0, else the
 * reverse. Orthographic: `dir` (dim entries) is the viewing direction (from
 * the eye into the scene) and eye is NULL. Perspective: `eye` is the eye
 * position in grid cell units (block c spans [c, c+1) per axis; dir is
 * ignored). Blocks are sorted by the sum over axes of their distance (in
 * blocks) from the eye's slab, ties by gid: the key grows strictly along
 * every ray, so the order is valid for any view. order: nblocks entries.
 * Errors: BPC_ENULL, BPC_EINVAL (dim outside 1..BPC_MAX_DIM, divs < 1).
 */
int bpc_composite_order_view(int dim, const int *divs, const double *dir, const double *eye,
                             int back_to_front, int *order);

#ifdef __cplusplus
}
#endif
#endif /* BPC_COMPOSITE_H */
