/* doc/examples/neighbor.c - the neighbour exchange example of doc/neighbor.md:
 * 64 blocks of a periodic 2-D decomposition each start with a value; a block
 * tells its 8 neighbours (faces and corners) whenever its value grows, and
 * takes the largest value it hears. bpc_neighbor_iterate runs rounds until no
 * block changes and no message is in flight: then every block holds the
 * global maximum. Built by `make check`; run: mpirun -np 4 doc/examples/neighbor */
#include <bpc.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct { long value; int changed; } block_t;

static void *make_block(int gid, void *user)
{
  (void)user;
  block_t *b = malloc(sizeof *b);
  if (b) { b->value = (gid * 7919L) % 1000; b->changed = 1; }  /* something to spread */
  return b;
}
static void free_block(void *b, int gid, void *user) { (void)gid; (void)user; free(b); }

/* One round of one block: read what arrived, keep the maximum, tell the
 * neighbours if it grew. No work is left once nothing changes (*more = 0).
 * It touches only its own block, so blocks may run in parallel (threads:
 * params.nthreads, by default the OpenMP default). */
static int spread(void *blk, int gid, bpc_neighbor_t *nb, void *user, int *more)
{
  (void)user; (void)more;
  block_t *b = blk;
  const int *srcs;
  int nsrc, rc = bpc_neighbor_incoming(nb, gid, &srcs, &nsrc);
  for (int i = 0; i < nsrc && rc == BPC_OK; i++) {     /* sources in ascending gid order */
    void *item;
    int got;
    while ((rc = bpc_neighbor_dequeue(nb, gid, srcs[i], &item, &got)) == BPC_OK && got) {
      long v = *(long *)((bpc_buf_t *)item)->data;     /* a view into the message */
      if (v > b->value) { b->value = v; b->changed = 1; }
    }
  }
  const bpc_link_t *links;
  int nlinks = 0;
  if (rc == BPC_OK) rc = bpc_neighbor_links(nb, gid, &links, &nlinks);
  for (int i = 0; i < nlinks && b->changed && rc == BPC_OK; i++) {
    bpc_buf_t item = {&b->value, 1};                   /* copied by enqueue */
    rc = bpc_neighbor_enqueue(nb, gid, links[i].gid, &item);
  }
  b->changed = 0;
  return rc;
}

static int check(void *blk, int gid, void *user)
{
  (void)gid;
  return ((block_t *)blk)->value == *(long *)user ? 0 : 1;
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  bpc_ctx_t *ctx = NULL;
  bpc_decomp_t *d = NULL;
  bpc_blocks_t *blocks = NULL;
  bpc_neighbor_t *nb = NULL;
  bpc_decomp_params_t p = bpc_decomp_params_default();
  p.dim = 2;
  p.domain_max[0] = p.domain_max[1] = 512;
  p.wrap[0] = p.wrap[1] = 1;                                /* periodic: 8 neighbours each */
  p.nblocks = 64;
  bpc_type_t type = bpc_type_contiguous(sizeof(long), MPI_LONG);
  bpc_neighbor_params_t prm = bpc_neighbor_params_default();
  prm.synchrony = 0.5;                         /* a round waits for half of its messages */
  long rounds = 0, expect = 0;
  for (int g = 0; g < p.nblocks; g++)
    if ((g * 7919L) % 1000 > expect) expect = (g * 7919L) % 1000;

  int rc = bpc_init(MPI_COMM_WORLD, NULL, &ctx);
  if (rc == BPC_OK) rc = bpc_decomp_create(ctx, &p, &d);
  if (rc == BPC_OK) rc = bpc_blocks_create(bpc_decomp_assign(d), make_block, free_block, NULL, &blocks);
  if (rc == BPC_OK) rc = bpc_neighbor_create_decomp(ctx, d, &type, &prm, &nb);
  long long nr = 0;
  if (rc == BPC_OK) rc = bpc_neighbor_iterate(nb, blocks, spread, NULL, &nr);
  if (rc == BPC_OK) rc = bpc_blocks_foreach(blocks, check, &expect, 1);
  rounds = (long)nr;
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rc != BPC_OK) fprintf(stderr, "bpc: %s\n", bpc_last_error(ctx));
  else if (rank == 0) printf("every block holds %ld after %ld rounds\n", expect, rounds);
  int rc2 = bpc_neighbor_destroy(&nb);
  if (rc == BPC_OK) rc = rc2;
  bpc_blocks_destroy(&blocks);
  bpc_decomp_destroy(&d);
  bpc_finalize(&ctx);
  MPI_Finalize();
  return rc == BPC_OK ? 0 : 1;
}
