/*
 * apps/bench/bench_io.c - `bpc-bench io`: checkpoint write and read
 * (lib/io, bpc_io_write / bpc_io_read) against plain MPI-IO of the same
 * bytes, in the same run.
 *
 * Data: N bytes in total (--bytes, default 1 GiB), in n = p *
 * blocks-per-proc blocks (default 1 per process) of floor(N / n) bytes each,
 * contiguous bytes (elem_size 1), contiguous assignment; block g holds the
 * harness's pattern for key g.
 *  - "write": bpc_io_write of the block store to DIR/bpc-bench-io.ckpt
 *    (temporary file, payload rounds, table, header, rename) vs the
 *    baseline: MPI_File_open (create) of DIR/bpc-bench-io.mpi,
 *    MPI_File_write_at_all of the rank's region (its blocks back to back,
 *    regions in rank order; pieces of at most 1 GiB), MPI_File_close.
 *    Check (untimed): bpc_io_verify of the checkpoint and the baseline
 *    file's size.
 *  - "read": bpc_io_read of that checkpoint into a new block store vs
 *    MPI_File_open (read only), MPI_File_read_at_all of the rank's region,
 *    MPI_File_close. Check: every block read by bpc, and the baseline's
 *    buffer, hold the pattern.
 * Both sides open and close their file inside the timed region. The page
 * cache is not dropped: on one machine the figures are mostly memory
 * bandwidth; on a parallel file system they are the file system's.
 * --sync makes both writes durable before they return: bpc with
 * BPC_IO_SYNC=1 (the new file synced before the rename), the baseline with
 * MPI_File_sync before its close; then the write lines time the storage.
 * --replace makes the write baseline replace its file atomically, as
 * bpc_io_write does, with the cheapest plain calls: it writes a new file
 * under a temporary name, and after the close rank 0 exchanges the two
 * names (Linux renameat2; elsewhere rename) and deletes the old file; it
 * then measures what the file system charges for a new file, which the
 * plain overwrite does not pay.
 * Lower bound columns: bytes a rank writes or reads (its region).
 */
#define _GNU_SOURCE /* setenv, renameat2 */
#include "bench.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct io_state {
  bench_env_t *env;
  bpc_assign_t *assign;
  bpc_blocks_t *src;  /* the blocks written */
  bpc_blocks_t *got;  /* bpc_io_read's store, until bpc_done */
  bpc_type_t type;
  size_t block_bytes; /* bytes per block */
  int nlocal;
  uint64_t region_off, region_bytes; /* this rank's region in the baseline file */
  unsigned char *buf; /* the baseline's read buffer (region_bytes) */
  char bpc_path[1024], mpi_path[1024], mpi_tmp[1100];
  int sync;    /* --sync */
  int replace; /* --replace */
} io_state_t;

static const char *const io_algorithms[] = {"write", "read", NULL};
static const size_t io_default_bytes[] = {(size_t)1 << 30};
static const bench_eopt_t io_options[] = {
    {"dir", "DIR", "folder for the two files (default .); they are deleted at the end"},
    {"sync", NULL, "durable writes: BPC_IO_SYNC=1 for bpc, MPI_File_sync for the baseline"},
    {"replace", NULL, "the write baseline replaces its file atomically (new file, rename)"},
    {NULL, NULL, NULL},
};

static void *io_block_create(int gid, void *user)
{
  const io_state_t *s = user;
  bpc_buf_t *b = malloc(sizeof *b + (s->block_bytes > 0 ? s->block_bytes : 1));
  if (b == NULL)
    return NULL;
  b->data = b + 1;
  b->count = s->block_bytes;
  bench_pattern_fill(b->data, s->block_bytes, (uint64_t)gid, 0, 0, (s->block_bytes + 7) / 8);
  return b;
}

static void io_block_destroy(void *block, int gid, void *user)
{
  (void)gid;
  (void)user;
  free(block);
}

/* One MPI-IO pass over the rank's region: write (from the source blocks) or
 * read (into buf), in collective pieces of at most 1 GiB (the same count on
 * every rank: the regions are equal). */
