/*
 * apps/render/render_par.c - the parallel pipeline of bpc-render:
 * decomposition (bpc_decomp over the volume's cells, one ghost layer),
 * loading, per-block ray casting, visibility order from the view, and
 * compositing with bpc_composite (gathered to rank 0).
 */
#include "render/render.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

int rd_parallel(bpc_ctx_t *ctx, const rd_par_t *p, float *rgba, rd_times_t *times, char *err,
                size_t errlen)
{
  int rc = BPC_OK, nl = 0, rank = 0;
  const int *gids = NULL;
  bpc_decomp_t *d = NULL;
  rd_block_t *blk = NULL;
  bpc_image_t *im = NULL;
  int *order = NULL;
  MPI_Comm comm;
  rd_times_t T;
  memset(&T, 0, sizeof T);
  bpc_ctx_rank(ctx, &rank);
  bpc_ctx_comm(ctx, &comm);
  double t_start = MPI_Wtime();

  bpc_decomp_params_t dp = bpc_decomp_params_default();
  dp.dim = 3;
  for (int a = 0; a < 3; a++) {
    dp.domain_min[a] = 0;
    dp.domain_max[a] = p->src.n[a] - 1; /* cells */
    dp.ghost[a] = 1;
  }
  dp.nblocks = p->nblocks;
  rc = bpc_decomp_create(ctx, &dp, &d);
  if (rc != BPC_OK) {
    snprintf(err, errlen, "decomposition: %s", bpc_last_error(ctx));
    goto cleanup;
  }
  const bpc_assign_t *as = bpc_decomp_assign(d);
  bpc_assign_local(as, &gids, &nl);
  blk = calloc((size_t)(nl > 0 ? nl : 1), sizeof *blk);
  im = calloc((size_t)(nl > 0 ? nl : 1), sizeof *im);
  order = malloc(sizeof(int) * (size_t)p->nblocks);
  if (blk == NULL || im == NULL || order == NULL) {
    rc = BPC_ENOMEM;
    snprintf(err, errlen, "out of memory");
    goto cleanup;
  }

  /* load */
  double t0 = MPI_Wtime();
  int lrc = 0;
  for (int i = 0; i < nl && lrc == 0; i++) {
    bpc_bounds_t core, gh;
    bpc_decomp_bounds(d, gids[i], &core, &gh);
    for (int a = 0; a < 3; a++) {
      blk[i].n[a] = p->src.n[a];
      blk[i].clo[a] = (int)core.min[a];
      blk[i].chi[a] = (int)core.max[a];
      blk[i].lo[a] = (int)gh.min[a];
      blk[i].hi[a] = (int)gh.max[a]; /* last cell's upper point */
    }
    lrc = rd_block_load(&blk[i], &p->src, err, errlen);
  }
  int grc = 0;
  MPI_Allreduce(&lrc, &grc, 1, MPI_INT, MPI_MIN, comm);
  if (grc != 0) {
    if (lrc == 0)
      snprintf(err, errlen, "loading the volume failed on another rank");
    rc = BPC_EINVAL;
    goto cleanup;
  }
  T.load = MPI_Wtime() - t0;

  /* render */
  t0 = MPI_Wtime();
  rd_camera_t cam;
  rd_camera_init(&cam, p->src.n, p->W, p->H, p->az, p->el, p->persp);
  for (int i = 0; i < nl; i++) {
    im[i].width = p->W;
    im[i].height = p->H;
    im[i].rgba = malloc(sizeof(float) * 4 * (size_t)p->W * (size_t)p->H);
    if (im[i].rgba == NULL) {
      rc = BPC_ENOMEM;
      snprintf(err, errlen, "out of memory for the images");
      break;
    }
    T.samples += rd_render(&blk[i], &cam, &p->tf, p->dt, im[i].rgba);
  }
  T.render = MPI_Wtime() - t0;

  /* visibility order, front to back */
  int divs[3];
  bpc_decomp_divs(d, divs);
  if (p->persp) {
    /* the eye's slab per axis, in block units (slab s: s + 0.5) */
    double eye[3];
    for (int a = 0; a < 3; a++) {
      eye[a] = cam.eye[a] < 0.0 ? -0.5 : divs[a] + 0.5;
      for (int s = 0; s < divs[a]; s++) {
        int c[3] = {0, 0, 0}, g = 0;
        bpc_bounds_t core, gh;
        c[a] = s;
        bpc_decomp_coords_to_gid(d, c, &g);
        bpc_decomp_bounds(d, g, &core, &gh);
        if (cam.eye[a] >= (double)core.min[a] && cam.eye[a] < (double)core.max[a])
          eye[a] = s + 0.5;
      }
    }
    bpc_composite_order_view(3, divs, NULL, eye, 0, order);
  } else {
    bpc_composite_order_view(3, divs, cam.dir, NULL, 0, order);
  }

  /* composite, gathered to rank 0 */
  t0 = MPI_Wtime();
  bpc_composite_params_t cp = bpc_composite_params_default();
  cp.algorithm = p->algorithm;
  cp.k = p->k;
  cp.nk = p->nk;
  cp.order = order;
  cp.active_pixels = p->active_pixels;
  cp.nthreads = p->nthreads;
  cp.gather_rank = 0;
  cp.gather_rgba = rgba;
  bpc_composite_info_t info;
  memset(&info, 0, sizeof info);
  int arc = rc;
  MPI_Allreduce(&arc, &rc, 1, MPI_INT, MPI_MIN, comm);
  if (rc != BPC_OK) {
    if (arc == BPC_OK)
      snprintf(err, errlen, "rendering failed on another rank");
    goto cleanup;
  }
  rc = bpc_composite(ctx, as, im, &cp, NULL, &info);
  if (rc != BPC_OK) {
    snprintf(err, errlen, "compositing: %s", bpc_last_error(ctx));
    goto cleanup;
  }
  T.composite = MPI_Wtime() - t0;
  T.total = MPI_Wtime() - t_start;
  snprintf(T.algorithm, sizeof T.algorithm, "%s", info.name);
  if (times != NULL) {
    double l[4] = {T.load, T.render, T.composite, T.total}, g[4];
    MPI_Allreduce(l, g, 4, MPI_DOUBLE, MPI_MAX, comm);
    unsigned long long lb[3] = {(unsigned long long)T.samples, info.bytes_sent, info.bytes_saved},
                       gb[3];
    MPI_Allreduce(lb, gb, 3, MPI_UNSIGNED_LONG_LONG, MPI_SUM, comm);
    *times = T;
    times->load = g[0];
    times->render = g[1];
    times->composite = g[2];
    times->total = g[3];
    times->samples = (long long)gb[0];
    times->bytes_sent = gb[1];
    times->bytes_saved = gb[2];
  }

cleanup:
  for (int i = 0; blk != NULL && i < nl; i++)
    free(blk[i].v);
  for (int i = 0; im != NULL && i < nl; i++)
    free(im[i].rgba);
  free(blk);
  free(im);
  free(order);
  bpc_decomp_destroy(&d);
  return rc;
}
