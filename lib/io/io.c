/*
 * lib/io/io.c - block checkpoint and restart (bpc/io.h, doc/io.md).
 *
 * Write: every rank measures its blocks, one allgather of the per-rank
 * byte totals gives each rank its contiguous region of the data section
 * (regions in rank order, blocks in local gid order inside), then the
 * payloads stream through a staging buffer of BPC_IO_CHUNK bytes in rounds
 * of one collective write each (every rank makes the agreed largest number
 * of rounds, writing 0 bytes once it is done); a whole chunk of a
 * contiguous item is written straight from the user's memory (and its
 * checksum may be taken beside the writes on a helper thread, crcq.c, where
 * the process has a spare core). Each rank
 * writes the table entries of its own blocks (independent writes, one per
 * run of consecutive gids), rank 0 the header and the metadata; after the collective close
 * and an agreement, rank 0 renames the temporary file over `path`
 * (exchanging the names when `path` exists; BPC_IO_KEEP_PREVIOUS keeps the
 * old file as <path>.prev.bpc, to be written over by the next call).
 *
 * Read: rank 0 checks the header and the metadata and broadcasts them;
 * each rank reads and checks the table entries of its own gids, merges its
 * blocks into segments of adjacent file ranges, and streams the segments in
 * rounds of collective reads (again the agreed largest count). Contiguous
 * items are allocated first and read into in place; custom blocks that lie
 * whole in a chunk are checked and unpacked from the staging buffer, those
 * that span chunks are assembled in a buffer of their own size. The
 * checksums of items read in place may run on the helper thread a round
 * behind the reads.
 *
 * Memory per rank: its own entries and items, one staging buffer, and one
 * block at a time (a custom block being packed or assembled); the only
 * per-rank arrays of all ranks are the byte totals (P numbers).
 */
#include "io/io.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/coll.h"
#include "comm/comm.h"
#include "comm/fileio.h"
#include "datatype/datatype.h"
#include "decomp/decomp.h"

#define IO_TMP_SUFFIX ".tmp.bpc"
#define IO_PREV_SUFFIX ".prev.bpc"
/* 16 MiB: a round's bytes are checksummed right before they are written
 * (right after they are read), and at this size they are still in the
 * last-level cache then (with 64 MiB the checksum was a second pass through
 * memory); smaller rounds mean more collective calls, each a
 * synchronisation of the ranks (visible at 8 processes on 2 cores). */
#define IO_CHUNK_DEFAULT ((size_t)16 << 20)

/* One local block: its gid, index in the caller's list, file range, CRC. */
typedef struct io_blk {
  int gid;
  int li;
  uint64_t off, size;
  uint32_t crc;
  int crc_thread; /* write: its CRC is taken by the helper thread (crcq.c) */
} io_blk_t;

/* Bytes per collective call and rank: BPC_IO_CHUNK, clamped to
 * [1, BPC__FILE_MAX_CALL]. */
static size_t io_chunk(void)
{
  long long c = bpc__env_ll("BPC_IO_CHUNK", (long long)IO_CHUNK_DEFAULT);
  if (c < 1)
    c = 1;
  if ((unsigned long long)c > BPC__FILE_MAX_CALL)
    c = (long long)BPC__FILE_MAX_CALL;
  return (size_t)c;
}

static int keep(int rc, int rc2)
{
  return rc != BPC_OK ? rc : rc2;
}

static uint64_t ceil_div(uint64_t a, uint64_t b)
{
  return a / b + (a % b != 0);
}

/* The largest value of v over ranks. */
static int max_ll(bpc_ctx_t *ctx, long long v, long long *out)
{
  *out = v;
  return bpc__allreduce_ll(ctx, out, out, 1, BPC__RED_MAX);
}

/*
 * Write the table entries of blocks B[0..n) (gids ascending): one
 * independent write per run of consecutive gids.
 */
static int write_entries(bpc_ctx_t *ctx, bpc__file_t *f, const bpc__io_hdr_t *h,
                         const io_blk_t *B, int n)
{
  int rc = BPC_OK;
  unsigned char *buf = bpc__malloc((size_t)(n > 0 ? n : 1) * BPC__IO_ENTRY_BYTES);
  if (buf == NULL)
    return bpc__err(ctx, BPC_ENOMEM, "bpc_io_write: no memory for %d table entries", n);
  for (int i = 0; i < n; i++)
    bpc__io_entry_encode((uint64_t)B[i].gid, B[i].off, B[i].size, B[i].crc,
                         buf + (size_t)i * BPC__IO_ENTRY_BYTES);
  for (int i = 0; i < n && rc == BPC_OK;) {
    int j = i + 1;
    while (j < n && B[j].gid == B[j - 1].gid + 1)
      j++;
    rc = bpc__file_write_at(ctx, f, h->table_off + (uint64_t)B[i].gid * BPC__IO_ENTRY_BYTES,
                            buf + (size_t)i * BPC__IO_ENTRY_BYTES,
                            (size_t)(j - i) * BPC__IO_ENTRY_BYTES);
    i = j;
  }
  free(buf);
  return rc;
}

/* ----------------------------------------------------------------- write */

/* Streams the packed bytes of a rank's blocks, in order, into chunks. */
typedef struct io_wstream {
  bpc_ctx_t *ctx;
  const bpc_blocks_t *blocks;
  const bpc_type_t *type;
  io_blk_t *B;
  int n;
  int cur;             /* block being copied */
  const void *bytes;   /* its packed bytes (valid when have) */
  void *owned;         /* pool buffer holding a packed custom item */
  size_t owned_cap;
  void *done;          /* an owned buffer the last round still wrote from */
  size_t done_cap;
  size_t pos;          /* bytes of it copied so far */
  int have;
} io_wstream_t;

