/*
 * tests/mpi/test_io.c - block checkpoint and restart (bpc/io.h).
 *  - round trip on the same processes: 1..4 blocks per process, contiguous
 *    doubles (empty blocks, one 160 kB block among blocks of a few bytes)
 *    and a custom variable-size string type, with and without a
 *    decomposition, with metadata; written with one assignment mode and
 *    read with each of contiguous, round-robin and a user map; every block
 *    checked against the formula of tests/common/io_items.h;
 *  - other process counts in the same run: written on a sub-context of the
 *    first ceil(P/2) ranks (and on rank 0 alone) and read on all, and the
 *    other way round; streamed in tiny chunks (BPC_IO_CHUNK) so blocks span
 *    collective calls;
 *  - corrupt files, each BPC_EFORMAT on every rank for bpc_io_read and
 *    bpc_io_verify: every byte of the header, the table and the metadata
 *    flipped in turn on one process; on two every byte of the table and a
 *    spread of the rest (every 7th byte and a byte of every field), above
 *    two the spread (see flip_here: same detection, fewer costly collective
 *    opens); a payload byte of every non-empty block flipped;
 *    truncation at several offsets and one byte appended; a wrong magic, a
 *    foreign file, another format version (with a valid header CRC); a
 *    missing file is BPC_EIO;
 *  - bad arguments on rank 0, the last rank or all (bad_rank.h); a pack
 *    callback failing mid-write leaves the previous checkpoint intact and
 *    no temporary file;
 *  - the payload checksums on the helper thread (BPC_IO_CRC_THREAD=1, on
 *    all ranks, some, or only for the read; blocks spanning rounds): the
 *    same file, read back, a flipped payload byte found; the queue alone
 *    and the spare-core rule (test_crc_queue);
 *  - a 2.5 GiB file on 2 processes (64-bit offsets past 2 GiB), skipped
 *    with a message at other counts, when the disk lacks room, or with
 *    BPC_TEST_BIG=0 (.ci/run's sanitizer stage: stage 1 runs it).
 */
#define _GNU_SOURCE /* cpu_set_t: the CPU list parser's test */
#include "bad_case.h"
#include "mpi_check.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "bpc.h"
#include "../common/io_items.h"
#include "io/io.h"

static bpc_ctx_t *ctx_of(MPI_Comm comm)
{
  bpc_ctx_t *ctx = NULL;
  int rc = bpc_init(comm, NULL, &ctx);
  ck_assert_int_eq(rc, BPC_OK);
  return ctx;
}

/* A file name of this run (the same on every rank). */
static void tpath(char *out, size_t cap, const char *what)
{
  snprintf(out, cap, "test_io-%d-%s.ckpt", t_size, what);
}

/* End of a test: every rank done with the file, rank 0 deletes it, the
 * context goes, failures are summed over ranks. */
static void finish(bpc_ctx_t **ctx, const char *path)
{
  MPI_Barrier(MPI_COMM_WORLD);
  if (t_rank == 0)
    unlink(path);
  bpc_finalize(ctx);
  T_SYNC();
}

static int *user_map(int nblocks, int P)
{
  int *map = malloc(sizeof *map * (size_t)nblocks);
  for (int g = 0; g < nblocks; g++)
    map[g] = (g * 7 + 3) % P; /* scattered, not monotone */
  return map;
}

/* Write generation `gen` of nblocks blocks on ctx with assignment `mode`
 * (and a 2-D decomposition when with_decomp); returns the code. */
static int write_ckpt(bpc_ctx_t *ctx, const char *path, int nblocks, bpc_assign_mode_t mode,
                      int custom, int gen, int with_decomp, const char *meta)
{
  int P = 1;
  bpc_ctx_size(ctx, &P);
  int *map = mode == BPC_ASSIGN_USER ? user_map(nblocks, P) : NULL;
  bpc_decomp_t *d = NULL;
  bpc_assign_t *a = NULL;
  bpc_decomp_params_t p = bpc_decomp_params_default();
  p.dim = 2;
  p.nblocks = nblocks;
  p.domain_min[0] = -5;
  p.domain_max[0] = 100;
  p.domain_min[1] = 0;
  p.domain_max[1] = 1000;
  p.ghost[1] = 2;
  p.wrap[0] = 1;
  p.assign = mode;
  p.map = map;
  int rc = with_decomp ? bpc_decomp_create(ctx, &p, &d) : bpc_assign_create(ctx, nblocks, mode,
                                                                            map, &a);
  ck_assert_int_eq(rc, BPC_OK);
  io_gen_t G = {gen, custom};
  bpc_blocks_t *b = NULL;
  rc = bpc_blocks_create(d ? bpc_decomp_assign(d) : a, io_create, io_destroy, &G, &b);
  ck_assert_int_eq(rc, BPC_OK);
  bpc_type_t type = io_type(custom);
  rc = bpc_io_write(ctx, path, b, &type, d, meta, meta ? strlen(meta) : 0);
  bpc_blocks_destroy(&b);
  bpc_decomp_destroy(&d);
  bpc_assign_destroy(&a);
  free(map);
  return rc;
}

/* Read `path` on ctx with assignment `mode`, check info, metadata and
 * every block against generation gen. */
