/* doc/examples/merge.c - the example of doc/merge.md: 16 blocks, each with an
 * array of 1000 floats; a partial merge-reduce (k = 4x2x2, two rounds, as in
 * the DIY figure) leaves roots 0 and 8, each holding the element-wise sum of
 * its 8 blocks; then the third round finishes the reduction at gid 0.
 * Built by `make check`; run: mpirun -np 4 doc/examples/merge */
#include <bpc.h>
#include <stdio.h>
#include <stdlib.h>

#define N 1000

/* Merge callback: add every other item of the group into the root's one.
 * items[root] is the output; the others are read in place (received data). */
static int add(bpc_merge_group_t *g, void *user)
{
  (void)user;
  bpc_buf_t *out = g->items[g->root];
  for (int j = 0; j < g->nitems; j++) {
    if (j == g->root) continue;
    const bpc_buf_t *in = g->items[j];
    for (size_t i = 0; i < out->count; i++)
      ((float *)out->data)[i] += ((const float *)in->data)[i];
  }
  return 0;
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  bpc_ctx_t *ctx = NULL;
  bpc_assign_t *a = NULL;
  bpc_merge_result_t *res = NULL;
  bpc_buf_t *items = NULL;
  const int *gids = NULL;
  int nl = 0, rank = 0;
  int rc = bpc_init(MPI_COMM_WORLD, NULL, &ctx);
  if (rc == BPC_OK) rc = bpc_assign_create(ctx, 16, BPC_ASSIGN_CONTIGUOUS, NULL, &a);
  if (rc == BPC_OK) rc = bpc_assign_local(a, &gids, &nl);
  bpc_ctx_rank(ctx, &rank);

  /* one item per local block: N floats, value gid + 1 */
  items = calloc(nl ? nl : 1, sizeof *items);
  for (int i = 0; i < nl; i++) {
    float *d = malloc(N * sizeof *d);
    for (int e = 0; e < N; e++) d[e] = (float)(gids[i] + 1);
    items[i].data = d;
    items[i].count = N;
  }

  bpc_type_t floats = bpc_type_contiguous(sizeof(float), MPI_FLOAT);
  static const int k[] = {4, 2, 2};
  bpc_merge_op_t op = {.fn = add, .commutative = 1, .elementwise = 1};
  bpc_merge_params_t p = bpc_merge_params_default();
  p.k = k;
  p.nk = 3;
  p.rounds = 2;                                       /* partial: two of three rounds */
  if (rc == BPC_OK) rc = bpc_merge(ctx, a, &floats, items, &op, &p, &res);

  for (int i = 0; i < nl && rc == BPC_OK; i++) {     /* the roots: gids 0 and 8 */
    int is_root = 0, n = 0, g[16];
    bpc_merge_is_root(res, gids[i], &is_root);
    if (!is_root) continue;
    bpc_merge_absorbed(res, gids[i], g, 16, &n);
    printf("rank %d: root %d holds gids %d..%d, element 0 = %g\n", rank, gids[i], g[0],
           g[n - 1], ((float *)items[i].data)[0]);   /* 1+..+8 = 36 and 9+..+16 = 100 */
  }
  bpc_merge_result_destroy(&res);

  /* finish: the remaining round over the roots' partial sums. The items
   * hold partial merges now, so restart from the originals first. */
  for (int i = 0; i < nl; i++)
    for (int e = 0; e < N; e++) ((float *)items[i].data)[e] = (float)(gids[i] + 1);
  p.rounds = 0;                                       /* all rounds */
  if (rc == BPC_OK) rc = bpc_merge(ctx, a, &floats, items, &op, &p, NULL);
  if (rc == BPC_OK && nl > 0 && gids[0] == 0)
    printf("rank %d: gid 0 holds the total, element 0 = %g (expected 136)\n", rank,
           ((float *)items[0].data)[0]);

  if (rc != BPC_OK) fprintf(stderr, "bpc: %s\n", bpc_last_error(ctx));
  for (int i = 0; i < nl; i++) free(items[i].data);
  free(items);
  bpc_assign_destroy(&a);
  bpc_finalize(&ctx);
  MPI_Finalize();
  return rc == BPC_OK ? 0 : 1;
}