static void wstream_release(io_wstream_t *S)
{
  if (S->done != NULL)
    bpc__pool_put(S->ctx, S->done, S->done_cap);
  if (S->owned != NULL)
    bpc__pool_put(S->ctx, S->owned, S->owned_cap);
  S->done = S->owned = NULL;
}

/* Start block b: its packed bytes. A custom item that fits in the rest of
 * the round is packed straight into it (*packed = 1); a larger one into a
 * pool buffer; a contiguous item is the user's memory. */
static int wstream_start(io_wstream_t *S, io_blk_t *b, unsigned char *room, size_t room_len,
                         int *packed)
{
  const void *item = S->blocks->data[b->li];
  *packed = 0;
  b->crc = bpc__crc32c(0, NULL, 0); /* chained over the pieces */
  S->pos = 0;
  S->bytes = NULL;
  if (S->type->kind == BPC_TYPE_CUSTOM && b->size > 0) {
    unsigned char *dst = room;
    if (b->size > room_len) {
      S->owned = bpc__pool_get(S->ctx, (size_t)b->size, &S->owned_cap);
      if (S->owned == NULL)
        return bpc__err(S->ctx, BPC_ENOMEM, "bpc_io_write: no memory to pack block %d (%llu "
                                            "bytes)",
                        b->gid, (unsigned long long)b->size);
      dst = S->owned;
    }
    int rc = bpc__type_pack_exact(S->ctx, S->type, item, dst, (size_t)b->size);
    if (rc != BPC_OK)
      return rc;
    if (dst == room) {
      b->crc = bpc__crc32c(b->crc, room, (size_t)b->size);
      *packed = 1;
      return BPC_OK;
    }
    S->bytes = dst;
  } else if (S->type->kind != BPC_TYPE_CUSTOM) {
    size_t nb = 0;
    void *copy = NULL;
    int rc = bpc__type_msg(S->ctx, S->type, item, &S->bytes, &nb, &copy);
    free(copy); /* never set for a contiguous type */
    if (rc != BPC_OK)
      return rc;
    if (nb != b->size)
      return bpc__err(S->ctx, BPC_ETYPE,
                      "bpc_io_write: block %d is %zu bytes, but it measured %llu before", b->gid,
                      nb, (unsigned long long)b->size);
  }
  S->have = 1;
  return BPC_OK;
}

/* The next up to cap bytes: copied (or packed) into buf (*out = buf), or,
 * when the current item's packed bytes (the user's memory for a contiguous
 * item) have a whole chunk left, *out points into them and nothing is
 * copied. Each piece's CRC is taken here, right before it is written.
 * *len = bytes. */
static int wstream_fill(io_wstream_t *S, unsigned char *buf, size_t cap, const void **out,
                        size_t *len)
{
  *len = 0;
  *out = buf;
  if (S->done != NULL) { /* the previous round has been written */
    bpc__pool_put(S->ctx, S->done, S->done_cap);
    S->done = NULL;
  }
  while (S->cur < S->n) {
    io_blk_t *b = &S->B[S->cur];
    if (*len == cap && (!S->have ? b->size : b->size - S->pos) > 0)
      break; /* full; blocks of 0 bytes (and ends of 0 bytes) go on */
    if (!S->have) {
      int packed = 0;
      int rc = wstream_start(S, b, buf + *len, cap - *len, &packed);
      if (rc != BPC_OK)
        return rc;
      if (packed) {
        *len += (size_t)b->size;
        S->cur++;
        continue;
      }
    }
    if (*len == 0 && cap > 0 && b->size - S->pos >= cap) {
      *out = (const unsigned char *)S->bytes + S->pos; /* zero copy */
      *len = cap;
      if (!b->crc_thread)
        b->crc = bpc__crc32c(b->crc, *out, cap); /* now, while the write is near */
      S->pos += cap;
      if (S->pos == b->size) {
        S->done = S->owned; /* released once this round is written */
        S->done_cap = S->owned_cap;
        S->owned = NULL;
        S->have = 0;
        S->cur++;
      }
      return BPC_OK;
    }
    size_t take = (size_t)b->size - S->pos;
    if (take > cap - *len)
      take = cap - *len;
    if (take > 0) {
      memcpy(buf + *len, (const unsigned char *)S->bytes + S->pos, take);
      if (!b->crc_thread)
        b->crc = bpc__crc32c(b->crc, buf + *len, take);
    }
    *len += take;
    S->pos += take;
    if (S->pos == b->size) {
      if (S->owned != NULL)
        bpc__pool_put(S->ctx, S->owned, S->owned_cap);
      S->owned = NULL;
      S->have = 0;
      S->cur++;
    }
  }
  return BPC_OK;
}