static void read_check(bpc_ctx_t *ctx, const char *path, int nblocks, bpc_assign_mode_t mode,
                       int custom, int gen, int with_decomp, const char *meta, int writers)
{
  int P = 1;
  bpc_ctx_size(ctx, &P);
  bpc_io_info_t info;
  void *m = NULL;
  int rc = bpc_io_info(ctx, path, &info, &m);
  T_CHECK(rc == BPC_OK, "info: %s", bpc_last_error(ctx));
  if (rc != BPC_OK)
    return; /* the same on every rank */
  T_CHECK(info.nblocks == nblocks && info.version == BPC_IO_VERSION &&
              info.writer_ranks == writers && info.has_decomp == with_decomp,
          "info: %d blocks, version %d, %d writers, decomp %d", info.nblocks, info.version,
          info.writer_ranks, info.has_decomp);
  T_CHECK(info.meta_bytes == (meta ? strlen(meta) : 0) &&
              (meta == NULL ? m == NULL : m != NULL && memcmp(m, meta, strlen(meta)) == 0),
          "metadata differs");
  free(m);
  /* the metadata asked for on even ranks only: the others pass NULL and
   * still join its broadcast (a mismatched collective if they did not) */
  int me = 0;
  bpc_ctx_rank(ctx, &me);
  void *m2 = NULL;
  rc = bpc_io_info(ctx, path, &info, me % 2 == 0 ? &m2 : NULL);
  T_CHECK(rc == BPC_OK, "info, metadata on even ranks only: %s", bpc_last_error(ctx));
  if (rc != BPC_OK)
    return;
  T_CHECK(meta == NULL || me % 2 != 0 ? m2 == NULL
                                      : m2 != NULL && memcmp(m2, meta, strlen(meta)) == 0,
          "metadata on even ranks only differs");
  free(m2);
  if (with_decomp)
    T_CHECK(info.params.dim == 2 && info.params.domain_min[0] == -5 &&
                info.params.domain_max[1] == 1000 && info.params.ghost[1] == 2 &&
                info.params.wrap[0] == 1 && info.params.wrap[1] == 0,
            "decomposition not restored");
  /* rebuild: a decomposition from the file's parameters, or an assignment */
  int *map = mode == BPC_ASSIGN_USER ? user_map(nblocks, P) : NULL;
  bpc_decomp_t *d = NULL;
  bpc_assign_t *a = NULL;
  info.params.assign = mode;
  info.params.map = map;
  rc = with_decomp ? bpc_decomp_create(ctx, &info.params, &d)
                   : bpc_assign_create(ctx, info.nblocks, mode, map, &a);
  ck_assert_int_eq(rc, BPC_OK);
  bpc_type_t type = io_type(custom);
  bpc_blocks_t *b = NULL;
  rc = bpc_io_read(ctx, path, d ? bpc_decomp_assign(d) : a, &type, &b);
  T_CHECK(rc == BPC_OK, "read on %d (mode %d): %s", P, (int)mode, bpc_last_error(ctx));
  if (rc == BPC_OK) {
    int wrong = io_count_wrong(b, custom, gen);
    T_CHECK(wrong == 0, "%d wrong blocks (read on %d, mode %d)", wrong, P, (int)mode);
  }
  bpc_blocks_destroy(&b);
  bpc_decomp_destroy(&d);
  bpc_assign_destroy(&a);
  free(map);
  rc = bpc_io_verify(ctx, path, NULL);
  T_CHECK(rc == BPC_OK, "verify: %s", bpc_last_error(ctx));
}

static const bpc_assign_mode_t modes[3] = {BPC_ASSIGN_CONTIGUOUS, BPC_ASSIGN_ROUND_ROBIN,
                                           BPC_ASSIGN_USER};

START_TEST(test_roundtrip)
{
  bpc_ctx_t *ctx = ctx_of(MPI_COMM_WORLD);
  char path[256];
  tpath(path, sizeof path, "rt");
  for (int custom = 0; custom < 2; custom++)
    for (int per = 1; per <= 4; per++) {
      const int nb = per * t_size;
      const bpc_assign_mode_t wmode = modes[(per + custom) % 3];
      const int dec = per % 2;
      const char *meta = per == 2 ? NULL : "step=42;t=0.125";
      int rc = write_ckpt(ctx, path, nb, wmode, custom, per, dec, meta);
      T_CHECK(rc == BPC_OK, "write: %s", bpc_last_error(ctx));
      for (int m = 0; m < 3; m++)
        read_check(ctx, path, nb, modes[m], custom, per, dec, meta, t_size);
    }
  /* a new generation replaces the file */
  int rc = write_ckpt(ctx, path, 3, BPC_ASSIGN_CONTIGUOUS, 0, 77, 0, "x");
  T_CHECK(rc == BPC_OK, "rewrite: %s", bpc_last_error(ctx));
  read_check(ctx, path, 3, BPC_ASSIGN_ROUND_ROBIN, 0, 77, 0, "x", t_size);
  finish(&ctx, path);
}
END_TEST

/* Written on the first `w` ranks, read on all; then the other way. */
START_TEST(test_other_counts)
{
  bpc_ctx_t *ctx = ctx_of(MPI_COMM_WORLD);
  char path[256];
  tpath(path, sizeof path, "xc");
  const int ws[2] = {(t_size + 1) / 2, 1};
  setenv("BPC_IO_CHUNK", "16384", 1); /* blocks span collective calls */
  for (int k = 0; k < 2; k++) {
    const int w = ws[k];
    MPI_Comm sub;
    MPI_Comm_split(MPI_COMM_WORLD, t_rank < w ? 0 : MPI_UNDEFINED, t_rank, &sub);
    const int nb = 3 * t_size + 1; /* not a multiple of either count */
    for (int custom = 0; custom < 2; custom++) {
      if (sub != MPI_COMM_NULL) {
        bpc_ctx_t *sc = ctx_of(sub);
        int rc = write_ckpt(sc, path, nb, modes[k + custom], custom, 5, 1, "sub");
        T_CHECK(rc == BPC_OK, "write on %d: %s", w, bpc_last_error(sc));
        bpc_finalize(&sc);
      }
      MPI_Barrier(MPI_COMM_WORLD);
      for (int m = 0; m < 3; m++)
        read_check(ctx, path, nb, modes[m], custom, 5, 1, "sub", w);
      /* all -> the sub-context */
      int rc = write_ckpt(ctx, path, nb, modes[2 - k], custom, 6, 0, NULL);
      T_CHECK(rc == BPC_OK, "write on all: %s", bpc_last_error(ctx));
      if (sub != MPI_COMM_NULL) {
        bpc_ctx_t *sc = ctx_of(sub);
        for (int m = 0; m < 3; m++)
          read_check(sc, path, nb, modes[m], custom, 6, 0, NULL, t_size);
        bpc_finalize(&sc);
      }
      MPI_Barrier(MPI_COMM_WORLD);
    }
    if (sub != MPI_COMM_NULL)
      MPI_Comm_free(&sub);
  }
  unsetenv("BPC_IO_CHUNK");
  finish(&ctx, path);
}
END_TEST

/* ---------------------------------------------------------- corruption */

static unsigned char *slurp(const char *path, size_t *n)
{
  FILE *f = fopen(path, "rb");
  ck_assert_ptr_nonnull(f);
  fseek(f, 0, SEEK_END);
  *n = (size_t)ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *b = malloc(*n + 1);
  ck_assert_uint_eq(fread(b, 1, *n, f), *n);
  fclose(f);
  return b;
}

