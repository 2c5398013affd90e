/* doc/examples/bcast.c - s-to-p broadcast (doc/bcast.md): a 6 x 4 mesh of
 * blocks, 3 per process; the blocks on the mesh's diagonal each pick a few
 * "seed points" (a variable number of doubles, none for one of them) and
 * every block receives every seed list, in source order, each tagged with
 * the block that chose it. Each block sums what it got; rank 0 prints its
 * first block's view and what ran.
 * Built by `make check`; run: mpirun -np 4 doc/examples/bcast [algorithm] */
#include <bpc.h>
#include <stdio.h>
#include <stdlib.h>

enum { ROWS = 6, COLS = 4, BLOCKS_PER_PROC = 3 };

typedef struct app {
  double seeds[ROWS * COLS][8]; /* the seeds of local source blocks */
  bpc_buf_t item[ROWS * COLS];
  double sum[ROWS * COLS];      /* per local block: the sum of all seeds */
  int count[ROWS * COLS];       /* per local block: items received */
} app_t;

/* A source block's item: (gid / 5) % 4 seed values (an empty item for gid 0). */
static int give(int src, const void **item, void *user)
{
  app_t *A = user;
  const int n = (src / 5) % 4;
  for (int i = 0; i < n; i++)
    A->seeds[src][i] = src + 0.1 * i;
  A->item[src].data = A->seeds[src];
  A->item[src].count = (size_t)n;
  *item = &A->item[src];
  return 0;
}

/* Every block gets every source's item: a view valid during the call. */
static int take(int dst, int src, void *item, void *user)
{
  app_t *A = user;
  const bpc_buf_t *b = item;
  const double *v = b->data;
  for (size_t i = 0; i < b->count; i++)
    A->sum[dst] += v[i];
  A->count[dst]++;
  (void)src;
  return 0;
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  bpc_ctx_t *ctx = NULL;
  if (bpc_init(MPI_COMM_WORLD, NULL, &ctx) != BPC_OK)
    MPI_Abort(MPI_COMM_WORLD, 1);
  /* as many blocks as fit the mesh: ROWS x COLS, at most 3 per process */
  const int nblocks = ROWS * COLS;
  bpc_assign_t *a = NULL;
  bpc_assign_create(ctx, nblocks, BPC_ASSIGN_CONTIGUOUS, NULL, &a);
  (void)BLOCKS_PER_PROC;

  /* the sources: the diagonal (r, r) of the 6 x 4 mesh, ascending gids,
   * the same list on every rank */
  int sources[COLS], s = 0;
  for (int r = 0; r < ROWS && r < COLS; r++)
    sources[s++] = r * COLS + r;

  app_t *A = calloc(1, sizeof *A);
  bpc_type_t t = bpc_type_contiguous(sizeof(double), MPI_DOUBLE);
  bpc_bcast_params_t P = bpc_bcast_params_default();
  P.algorithm = argc > 1 ? argv[1] : "auto";
  P.rows = ROWS;
  P.cols = COLS;
  bpc_bcast_info_t info;
  int rc = bpc_bcast(ctx, a, &t, sources, s, give, take, A, &P, &info);
  if (rc != BPC_OK) {
    fprintf(stderr, "bpc_bcast: %s\n", bpc_last_error(ctx));
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  const int *gids = NULL;
  int nl = 0;
  bpc_assign_local(a, &gids, &nl);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 0 && nl > 0)
    printf("bcast: %s (%d x %d mesh, %d steps): block %d got %d items, seed sum %.1f\n",
           info.name, info.rows, info.cols, info.steps, gids[0], A->count[gids[0]],
           A->sum[gids[0]]);
  int ok = 1;
  for (int l = 0; l < nl; l++)
    ok &= A->count[gids[l]] == s;
  free(A);
  bpc_assign_destroy(&a);
  bpc_finalize(&ctx);
  MPI_Finalize();
  return ok ? 0 : 1;
}
