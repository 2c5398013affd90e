/*
 * apps/render/render.h - the volume ray caster of bpc-render (also linked
 * by tests/mpi/test_render.c): volumes (synthetic Marschner-Lobb or
 * Gaussian blobs, or a raw file), a camera (orthographic or perspective), a
 * transfer function of control points, and the ray casting of one block's
 * sub-volume into a full-size premultiplied RGBA float image.
 *
 * Sample positions lie on one global grid along every ray (t = k * dt from
 * the ray's origin, the same for every block), and each sample belongs to
 * exactly one block (the block owning the cell floor(x) of its position),
 * so the blocks' ray segments composited front to back equal the
 * single-block render up to floating-point rounding.
 */
#ifndef BPC_APPS_RENDER_H
#define BPC_APPS_RENDER_H

#include <stddef.h>

#include "bpc.h"

enum { RD_ML = 0, RD_BLOBS = 1, RD_RAW = 2 };
enum { RD_U8 = 0, RD_U16 = 1, RD_F32 = 2 };

typedef struct rd_source {
  int kind;       /* RD_ML, RD_BLOBS, RD_RAW */
  int n[3];       /* grid points per axis (>= 2) */
  const char *path; /* RD_RAW: file of n[0]*n[1]*n[2] values, x fastest */
  int type;       /* RD_RAW: RD_U8, RD_U16, RD_F32 */
} rd_source_t;

/* A block's data: points [lo, hi] inclusive of the global grid, and the
 * cells it owns: [clo, chi) per axis (cell c spans points c..c+1). */
typedef struct rd_block {
  int n[3];
  int lo[3], hi[3];
  int clo[3], chi[3];
  float *v; /* (hi-lo+1) per axis, x fastest */
} rd_block_t;

#define RD_TF_MAX 16
typedef struct rd_tf {
  int n;
  float v[RD_TF_MAX];        /* increasing scalar values */
  float rgba[RD_TF_MAX][4];  /* colour and opacity (per unit length) */
} rd_tf_t;

typedef struct rd_camera {
  int persp;
  int W, H;
  double center[3]; /* look-at point */
  double dir[3];    /* viewing direction (unit) */
  double right[3], up[3];
  double half;      /* ortho: half-height of the view; persp: tan(fov/2) */
  double dist;      /* persp: eye distance from the centre */
  double eye[3];    /* persp: eye position; ortho: origin of the central ray */
} rd_camera_t;

/* Default transfer function (a few control points). */
void rd_tf_default(rd_tf_t *tf);
/* Parse "v:r,g,b,a/v:r,g,b,a/..." (values in [0,1]); 0 on success. */
int rd_tf_parse(rd_tf_t *tf, const char *s);

/* Camera looking at the volume's centre from azimuth/elevation (degrees). */
void rd_camera_init(rd_camera_t *cam, const int *n, int W, int H, double az, double el, int persp);

/* Fill block b (n, lo, hi, clo, chi set by the caller) with data; returns
 * 0, or -1 and a message in err (raw file errors). */
int rd_block_load(rd_block_t *b, const rd_source_t *src, char *err, size_t errlen);

/* Ray-cast block b into rgba (W*H*4 floats, overwritten). Returns the
 * number of samples taken. */
long long rd_render(const rd_block_t *b, const rd_camera_t *cam, const rd_tf_t *tf, double dt,
                    float *rgba);

#endif /* BPC_APPS_RENDER_H */

/* ------------------------------------------------ the parallel pipeline */

typedef struct rd_par {
  rd_source_t src;
  rd_tf_t tf;
  int W, H;
  double az, el;
  int persp;
  double dt;            /* sample step in voxels */
  int nblocks;          /* total blocks */
  const char *algorithm; /* compositing strategy (NULL: auto) */
  const int *k;         /* radixk k-vector or NULL */
  int nk;
  int active_pixels;
  int nthreads;         /* OpenMP threads for compositing (0: default) */
} rd_par_t;

typedef struct rd_times {
  double load, render, composite, total; /* seconds, max over ranks */
  long long samples;                     /* summed over ranks */
  unsigned long long bytes_sent, bytes_saved; /* compositing, summed over ranks */
  char algorithm[16]; /* the compositing strategy that ran */
} rd_times_t;

/*
 * Decompose the volume into p->nblocks blocks (bpc_decomp, ghost 1),
 * load and ray-cast each local block into a full-size image, composite
 * them front to back with "over" in the visibility order of the view, and
 * gather the final image into rgba (W*H*4 floats) on rank 0 (rgba may be
 * NULL elsewhere). Collective. Returns a bpc code; err gets a message.
 */
int rd_parallel(bpc_ctx_t *ctx, const rd_par_t *p, float *rgba, rd_times_t *times, char *err,
                size_t errlen);