/* Local checks of bpc_io_write and the measuring of the blocks. */
static int write_check(bpc_ctx_t *ctx, const char *path, const bpc_blocks_t *blocks,
                       const bpc_type_t *type, const bpc_decomp_t *decomp, const void *meta,
                       size_t metalen, io_blk_t **Bout)
{
  *Bout = NULL;
  if (path == NULL || blocks == NULL)
    return bpc__err(ctx, BPC_ENULL, "bpc_io_write: %s is NULL", path == NULL ? "path" : "blocks");
  int rc = bpc_type_check(ctx, type);
  if (rc != BPC_OK)
    return rc;
  if (meta == NULL && metalen > 0)
    return bpc__err(ctx, BPC_ENULL, "bpc_io_write: meta is NULL but metalen is %zu", metalen);
  if (blocks->assign->ctx != ctx)
    return bpc__err(ctx, BPC_EINVAL, "bpc_io_write: the block store's assignment was made for "
                                     "another context");
  if (decomp != NULL && decomp->nblocks != blocks->assign->nblocks)
    return bpc__err(ctx, BPC_ENBLOCKS,
                    "bpc_io_write: the decomposition has %d blocks, the block store's "
                    "assignment %d",
                    decomp->nblocks, blocks->assign->nblocks);
  if (strlen(path) + sizeof IO_TMP_SUFFIX > sizeof((bpc__file_t *)0)->path)
    return bpc__err(ctx, BPC_EINVAL, "bpc_io_write: path of %zu characters is too long",
                    strlen(path));
  const int n = blocks->n;
  io_blk_t *B = bpc__calloc((size_t)(n > 0 ? n : 1), sizeof *B);
  if (B == NULL)
    return bpc__err(ctx, BPC_ENOMEM, "bpc_io_write: no memory for %d blocks", n);
  *Bout = B;
  for (int i = 0; i < n; i++) {
    size_t sz = 0;
    B[i].gid = blocks->assign->local[i];
    B[i].li = i;
    rc = bpc_type_size(ctx, type, blocks->data[i], &sz);
    if (rc != BPC_OK)
      return rc;
    B[i].size = sz;
  }
  return BPC_OK;
}

/* Header fields of a write (layout filled by bpc__io_hdr_layout). */
static void write_header_fields(bpc__io_hdr_t *h, const bpc_decomp_t *d, int nblocks, int P,
                                const void *meta, size_t metalen, uint64_t data_bytes)
{
  memset(h, 0, sizeof *h);
  h->version = BPC_IO_VERSION;
  h->nblocks = (uint64_t)nblocks;
  h->meta_bytes = metalen;
  h->data_bytes = data_bytes;
  h->writer_ranks = (uint32_t)P;
  h->meta_crc = bpc__crc32c(0, meta, metalen);
  if (d != NULL) {
    h->has_decomp = 1;
    h->dim = (uint32_t)d->dim;
    for (int i = 0; i < d->dim; i++) {
      h->dmin[i] = d->dmin[i];
      h->dmax[i] = d->dmax[i];
      h->divs[i] = (uint32_t)d->divs[i];
      h->ghost[i] = (uint32_t)d->ghost[i];
      h->share_face[i] = (uint8_t)d->share_face[i];
      h->wrap[i] = (uint8_t)d->wrap[i];
    }
  }
  bpc__io_hdr_layout(h);
}

/* The body of a write to the open temporary file: payload rounds, table
 * entries, header and metadata. Collective; returns this rank's code. */
static int write_body(bpc_ctx_t *ctx, bpc__file_t *f, const bpc__io_hdr_t *h,
                      const bpc_blocks_t *blocks, const bpc_type_t *type, io_blk_t *B,
                      uint64_t start, long long rounds, size_t chunk, const void *meta)
{
  int rc = BPC_OK;
  const int n = blocks->n;
  uint64_t mine = 0;
  for (int i = 0; i < n; i++) {
    B[i].off = start + mine;
    mine += B[i].size;
  }
  /* contiguous items stay put until the call returns: their checksums can
   * be taken beside the writes, on a spare core */
  bpc__crcq_t *q = NULL;
  if (type->kind == BPC_TYPE_CONTIGUOUS && mine > 0 && bpc__io_crc_thread_wanted(mine))
    q = bpc__crcq_start(n, (size_t)n);
  for (int i = 0; q != NULL && i < n; i++) {
    const void *p = NULL;
    size_t nb = 0;
    void *copy = NULL;
    if (B[i].size > 0 &&
        bpc__type_msg(ctx, type, blocks->data[B[i].li], &p, &nb, &copy) == BPC_OK &&
        copy == NULL && nb == B[i].size)
      B[i].crc_thread = bpc__crcq_push(q, i, p, nb) == 0;
    free(copy); /* never set for a contiguous type */
  }
  size_t stage_cap = 0;
  unsigned char *stage =
      bpc__pool_get(ctx, mine < chunk ? (size_t)(mine > 0 ? mine : 1) : chunk, &stage_cap);
  if (stage == NULL)
    rc = bpc__err(ctx, BPC_ENOMEM, "bpc_io_write: no memory for a %zu-byte staging buffer",
                  chunk);
  io_wstream_t S;
  memset(&S, 0, sizeof S);
  S.ctx = ctx;
  S.blocks = blocks;
  S.type = type;
  S.B = B;
  S.n = n;
  uint64_t written = 0;
  for (long long r = 0; r < rounds; r++) {
    size_t len = 0;
    const void *wbuf = stage;
    if (rc == BPC_OK)
      rc = wstream_fill(&S, stage, chunk, &wbuf, &len);
    if (rc != BPC_OK)
      len = 0;
    rc = keep(rc, bpc__file_write_at_all(ctx, f, start + written, wbuf, len));
    written += len;
  }
  /* blocks of 0 bytes after the last round */
  if (rc == BPC_OK) {
    size_t len = 0;
    const void *wbuf = NULL;
    rc = wstream_fill(&S, stage, 0, &wbuf, &len);
  }
  wstream_release(&S);
  if (q != NULL) { /* the thread's checksums (abandoned after a failure) */
    bpc__crcq_join(q, rc != BPC_OK);
    for (int i = 0; i < n && rc == BPC_OK; i++)
      if (B[i].crc_thread)
        B[i].crc = bpc__crcq_crc(q, i);
    bpc__crcq_free(q);
  }
  if (rc == BPC_OK && (written != mine || S.cur != n))
    rc = bpc__err(ctx, BPC_ESTATE, "bpc_io_write: wrote %llu of %llu bytes",
                  (unsigned long long)written, (unsigned long long)mine);
  if (rc == BPC_OK)
    rc = write_entries(ctx, f, h, B, n);
  if (rc == BPC_OK && ctx->rank == 0) {
    unsigned char hb[BPC__IO_HDR_BYTES];
    bpc__io_hdr_encode(h, hb);
    rc = bpc__file_write_at(ctx, f, 0, hb, sizeof hb);
    if (rc == BPC_OK && h->meta_bytes > 0)
      rc = bpc__file_write_at(ctx, f, h->meta_off, meta, (size_t)h->meta_bytes);
  }
  if (stage != NULL)
    bpc__pool_put(ctx, stage, stage_cap);
  return rc;
}

