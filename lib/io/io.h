/*
 * lib/io/io.h - internal pieces of the checkpoint format (doc/io.md): the
 * CRC-32C, the header and table-entry encoders and their checked decoders.
 * Pure functions: no I/O, no MPI. Not installed.
 */
#ifndef BPC_LIB_IO_H
#define BPC_LIB_IO_H

#include <stddef.h>
#include <stdint.h>

#include "bpc/io.h"
#include "core/core.h"

#define BPC__IO_MAGIC "BPC-CKPT" /* 8 bytes, no terminator in the file */
#define BPC__IO_HDR_BYTES 256
#define BPC__IO_ENTRY_BYTES 24
#define BPC__IO_HDR_CRC_AT 252 /* the header CRC covers bytes [0, 252) */

/* CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), chained: start
 * with crc = 0, pass the result back in for the next piece. Uses the SSE4.2
 * instruction when the CPU has it (three interleaved chains over long
 * buffers), else a table. */
uint32_t bpc__crc32c(uint32_t crc, const void *data, size_t n);
/* The same CRC with the table alone, a byte at a time (the reference the
 * tests compare the instruction path with). */
uint32_t bpc__crc32c_table(uint32_t crc, const void *data, size_t n);

/*
 * The payload checksums on a helper thread (lib/io/crcq.c): start one for
 * blocks 0..nblocks-1 and at most max_jobs pieces; push pieces (block
 * index, memory that stays valid until the join, bytes), each block's in
 * order; the thread chains each block's CRC over its pieces. join waits
 * for the thread (abandon: it stops at its next piece, the CRCs are then
 * partial); crc is block blk's CRC after a join without abandon; free joins
 * (abandoning) if needed and frees. start returns NULL (checksum inline)
 * when the thread or its memory cannot be had; push returns -1 for a block
 * out of range or beyond max_jobs pieces.
 */
typedef struct bpc__crcq bpc__crcq_t;
bpc__crcq_t *bpc__crcq_start(int nblocks, size_t max_jobs);
int bpc__crcq_push(bpc__crcq_t *q, int blk, const void *p, size_t n);
void bpc__crcq_join(bpc__crcq_t *q, int abandon);
uint32_t bpc__crcq_crc(const bpc__crcq_t *q, int blk);
void bpc__crcq_free(bpc__crcq_t *q);
/* Pieces a queue may be started for at most (24 bytes each): beyond, the
 * checksum stays inline (a read in very many small rounds). */
#define BPC__CRCQ_MAX_JOBS ((size_t)1 << 20)
/* Helper threads started so far in this process (the tests' proof that
 * one ran). */
extern long bpc__crcq_started;
/* Whether this rank's checksum of `bytes` payload bytes goes to a helper
 * thread: BPC_IO_CRC_THREAD=0 never, =1 always; otherwise only from
 * BPC__IO_CRC_THREAD_MIN bytes on and where bpc__io_spare_core says so, for
 * the physical cores (hardware threads of a core count once) of the
 * calling thread's CPU affinity and of the CPUs the job may use (its
 * cgroup's cpuset, else the online CPUs), and the processes of the job on
 * the node (the launcher's count; 1 for a one-process job). */
#define BPC__IO_CRC_THREAD_MIN ((uint64_t)4 << 20)
int bpc__io_crc_thread_wanted(uint64_t bytes);
/* The rule: a process allowed on mask_cores of the avail_cores the job may
 * use on the node, with local_procs processes of the job there (0:
 * unknown), has a spare core when its cores are at least twice the
 * processes that share them (local_procs x mask_cores / avail_cores,
 * rounded up, at least 1: the processes spread evenly over the cores);
 * with local_procs unknown, only when it is bound to 2 or more of the
 * cores and not to all of them. */
int bpc__io_spare_core(int mask_cores, int avail_cores, int local_procs);
#if defined(__linux__) && defined(CPU_SETSIZE)
/* Parse a kernel CPU list ("0-3,8,10-11", up to a newline) into *set; 0
 * when it held one, -1 when it is empty or malformed. */
int bpc__io_cpus_parse(const char *s, cpu_set_t *set);
#endif

typedef struct bpc__io_hdr {
  uint32_t version;
  uint64_t nblocks;
  uint64_t table_off, meta_off, meta_bytes, data_off, data_bytes, file_bytes;
  uint32_t writer_ranks, has_decomp, dim, meta_crc;
  int64_t dmin[BPC_MAX_DIM], dmax[BPC_MAX_DIM];
  uint32_t divs[BPC_MAX_DIM], ghost[BPC_MAX_DIM];
  uint8_t share_face[BPC_MAX_DIM], wrap[BPC_MAX_DIM];
} bpc__io_hdr_t;

/* Fill the layout fields (offsets, file size) of a header whose nblocks,
 * meta_bytes and data_bytes are set. */
void bpc__io_hdr_layout(bpc__io_hdr_t *h);
/* The 256 header bytes, with the header CRC. */
void bpc__io_hdr_encode(const bpc__io_hdr_t *h, unsigned char out[BPC__IO_HDR_BYTES]);
/*
 * Decode and check `have` bytes read from the start of a file of
 * `file_size` bytes named `path`: length, magic, version, header CRC, every
 * field's range and the layout, and that the file is exactly as long as the
 * header says. BPC_EFORMAT with a message naming the first problem.
 */
int bpc__io_hdr_decode(bpc_ctx_t *ctx, const char *path, const unsigned char *in, size_t have,
                       uint64_t file_size, bpc__io_hdr_t *h);
/* The header as the public info. */
void bpc__io_hdr_info(const bpc__io_hdr_t *h, bpc_io_info_t *info);

/* Table entry of `gid`: offset, size, payload CRC, entry CRC (over the gid
 * and the first 20 bytes, so an entry copied to another slot fails too). */
void bpc__io_entry_encode(uint64_t gid, uint64_t off, uint64_t size, uint32_t crc,
                          unsigned char out[BPC__IO_ENTRY_BYTES]);
/* Decode and check an entry against the header (CRC, payload inside the
 * data section). BPC_EFORMAT naming the gid. */
int bpc__io_entry_decode(bpc_ctx_t *ctx, const char *path, const bpc__io_hdr_t *h, uint64_t gid,
                         const unsigned char in[BPC__IO_ENTRY_BYTES], uint64_t *off,
                         uint64_t *size, uint32_t *crc);

#endif /* BPC_LIB_IO_H */