static void spit(const char *path, const unsigned char *b, size_t n)
{
  FILE *f = fopen(path, "wb");
  ck_assert_ptr_nonnull(f);
  ck_assert_uint_eq(fwrite(b, 1, n, f), n);
  fclose(f);
}

static uint32_t le32(const unsigned char *p)
{
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t le64(const unsigned char *p)
{
  return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32;
}

/* Rank 0 writes bytes b[0..n) to `bad`; every rank reads it (and verifies
 * it) and must get `expect`, and the message must contain `needle`. */
static int also_verify = 1; /* expect_bad: check bpc_io_verify too */

static void expect_bad(bpc_ctx_t *ctx, const char *bad, const unsigned char *b, size_t n,
                       int expect, const char *needle, const char *what, long at)
{
  if (t_rank == 0)
    spit(bad, b, n);
  MPI_Barrier(MPI_COMM_WORLD);
  bpc_assign_t *a = NULL;
  bpc_assign_create(ctx, 6, BPC_ASSIGN_ROUND_ROBIN, NULL, &a);
  bpc_type_t type = io_type(0);
  bpc_blocks_t *out = NULL;
  int rc = bpc_io_read(ctx, bad, a, &type, &out);
  T_CHECK(rc == expect && out == NULL, "%s %ld: read gave %s (%s)", what, at, bpc_err_name(rc),
          bpc_last_error(ctx));
  T_CHECK(needle == NULL || strstr(bpc_last_error(ctx), needle) != NULL,
          "%s %ld: message '%s' lacks '%s'", what, at, bpc_last_error(ctx), needle);
  bpc_blocks_destroy(&out);
  rc = also_verify ? bpc_io_verify(ctx, bad, NULL) : expect;
  T_CHECK(rc == expect, "%s %ld: verify gave %s (%s)", what, at, bpc_err_name(rc),
          bpc_last_error(ctx));
  bpc_assign_destroy(&a);
  MPI_Barrier(MPI_COMM_WORLD);
}

/* Which bytes of the header (256), the table (24 per block, from 256; 6
 * blocks here) and the metadata (to data_off) test_corrupt flips. Rank 0
 * alone reads and checks the header and the metadata, so a flip there is
 * found the same way at any count, while each rank checks its own table
 * entries; and each flip costs a collective open, which is dear on 3..12
 * oversubscribed processes (and under ASan: most of test_io's 80 s at 2).
 * So: every byte on one process; on two, every byte of the table (each
 * rank's entries) and a spread of the rest; above two, the spread. The
 * spread: every 7th byte (offsets 0, 7, 14, ...) and the first byte of
 * each field that no multiple of 7 falls in (the version, the writers'
 * count, the dimension, the share_face flags, some entries' CRCs, the
 * metadata): a byte of every field. */
static int flip_here(size_t i, size_t data_off)
{
  static const size_t field[] = {0,  8,  12, 16,  24,  32,  40,  48,  56,  64,  72,  76,
                                 80, 84, 88, 136, 184, 208, 232, 238, 244, 252, 256};
  static const size_t entry[] = {0, 8, 16, 20, 24}; /* offset, size, CRC, entry CRC */
  const size_t table_end = 256 + 24 * 6;
  if (t_size == 1 || i % 7 == 0)
    return 1;
  if (t_size == 2 && i >= 256 && i < table_end)
    return 1;
  size_t a = table_end, b = data_off; /* the field holding byte i: [a, b) */
  if (i < 256) {
    for (size_t f = 0; f + 1 < sizeof field / sizeof field[0]; f++)
      if (i >= field[f] && i < field[f + 1]) {
        a = field[f];
        b = field[f + 1];
      }
  } else if (i < table_end) {
    const size_t base = i - (i - 256) % 24;
    for (size_t f = 0; f + 1 < sizeof entry / sizeof entry[0]; f++)
      if (i >= base + entry[f] && i < base + entry[f + 1]) {
        a = base + entry[f];
        b = base + entry[f + 1];
      }
  }
  return i == a && (a + 6) / 7 * 7 >= b;
}

START_TEST(test_corrupt)
{
  bpc_ctx_t *ctx = ctx_of(MPI_COMM_WORLD);
  char path[256], bad[256];
  tpath(path, sizeof path, "good");
  tpath(bad, sizeof bad, "bad");
  int rc = write_ckpt(ctx, path, 6, BPC_ASSIGN_CONTIGUOUS, 0, 3, 1, "meta!");
  ck_assert_int_eq(rc, BPC_OK);
  size_t n = 0;
  unsigned char *orig = slurp(path, &n); /* every rank: the file is small */
  unsigned char *b = malloc(n + 1);
  const uint64_t data_off = le64(orig + 48);
  ck_assert_uint_eq(le64(orig + 64), n);
  /* bytes of the header, the table and the metadata flipped (read; verify
   * for every 8th), see flip_here: every byte on one process */
  for (size_t i = 0; i < data_off; i++) {
    if (!flip_here(i, (size_t)data_off))
      continue;
    memcpy(b, orig, n);
    b[i] ^= (unsigned char)(1u << (i % 8));
    also_verify = i % 8 == 0;
    expect_bad(ctx, bad, b, n, BPC_EFORMAT, NULL, "flipped byte", (long)i);
  }
  also_verify = 1;
  /* one payload byte of every non-empty block */
  for (int g = 0; g < 6; g++) {
    const unsigned char *e = orig + 256 + 24 * g;
    if (le64(e + 8) == 0)
      continue;
    memcpy(b, orig, n);
    b[le64(e) + le64(e + 8) / 2] ^= 0x40;
    expect_bad(ctx, bad, b, n, BPC_EFORMAT, "payload checksum", "payload of block", g);
  }
  /* truncated, and one byte too many */
  const size_t cuts[] = {0, 5, 100, 255, 256, 300, (size_t)data_off - 1, (size_t)data_off,
                         (size_t)data_off + 9, n - 1};
  for (size_t c = 0; c < sizeof cuts / sizeof cuts[0]; c++)
    expect_bad(ctx, bad, orig, cuts[c], BPC_EFORMAT, cuts[c] < 8 ? "not a bpc" : NULL,
               "truncated at", (long)cuts[c]);
  memcpy(b, orig, n);
  b[n] = 0;
  expect_bad(ctx, bad, b, n + 1, BPC_EFORMAT, "longer", "appended", 1);
  /* wrong magic, foreign file, other version with a valid header CRC */
  memcpy(b, orig, n);
  memcpy(b, "NOT-CKPT", 8);
  expect_bad(ctx, bad, b, n, BPC_EFORMAT, "not a bpc checkpoint", "magic", 0);
  const char *text = "#!/bin/sh\necho this is a shell script, not a checkpoint at all........"
                     "................................................................"
                     "................................................................"
                     "................................................................\n";
  expect_bad(ctx, bad, (const unsigned char *)text, strlen(text), BPC_EFORMAT,
             "not a bpc checkpoint", "foreign", 0);
  memcpy(b, orig, n);
  b[8] = 2;
  expect_bad(ctx, bad, b, n, BPC_EFORMAT, "format version 2", "version", 2);
  /* missing file */
  if (t_rank == 0)
    unlink(bad);
  MPI_Barrier(MPI_COMM_WORLD);
  bpc_io_info_t info;
  rc = bpc_io_info(ctx, bad, &info, NULL);
  T_CHECK(rc == BPC_EIO && strstr(bpc_last_error(ctx), bad) != NULL, "missing: %s (%s)",
          bpc_err_name(rc), bpc_last_error(ctx));
  /* the good file still reads */
  read_check(ctx, path, 6, BPC_ASSIGN_USER, 0, 3, 1, "meta!", t_size);
  free(b);
  free(orig);
  finish(&ctx, path);
}
END_TEST

/* ------------------------------------------------- bad arguments, atomic */

static int fail_gid = -1;

static int failing_pack(const void *item, void *buf, size_t bytes, void *user)
{
  (void)user;
  const char *s = item;
  char want[48];
  snprintf(want, sizeof want, "b%d;", fail_gid);
  if (s != NULL && strstr(s, want) != NULL)
    return 9;
  memcpy(buf, item, bytes);
  return 0;
}

START_TEST(test_bad_args)
{
  bpc_ctx_t *ctx = ctx_of(MPI_COMM_WORLD);
  char path[256], other[256];
  tpath(path, sizeof path, "args");
  tpath(other, sizeof other, "other");
  const int nb = 2 * t_size + 1;
  int rc = write_ckpt(ctx, path, nb, BPC_ASSIGN_CONTIGUOUS, 1, 1, 0, "keep");
  ck_assert_int_eq(rc, BPC_OK);
  rc = write_ckpt(ctx, other, nb, BPC_ASSIGN_CONTIGUOUS, 1, 1, 0, "keep");
  ck_assert_int_eq(rc, BPC_OK);
  bpc_assign_t *a = NULL, *a2 = NULL;
  bpc_assign_create(ctx, nb, BPC_ASSIGN_CONTIGUOUS, NULL, &a);
  bpc_assign_create(ctx, nb + 1, BPC_ASSIGN_CONTIGUOUS, NULL, &a2);
  io_gen_t G = {2, 1};
  bpc_blocks_t *b = NULL;
  bpc_blocks_create(a, io_create, io_destroy, &G, &b);
  bpc_type_t good = io_type(1), zero = bpc_type_contiguous(0, MPI_BYTE);
  for (int m = 0; m < BAD_NMODES; m++) {
    const int bad = bad_here(m);
    rc = bpc_io_write(ctx, bad ? NULL : path, b, &good, NULL, "m", 1);
    T_CHECK(rc == BPC_ENULL, "NULL path, %s: %s", bad_mode_name(m), bpc_last_error(ctx));
    rc = bpc_io_write(ctx, path, b, bad ? &zero : &good, NULL, "m", 1);
    T_CHECK(rc == BPC_ETYPE, "bad type, %s: %s", bad_mode_name(m), bpc_last_error(ctx));
    rc = bpc_io_write(ctx, path, b, &good, NULL, bad ? NULL : "m", 1);
    T_CHECK(rc == BPC_ENULL, "NULL meta, %s: %s", bad_mode_name(m), bpc_last_error(ctx));
    const bad_case_t mc = {"metadata differs", BPC_EMISMATCH, 1, "metadata"};
    rc = bpc_io_write(ctx, other, b, &good, NULL, bad ? "x" : "y", 1);
    bad_check(ctx, &mc, m, rc);
    const bad_case_t pc = {"path differs", BPC_EMISMATCH, 1, "path"};
    bpc_blocks_t *out = NULL;
    rc = bpc_io_read(ctx, bad ? other : path, a, &good, &out);
    bad_check(ctx, &pc, m, rc);
    bpc_blocks_destroy(&out);
    rc = bpc_io_read(ctx, path, a, bad ? &zero : &good, &out);
    T_CHECK(rc == BPC_ETYPE && out == NULL, "read bad type, %s: %s", bad_mode_name(m),
            bpc_last_error(ctx));
    rc = bpc_io_read(ctx, path, bad ? NULL : a, &good, &out);
    T_CHECK(rc == BPC_ENULL && out == NULL, "read NULL assignment, %s: %s", bad_mode_name(m),
            bpc_last_error(ctx));
    rc = bpc_io_info(ctx, bad ? NULL : path, &(bpc_io_info_t){0}, NULL);
    T_CHECK(rc == BPC_ENULL, "info NULL path, %s: %s", bad_mode_name(m), bpc_last_error(ctx));
  }
  /* the file's block count is not the assignment's */
  bpc_blocks_t *out = NULL;
  rc = bpc_io_read(ctx, path, a2, &good, &out);
  T_CHECK(rc == BPC_ENBLOCKS && out == NULL, "block count: %s", bpc_last_error(ctx));
  /* a pack failing on one rank mid-write: the old checkpoint stays */
  for (int m = 0; m < BAD_NMODES; m++) {
    bpc_type_ops_t ops = str_ops();
    ops.pack = failing_pack;
    bpc_type_t ft = bpc_type_custom(&ops, NULL);
    const int *gids = NULL;
    int nl = 0;
    bpc_assign_local(a, &gids, &nl);
    fail_gid = -1; /* the last local block whose string is not empty */
    for (int i = nl - 1; i >= 0 && bad_here(m) && fail_gid < 0; i--)
      if (gids[i] % 6 != 0)
        fail_gid = gids[i];
    setenv("BPC_IO_CHUNK", "64", 1);
    rc = bpc_io_write(ctx, path, b, &ft, NULL, "new", 3);
    unsetenv("BPC_IO_CHUNK");
    const int expect = BPC_ECALLBACK; /* every rank holds such a block */
    T_CHECK(rc == expect, "failing pack, %s: %s", bad_mode_name(m), bpc_last_error(ctx));
    char tmp[300];
    snprintf(tmp, sizeof tmp, "%s.tmp.bpc", path);
    T_CHECK(access(tmp, F_OK) != 0, "temporary file left behind");
    read_check(ctx, path, nb, BPC_ASSIGN_ROUND_ROBIN, 1, 1, 0, "keep", t_size);
  }
  /* the path is a folder: the rename fails (BPC_EIO on every rank), the
   * folder stays as it was, no temporary file is left */
  char dir[300], tmp[320];
  tpath(dir, sizeof dir, "dir");
  snprintf(tmp, sizeof tmp, "%s.tmp.bpc", dir);
  if (t_rank == 0)
    mkdir(dir, 0755);
  MPI_Barrier(MPI_COMM_WORLD);
  rc = bpc_io_write(ctx, dir, b, &good, NULL, "m", 1);
  T_CHECK(rc == BPC_EIO && strstr(bpc_last_error(ctx), "renaming") != NULL, "over a folder: %s",
          bpc_last_error(ctx));
  struct stat st;
  T_CHECK(stat(dir, &st) == 0 && S_ISDIR(st.st_mode), "the folder is gone");
  T_CHECK(access(tmp, F_OK) != 0, "temporary file left behind (folder)");
  bpc_blocks_destroy(&b);
  bpc_assign_destroy(&a);
  bpc_assign_destroy(&a2);
  MPI_Barrier(MPI_COMM_WORLD);
  if (t_rank == 0) {
    unlink(path);
    unlink(other);
    rmdir(dir);
  }
  bpc_finalize(&ctx);
  T_SYNC();
}
END_TEST

/* packed_size that answers one byte more after its first flip_after calls,
 * on rank 0 only: the write measures each local block once, then packs
 * them (measuring again) */
static int flip_calls = 0, flip_after = 0;
static int flip_size(const void *item, size_t *bytes, void *user)
{
  int rc = str_size(item, bytes, user);
  if (t_rank == 0)
    *bytes += (size_t)(flip_calls++ >= flip_after);
  return rc;
}

/* A custom type changes its mind about a size between the measuring and
 * the packing (in the rest of a round and in a buffer of its own): every
 * rank fails with BPC_ETYPE, the old checkpoint stays, no temporary file. */
START_TEST(test_size_changes)
{
  bpc_ctx_t *ctx = ctx_of(MPI_COMM_WORLD);
  char path[256], tmp[300];
  tpath(path, sizeof path, "flip");
  snprintf(tmp, sizeof tmp, "%s.tmp.bpc", path);
  const int nb = 2 * t_size + 1;
  int rc = write_ckpt(ctx, path, nb, BPC_ASSIGN_CONTIGUOUS, 1, 4, 0, "old");
  T_CHECK(rc == BPC_OK, "flip: first write: %s", bpc_last_error(ctx));
  bpc_assign_t *a = NULL;
  bpc_assign_create(ctx, nb, BPC_ASSIGN_CONTIGUOUS, NULL, &a);
  io_gen_t G = {5, 1};
  bpc_blocks_t *b = NULL;
  bpc_blocks_create(a, io_create, io_destroy, &G, &b);
  bpc_type_ops_t ops = str_ops();
  ops.packed_size = flip_size;
  bpc_type_t ft = bpc_type_custom(&ops, NULL);
  const char *chunks[2] = {"4096", "1"}; /* packed into the round / into a buffer */
  for (int c = 0; c < 2; c++) {
    setenv("BPC_IO_CHUNK", chunks[c], 1);
    flip_calls = 0;
    const int *lg = NULL;
    bpc_assign_local(a, &lg, &flip_after);
    rc = bpc_io_write(ctx, path, b, &ft, NULL, "new", 3);
    T_CHECK(rc == BPC_ETYPE, "flip (chunk %s): %s", chunks[c], bpc_last_error(ctx));
    T_CHECK(access(tmp, F_OK) != 0, "flip: temporary file left behind");
    read_check(ctx, path, nb, BPC_ASSIGN_ROUND_ROBIN, 1, 4, 0, "old", t_size);
  }
  unsetenv("BPC_IO_CHUNK");
  bpc_blocks_destroy(&b);
  bpc_assign_destroy(&a);
  finish(&ctx, path);
}
END_TEST

/* BPC_IO_KEEP_PREVIOUS=1: the replaced checkpoint stays as <path>.prev.bpc
 * (complete and readable) and the next write goes over it in place, also
 * when the new file is shorter or longer; a failed write leaves `path`
 * alone and deletes the spare; a setting that differs between ranks is
 * BPC_EMISMATCH everywhere. */
START_TEST(test_keep_previous)
{
  bpc_ctx_t *ctx = ctx_of(MPI_COMM_WORLD);
  char path[256], prev[300];
  tpath(path, sizeof path, "keep");
  snprintf(prev, sizeof prev, "%s.prev.bpc", path);
  if (t_rank == 0)
    unlink(prev);
  MPI_Barrier(MPI_COMM_WORLD);
  setenv("BPC_IO_KEEP_PREVIOUS", "1", 1);
  setenv("BPC_IO_CHUNK", "4096", 1); /* several rounds, blocks across them */
  const int nb[4] = {3 * t_size + 2, 5 * t_size, t_size, 4 * t_size + 1};
  for (int gen = 0; gen < 4; gen++) {
    int rc = write_ckpt(ctx, path, nb[gen], modes[gen % 3], gen % 2, 10 + gen, 0, "k");
    T_CHECK(rc == BPC_OK, "keep: write %d: %s", gen, bpc_last_error(ctx));
    read_check(ctx, path, nb[gen], modes[(gen + 1) % 3], gen % 2, 10 + gen, 0, "k", t_size);
    if (gen == 0)
      T_CHECK(access(prev, F_OK) != 0, "keep: a spare after the first write");
    else
      read_check(ctx, prev, nb[gen - 1], BPC_ASSIGN_ROUND_ROBIN, (gen - 1) % 2, 9 + gen, 0, "k",
                 t_size);
  }
  /* a pack failing on rank 0 mid-write */
  bpc_assign_t *a = NULL;
  bpc_assign_create(ctx, nb[3], BPC_ASSIGN_CONTIGUOUS, NULL, &a);
  io_gen_t G = {2, 1};
  bpc_blocks_t *b = NULL;
  bpc_blocks_create(a, io_create, io_destroy, &G, &b);
  bpc_type_ops_t ops = str_ops();
  ops.pack = failing_pack;
  bpc_type_t ft = bpc_type_custom(&ops, NULL);
  const int *gids = NULL;
  int nl = 0;
  bpc_assign_local(a, &gids, &nl);
  fail_gid = -1;
  for (int i = nl - 1; i >= 0 && t_rank == 0 && fail_gid < 0; i--)
    if (gids[i] % 6 != 0)
      fail_gid = gids[i];
  int rc = bpc_io_write(ctx, path, b, &ft, NULL, "new", 3);
  T_CHECK(rc == BPC_ECALLBACK, "keep: failing pack: %s", bpc_last_error(ctx));
  T_CHECK(access(prev, F_OK) != 0, "keep: the spare is left after a failed write");
  read_check(ctx, path, nb[3], BPC_ASSIGN_CONTIGUOUS, 1, 13, 0, "k", t_size);
  /* the setting differs between ranks */
  for (int m = 0; m < BAD_NMODES; m++) {
    setenv("BPC_IO_KEEP_PREVIOUS", bad_here(m) ? "0" : "1", 1);
    const bad_case_t kc = {"BPC_IO_KEEP_PREVIOUS differs", BPC_EMISMATCH, 1,
                           "BPC_IO_KEEP_PREVIOUS"};
    bpc_type_t good = io_type(1);
    rc = bpc_io_write(ctx, path, b, &good, NULL, "new", 3);
    bad_check(ctx, &kc, m, rc);
  }
  unsetenv("BPC_IO_KEEP_PREVIOUS");
  unsetenv("BPC_IO_CHUNK");
  bpc_blocks_destroy(&b);
  bpc_assign_destroy(&a);
  MPI_Barrier(MPI_COMM_WORLD);
  if (t_rank == 0)
    unlink(prev);
  finish(&ctx, path);
}
END_TEST

/* ------------------------------------------------------------ 2.5 GiB */

/* A "virtual" item: its bytes are made by pack and checked by unpack, so
 * no rank ever holds more than one block. */
typedef struct big_item {
  int gid;
  uint64_t size;
  int ok;
} big_item_t;

static uint64_t big_word(int gid, uint64_t j)
{
  uint64_t z = (uint64_t)gid * 0x9E3779B97F4A7C15ull + j;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  return z ^ (z >> 27);
}

static uint64_t big_size(int gid)
{
  return ((uint64_t)64 << 20) + 8 * (uint64_t)gid * 1001;
}

static int big_packed_size(const void *item, size_t *bytes, void *user)
{
  (void)user;
  *bytes = (size_t)((const big_item_t *)item)->size;
  return 0;
}

static int big_pack(const void *item, void *buf, size_t bytes, void *user)
{
  (void)user;
  const big_item_t *it = item;
  uint64_t *w = buf;
  for (uint64_t j = 0; j < bytes / 8; j++)
    w[j] = big_word(it->gid, j);
  return 0;
}

static int big_unpack(const void *buf, size_t bytes, void **item, void *user)
{
  (void)user;
  big_item_t *it = malloc(sizeof *it);
  if (it == NULL)
    return 1;
  const uint64_t *w = buf;
  it->size = bytes;
  it->gid = -1;
  /* the gid is recovered from the size (sizes differ per gid) */
  it->gid = (int)((bytes - ((uint64_t)64 << 20)) / (8 * 1001));
  it->ok = 1;
  for (uint64_t j = 0; j < bytes / 8 && it->ok; j++)
    it->ok = w[j] == big_word(it->gid, j);
  *item = it;
  return 0;
}

static void big_free(void *item, void *user)
{
  (void)user;
  free(item);
}

static void *big_create(int gid, void *user)
{
  (void)user;
  big_item_t *it = malloc(sizeof *it);
  it->gid = gid;
  it->size = big_size(gid);
  it->ok = 1;
  return it;
}

static void big_destroy(void *block, int gid, void *user)
{
  (void)gid;
  (void)user;
  free(block);
}

START_TEST(test_big)
{
  const int nb = 40; /* 40 x 64 MiB + a little: 2.5 GiB and 6 MB */
  int skip = 0;
  const char *big = getenv("BPC_TEST_BIG");
  if (t_size != 2) {
    skip = 1;
  } else if (big != NULL && strcmp(big, "0") == 0) {
    skip = 3;
    if (t_rank == 0)
      printf("test_big: skipped: BPC_TEST_BIG=0 (CI's sanitizer stage; stage 1 runs it)\n");
  } else if (t_rank == 0) {
    struct statvfs s;
    if (statvfs(".", &s) != 0 || (uint64_t)s.f_bavail * s.f_frsize < ((uint64_t)3 << 30)) {
      skip = 2;
      printf("test_big: skipped: less than 3 GiB free here for a 2.5 GiB checkpoint\n");
    }
  }
  MPI_Bcast(&skip, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (skip) {
    if (t_rank == 0 && skip == 1)
      printf("test_big: skipped: the 2.5 GiB file runs on 2 processes only (here %d)\n", t_size);
    return;
  }
  bpc_ctx_t *ctx = ctx_of(MPI_COMM_WORLD);
  char path[256];
  tpath(path, sizeof path, "big");
  bpc_assign_t *a = NULL;
  bpc_assign_create(ctx, nb, BPC_ASSIGN_CONTIGUOUS, NULL, &a);
  bpc_blocks_t *b = NULL;
  bpc_blocks_create(a, big_create, big_destroy, NULL, &b);
  bpc_type_ops_t ops = {big_packed_size, big_pack, big_unpack, big_free, NULL};
  bpc_type_t type = bpc_type_custom(&ops, NULL);
  int rc = bpc_io_write(ctx, path, b, &type, NULL, NULL, 0);
  T_CHECK(rc == BPC_OK, "big write: %s", bpc_last_error(ctx));
  bpc_blocks_destroy(&b);
  bpc_io_info_t info;
  rc = bpc_io_info(ctx, path, &info, NULL);
  T_CHECK(rc == BPC_OK && info.file_bytes > ((uint64_t)5 << 29), "big info: %s, %llu bytes",
          bpc_last_error(ctx), (unsigned long long)info.file_bytes);
  /* read round-robin: each rank's blocks lie on both sides of 2 GiB */
  bpc_assign_t *rr = NULL;
  bpc_assign_create(ctx, nb, BPC_ASSIGN_ROUND_ROBIN, NULL, &rr);
  rc = bpc_io_read(ctx, path, rr, &type, &b);
  T_CHECK(rc == BPC_OK, "big read: %s", bpc_last_error(ctx));
  int n = 0, wrong = 0;
  bpc_blocks_count(b, &n);
  for (int i = 0; i < n && rc == BPC_OK; i++) {
    void *item = NULL;
    int gid = -1;
    bpc_blocks_at(b, i, &item, &gid);
    const big_item_t *it = item;
    wrong += it->gid != gid || !it->ok || it->size != big_size(gid);
  }
  T_CHECK(wrong == 0, "big: %d wrong blocks", wrong);
  bpc_blocks_destroy(&b);
  bpc_assign_destroy(&rr);
  bpc_assign_destroy(&a);
  finish(&ctx, path);
}
END_TEST

/* The CRC-32C check value, and a serial context (POSIX file calls). */
START_TEST(test_crc_serial)
{
  T_CHECK(bpc__crc32c(0, "123456789", 9) == 0xE3069283u, "crc32c check value 0x%08x",
          bpc__crc32c(0, "123456789", 9));
  T_CHECK(bpc__crc32c(bpc__crc32c(0, "1234", 4), "56789", 5) == 0xE3069283u, "chained crc");
  /* the instruction path (interleaved stripes of 8192 and 256 bytes, joined
   * with shift matrices) against the byte-at-a-time table: lengths around
   * every stripe boundary, every start alignment, chained in two pieces */
  {
    const size_t cap = 3 * 8192 * 3 + 3 * 256 * 3 + 64;
    unsigned char *d = malloc(cap);
    ck_assert_ptr_nonnull(d);
    uint64_t x = 0x9e3779b97f4a7c15u;
    for (size_t i = 0; i < cap; i++) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      d[i] = (unsigned char)x;
    }
    const size_t base[] = {0, 1, 7, 8, 767, 768, 769, 24575, 24576, 24577, 49152, 50000};
    int bad = 0, tried = 0;
    for (size_t bi = 0; bi < sizeof base / sizeof base[0]; bi++)
      for (size_t extra = 0; extra < 3 * 256 + 9; extra += 37)
        for (size_t off = 0; off < 8; off++) {
          const size_t n = base[bi] + extra;
          if (off + n > cap)
            continue;
          const uint32_t want = bpc__crc32c_table(0x1234u, d + off, n);
          const size_t h = n / 3;
          tried++;
          bad += bpc__crc32c(0x1234u, d + off, n) != want;
          bad += bpc__crc32c(bpc__crc32c(0x1234u, d + off, h), d + off + h, n - h) != want;
        }
    T_CHECK(bad == 0, "crc32c: %d of %d lengths differ from the table", bad, 2 * tried);
    free(d);
  }
  if (t_rank == 0) {
    bpc_ctx_t *sc = NULL;
    ck_assert_int_eq(bpc_init_serial(NULL, &sc), BPC_OK);
    char path[256];
    tpath(path, sizeof path, "serial");
    for (int custom = 0; custom < 2; custom++) {
      int rc = write_ckpt(sc, path, 9, BPC_ASSIGN_CONTIGUOUS, custom, 8, custom, "s");
      T_CHECK(rc == BPC_OK, "serial write: %s", bpc_last_error(sc));
      read_check(sc, path, 9, BPC_ASSIGN_ROUND_ROBIN, custom, 8, custom, "s", 1);
    }
    unlink(path);
    bpc_finalize(&sc);
  }
  T_SYNC();
}
END_TEST

/* The checksum thread (lib/io/crcq.c) alone: pieces of several blocks
 * interleaved in the queue, each block's CRC chained in order; the queue's
 * bounds; an abandoned queue; and the spare-core rule. */
START_TEST(test_crc_queue)
{
  enum { NB = 5, PIECES = 40 };
  static unsigned char d[NB][6000];
  for (int b = 0; b < NB; b++)
    for (int i = 0; i < 6000; i++)
      d[b][i] = (unsigned char)(i * 31 + b * 7 + (i >> 8));
  bpc__crcq_t *q = bpc__crcq_start(NB, PIECES);
  ck_assert_ptr_nonnull(q);
  size_t at[NB] = {0};
  int pushed = 0;
  for (int j = 0; j < PIECES; j++) { /* uneven pieces, blocks taking turns */
    const int b = (j * 3) % NB;
    const size_t take = (size_t)(j * 97 % 600) + (j % 4 == 0 ? 0 : 1);
    if (at[b] + take > sizeof d[b])
      continue;
    T_CHECK(bpc__crcq_push(q, b, d[b] + at[b], take) == 0, "push %d refused", j);
    at[b] += take;
    pushed++;
  }
  T_CHECK(bpc__crcq_push(q, NB, d[0], 1) == -1, "block out of range taken");
  for (; pushed < PIECES; pushed++)
    bpc__crcq_push(q, 0, d[0] + at[0], 0);
  T_CHECK(bpc__crcq_push(q, 0, d[0], 1) == -1, "a piece beyond max_jobs taken");
  bpc__crcq_join(q, 0);
  for (int b = 0; b < NB; b++)
    T_CHECK(bpc__crcq_crc(q, b) == bpc__crc32c(0, d[b], at[b]), "block %d: 0x%08x, want 0x%08x",
            b, bpc__crcq_crc(q, b), bpc__crc32c(0, d[b], at[b]));
  bpc__crcq_free(q);
  q = bpc__crcq_start(1, 4);
  ck_assert_ptr_nonnull(q);
  bpc__crcq_push(q, 0, d[0], sizeof d[0]);
  bpc__crcq_free(q); /* joins, abandoning: no leak, no hang */
  /* cores in the affinity, cores the job may use, processes on the node
   * -> spare core */
  static const int rule[][4] = {
      {1, 2, 1, 0},   /* bound to one core */
      {2, 2, 1, 1},   /* one process, two cores, unbound */
      {2, 2, 2, 0},   /* two processes share two cores (or a cpuset of 2) */
      {8, 8, 4, 1},   /* unbound, two cores a process */
      {8, 8, 5, 0},   /* unbound, fewer */
      {2, 8, 4, 1},   /* bound to two cores of its own */
      {4, 16, 16, 0}, /* a socket of 4 shared by 4 processes */
      {4, 16, 8, 1},  /* ... by 2 */
      {2, 8, 0, 1},   /* unknown count, bound to part of the cores */
      {8, 8, 0, 0},   /* unknown count, unbound */
  };
  for (size_t i = 0; i < sizeof rule / sizeof rule[0]; i++)
    T_CHECK(bpc__io_spare_core(rule[i][0], rule[i][1], rule[i][2]) == rule[i][3],
            "spare core (%d of %d cores, %d processes) should be %d", rule[i][0], rule[i][1],
            rule[i][2], rule[i][3]);
#if defined(__linux__) && defined(CPU_SETSIZE)
  { /* kernel CPU lists (cgroup cpuset files) */
    cpu_set_t set;
    T_CHECK(bpc__io_cpus_parse("0-3,8,10-11\n", &set) == 0 && CPU_COUNT(&set) == 7 &&
                CPU_ISSET(8, &set) && CPU_ISSET(11, &set) && !CPU_ISSET(9, &set),
            "cpu list 0-3,8,10-11");
    T_CHECK(bpc__io_cpus_parse("5", &set) == 0 && CPU_COUNT(&set) == 1 && CPU_ISSET(5, &set),
            "cpu list 5");
    static const char *const bad[] = {"", "\n", "3-1", "a", "1,,2", "-2"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
      T_CHECK(bpc__io_cpus_parse(bad[i], &set) == -1, "cpu list '%s' taken", bad[i]);
  }
#endif
  /* the setting overrides, in both directions, whatever the size */
  setenv("BPC_IO_CRC_THREAD", "1", 1);
  T_CHECK(bpc__io_crc_thread_wanted(1) == 1, "BPC_IO_CRC_THREAD=1 ignored");
  setenv("BPC_IO_CRC_THREAD", "0", 1);
  T_CHECK(bpc__io_crc_thread_wanted((uint64_t)1 << 40) == 0, "BPC_IO_CRC_THREAD=0 ignored");
  unsetenv("BPC_IO_CRC_THREAD");
  T_CHECK(bpc__io_crc_thread_wanted(BPC__IO_CRC_THREAD_MIN - 1) == 0, "a thread for little data");
  T_SYNC();
}
END_TEST

/* BPC_IO_CRC_THREAD=1: the payload checksums on the helper thread, in
 * rounds of 16 KiB: block 1 (160 kB) spans ten, its CRC chained over
 * pieces the thread takes a round behind the reads, and the small blocks
 * (up to 2,400 bytes) share rounds: the thread on every
 * rank, on even ranks only (the choice is each rank's own: nothing
 * collective depends on it), off for the write and on for the read. The
 * file is the inline one (read_check's bpc_io_verify checks it inline), it
 * reads back with the thread, and a flipped payload byte is found by it. */
START_TEST(test_crc_thread)
{
  bpc_ctx_t *ctx = ctx_of(MPI_COMM_WORLD);
  char path[256], bad[256];
  tpath(path, sizeof path, "crct");
  tpath(bad, sizeof bad, "crct-bad");
  setenv("BPC_IO_CHUNK", "16384", 1);
  const long started = bpc__crcq_started;
  for (int v = 0; v < 3; v++) { /* 3 blocks a process: some empty, some not */
    const char *even_on = t_rank % 2 ? "0" : "1";
    const char *w = v == 0 ? "1" : v == 1 ? even_on : "0"; /* writing */
    const char *r = v == 1 ? even_on : "1";                /* reading */
    const int nb = 3 * t_size, gen = 20 + v;
    setenv("BPC_IO_CRC_THREAD", w, 1);
    int rc = write_ckpt(ctx, path, nb, modes[v], 0, gen, 1, "t");
    T_CHECK(rc == BPC_OK, "write (thread %s): %s", w, bpc_last_error(ctx));
    setenv("BPC_IO_CRC_THREAD", r, 1);
    for (int m = 0; m < (v == 0 ? 3 : 1); m++) /* every read mode once */
      read_check(ctx, path, nb, modes[(v + 1 + m) % 3], 0, gen, 1, "t", t_size);
  }
  /* the helper did run: every rank wrote or read with it forced */
  T_CHECK(bpc__crcq_started > started, "no checksum thread was started");
  setenv("BPC_IO_CRC_THREAD", "1", 1);
  int rc = write_ckpt(ctx, path, 6, BPC_ASSIGN_CONTIGUOUS, 0, 3, 1, "meta!");
  ck_assert_int_eq(rc, BPC_OK);
  size_t n = 0;
  unsigned char *orig = slurp(path, &n);
  unsigned char *b = malloc(n);
  for (int g = 0; g < 6; g++) {
    const unsigned char *e = orig + 256 + 24 * g;
    if (le64(e + 8) == 0)
      continue;
    memcpy(b, orig, n);
    b[le64(e) + le64(e + 8) - 1] ^= 0x01; /* the last byte: the thread's last piece */
    expect_bad(ctx, bad, b, n, BPC_EFORMAT, "payload checksum", "thread, payload of block", g);
  }
  free(b);
  free(orig);
  unsetenv("BPC_IO_CRC_THREAD");
  unsetenv("BPC_IO_CHUNK");
  MPI_Barrier(MPI_COMM_WORLD);
  if (t_rank == 0)
    unlink(bad);
  finish(&ctx, path);
}
END_TEST

static Suite *make(void)
{
  Suite *s = suite_create("io");
  TCase *tc = tcase_create("io");
  tcase_set_timeout(tc, 0);
  tcase_add_test(tc, test_crc_serial);
  tcase_add_test(tc, test_crc_queue);
  tcase_add_test(tc, test_roundtrip);
  tcase_add_test(tc, test_other_counts);
  tcase_add_test(tc, test_corrupt);
  tcase_add_test(tc, test_bad_args);
  tcase_add_test(tc, test_keep_previous);
  tcase_add_test(tc, test_size_changes);
  tcase_add_test(tc, test_crc_thread);
  tcase_add_test(tc, test_big);
  suite_add_tcase(s, tc);
  return s;
}

BPC_T_MPI_MAIN(make)
