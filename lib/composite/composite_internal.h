/*
 * lib/composite/composite_internal.h - state shared by the compositing
 * entry (composite.c), the active-pixel codec (active.c) and the strategy
 * files (lib/composite/strategies). Not installed.
 */
#ifndef BPC_LIB_COMPOSITE_INTERNAL_H
#define BPC_LIB_COMPOSITE_INTERNAL_H

#include "bpc/composite.h"
#include "comm/coll.h"
#include "core/core.h"

/* One compositing call's pixel format and codec counters. */
typedef struct bpc__cp {
  int op;                 /* bpc_composite_op_t */
  int stride;             /* floats per pixel: 4 (rgba) or 5 (rgba, depth) */
  size_t px_per_elem;     /* pixels per swap element: 1, or width (rows) */
  bpc_composite_user_fn ufn;
  void *user;
  int encode;             /* active pixels on for this call */
  unsigned long long bytes_dense, bytes_sent; /* what this rank's sends cost */
  unsigned long long pieces_encoded;
} bpc__cp_t;

/* Active-pixel codec (active.c), the bpc_swap_codec_t callbacks; user is a
 * bpc__cp_t. */
size_t bpc__cp_encode(void *dst, size_t cap, const void *src, size_t count, void *user);
int bpc__cp_decode(void *dst, size_t count, const void *src, size_t bytes, void *user);

/* Fraction of non-empty pixels of an image in the internal layout (npix
 * pixels of stride floats), estimated from every 7th pixel. */
double bpc__cp_active_fraction(const float *px, size_t npix, int stride);

/* Is the pixel empty (rgba all zero bits; depth, if any, +infinity)? */
int bpc__cp_empty(const float *px, int stride);

/* A strategy: fill the swap parameters (algorithm name, k-vector in kbuf
 * of BPC_SWAP_MAX_K entries) for n blocks. Returns BPC_OK or an error
 * recorded on ctx. */
typedef int (*bpc__cp_setup_fn)(bpc_ctx_t *ctx, int n, const bpc_composite_params_t *P,
                                bpc_swap_params_t *sp, int *kbuf);

int bpc__cp_radixk(bpc_ctx_t *ctx, int n, const bpc_composite_params_t *P, bpc_swap_params_t *sp,
                   int *kbuf);
int bpc__cp_binary_swap(bpc_ctx_t *ctx, int n, const bpc_composite_params_t *P,
                        bpc_swap_params_t *sp, int *kbuf);
int bpc__cp_direct_send(bpc_ctx_t *ctx, int n, const bpc_composite_params_t *P,
                        bpc_swap_params_t *sp, int *kbuf);
int bpc__cp_shift(bpc_ctx_t *ctx, int n, const bpc_composite_params_t *P, bpc_swap_params_t *sp,
                  int *kbuf);
int bpc__cp_pipeline(bpc_ctx_t *ctx, int n, const bpc_composite_params_t *P,
                     bpc_swap_params_t *sp, int *kbuf);

#endif /* BPC_LIB_COMPOSITE_INTERNAL_H */
