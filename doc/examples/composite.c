/* doc/examples/composite.c - sort-last compositing with the plug-in
 * (doc/composite.md): blocks on a 2-D grid each "render" a translucent disc
 * into a full-size premultiplied RGBA image, the images are composited with
 * "over" in the visibility order of a view direction, rank 0 receives the
 * whole image and checks it against a serial composite.
 * Built by `make check`; run: mpirun -np 4 doc/examples/composite [strategy] */
#include <bpc.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { W = 96, H = 64, BLOCKS_PER_PROC = 2 };

/* Block gid's picture: a disc of its own colour, transparent elsewhere
 * (so active pixels pay off: most of each image is empty). */
static void render(int gid, int nblocks, float *rgba)
{
  const float cx = (0.5f + (float)gid) * W / (float)nblocks, cy = H / 2.0f, r = H / 3.0f;
  for (int y = 0; y < H; y++)
    for (int x = 0; x < W; x++) {
      float *p = rgba + 4 * (y * W + x);
      const float a = hypotf((float)x - cx, (float)y - cy) < r ? 0.6f : 0.0f;
      p[0] = a * (float)(gid % 3 == 0);
      p[1] = a * (float)(gid % 3 == 1);
      p[2] = a * (float)(gid % 3 == 2);
      p[3] = a;
    }
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  bpc_ctx_t *ctx = NULL;
  bpc_assign_t *assign = NULL;
  int rank = 0, size = 1, nlocal = 0, status = 0;
  const int *gids = NULL;
  int rc = bpc_init(MPI_COMM_WORLD, NULL, &ctx);
  if (rc == BPC_OK) {
    bpc_ctx_rank(ctx, &rank);
    bpc_ctx_size(ctx, &size);
  }
  const int n = BLOCKS_PER_PROC * size;
  if (rc == BPC_OK)
    rc = bpc_assign_create(ctx, n, BPC_ASSIGN_CONTIGUOUS, NULL, &assign);
  if (rc == BPC_OK)
    bpc_assign_local(assign, &gids, &nlocal);

  /* the blocks form an n x 1 grid; we look along -x: the highest gid is in front */
  int divs[2] = {n, 1}, *order = malloc(sizeof(int) * (size_t)n);
  double dir[2] = {-1.0, 0.0};
  if (rc == BPC_OK)
    rc = bpc_composite_order_view(2, divs, dir, NULL, 0, order);

  bpc_image_t images[BLOCKS_PER_PROC];
  for (int i = 0; i < nlocal; i++) {
    images[i].width = W;
    images[i].height = H;
    images[i].rgba = malloc(sizeof(float) * 4 * W * H);
    images[i].depth = NULL;
    render(gids[i], n, images[i].rgba);
  }
  float *final = rank == 0 ? malloc(sizeof(float) * 4 * W * H) : NULL;

  bpc_composite_params_t p = bpc_composite_params_default(); /* auto, over, active pixels */
  p.algorithm = argc > 1 ? argv[1] : "auto";
  p.order = order;        /* front to back */
  p.gather_rank = 0;      /* the whole image to rank 0 as well */
  p.gather_rgba = final;
  bpc_composite_piece_t pieces[BLOCKS_PER_PROC];
  bpc_composite_info_t info;
  if (rc == BPC_OK)
    rc = bpc_composite(ctx, assign, images, &p, pieces, &info);
  if (rc != BPC_OK) {
    fprintf(stderr, "rank %d: %s\n", rank, bpc_last_error(ctx));
    status = 1;
  }

  /* rank 0: compare with a serial composite, front to back */
  if (rc == BPC_OK && rank == 0) {
    float *img = malloc(sizeof(float) * 4 * W * H), *ref = calloc(4 * W * H, sizeof(float));
    double worst = 0.0;
    for (int pos = 0; pos < n; pos++) {
      render(order[pos], n, img);
      for (int q = 0; q < W * H; q++) {
        const float t = 1.0f - ref[4 * q + 3]; /* ref (in front) over img */
        for (int c = 0; c < 4; c++)
          ref[4 * q + c] += t * img[4 * q + c];
      }
    }
    for (int q = 0; q < 4 * W * H; q++)
      worst = fmax(worst, fabs((double)final[q] - (double)ref[q]));
    printf("composited %d blocks with %s: max difference from the serial composite %.2g; "
           "active pixels saved %llu of %llu bytes on rank 0\n",
           n, info.name, worst, info.bytes_saved, info.bytes_dense);
    if (worst > 1e-5)
      status = 1;
    free(img);
    free(ref);
  }
  for (int i = 0; i < nlocal; i++)
    free(images[i].rgba);
  free(final);
  free(order);
  bpc_assign_destroy(&assign);
  bpc_finalize(&ctx);
  MPI_Finalize();
  return status;
}
