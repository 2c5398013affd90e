/*
 * lib/datatype/datatype.h - internal item-type helpers for the engines that
 * move items (merge, swap, all-to-all, neighbour exchange, broadcast, scan).
 * Not installed.
 *
 * Conventions of this header:
 *  - `t` must have passed bpc_type_check (the engines check the type once,
 *    on every rank alike, before posting any message); these helpers check
 *    their pointer arguments but not the type again.
 *  - Items of contiguous types are `bpc_buf_t *`; items of custom types are
 *    the user's `void *`. NULL is an empty item for both kinds.
 *  - An item returned with *owned = 1 was made by the user's callbacks (or by
 *    bpc_type_unpack) and must be released with bpc__type_release (which
 *    calls bpc_type_item_destroy). An item returned with *owned = 0 is a view: it
 *    borrows someone else's memory and is released by doing nothing (calling
 *    bpc__type_release on it is also fine).
 *  - ctx may be NULL everywhere (then only the code is returned).
 */
#ifndef BPC_LIB_DATATYPE_H
#define BPC_LIB_DATATYPE_H

#include <stdint.h>
#include <string.h>

#include "bpc/datatype.h"
#include "core/core.h"

/* Alignment (bytes) of every payload inside a bundle (bpc__pack_many),
 * relative to the start of the bundle. If the bundle itself is aligned to
 * this (malloc and pool buffers are), contiguous views of its payloads are
 * aligned for any element type. */
#define BPC__PACK_ALIGN 16

/* 1 if items of this type can be split (contiguous, or custom with split). */
int bpc__type_divisible(const bpc_type_t *t);

/*
 * The bytes to send for `item`.
 *  - contiguous: *bytes_ptr points into the user's data (zero copy);
 *    *owned_buf = NULL. The data must stay unchanged until the send is done.
 *  - custom: the item is packed into a new buffer allocated here with
 *    malloc; *bytes_ptr == *owned_buf. The caller frees *owned_buf with
 *    free() once the send has completed.
 * An empty item gives *nbytes = 0, *bytes_ptr = NULL and *owned_buf = NULL.
 * On failure *bytes_ptr, *nbytes and *owned_buf are NULL/0 (nothing to free).
 * Errors: BPC_ENULL, BPC_ERANGE (size overflows), BPC_ENOMEM, BPC_ECALLBACK,
 * BPC_ETYPE (packed_size inconsistent between calls).
 */
int bpc__type_msg(bpc_ctx_t *ctx, const bpc_type_t *t, const void *item, const void **bytes_ptr,
                  size_t *nbytes, void **owned_buf);

/*
 * Pack an item whose packed size the caller has already measured (with
 * bpc_type_size) as `bytes` into `buf` (at least `bytes` bytes; e.g. a pool
 * buffer). The size is measured again: if it now differs, nothing is
 * packed and BPC_ETYPE says so (the item changed, or packed_size is not
 * deterministic) - a custom pack callback is only ever asked to write
 * exactly what packed_size reported.
 * Errors: BPC_ENULL, BPC_ETYPE, BPC_ERANGE, BPC_ECALLBACK.
 */
int bpc__type_pack_exact(bpc_ctx_t *ctx, const bpc_type_t *t, const void *item, void *buf,
                         size_t bytes);

/*
 * Rebuild an item from received bytes.
 *  - contiguous: no copy, no allocation: `*view` (caller's storage) is set
 *    to {bytes, nbytes / elem_size} and *item = view, *owned = 0. The view
 *    is valid as long as `bytes` is (until the message is released).
 *    nbytes not a multiple of elem_size is BPC_ETRUNC.
 *  - custom: *item is a new item from the unpack callback, *owned = 1
 *    (release with bpc__type_release). `view` is unused (may be NULL).
 * `bytes` may be NULL when nbytes is 0. On failure *item = NULL, *owned = 0.
 * Errors: BPC_ENULL, BPC_ETRUNC, BPC_ECALLBACK.
 */
int bpc__type_view(bpc_ctx_t *ctx, const bpc_type_t *t, void *bytes, size_t nbytes,
                   bpc_buf_t *view, void **item, int *owned);

/*
 * A new item of the contiguous type t holding `bytes` bytes (a multiple of
 * the element size), as bpc_type_unpack makes it (one malloc'd block, freed
 * by bpc_type_item_destroy), but uninitialised: the caller fills *data (bytes
 * long, aligned for any element type) in place instead of copying from a
 * buffer (lib/io reads payloads straight into it). On failure *item and
 * *data are NULL.
 * Errors: BPC_ETYPE (not contiguous), BPC_ETRUNC, BPC_ERANGE, BPC_ENOMEM.
 */
int bpc__type_buf_alloc(bpc_ctx_t *ctx, const bpc_type_t *t, size_t bytes, void **item,
                        void **data);
/*
 * Piece i of k of a divisible item (swap-reduce).
 *  - contiguous: a view (no copy): `*view` = elements
 *    [floor(i*count/k), floor((i+1)*count/k)) of the item (the piece ranges
 *    of lib/patterns), *piece = view, *owned = 0. Valid as long as the
 *    item's data is.
 *  - custom: *piece is a new item from the split callback, *owned = 1.
 * Errors: BPC_ENULL, BPC_ERANGE (k < 1 or i out of [0, k)), BPC_ETYPE (no
 * split callback), BPC_ECALLBACK.
 */
int bpc__type_split(bpc_ctx_t *ctx, const bpc_type_t *t, const void *item, int k, int i,
                    bpc_buf_t *view, void **piece, int *owned);