static int io_write_entry(bpc_ctx_t *ctx, const char *path, const bpc_blocks_t *blocks,
                          const bpc_type_t *type, const bpc_decomp_t *decomp, const void *meta,
                          size_t metalen)
{
  if (ctx == NULL)
    return BPC_ENULL;
  io_blk_t *B = NULL;
  char tmp[sizeof((bpc__file_t *)0)->path];
  bpc__file_t f;
  memset(&f, 0, sizeof f);
  const size_t chunk = io_chunk();
  const int sync = bpc__env_ll("BPC_IO_SYNC", 0) != 0;
  const int reuse = bpc__env_ll("BPC_IO_KEEP_PREVIOUS", 0) != 0;
  int rc = write_check(ctx, path, blocks, type, decomp, meta, metalen, &B);
  const int ok = rc == BPC_OK;
  bpc__sig_t sig;
  bpc__sig_init(&sig);
  bpc__sig_str(&sig, "path", ok ? path : NULL);
  bpc__sig_type(&sig, ok ? type : NULL);
  bpc__sig_assign(&sig, ok ? blocks->assign : NULL);
  bpc__sig_int(&sig, "decomposition given", decomp != NULL);
  bpc__sig_decomp(&sig, ok ? decomp : NULL);
  bpc__sig_bytes(&sig, "metadata", ok ? meta : NULL, ok ? metalen : 0);
  bpc__sig_int(&sig, "BPC_IO_CHUNK", (long long)chunk);
  bpc__sig_int(&sig, "BPC_IO_SYNC", sync);
  bpc__sig_int(&sig, "BPC_IO_KEEP_PREVIOUS", reuse);
  rc = bpc__agree_args(ctx, "io_write", rc, &sig);
  if (rc != BPC_OK)
    goto cleanup;

  /* layout: every rank's byte total (P numbers) */
  const int P = ctx->size, me = ctx->rank;
  uint64_t mine = 0;
  for (int i = 0; i < blocks->n; i++)
    mine += B[i].size;
  size_t *counts = bpc__calloc((size_t)P, sizeof *counts);
  uint64_t *all = bpc__calloc((size_t)P, sizeof *all);
  if (counts == NULL || all == NULL)
    rc = bpc__err(ctx, BPC_ENOMEM, "bpc_io_write: no memory for %d process totals", P);
  rc = bpc__agree(ctx, rc);
  if (rc == BPC_OK) {
    for (int r = 0; r < P; r++)
      counts[r] = sizeof(uint64_t);
    rc = bpc__agree(ctx, bpc__allgatherv(ctx, &mine, sizeof mine, all, counts));
  }
  uint64_t start = 0, data_bytes = 0;
  long long rounds = 0;
  if (rc == BPC_OK)
    for (int r = 0; r < P; r++) {
      if (r < me)
        start += all[r];
      data_bytes += all[r];
      long long k = (long long)ceil_div(all[r], chunk);
      rounds = k > rounds ? k : rounds;
    }
  free(counts);
  free(all);
  if (rc != BPC_OK)
    goto cleanup;
  bpc__io_hdr_t h;
  write_header_fields(&h, decomp, blocks->assign->nblocks, P, meta, metalen, data_bytes);
  start += h.data_off;

  /* the temporary file: a leftover of a killed run is replaced; with
   * BPC_IO_KEEP_PREVIOUS, the checkpoint before the last one, kept as
   * <path>.prev.bpc, is written over in place (its pages and blocks are
   * reused: no new file to allocate, no old one to free) */
  snprintf(tmp, sizeof tmp, "%s%s", path, reuse ? IO_PREV_SUFFIX : IO_TMP_SUFFIX);
  if (!reuse)
    rc = bpc__agree(ctx, me == 0 ? bpc__file_delete(ctx, tmp, 1) : BPC_OK);
  if (rc == BPC_OK)
    rc = bpc__agree(ctx, bpc__file_open(ctx, tmp, BPC__FILE_CREATE, &f));
  if (rc != BPC_OK)
    goto cleanup;
  /* its final length (it is new: nothing is cut) */
  rc = bpc__agree(ctx, bpc__file_set_size(ctx, &f, h.file_bytes));
  if (rc == BPC_OK)
    rc = write_body(ctx, &f, &h, blocks, type, B, start, rounds, chunk, meta);
  if (sync)
    rc = keep(rc, bpc__file_sync(ctx, &f));
  rc = keep(rc, bpc__file_close(ctx, &f));
  rc = bpc__agree(ctx, rc);
  if (rc == BPC_OK)
    rc = bpc__agree(ctx, me == 0 ? bpc__file_rename(ctx, tmp, path, reuse) : BPC_OK);
  if (rc != BPC_OK) {
    /* every rank is here (rc is agreed): the temporary file is gone when
     * the call returns on any rank; NULL ctx keeps the first message */
    if (me == 0)
      bpc__file_delete(NULL, tmp, 1);
    (void)bpc__agree(ctx, BPC_OK);
  }

cleanup:
  if (f.open)
    bpc__file_close(ctx, &f);
  free(B);
  return rc;
}

