/*
 * bpc/io.h - block checkpoint and restart over MPI-IO.
 *
 * bpc_io_write saves the item of every block of a block store (any item
 * type: the block's user data pointer is the item, a bpc_buf_t * for
 * contiguous types) collectively to ONE file, with the block count, the
 * decomposition (optional) and a user metadata byte string. The file can be
 * read back on ANY number of processes and any assignment of the same block
 * count: bpc_io_info reads the header (block count, decomposition,
 * metadata), the caller builds an assignment or decomposition from it, and
 * bpc_io_read makes a new block store of the items. bpc_io_verify checks
 * every checksum of a file.
 *
 * The file is self-describing and checked (doc/io.md has the format): a
 * header with magic, format version, block count, decomposition and a
 * header checksum; a table of per-block 64-bit offsets, sizes and CRC-32C
 * checksums (each entry checked by its own CRC); the metadata (checked);
 * the payloads. Reading a truncated, corrupted or foreign file, or one of
 * another format version, fails with BPC_EFORMAT on every rank.
 *
 * Writing is atomic for a reader: the data goes to "<path>.tmp.bpc", and
 * only when every rank has written its part and the file is closed does
 * rank 0 rename it to `path`, so a run killed while writing leaves the
 * previous checkpoint at `path` as it was.
 *
 * All calls are collective over the context; a bad argument on any rank
 * fails the call on every rank with the same code and message.
 */
#ifndef BPC_IO_H
#define BPC_IO_H

#include "bpc/core.h"
#include "bpc/datatype.h"
#include "bpc/decomp.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The format version this library writes and reads. */
#define BPC_IO_VERSION 1

/* What a checkpoint's header says. */
typedef struct bpc_io_info {
  int version;           /* format version (BPC_IO_VERSION) */
  int nblocks;           /* block count */
  int writer_ranks;      /* processes that wrote the file */
  int has_decomp;        /* 1: `params` is the decomposition written */
  /* The decomposition written (dim, domain, nblocks, divs, share_face,
   * wrap, ghost), with assign = BPC_ASSIGN_CONTIGUOUS and map = NULL: set
   * those to restart with another assignment. Without a decomposition:
   * bpc_decomp_params_default() with nblocks set. */
  bpc_decomp_params_t params;
  uint64_t file_bytes;   /* size of the whole file */
  uint64_t data_bytes;   /* sum of the blocks' packed sizes */
  uint64_t meta_bytes;   /* user metadata bytes */
} bpc_io_info_t;

/*
 * Write a checkpoint of `blocks` (the items of all its local blocks, of
 * `type`) to `path`, replacing any file there only once the new one is
 * complete. `decomp` may be NULL (only the block count is saved); if given,
 * its block count must be the store's. `meta` (metalen bytes; NULL when
 * metalen is 0) is saved with the file and must be the same on every rank.
 * Environment: BPC_IO_CHUNK (bytes per collective write per rank, default
 * 16 MiB), BPC_IO_SYNC=1 (sync the file before the rename),
 * BPC_IO_KEEP_PREVIOUS=1 (the replaced checkpoint stays as
 * `<path>.prev.bpc` and the next write reuses that file in place: twice the
 * disk space, faster writes; see doc/io.md), BPC_IO_CRC_THREAD (0: the
 * payload checksums on the calling thread; 1: on a helper thread beside
 * the writes; unset: the helper where the process has a spare core and at
 * least 4 MiB of contiguous items; custom types: always the calling
 * thread). The items must not change until the call returns.
 * Ownership: nothing is kept; blocks and meta stay the caller's.
 * Errors: BPC_ENULL, BPC_ETYPE, BPC_ENBLOCKS (decomp and store differ in
 * block count), BPC_EMISMATCH (path, type, assignment, decomposition or
 * metadata differ between ranks), BPC_ECALLBACK (packed_size or pack
 * failed), BPC_EIO (the file could not be created, written or renamed; the
 * temporary file is deleted), BPC_ENOMEM.
 */
int bpc_io_write(bpc_ctx_t *ctx, const char *path, const bpc_blocks_t *blocks,
                 const bpc_type_t *type, const bpc_decomp_t *decomp, const void *meta,
                 size_t metalen);

/*
 * Read the header of the checkpoint at `path` into *info (same on every
 * rank). If `meta` is not NULL, *meta is a new copy of the metadata
 * (malloc; free it with free(); NULL when there is none); `meta` may be
 * NULL on some ranks and not on others. Rank 0 reads and
 * checks the header, the metadata and the file size; the others get them
 * from it.
 * Errors: BPC_ENULL, BPC_EMISMATCH (path differs between ranks), BPC_EIO
 * (missing or unreadable file), BPC_EFORMAT (not a bpc checkpoint, another
 * format version, header or metadata checksum wrong, truncated or longer
 * than the header says), BPC_ENOMEM.
 */
int bpc_io_info(bpc_ctx_t *ctx, const char *path, bpc_io_info_t *info, void **meta);

/*
 * Read the checkpoint at `path` into a new block store over assignment `a`
 * (any process count and mode; a's block count must be the file's): the
 * user data of local block gid is the item unpacked from the file (custom
 * types: made by unpack; contiguous types: a new bpc_buf_t, as
 * bpc_type_unpack, into which the payload is read in place). Every
 * block's table entry and payload checksum is checked before the store is
 * returned (a custom item is unpacked only after its checks). Each rank
 * reads only its own blocks' table entries and payloads (collective reads
 * of at most BPC_IO_CHUNK bytes). Contiguous types: the payload checksums
 * may run on a helper thread a round behind the reads (BPC_IO_CRC_THREAD,
 * as for bpc_io_write).
 * Ownership: *out is freed with bpc_blocks_destroy, which frees each item
 * with bpc_type_item_destroy; `a` and `type` must outlive the store. On failure
 * *out is NULL and every item made is freed.
 * Errors: BPC_ENULL, BPC_ETYPE, BPC_ENBLOCKS (a's block count is not the
 * file's), BPC_EMISMATCH, BPC_EIO, BPC_EFORMAT (as bpc_io_info; a table
 * entry or payload checksum wrong, naming the gid), BPC_ECALLBACK (unpack
 * failed), BPC_ETRUNC (contiguous payload not a multiple of elem_size),
 * BPC_ENOMEM.
 */
int bpc_io_read(bpc_ctx_t *ctx, const char *path, const bpc_assign_t *a, const bpc_type_t *type,
                bpc_blocks_t **out);

/*
 * Check every checksum of the checkpoint at `path` (header, metadata, every
 * table entry and every payload; the ranks share the blocks), and fill
 * *info if not NULL. BPC_OK means the file is intact.
 * Errors: as bpc_io_info, and BPC_EFORMAT naming the first bad gid.
 */
int bpc_io_verify(bpc_ctx_t *ctx, const char *path, bpc_io_info_t *info);

#ifdef __cplusplus
}
#endif
#endif /* BPC_IO_H */