/* Release an item returned by bpc__type_view or bpc__type_split: destroy it
 * if owned, nothing otherwise. NULL item allowed. */
void bpc__type_release(const bpc_type_t *t, void *item, int owned);

/* ------------------------------------------------------------------ bundles
 *
 * A bundle is several items packed into one message (the neighbour exchange
 * sends one message per destination process, DIY Algorithm 3). Layout, in
 * native byte order (bpc moves bytes between processes of one machine type):
 *
 *   uint64_t n;              number of parts
 *   uint64_t size[n];        packed bytes of each part
 *   int64_t  key[n];         the engine's label of each part (e.g. dst gid)
 *   zero padding, payload 0, zero padding, payload 1, ...
 *
 * Each payload starts at the first offset (from the bundle start) after the
 * previous payload (or the index) that is a multiple of BPC__PACK_ALIGN.
 * The bundle ends right after the last payload; with n == 0 it is the 8-byte
 * count alone. Parts may be empty (size 0). The index is 8 + 16 n bytes.
 */

/* One part of a received bundle: a view into the bundle's memory. */
typedef struct bpc__part {
  int64_t key;
  void *data;   /* NULL when bytes == 0 */
  size_t bytes;
} bpc__part_t;

/*
 * Total bytes of the bundle of `n` items of type t (items[i] NULL: empty).
 * n == 0 is valid (an 8-byte bundle); items may be NULL when n == 0.
 * Errors: BPC_ENULL, BPC_ERANGE (n < 0 or size overflow), BPC_ECALLBACK.
 */
int bpc__pack_many_size(bpc_ctx_t *ctx, const bpc_type_t *t, int n, const void *const *items,
                        size_t *bytes);

/*
 * Pack `n` items into `buf` (capacity `cap`) as one bundle; keys[i] is
 * stored with item i (keys may be NULL: all 0). Each item is packed in place
 * (one copy for custom and contiguous items alike). *used gets the bundle's
 * size (== bpc__pack_many_size unless an item changed in between). Each
 * item's packed_size is called once here, and pack is asked to write exactly
 * that many bytes.
 * Errors: BPC_ENULL, BPC_ERANGE (n < 0, or cap too small: then no pack
 * callback has run and *used is 0), BPC_ECALLBACK.
 */
int bpc__pack_many(bpc_ctx_t *ctx, const bpc_type_t *t, int n, const void *const *items,
                   const int64_t *keys, void *buf, size_t cap, size_t *used);

/*
 * Split a bundle of `bytes` bytes at `buf` into its parts: *parts is a new
 * array of *n views into `buf` (allocated here, free with free(); NULL when
 * *n is 0). The views are valid as long as `buf` is. Rebuild items with
 * bpc__type_view. The whole index is validated first: a short, inconsistent
 * or overlong bundle is BPC_ETRUNC with a message saying what is wrong.
 * Errors: BPC_ENULL, BPC_ETRUNC, BPC_ENOMEM.
 */
int bpc__unpack_many(bpc_ctx_t *ctx, void *buf, size_t bytes, int *n, bpc__part_t **parts);

/* The built-in pixel operators (bpc_op_builtin's "over" on 4-float rgba,
 * "zbuffer" on 5-float rgba + depth), which compositing also recognises by
 * these addresses (lib/datatype/op.c). */
int bpc__op_over(const void *in, void *inout, size_t count, int in_left, void *user);
int bpc__op_zbuffer(const void *in, void *inout, size_t count, int in_left, void *user);

/* The kernels of those two, inline for compositing's short runs:
 * bpc__op_over_px on n 4-float pixels (a in front when in_left),
 * bpc__op_zbuffer_n on n 5-float pixels. */
static inline void bpc__op_over_px(const float *a, float *o, size_t n, int in_left)
{
  /* the compiler cannot prove that o and a do not overlap; copying a pixel
   * into locals first lets it blend the four channels in one vector (the
   * same operations in the same order: the same bits) */
  const float *f0 = in_left ? a : o, *b0 = in_left ? o : a;
  for (size_t i = 0; i < 4 * n; i += 4) {
    float f[4], b[4], r[4];
    memcpy(f, f0 + i, sizeof f);
    memcpy(b, b0 + i, sizeof b);
    const float t = 1.0f - f[3];
    for (int c = 0; c < 4; c++)
      r[c] = f[c] + t * b[c];
    memcpy(o + i, r, sizeof r);
  }
}

/* The z-buffer's choice: nonzero when pixel x (5 floats: rgba, depth) wins
 * over the pixel of rgba o and depth od: the smaller depth, on a tie the
 * larger rgba bit pattern (so the operator commutes exactly); with a NaN
 * depth on either side o stays. bpc__op_zbuffer_px: o interleaved (5
 * floats). */
static inline int bpc__op_zbuffer_wins(const float *x, const float *o, float od)
{
  if (x[4] != od)
    return x[4] < od;
  uint32_t wa[4], wo[4];
  memcpy(wa, x, sizeof wa);
  memcpy(wo, o, sizeof wo);
  for (int c = 0; c < 4; c++)
    if (wa[c] != wo[c])
      return wa[c] > wo[c];
  return 0;
}

static inline int bpc__op_zbuffer_px(const float *x, const float *o)
{
  return bpc__op_zbuffer_wins(x, o, o[4]);
}

static inline void bpc__op_zbuffer_n(const float *a, float *o, size_t n)
{
  for (size_t i = 0; i < 5 * n; i += 5)
    if (bpc__op_zbuffer_px(a + i, o + i))
      memcpy(o + i, a + i, 5 * sizeof(float));
}

#endif /* BPC_LIB_DATATYPE_H */