static int io_mpi_pass(io_state_t *s, int write)
{
  MPI_File fh;
  int amode = write ? (MPI_MODE_WRONLY | MPI_MODE_CREATE) : MPI_MODE_RDONLY;
  const int replace = write && s->replace;
  int mrc = MPI_File_open(s->env->world, replace ? s->mpi_tmp : s->mpi_path, amode,
                          MPI_INFO_NULL, &fh);
  if (mrc != MPI_SUCCESS)
    return mrc;
  const size_t piece = (size_t)1 << 30;
  uint64_t done = 0;
  for (int i = 0; i < s->nlocal && write && mrc == MPI_SUCCESS; i++) {
    void *item = NULL;
    int gid = 0;
    bpc_blocks_at(s->src, i, &item, &gid);
    const unsigned char *p = ((bpc_buf_t *)item)->data;
    for (size_t at = 0; at < s->block_bytes && mrc == MPI_SUCCESS; at += piece) {
      size_t n = s->block_bytes - at < piece ? s->block_bytes - at : piece;
      mrc = MPI_File_write_at_all(fh, (MPI_Offset)(s->region_off + done), p + at, (int)n,
                                  MPI_BYTE, MPI_STATUS_IGNORE);
      done += n;
    }
  }
  for (uint64_t at = 0; !write && at < s->region_bytes && mrc == MPI_SUCCESS; at += piece) {
    size_t n = s->region_bytes - at < piece ? (size_t)(s->region_bytes - at) : piece;
    mrc = MPI_File_read_at_all(fh, (MPI_Offset)(s->region_off + at), s->buf + at, (int)n,
                               MPI_BYTE, MPI_STATUS_IGNORE);
  }
  if (write && s->sync && mrc == MPI_SUCCESS)
    mrc = MPI_File_sync(fh);
  int crc = MPI_File_close(&fh);
  if (mrc == MPI_SUCCESS)
    mrc = crc;
  if (replace) { /* the new file takes the name, the old one goes */
    int bad = 0;
    if (s->env->rank == 0 && mrc == MPI_SUCCESS) {
#if defined(__linux__) && defined(RENAME_EXCHANGE)
      if (renameat2(AT_FDCWD, s->mpi_tmp, AT_FDCWD, s->mpi_path, RENAME_EXCHANGE) == 0)
        bad = unlink(s->mpi_tmp) != 0;
      else
#endif
        bad = rename(s->mpi_tmp, s->mpi_path) != 0;
    }
    MPI_Bcast(&bad, 1, MPI_INT, 0, s->env->world);
    if (mrc == MPI_SUCCESS && bad)
      mrc = MPI_ERR_OTHER;
  }
  return mrc;
}

static int io_write_bpc(void *st)
{
  io_state_t *s = st;
  return bpc_io_write(s->env->ctx, s->bpc_path, s->src, &s->type, NULL, NULL, 0);
}

static int io_write_mpi(void *st)
{
  return io_mpi_pass(st, 1);
}

static int io_write_check(void *st, int *correct)
{
  io_state_t *s = st;
  bpc_io_info_t info;
  int rc = bpc_io_verify(s->env->ctx, s->bpc_path, &info);
  MPI_File fh;
  MPI_Offset size = -1;
  if (MPI_File_open(MPI_COMM_SELF, s->mpi_path, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh) ==
      MPI_SUCCESS) {
    MPI_File_get_size(fh, &size);
    MPI_File_close(&fh);
  }
  const uint64_t total = (uint64_t)s->block_bytes * (uint64_t)info.nblocks;
  *correct = rc == BPC_OK && info.data_bytes == total && (uint64_t)size == total;
  return 0;
}

static int io_read_bpc(void *st)
{
  io_state_t *s = st;
  return bpc_io_read(s->env->ctx, s->bpc_path, s->assign, &s->type, &s->got);
}

static int io_read_mpi(void *st)
{
  return io_mpi_pass(st, 0);
}

static int io_read_check(void *st, int *correct)
{
  io_state_t *s = st;
  int ok = s->got != NULL;
  for (int i = 0; i < s->nlocal && ok; i++) {
    void *item = NULL;
    int gid = 0;
    bpc_blocks_at(s->got, i, &item, &gid);
    const bpc_buf_t *b = item;
    ok = b != NULL && b->count == s->block_bytes &&
         bench_pattern_ok(b->data, s->block_bytes, (uint64_t)gid, 0) &&
         bench_pattern_ok(s->buf + (size_t)i * s->block_bytes, s->block_bytes, (uint64_t)gid, 0);
  }
  *correct = ok;
  return 0;
}

static int io_read_done(void *st)
{
  io_state_t *s = st;
  return bpc_blocks_destroy(&s->got);
}