int bpc_io_write(bpc_ctx_t *ctx, const char *path, const bpc_blocks_t *blocks,
                 const bpc_type_t *type, const bpc_decomp_t *decomp, const void *meta,
                 size_t metalen)
{
  BPC__GUARDED_RETURN(ctx, "bpc_io_write",
                      io_write_entry(ctx, path, blocks, type, decomp, meta, metalen));
}

/* ------------------------------------------------------------------ read */

/*
 * Open `path` and read its header: rank 0 checks the header, the file size
 * and the metadata, every rank gets them. The metadata travels when
 * `send_meta` (the same on every rank: some rank asked for it); *meta
 * (when meta is not NULL) is then a malloc'd copy. On failure the file is
 * closed. Collective.
 */
static int open_header(bpc_ctx_t *ctx, const char *path, bpc__file_t *f, bpc__io_hdr_t *h,
                       void **meta, int send_meta)
{
  unsigned char hb[BPC__IO_HDR_BYTES + 8];
  unsigned char *mb = NULL;
  memset(hb, 0, sizeof hb);
  if (meta != NULL)
    *meta = NULL;
  int rc = bpc__agree(ctx, bpc__file_open(ctx, path, BPC__FILE_READ, f));
  if (rc != BPC_OK)
    return rc;
  if (ctx->rank == 0) {
    uint64_t size = 0;
    rc = bpc__file_size(ctx, f, &size);
    size_t have = size < BPC__IO_HDR_BYTES ? (size_t)size : BPC__IO_HDR_BYTES;
    if (rc == BPC_OK)
      rc = bpc__file_read_at(ctx, f, 0, hb, have);
    if (rc == BPC_OK)
      rc = bpc__io_hdr_decode(ctx, path, hb, have, size, h);
    /* the file size travels with the header (bytes 256..263) */
    for (int i = 0; i < 8; i++)
      hb[BPC__IO_HDR_BYTES + i] = (unsigned char)(size >> (8 * i));
    if (rc == BPC_OK && h->meta_bytes > 0) {
      mb = bpc__malloc((size_t)h->meta_bytes);
      if (mb == NULL)
        rc = bpc__err(ctx, BPC_ENOMEM, "no memory for %llu bytes of checkpoint metadata",
                      (unsigned long long)h->meta_bytes);
      else
        rc = bpc__file_read_at(ctx, f, h->meta_off, mb, (size_t)h->meta_bytes);
    }
    if (rc == BPC_OK && bpc__crc32c(0, mb, (size_t)h->meta_bytes) != h->meta_crc)
      rc = bpc__err(ctx, BPC_EFORMAT, "'%s': metadata checksum mismatch: the metadata (%llu "
                                      "bytes at offset %llu) is corrupted",
                    path, (unsigned long long)h->meta_bytes, (unsigned long long)h->meta_off);
  }
  rc = bpc__agree(ctx, rc);
  if (rc == BPC_OK)
    rc = bpc__agree(ctx, bpc__bcast(ctx, hb, sizeof hb, 0));
  if (rc == BPC_OK && ctx->rank != 0) {
    uint64_t size = 0;
    for (int i = 0; i < 8; i++)
      size |= (uint64_t)hb[BPC__IO_HDR_BYTES + i] << (8 * i);
    rc = bpc__io_hdr_decode(ctx, path, hb, BPC__IO_HDR_BYTES, size, h);
  }
  if (rc == BPC_OK && send_meta && h->meta_bytes > 0) {
    if (ctx->rank != 0) {
      mb = bpc__malloc((size_t)h->meta_bytes);
      if (mb == NULL)
        rc = bpc__err(ctx, BPC_ENOMEM, "no memory for %llu bytes of checkpoint metadata",
                      (unsigned long long)h->meta_bytes);
    }
    rc = bpc__agree(ctx, rc);
    if (rc == BPC_OK)
      rc = bpc__agree(ctx, bpc__bcast(ctx, mb, (size_t)h->meta_bytes, 0));
    if (rc == BPC_OK && meta != NULL) {
      *meta = mb;
      mb = NULL;
    }
  }
  free(mb);
  if (rc != BPC_OK)
    bpc__file_close(ctx, f);
  return rc;
}

/* Read and check the table entries of gids[0..n) (ascending) into B. */
static int read_entries(bpc_ctx_t *ctx, bpc__file_t *f, const char *path, const bpc__io_hdr_t *h,
                        const int *gids, int n, io_blk_t *B)
{
  int rc = BPC_OK;
  unsigned char *buf = bpc__malloc((size_t)(n > 0 ? n : 1) * BPC__IO_ENTRY_BYTES);
  if (buf == NULL)
    return bpc__err(ctx, BPC_ENOMEM, "no memory for %d table entries", n);
  for (int i = 0; i < n && rc == BPC_OK;) {
    int j = i + 1;
    while (j < n && gids[j] == gids[j - 1] + 1)
      j++;
    rc = bpc__file_read_at(ctx, f, h->table_off + (uint64_t)gids[i] * BPC__IO_ENTRY_BYTES,
                           buf + (size_t)i * BPC__IO_ENTRY_BYTES,
                           (size_t)(j - i) * BPC__IO_ENTRY_BYTES);
    i = j;
  }
  for (int i = 0; i < n && rc == BPC_OK; i++) {
    B[i].gid = gids[i];
    B[i].li = i;
    rc = bpc__io_entry_decode(ctx, path, h, (uint64_t)gids[i],
                              buf + (size_t)i * BPC__IO_ENTRY_BYTES, &B[i].off, &B[i].size,
                              &B[i].crc);
  }
  free(buf);
  return rc;
}

