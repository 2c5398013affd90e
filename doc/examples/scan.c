/* doc/examples/scan.c - the example of doc/scan.md: a series of frames
 * split over 8 blocks (3 frames each, the last block empty). Each frame
 * holds its motion relative to the previous one, a 2-D rigid transform
 * (rotation angle and shift, as cos/sin/tx/ty); the inclusive scan with
 * "apply left, then right" composes them into every frame's transform to
 * frame 0, exactly as a registration of a series would. The operator is
 * order-sensitive (rotations and shifts do not commute).
 * Built by `make check`; run: mpirun -np 4 doc/examples/scan */
#include <bpc.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define NBLOCKS 8
#define PER_BLOCK 3

typedef struct rigid {
  double c, s, tx, ty; /* x' = R x + t, R = [c -s; s c] */
} rigid_t;

/* result = right after left: x -> R_r (R_l x + t_l) + t_r. */
static int compose(const void *left, const void *right, void *result, void *user)
{
  (void)user;
  const rigid_t *l = left, *r = right;
  rigid_t *o = result;
  o->c = r->c * l->c - r->s * l->s;
  o->s = r->s * l->c + r->c * l->s;
  o->tx = r->c * l->tx - r->s * l->ty + r->tx;
  o->ty = r->s * l->tx + r->c * l->ty + r->ty;
  return 0;
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  bpc_ctx_t *ctx = NULL;
  bpc_assign_t *assign = NULL;
  if (bpc_init(MPI_COMM_WORLD, NULL, &ctx) != BPC_OK ||
      bpc_assign_create(ctx, NBLOCKS, BPC_ASSIGN_CONTIGUOUS, NULL, &assign) != BPC_OK) {
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  const int *gids;
  int n;
  bpc_assign_local(assign, &gids, &n);
  bpc_buf_t *in = calloc((size_t)n + 1, sizeof *in), *out = calloc((size_t)n + 1, sizeof *out);
  for (int l = 0; l < n; l++) {
    int count = gids[l] == NBLOCKS - 1 ? 0 : PER_BLOCK; /* an empty block is fine */
    rigid_t *f = malloc(sizeof *f * PER_BLOCK);
    for (int i = 0; i < count; i++) { /* frame k moved by 0.01 rad and (1, 0.5) */
      f[i] = (rigid_t){cos(0.01), sin(0.01), 1.0, 0.5};
    }
    in[l] = (bpc_buf_t){f, (size_t)count};
    out[l] = (bpc_buf_t){f, 0}; /* in place: results overwrite the motions */
  }
  bpc_type_t type = bpc_type_contiguous(sizeof(rigid_t), MPI_BYTE);
  bpc_scan_op_t op = {.fn = compose};
  bpc_scan_params_t params = bpc_scan_params_default();
  params.algorithm = "brent-kung";
  bpc_scan_info_t info;
  int rc = bpc_scan(ctx, assign, &type, BPC_SCAN_INCLUSIVE, in, out, &op, &params, &info);
  if (rc != BPC_OK) {
    fprintf(stderr, "bpc_scan: %s: %s\n", bpc_err_name(rc), bpc_last_error(ctx));
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  for (int l = 0; l < n; l++)
    for (size_t i = 0; i < out[l].count; i++) {
      const rigid_t *t = (const rigid_t *)out[l].data + i;
      int frame = gids[l] * PER_BLOCK + (int)i;
      printf("frame %2d: angle %.3f rad, shift (%.3f, %.3f)\n", frame, atan2(t->s, t->c), t->tx,
             t->ty);
    }
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 0)
    printf("%s: %lld operator calls in all, depth %lld\n", info.name, info.ops_total, info.depth);
  for (int l = 0; l < n; l++)
    free(in[l].data);
  free(in);
  free(out);
  bpc_assign_destroy(&assign);
  bpc_finalize(&ctx);
  MPI_Finalize();
  return 0;
}
