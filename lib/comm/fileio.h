/*
 * lib/comm/fileio.h - file I/O for checkpoints (internal): open, size,
 * collective and independent reads and writes at 64-bit offsets, sync,
 * close, delete and rename. MPI-IO on an MPI context (the only place bpc
 * calls MPI_File_*), POSIX calls on a serial one, so lib/io never calls
 * MPI itself.
 *
 * Counts: the collective calls move at most BPC__FILE_MAX_CALL bytes (below
 * INT_MAX) per call and rank, one MPI call each, so callers that stream
 * more bytes make rounds (every rank the same number of calls, 0 bytes
 * allowed). The independent calls split any count into pieces below
 * INT_MAX themselves.
 *
 * Errors: BPC_EIO with a message naming the file, the operation, the offset
 * and the system's (or MPI's) reason; BPC_EINVAL for a count above the
 * limit. Nothing here agrees with other ranks: callers run bpc__agree.
 */
#ifndef BPC_LIB_COMM_FILEIO_H
#define BPC_LIB_COMM_FILEIO_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#include "core/core.h"

/* The most bytes one collective call moves per rank: 1 GiB, a round number
 * well below INT_MAX. */
#define BPC__FILE_MAX_CALL ((size_t)1 << 30)

typedef struct bpc__file {
  MPI_File fh; /* MPI contexts */
  int fd;      /* serial contexts; -1 when closed */
  int open;
  char path[1024];
} bpc__file_t;

typedef enum bpc__file_mode {
  BPC__FILE_READ = 0,  /* read only; the file must exist */
  BPC__FILE_CREATE = 1 /* write only; created when missing (an existing file keeps its bytes:
                          bpc__file_set_size gives it its length) */
} bpc__file_mode_t;

/* Collective: open `path` on every rank of ctx. On failure f is closed. */
int bpc__file_open(bpc_ctx_t *ctx, const char *path, bpc__file_mode_t mode, bpc__file_t *f);
/* Collective: close (no-op when f is not open). */
int bpc__file_close(bpc_ctx_t *ctx, bpc__file_t *f);
/* Collective: make the file exactly `bytes` long (cut or extended with
 * zeros). On ext4, cutting a file to 0 bytes makes its close start writing
 * it back (auto_da_alloc), so a new file is given its final length instead
 * of being emptied first. */
int bpc__file_set_size(bpc_ctx_t *ctx, bpc__file_t *f, uint64_t bytes);
/* Local: the file's size in bytes. */
int bpc__file_size(bpc_ctx_t *ctx, bpc__file_t *f, uint64_t *bytes);
/* Collective: flush written data to the storage device. */
int bpc__file_sync(bpc_ctx_t *ctx, bpc__file_t *f);

/* Collective: one MPI_File_write_at_all / read_at_all of `bytes` (at most
 * BPC__FILE_MAX_CALL, 0 allowed) at `off`. A short read is BPC_EIO. */
int bpc__file_write_at_all(bpc_ctx_t *ctx, bpc__file_t *f, uint64_t off, const void *buf,
                           size_t bytes);
int bpc__file_read_at_all(bpc_ctx_t *ctx, bpc__file_t *f, uint64_t off, void *buf, size_t bytes);

/* A piece of memory. */
typedef struct bpc__iov {
  void *base;
  size_t len;
} bpc__iov_t;

/* Collective, like bpc__file_read_at_all: the file bytes [off, off + the
 * sum of the lengths) (at most BPC__FILE_MAX_CALL) land in iov[0], then
 * iov[1], ... (n = 0: nothing). One MPI_File_read_at_all with a memory
 * datatype of the pieces' addresses, so the bytes go straight to where they
 * belong. On a serial context one read per piece. */
int bpc__file_read_at_all_v(bpc_ctx_t *ctx, bpc__file_t *f, uint64_t off, const bpc__iov_t *iov,
                            int n);

/* Independent (this rank only): write / read any count at `off`. */
int bpc__file_write_at(bpc_ctx_t *ctx, bpc__file_t *f, uint64_t off, const void *buf,
                       size_t bytes);
int bpc__file_read_at(bpc_ctx_t *ctx, bpc__file_t *f, uint64_t off, void *buf, size_t bytes);

/* Local (call on one rank): delete a file (missing_ok: a missing file is
 * not an error) and rename one (atomic on POSIX file systems). Over an
 * existing regular file on Linux the rename is an exchange of the names
 * (renameat2 RENAME_EXCHANGE), after which the old file, now named `from`,
 * is deleted, or kept when keep_old is 1. */
int bpc__file_delete(bpc_ctx_t *ctx, const char *path, int missing_ok);
int bpc__file_rename(bpc_ctx_t *ctx, const char *from, const char *to, int keep_old);

#endif /* BPC_LIB_COMM_FILEIO_H */