static int cmp_off(const void *pa, const void *pb)
{
  const io_blk_t *a = pa, *b = pb;
  if (a->off != b->off)
    return a->off < b->off ? -1 : 1;
  return a->gid < b->gid ? -1 : a->gid > b->gid;
}

/* What the read does with each block's checked bytes. */
typedef struct io_reader {
  bpc_ctx_t *ctx;
  const char *path;
  const bpc_type_t *type; /* NULL: verify only */
  void **items;           /* by local index */
} io_reader_t;

/* Block b's bytes are all read and their CRC is `c`: compare, and for a
 * custom type unpack `bytes` (the whole payload). A contiguous item was
 * read in place and is only checked. */
static int take_block(io_reader_t *R, const io_blk_t *b, uint32_t c, const unsigned char *bytes)
{
  if (c != b->crc)
    return bpc__err(R->ctx, BPC_EFORMAT,
                    "'%s': block %d: payload checksum mismatch (stored 0x%08x, computed "
                    "0x%08x; %llu bytes at offset %llu)",
                    R->path, b->gid, b->crc, c, (unsigned long long)b->size,
                    (unsigned long long)b->off);
  if (R->type == NULL || R->type->kind == BPC_TYPE_CONTIGUOUS)
    return BPC_OK;
  return bpc_type_unpack(R->ctx, R->type, bytes, (size_t)b->size, &R->items[b->li]);
}

/*
 * Read (type given) or verify (type NULL) the blocks gids[0..n) of the open
 * file. Collective: every rank makes the same number of collective reads.
 *
 * Contiguous types: every item is allocated first and each round reads its
 * file range straight into the items' memory (one collective read with a
 * memory datatype of the pieces), so a payload is moved once, by the file
 * system; the CRC is chained over the pieces as they arrive (on the helper
 * thread where bpc__io_crc_thread_wanted says so: then every block is
 * checked after the last round). Verify: the
 * rounds land in a staging buffer and only the CRC is computed. Custom
 * types: the staging buffer too; a block inside one round is unpacked from
 * it, one spanning rounds is assembled in a buffer of its size first. The
 * buffers come from the context's pool.
 */
