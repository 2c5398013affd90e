/*
 * tests/apps/io_step.c - one step of the checkpoint shell test
 * (tests/apps/test_io_restart.sh), run under mpirun:
 *   io_step write FILE NBLOCKS GEN MODE KIND [DIE_GID]
 *   io_step check FILE NBLOCKS GEN MODE KIND
 * MODE: c (contiguous), r (round-robin), u (a scattered user map) - the
 * assignment written or read with; KIND: d (doubles) or s (strings, the
 * custom type). Blocks follow tests/common/io_items.h for generation GEN.
 * write with DIE_GID: the rank owning DIE_GID kills itself (SIGKILL) when
 * asked to pack that block (strings only), i.e. in the middle of the
 * write. check: reads on this process count and compares every block with
 * the formula, and verifies the file. Exit 0 when all is right, 1 if not.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/io_items.h"

static int die_gid = -1;

static int dying_pack(const void *item, void *buf, size_t bytes, void *user)
{
  char want[48];
  snprintf(want, sizeof want, "b%d;", die_gid);
  if (item != NULL && strstr(item, want) != NULL)
    raise(SIGKILL);
  return str_pack(item, buf, bytes, user);
}

static int *make_map(int nb, int P)
{
  int *map = malloc(sizeof *map * (size_t)nb);
  for (int g = 0; g < nb; g++)
    map[g] = (g * 5 + 1) % P;
  return map;
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  int rank = 0, P = 1, status = 1, rc;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &P);
  if (argc < 7) {
    if (rank == 0)
      fprintf(stderr, "usage: io_step write|check FILE NBLOCKS GEN c|r|u d|s [DIE_GID]\n");
    MPI_Finalize();
    return 2;
  }
  const int write = strcmp(argv[1], "write") == 0;
  const char *path = argv[2];
  const int nb = atoi(argv[3]), gen = atoi(argv[4]);
  const bpc_assign_mode_t mode = argv[5][0] == 'r'   ? BPC_ASSIGN_ROUND_ROBIN
                                 : argv[5][0] == 'u' ? BPC_ASSIGN_USER
                                                     : BPC_ASSIGN_CONTIGUOUS;
  const int custom = argv[6][0] == 's';
  if (argc > 7)
    die_gid = atoi(argv[7]);
  int *map = mode == BPC_ASSIGN_USER ? make_map(nb, P) : NULL;
  bpc_ctx_t *ctx = NULL;
  bpc_assign_t *a = NULL;
  bpc_blocks_t *b = NULL;
  bpc_type_t type = io_type(custom);
  if (die_gid >= 0) {
    bpc_type_ops_t ops = str_ops();
    ops.pack = dying_pack;
    type = bpc_type_custom(&ops, NULL);
  }
  rc = bpc_init(MPI_COMM_WORLD, NULL, &ctx);
  if (rc == BPC_OK)
    rc = bpc_assign_create(ctx, nb, mode, map, &a);
  if (rc == BPC_OK && write) {
    io_gen_t G = {gen, custom};
    rc = bpc_blocks_create(a, io_create, io_destroy, &G, &b);
    if (rc == BPC_OK)
      rc = bpc_io_write(ctx, path, b, &type, NULL, "io_step", 7);
    status = rc != BPC_OK;
  } else if (rc == BPC_OK) {
    rc = bpc_io_read(ctx, path, a, &type, &b);
    int wrong = rc == BPC_OK ? io_count_wrong(b, custom, gen) : 0, all = 0;
    MPI_Allreduce(&wrong, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rc == BPC_OK)
      rc = bpc_io_verify(ctx, path, NULL);
    status = rc != BPC_OK || all != 0;
    if (rank == 0 && all != 0)
      fprintf(stderr, "io_step: %d blocks differ from generation %d\n", all, gen);
  }
  if (rc != BPC_OK && rank == 0)
    fprintf(stderr, "io_step: %s: %s\n", bpc_err_name(rc), bpc_last_error(ctx));
  bpc_blocks_destroy(&b);
  bpc_assign_destroy(&a);
  bpc_finalize(&ctx);
  free(map);
  MPI_Finalize();
  return status;
}
