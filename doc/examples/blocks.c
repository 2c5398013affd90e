/* doc/examples/blocks.c - the README example: decompose a 3-D domain into 64
 * blocks over the processes, give every block data, and work on local blocks
 * in parallel. Built by `make check`; run: mpirun -np 4 doc/examples/blocks */
#include <bpc.h>
#include <stdio.h>
#include <stdlib.h>

static void *make_block(int gid, void *user) { (void)user; int *b = malloc(sizeof *b); *b = gid; return b; }
static void free_block(void *b, int gid, void *user) { (void)gid; (void)user; free(b); }
static int work(void *b, int gid, void *user) { (void)user; return *(int *)b == gid ? 0 : 1; }

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  bpc_ctx_t *ctx = NULL;
  bpc_decomp_t *d = NULL;
  bpc_blocks_t *blocks = NULL;
  bpc_decomp_params_t p = bpc_decomp_params_default();      /* dim 3 */
  for (int i = 0; i < 3; i++) { p.domain_max[i] = 256; p.ghost[i] = 1; }
  p.nblocks = 64;                                           /* divisions chosen: 4x4x4 */
  int rc = bpc_init(MPI_COMM_WORLD, NULL, &ctx);
  if (rc == BPC_OK) rc = bpc_decomp_create(ctx, &p, &d);
  if (rc == BPC_OK) rc = bpc_blocks_create(bpc_decomp_assign(d), make_block, free_block, NULL, &blocks);
  if (rc == BPC_OK) rc = bpc_blocks_foreach(blocks, work, NULL, 0);  /* OpenMP over local blocks */
  if (rc != BPC_OK) fprintf(stderr, "bpc: %s\n", bpc_last_error(ctx));
  bpc_blocks_destroy(&blocks);
  bpc_decomp_destroy(&d);
  bpc_finalize(&ctx);
  MPI_Finalize();
  return rc == BPC_OK ? 0 : 1;
}