static int io_run(bench_env_t *env)
{
  io_state_t s;
  memset(&s, 0, sizeof s);
  s.env = env;
  s.type = bpc_type_contiguous(1, MPI_BYTE);
  const char *dir = bench_eopt(env, "dir");
  if (dir == NULL)
    dir = ".";
  snprintf(s.bpc_path, sizeof s.bpc_path, "%s/bpc-bench-io.ckpt", dir);
  snprintf(s.mpi_path, sizeof s.mpi_path, "%s/bpc-bench-io.mpi", dir);
  snprintf(s.mpi_tmp, sizeof s.mpi_tmp, "%s.tmp", s.mpi_path);
  s.sync = bench_eopt(env, "sync") != NULL;
  s.replace = bench_eopt(env, "replace") != NULL;
  if (s.sync && setenv("BPC_IO_SYNC", "1", 1) != 0) { /* read by every bpc_io_write */
    bench_error(env, "io: cannot set BPC_IO_SYNC");
    return BENCH_EXIT_FAIL;
  }
  const size_t *sizes = NULL;
  const int nsizes = bench_sizes(env, &sizes);
  const char *algos[BENCH_MAX_ALGOS];
  const int nalgos = bench_algorithms(env, algos, BENCH_MAX_ALGOS);
  const int bpp = bench_blocks_per_proc(env);
  const int n = env->size * bpp;
  int ret = BENCH_EXIT_OK;
  int rc = bpc_assign_create(env->ctx, n, BPC_ASSIGN_CONTIGUOUS, NULL, &s.assign);
  if (bench_agree(env, rc) != 0) {
    bench_error(env, "io: %s", bpc_last_error(env->ctx));
    return BENCH_EXIT_FAIL;
  }
  const int *gids = NULL;
  bpc_assign_local(s.assign, &gids, &s.nlocal);
  for (int si = 0; si < nsizes && ret == BENCH_EXIT_OK; si++) {
    s.block_bytes = sizes[si] / (size_t)n;
    s.region_bytes = (uint64_t)s.block_bytes * (uint64_t)s.nlocal;
    s.region_off = (uint64_t)s.block_bytes * (uint64_t)(s.nlocal > 0 ? gids[0] : 0);
    rc = bpc_blocks_create(s.assign, io_block_create, io_block_destroy, &s, &s.src);
    s.buf = malloc(s.region_bytes > 0 ? (size_t)s.region_bytes : 1);
    if (bench_agree(env, rc != BPC_OK || s.buf == NULL) != 0) {
      bench_error(env, "io: out of memory for %llu bytes per process",
                  (unsigned long long)s.region_bytes);
      ret = BENCH_EXIT_FAIL;
    }
    /* the read lines need both files: write them once, untimed */
    if (ret == BENCH_EXIT_OK &&
        bench_agree(env, io_write_bpc(&s) != BPC_OK || io_write_mpi(&s) != MPI_SUCCESS) != 0) {
      bench_error(env, "io: cannot write the files in %s: %s", dir, bpc_last_error(env->ctx));
      ret = BENCH_EXIT_FAIL;
    }
    for (int ai = 0; ai < nalgos && ret == BENCH_EXIT_OK; ai++) {
      const int rd = strcmp(algos[ai], "read") == 0;
      bench_case_t c;
      memset(&c, 0, sizeof c);
      c.algorithm = algos[ai];
      c.baseline = rd         ? "MPI_File_read_at_all"
                   : s.replace ? "MPI_File_write_at_all+rename"
                               : "MPI_File_write_at_all";
      c.nblocks = n;
      c.bytes = s.block_bytes * (size_t)n;
      c.lower_bound_bytes = s.region_bytes;
      c.state = &s;
      c.run_bpc = rd ? io_read_bpc : io_write_bpc;
      c.run_baseline = rd ? io_read_mpi : io_write_mpi;
      c.check = rd ? io_read_check : io_write_check;
      c.bpc_done = rd ? io_read_done : NULL;
      ret = bench_run_case(env, &c);
    }
    bpc_blocks_destroy(&s.src);
    free(s.buf);
    s.buf = NULL;
  }
  MPI_Barrier(env->world);
  if (env->rank == 0) {
    char prev[1100];
    snprintf(prev, sizeof prev, "%s.prev.bpc", s.bpc_path); /* BPC_IO_KEEP_PREVIOUS=1 */
    remove(s.bpc_path);
    remove(prev);
    remove(s.mpi_path);
    remove(s.mpi_tmp);
  }
  bpc_assign_destroy(&s.assign);
  return ret;
}

const bench_engine_t bench_engine_io = {
    .name = "io",
    .desc = "checkpoint write/read (bpc_io_write/read) vs MPI_File_write_at_all/read_at_all",
    .algorithms = io_algorithms,
    .auto_algorithms = BENCH_AUTO_ALL,
    .uses_k = 0,
    .default_bytes = io_default_bytes,
    .n_default_bytes = 1,
    .default_blocks_per_proc = 1,
    .options = io_options,
    .notes = "  N bytes in total (--bytes; default 1G) in p * blocks-per-proc blocks of\n"
             "  contiguous bytes. write: bpc_io_write (temporary file, rename) vs\n"
             "  MPI_File_open + MPI_File_write_at_all of each rank's region + close.\n"
             "  read: bpc_io_read into a new block store vs MPI_File_read_at_all.\n"
             "  Files in --dir (default .), deleted at the end. The page cache is not\n"
             "  dropped between repetitions. --sync: both writes durable before they\n"
             "  return (BPC_IO_SYNC=1; MPI_File_sync before the baseline's close).\n"
             "  --replace: the write baseline replaces its file atomically as bpc does\n"
             "  (a new file under a temporary name, renamed over the old one, which is\n"
             "  deleted), instead of overwriting it in place.\n",
    .run = io_run,
};
