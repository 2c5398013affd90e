/* doc/examples/swap.c - sort-last compositing with swap-reduce (doc/swap.md):
 * every block renders a full RGBA float image (premultiplied), the images
 * are composited with "over" in a visibility order (front to back), each
 * block ends with one finished piece, and rank 0 assembles the image.
 * The operator is bpc's built-in "over" (bpc_op_builtin).
 * Built by `make check`; run: mpirun -np 4 doc/examples/swap [algorithm] */
#include <bpc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { W = 64, H = 48, BLOCKS_PER_PROC = 2 };

/* "Render" block gid: a translucent vertical and horizontal band in a
 * colour of its own (red, green, blue by gid mod 3), so that bands of
 * different blocks cross. */
static void render(int gid, int nblocks, float *img)
{
  for (int y = 0; y < H; y++)
    for (int x = 0; x < W; x++) {
      float *p = img + 4 * (y * W + x);
      const int inside = x * nblocks / W == gid || y * nblocks / H == nblocks - 1 - gid;
      const float a = inside ? 0.5f : 0.0f;
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
  int rank = 0, size = 1, nl = 0, rc;
  const int *gids = NULL;
  const size_t count = (size_t)W * H; /* elements = pixels */
  float **imgs = NULL, *full = NULL, *final = NULL;
  bpc_swap_piece_t *pieces = NULL;
  int *order = NULL;

  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int n = BLOCKS_PER_PROC * size;
  rc = bpc_init(MPI_COMM_WORLD, NULL, &ctx);
  if (rc == BPC_OK)
    rc = bpc_assign_create(ctx, n, BPC_ASSIGN_CONTIGUOUS, NULL, &assign);
  if (rc == BPC_OK)
    rc = bpc_assign_local(assign, &gids, &nl);
  if (rc != BPC_OK)
    goto done;

  imgs = calloc((size_t)nl + 1, sizeof *imgs);
  pieces = calloc((size_t)nl + 1, sizeof *pieces);
  order = malloc(sizeof(int) * (size_t)n);
  full = calloc(4 * count, sizeof(float));
  final = calloc(4 * count, sizeof(float));
  for (int i = 0; i < nl; i++) {
    imgs[i] = malloc(4 * count * sizeof(float));
    render(gids[i], n, imgs[i]);
  }
  for (int i = 0; i < n; i++)
    order[i] = n - 1 - i; /* the last block is in front */

  /* the swap: a contiguous type of 16-byte pixels, a non-commutative op */
  MPI_Datatype pixel;
  MPI_Type_contiguous(4, MPI_FLOAT, &pixel);
  MPI_Type_commit(&pixel);
  bpc_type_t type = bpc_type_contiguous(4 * sizeof(float), pixel);
  bpc_op_t op; /* the built-in "over" on 4-float pixels (not commutative) */
  bpc_op_builtin("over", MPI_FLOAT, &op);
  bpc_swap_params_t params = bpc_swap_params_default();
  params.algorithm = argc > 1 ? argv[1] : "auto";
  params.order = order;
  bpc_swap_info_t info;
  rc = bpc_swap(ctx, assign, &type, (void *const *)imgs, count, &op, &params, pieces, &info);
  MPI_Type_free(&pixel);
  if (rc != BPC_OK)
    goto done;

  /* assemble: the pieces tile the image, so a sum of zero-padded pieces is
   * the image (a real application would send pieces straight to rank 0) */
  for (int i = 0; i < nl; i++)
    memcpy(full + 4 * pieces[i].offset, imgs[i] + 4 * pieces[i].offset,
           4 * pieces[i].count * sizeof(float));
  MPI_Reduce(full, final, (int)(4 * count), MPI_FLOAT, MPI_SUM, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    char k[64] = "";
    for (int r = 0; r < info.nk && info.algorithm == BPC_SWAP_RADIXK; r++)
      snprintf(k + strlen(k), sizeof k - strlen(k), "%s%d", r ? "x" : " k=", info.k[r]);
    printf("%d blocks composited with %s%s; ", n, info.name, k);
    for (int p = 0; p < n && p < 4; p++) {
      bpc_swap_piece_t pc;
      bpc_swap_piece_of(&info, count, p, &pc);
      printf("pos %d owns [%zu,+%zu) ", p, pc.offset, pc.count);
    }
    /* the centre: block n/2's vertical band in front of block n/2-1's
     * horizontal one (for n >= 2), each half transparent */
    const float *c = final + 4 * ((H / 2) * W + W / 2);
    printf("\ncentre pixel: %.3f %.3f %.3f alpha %.3f (block %d over block %d)\n", c[0], c[1],
           c[2], c[3], n / 2, n / 2 - 1);
  }

done:
  if (rc != BPC_OK)
    fprintf(stderr, "bpc: %s: %s\n", bpc_err_name(rc), bpc_last_error(ctx));
  for (int i = 0; imgs != NULL && i < nl; i++)
    free(imgs[i]);
  free(imgs);
  free(pieces);
  free(order);
  free(full);
  free(final);
  bpc_assign_destroy(&assign);
  bpc_finalize(&ctx);
  MPI_Finalize();
  return rc == BPC_OK ? 0 : 1;
}