static int read_blocks(io_reader_t *R, bpc__file_t *f, const bpc__io_hdr_t *h, const int *gids,
                       int n)
{
  bpc_ctx_t *ctx = R->ctx;
  const size_t chunk = io_chunk();
  const int direct = R->type != NULL && R->type->kind == BPC_TYPE_CONTIGUOUS;
  unsigned char *stage = NULL, *asmb = NULL;
  size_t stage_cap = 0, asmb_cap = 0;
  bpc__iov_t *iov = NULL;
  unsigned char **dest = NULL; /* direct: each block's data, by sorted index */
  io_blk_t *B = bpc__calloc((size_t)(n > 0 ? n : 1), sizeof *B);
  int rc = B == NULL ? bpc__err(ctx, BPC_ENOMEM, "no memory for %d blocks", n) : BPC_OK;
  if (rc == BPC_OK)
    rc = read_entries(ctx, f, R->path, h, gids, n, B);
  /* blocks of 0 bytes need no reading; the rest, by file offset */
  int m = 0;
  for (int i = 0; i < n && rc == BPC_OK; i++) {
    if (B[i].size != 0)
      B[m++] = B[i];
    else if ((rc = take_block(R, &B[i], bpc__crc32c(0, NULL, 0), NULL)) == BPC_OK && direct)
      rc = bpc_type_unpack(ctx, R->type, NULL, 0, &R->items[B[i].li]);
  }
  if (rc == BPC_OK)
    qsort(B, (size_t)m, sizeof *B, cmp_off);
  /* segments of adjacent blocks, each read in ceil(len / chunk) rounds */
  long long rounds = 0;
  for (int i = 0; i < m && rc == BPC_OK;) {
    int j = i + 1;
    uint64_t len = B[i].size;
    while (j < m && B[j].off == B[j - 1].off + B[j - 1].size)
      len += B[j++].size;
    rounds += (long long)ceil_div(len, chunk);
    i = j;
  }
  /* the destinations: the new items (direct), else the staging buffer */
  if (rc == BPC_OK && m > 0 && direct) {
    dest = bpc__calloc((size_t)m, sizeof *dest);
    iov = bpc__calloc((size_t)m, sizeof *iov);
    if (dest == NULL || iov == NULL)
      rc = bpc__err(ctx, BPC_ENOMEM, "no memory for %d blocks", m);
    for (int i = 0; i < m && rc == BPC_OK; i++) {
      void *data = NULL;
      rc = bpc__type_buf_alloc(ctx, R->type, (size_t)B[i].size, &R->items[B[i].li], &data);
      dest[i] = data;
    }
  } else if (rc == BPC_OK && m > 0) {
    stage = bpc__pool_get(ctx, chunk, &stage_cap);
    if (stage == NULL)
      rc = bpc__err(ctx, BPC_ENOMEM, "no memory for a %zu-byte staging buffer", chunk);
  }
  if (rc != BPC_OK)
    rounds = 0;
  /* the new items stay put: their checksums can be taken a round behind
   * the reads, on a spare core (each block checked after the last round) */
  bpc__crcq_t *q = NULL;
  if (rc == BPC_OK && direct && m > 0) {
    uint64_t bytes = 0;
    for (int i = 0; i < m; i++)
      bytes += B[i].size;
    if (bpc__io_crc_thread_wanted(bytes))
      q = bpc__crcq_start(m, (size_t)m + (size_t)rounds); /* a round splits one block */
  }
  long long all_rounds = 0;
  rc = keep(rc, max_ll(ctx, rounds, &all_rounds));
  int k = 0;          /* block being read (sorted index) */
  uint64_t fill = 0;  /* bytes of it read so far */
  uint32_t acc = 0;   /* their CRC */
  uint64_t seg_end = 0, pos = 0;
  for (long long r = 0; r < all_rounds; r++) {
    size_t len = 0;
    uint64_t at = 0;
    if (rc == BPC_OK && k < m) {
      if (pos == seg_end) { /* a new segment starts at block k */
        pos = B[k].off;
        seg_end = pos + B[k].size;
        for (int j = k + 1; j < m && B[j].off == B[j - 1].off + B[j - 1].size; j++)
          seg_end += B[j].size;
      }
      at = pos;
      len = seg_end - pos < chunk ? (size_t)(seg_end - pos) : chunk;
    }
    int rrc;
    if (direct) {
      /* the pieces of blocks k, k+1, ... that [at, at + len) covers */
      int niov = 0;
      uint64_t fl = fill;
      for (size_t got = 0; got < len; niov++) {
        const io_blk_t *b = &B[k + niov];
        size_t take = (size_t)(b->size - fl);
        if (take > len - got)
          take = len - got;
        iov[niov].base = dest[k + niov] + fl;
        iov[niov].len = take;
        got += take;
        fl = 0;
      }
      rrc = bpc__file_read_at_all_v(ctx, f, at, iov, niov);
    } else {
      rrc = bpc__file_read_at_all(ctx, f, at, stage, len);
    }
    rc = keep(rc, rrc);
    if (rc != BPC_OK)
      continue;
    pos += len;
    /* carve the round into blocks */
    size_t used = 0;
    while (used < len && rc == BPC_OK) {
      io_blk_t *b = &B[k];
      size_t take = (size_t)(b->size - fill);
      if (take > len - used)
        take = len - used;
      const unsigned char *piece = direct ? dest[k] + fill : stage + used;
      const int whole = fill == 0 && take == b->size;
      if (q != NULL) {
        if (bpc__crcq_push(q, k, piece, take) != 0) {
          rc = bpc__err(ctx, BPC_ESTATE, "checksum queue full at block %d", b->gid);
          break;
        }
      } else {
        if (fill == 0)
          acc = bpc__crc32c(0, NULL, 0);
        acc = bpc__crc32c(acc, piece, take);
      }
      if (!whole && R->type != NULL && !direct) {
        if (asmb == NULL) {
          asmb = bpc__pool_get(ctx, (size_t)b->size, &asmb_cap);
          if (asmb == NULL) {
            rc = bpc__err(ctx, BPC_ENOMEM, "no memory for block %d of %llu bytes", b->gid,
                          (unsigned long long)b->size);
            break;
          }
        }
        memcpy(asmb + fill, piece, take);
      }
      used += take;
      fill += take;
      if (fill == b->size) {
        if (q == NULL) /* else checked after the last round */
          rc = take_block(R, b, acc, whole ? piece : asmb);
        if (asmb != NULL) {
          bpc__pool_put(ctx, asmb, asmb_cap);
          asmb = NULL;
        }
        k++;
        fill = 0;
      }
    }
  }
  if (rc == BPC_OK && k != m)
    rc = bpc__err(ctx, BPC_ESTATE, "read %d of %d blocks", k, m);
  if (q != NULL) {
    bpc__crcq_join(q, rc != BPC_OK);
    for (int i = 0; i < m && rc == BPC_OK; i++)
      rc = take_block(R, &B[i], bpc__crcq_crc(q, i), NULL);
    bpc__crcq_free(q);
  }
  if (asmb != NULL)
    bpc__pool_put(ctx, asmb, asmb_cap);
  if (stage != NULL)
    bpc__pool_put(ctx, stage, stage_cap);
  free(iov);
  free(dest);
  free(B);
  return rc;
}

static void io_item_destroy(void *block, int gid, void *user)
{
  (void)gid;
  bpc_type_item_destroy((const bpc_type_t *)user, block);
}

