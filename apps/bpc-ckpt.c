/*
 * apps/bpc-ckpt.c - list and verify bpc checkpoints (doc/io.md).
 *
 *   mpirun -np N bpc-ckpt info FILE     print the header (rank 0)
 *   mpirun -np N bpc-ckpt verify FILE   print the header, then check every
 *                                       checksum (the processes share the
 *                                       blocks)
 *
 * Any process count works. Exit status: 0 when the file is a readable
 * checkpoint (and, for verify, intact); 1 when it is not (BPC_EFORMAT:
 * truncated, corrupted, foreign, another version; the reason on stderr);
 * 2 for bad arguments or a file that cannot be opened (message on stderr
 * from rank 0).
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "bpc.h"

static const char *usage_text =
    "usage: bpc-ckpt info|verify FILE\n"
    "List the header of a bpc checkpoint (block count, decomposition, sizes,\n"
    "metadata); verify also checks every checksum (header, table, metadata and\n"
    "each block's payload), shared among the MPI processes.\n"
    "Exit status: 0 intact, 1 not a valid checkpoint (reason on stderr),\n"
    "2 bad arguments or a file that cannot be opened.\n";

static void print_meta(const unsigned char *m, uint64_t n)
{
  printf("metadata        %llu bytes", (unsigned long long)n);
  if (n == 0) {
    printf("\n");
    return;
  }
  printf(": \"");
  const uint64_t show = n < 200 ? n : 200;
  for (uint64_t i = 0; i < show; i++) {
    if (isprint(m[i]) && m[i] != '"' && m[i] != '\\')
      putchar(m[i]);
    else
      printf("\\x%02x", m[i]);
  }
  printf("\"%s\n", show < n ? " ..." : "");
}

/* label, then n values separated by sep */
static void print_ints(const char *label, const char *sep, const int *v, int n)
{
  printf("%s", label);
  for (int d = 0; d < n; d++)
    printf("%s%d", d ? sep : "", v[d]);
}

static void print_info(const bpc_io_info_t *in, const unsigned char *meta)
{
  printf("format version  %d\n", in->version);
  printf("blocks          %d\n", in->nblocks);
  printf("written on      %d process%s\n", in->writer_ranks, in->writer_ranks == 1 ? "" : "es");
  printf("file bytes      %llu\n", (unsigned long long)in->file_bytes);
  printf("payload bytes   %llu\n", (unsigned long long)in->data_bytes);
  if (in->has_decomp) {
    const bpc_decomp_params_t *p = &in->params;
    printf("decomposition   %d-D, domain", p->dim);
    for (int d = 0; d < p->dim; d++)
      printf(" [%lld,%lld)", (long long)p->domain_min[d], (long long)p->domain_max[d]);
    print_ints(", divisions ", "x", p->divs, p->dim);
    print_ints(", ghost ", ",", p->ghost, p->dim);
    print_ints(", wrap ", ",", p->wrap, p->dim);
    print_ints(", share_face ", ",", p->share_face, p->dim);
    printf("\n");
  } else {
    printf("decomposition   none (block count only)\n");
  }
  print_meta(meta, in->meta_bytes);
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  int rank = 0, status = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  bpc_ctx_t *ctx = NULL;
  if (argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
    if (rank == 0)
      fputs(usage_text, stdout);
    MPI_Finalize();
    return 0;
  }
  const int known = argc >= 2 && (strcmp(argv[1], "info") == 0 || strcmp(argv[1], "verify") == 0);
  if (argc != 3 || !known) {
    if (rank == 0) {
      if (argc >= 2 && argv[1][0] == '-')
        fprintf(stderr, "bpc-ckpt: unknown option '%s'\n", argv[1]);
      else if (argc >= 2 && !known)
        fprintf(stderr, "bpc-ckpt: unknown command '%s' (expected info or verify)\n", argv[1]);
      else if (argc < 3)
        fprintf(stderr, "bpc-ckpt: missing %s\n", argc < 2 ? "command and FILE" : "FILE");
      else
        fprintf(stderr, "bpc-ckpt: too many arguments (first extra: '%s')\n", argv[3]);
      fputs(usage_text, stderr);
    }
    MPI_Finalize();
    return 2;
  }
  const int verify = strcmp(argv[1], "verify") == 0;
  const char *path = argv[2];
  int rc = bpc_init(MPI_COMM_WORLD, NULL, &ctx);
  bpc_io_info_t info;
  void *meta = NULL;
  if (rc == BPC_OK)
    rc = bpc_io_info(ctx, path, &info, &meta);
  if (rc == BPC_OK && rank == 0) {
    printf("checkpoint      %s\n", path);
    print_info(&info, meta);
    fflush(stdout);
  }
  if (rc == BPC_OK && verify) {
    rc = bpc_io_verify(ctx, path, NULL);
    if (rc == BPC_OK && rank == 0)
      printf("verified        header, metadata, %d table entries and %d payloads: all "
             "checksums match\n",
             info.nblocks, info.nblocks);
  }
  if (rc != BPC_OK) {
    if (rank == 0)
      fprintf(stderr, "bpc-ckpt: %s\n",
              ctx != NULL ? bpc_last_error(ctx) : bpc_strerror(rc));
    status = rc == BPC_EFORMAT ? 1 : 2;
  }
  free(meta);
  bpc_finalize(&ctx);
  MPI_Finalize();
  return status;
}