static int io_read_entry(bpc_ctx_t *ctx, const char *path, const bpc_assign_t *a,
                         const bpc_type_t *type, bpc_blocks_t **out)
{
  if (ctx == NULL)
    return BPC_ENULL;
  int rc = BPC_OK;
  void **items = NULL;
  bpc__file_t f;
  memset(&f, 0, sizeof f);
  if (out != NULL)
    *out = NULL;
  if (path == NULL || a == NULL || out == NULL)
    rc = bpc__err(ctx, BPC_ENULL, "bpc_io_read: %s is NULL",
                  path == NULL ? "path" : a == NULL ? "the assignment" : "out");
  else if ((rc = bpc_type_check(ctx, type)) != BPC_OK)
    ;
  else if (a->ctx != ctx)
    rc = bpc__err(ctx, BPC_EINVAL, "bpc_io_read: the assignment was made for another context");
  const int ok = rc == BPC_OK;
  bpc__sig_t sig;
  bpc__sig_init(&sig);
  bpc__sig_str(&sig, "path", ok ? path : NULL);
  bpc__sig_type(&sig, ok ? type : NULL);
  bpc__sig_assign(&sig, ok ? a : NULL);
  bpc__sig_int(&sig, "block count", ok ? a->nblocks : 0);
  rc = bpc__agree_args(ctx, "io_read", rc, &sig);
  if (rc != BPC_OK)
    return rc;
  bpc__io_hdr_t h;
  rc = open_header(ctx, path, &f, &h, NULL, 0);
  if (rc != BPC_OK)
    return rc;
  if ((uint64_t)a->nblocks != h.nblocks) {
    rc = bpc__err(ctx, BPC_ENBLOCKS, "bpc_io_read: '%s' holds %llu blocks, the assignment has %d",
                  path, (unsigned long long)h.nblocks, a->nblocks);
    goto cleanup;
  }
  items = bpc__calloc((size_t)(a->nlocal > 0 ? a->nlocal : 1), sizeof *items);
  rc = items == NULL ? bpc__err(ctx, BPC_ENOMEM, "no memory for %d items", a->nlocal) : BPC_OK;
  rc = bpc__agree(ctx, rc);
  if (rc == BPC_OK) {
    io_reader_t R = {ctx, path, type, items};
    rc = read_blocks(&R, &f, &h, a->local, a->nlocal);
  }
  rc = bpc__agree(ctx, rc);
  if (rc == BPC_OK) {
    bpc_blocks_t *b = bpc__calloc(1, sizeof *b);
    if (b == NULL) {
      rc = bpc__err(ctx, BPC_ENOMEM, "bpc_io_read: no memory for the block store");
    } else {
      b->assign = a;
      b->n = a->nlocal;
      b->data = items;
      b->destroy = io_item_destroy;
      b->user = (void *)type;
      items = NULL;
      *out = b;
    }
    rc = bpc__agree(ctx, rc);
    if (rc != BPC_OK)
      bpc_blocks_destroy(out);
  }

cleanup:
  if (items != NULL) {
    for (int i = 0; i < a->nlocal; i++)
      bpc_type_item_destroy(type, items[i]);
    free(items);
  }
  rc = keep(rc, bpc__file_close(ctx, &f));
  return bpc__agree(ctx, rc);
}

int bpc_io_read(bpc_ctx_t *ctx, const char *path, const bpc_assign_t *a, const bpc_type_t *type,
                bpc_blocks_t **out)
{
  if (out != NULL) /* a caller's cleanup after any failure is safe */
    *out = NULL;
  BPC__GUARDED_RETURN(ctx, "bpc_io_read", io_read_entry(ctx, path, a, type, out));
}

/* ------------------------------------------------------- info and verify */

static int io_info_entry(bpc_ctx_t *ctx, const char *path, bpc_io_info_t *info, void **meta,
                         int verify)
{
  if (ctx == NULL)
    return BPC_ENULL;
  int rc = BPC_OK;
  int *gids = NULL;
  bpc__file_t f;
  memset(&f, 0, sizeof f);
  if (meta != NULL)
    *meta = NULL;
  if (path == NULL || (!verify && info == NULL))
    rc = bpc__err(ctx, BPC_ENULL, "%s: %s is NULL", verify ? "bpc_io_verify" : "bpc_io_info",
                  path == NULL ? "path" : "info");
  bpc__sig_t sig;
  bpc__sig_init(&sig);
  bpc__sig_str(&sig, "path", rc == BPC_OK ? path : NULL);
  /* a rank may pass meta NULL where others ask for the metadata: it still
   * joins its broadcast */
  const int meta_field = sig.n;
  bpc__sig_max(&sig, "meta", meta != NULL);
  long long vals[BPC__SIG_MAX];
  rc = bpc__agree_args_vals(ctx, verify ? "io_verify" : "io_info", rc, &sig, vals);
  if (rc != BPC_OK)
    return rc;
  bpc__io_hdr_t h;
  rc = open_header(ctx, path, &f, &h, meta, vals[meta_field] > 0);
  if (rc != BPC_OK)
    return rc;
  if (verify) {
    /* this rank's share of the gids: [me * n / P, (me + 1) * n / P) */
    const long long n = (long long)h.nblocks, P = ctx->size, me = ctx->rank;
    const int lo = (int)(me * n / P), hi = (int)((me + 1) * n / P);
    gids = bpc__calloc((size_t)(hi - lo > 0 ? hi - lo : 1), sizeof *gids);
    rc = gids == NULL ? bpc__err(ctx, BPC_ENOMEM, "no memory for %d gids", hi - lo) : BPC_OK;
    for (int g = lo; g < hi && gids != NULL; g++)
      gids[g - lo] = g;
    rc = bpc__agree(ctx, rc);
    if (rc == BPC_OK) {
      io_reader_t R = {ctx, path, NULL, NULL};
      rc = read_blocks(&R, &f, &h, gids, hi - lo);
    }
  }
  rc = keep(rc, bpc__file_close(ctx, &f));
  rc = bpc__agree(ctx, rc);
  if (rc == BPC_OK && info != NULL)
    bpc__io_hdr_info(&h, info);
  if (rc != BPC_OK && meta != NULL) {
    free(*meta);
    *meta = NULL;
  }
  free(gids);
  return rc;
}

int bpc_io_info(bpc_ctx_t *ctx, const char *path, bpc_io_info_t *info, void **meta)
{
  BPC__GUARDED_RETURN(ctx, "bpc_io_info", io_info_entry(ctx, path, info, meta, 0));
}

int bpc_io_verify(bpc_ctx_t *ctx, const char *path, bpc_io_info_t *info)
{
  BPC__GUARDED_RETURN(ctx, "bpc_io_verify", io_info_entry(ctx, path, info, NULL, 1));
}
