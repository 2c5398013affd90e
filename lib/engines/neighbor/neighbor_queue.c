/*
 * lib/engines/neighbor/neighbor_queue.c - the item queues of the neighbour
 * exchange.
 *
 * Outgoing: one bundle under construction per destination process (and one
 * for this process). enqueue packs the item straight into the bundle's
 * payload area - the only copy on the send side - and records its size and
 * key (src gid << 32 | dst gid) in the index. Room for the index is kept in
 * front of the payload area (sized from the previous round's item count), so
 * finishing the bundle writes the index in place and the bundle goes out
 * without another copy; only when the reservation is too small is the
 * payload moved once. The layout is exactly that of bpc__pack_many
 * (lib/datatype/datatype.h: count, sizes, keys, 16-byte aligned payloads),
 * so the receiver splits it with bpc__unpack_many.
 *
 * Incoming: after a round, every part of the local bundle and of the bundles
 * taken from other processes becomes an entry; entries are sorted by
 * (destination block, source gid, sender's round, position in the bundle),
 * which gives every block its sources in ascending order and each source's
 * items in enqueue order. Contiguous items are handed out as views into the
 * received buffers (no copy); custom items are unpacked on dequeue.
 */
#include "engines/neighbor/neighbor_internal.h"

#include <stdlib.h>
#include <string.h>

#define ALIGN_UP(x) (((x) + (size_t)BPC__PACK_ALIGN - 1) / (size_t)BPC__PACK_ALIGN * (size_t)BPC__PACK_ALIGN)

/* The empty bundle: an 8-byte count of 0. Never written. */
static const uint64_t empty_bundle = 0;

/* Index bytes before payload 0 of a bundle of n >= 1 parts: 8 + 16 n,
 * rounded up to the payload alignment (16 (n + 1) for an alignment of 16). */
static size_t index_room(size_t n) { return ALIGN_UP(8u + 16u * n); }

int bpc__neighbor_local_index(const bpc_neighbor_t *nb, int gid)
{
  const int *g = nb->assign->local;
  int lo = 0, hi = nb->assign->nlocal - 1;
  while (lo <= hi) {
    int mid = lo + (hi - lo) / 2;
    if (g[mid] == gid)
      return mid;
    if (g[mid] < gid)
      lo = mid + 1;
    else
      hi = mid - 1;
  }
  return -1;
}

static int find_sorted(const int *v, int n, int x)
{
  int lo = 0, hi = n - 1;
  while (lo <= hi) {
    int mid = lo + (hi - lo) / 2;
    if (v[mid] == x)
      return mid;
    if (v[mid] < x)
      lo = mid + 1;
    else
      hi = mid - 1;
  }
  return -1;
}

int bpc__neighbor_chan_init(bpc__neighbor_chan_t *c, int rank)
{
  memset(c, 0, sizeof *c);
  c->rank = rank;
#ifdef _OPENMP
  omp_init_lock(&c->lock);
#endif
  return BPC_OK;
}

void bpc__neighbor_chan_free(bpc_ctx_t *ctx, bpc__neighbor_chan_t *c)
{
  if (c->buf != NULL)
    bpc__pool_put(ctx, c->buf, c->cap);
  free(c->sizes);
  free(c->keys);
  free(c->ext);
#ifdef _OPENMP
  omp_destroy_lock(&c->lock);
#endif
  memset(c, 0, sizeof *c);
  c->rank = -1;
}

/* Make room for `need` payload bytes (from the payload start) in c. */
static int chan_reserve(bpc_ctx_t *ctx, bpc__neighbor_chan_t *c, size_t need)
{
  if (c->buf != NULL && c->head + need <= c->cap)
    return BPC_OK;
  size_t head = c->buf != NULL ? c->head : index_room((size_t)(2 * c->last_n + 4));
  size_t want = head + need;
  if (c->buf == NULL && need < c->last_pos)
    want = head + c->last_pos; /* as much as the previous round used */
  if (c->buf != NULL && want < 2 * c->cap)
    want = 2 * c->cap;
  if (want < 4096)
    want = 4096;
  size_t cap = 0;
  unsigned char *nbuf = bpc__pool_get(ctx, want, &cap);
  if (nbuf == NULL)
    return bpc__err(ctx, BPC_ENOMEM, "neighbour exchange: out of memory for a %zu-byte bundle",
                    want);
  if (c->buf != NULL) {
    memcpy(nbuf + head, c->buf + c->head, c->pos);
    bpc__pool_put(ctx, c->buf, c->cap);
  }
  c->buf = nbuf;
  c->cap = cap;
  c->head = head;
  return BPC_OK;
}

static int chan_index_grow(bpc_ctx_t *ctx, bpc__neighbor_chan_t *c)
{
  if (c->n < c->capn)
    return BPC_OK;
  int ncap = c->capn ? 2 * c->capn : 16;
  uint64_t *s = realloc(c->sizes, sizeof *s * (size_t)ncap);
  if (s == NULL)
    return bpc__err(ctx, BPC_ENOMEM, "neighbour exchange: out of memory for a bundle index");
  c->sizes = s;
  int64_t *k = realloc(c->keys, sizeof *k * (size_t)ncap);
  if (k == NULL)
    return bpc__err(ctx, BPC_ENOMEM, "neighbour exchange: out of memory for a bundle index");
  c->keys = k;
  c->capn = ncap;
  return BPC_OK;
}

static bpc__neighbor_chan_t *chan_of(bpc_neighbor_t *nb, int rank)
{
  if (rank == nb->ctx->rank)
    return &nb->local;
  int lo = 0, hi = nb->nout - 1;
  while (lo <= hi) {
    int mid = lo + (hi - lo) / 2;
    if (nb->chans[mid].rank == rank)
      return &nb->chans[mid];
    if (nb->chans[mid].rank < rank)
      lo = mid + 1;
    else
      hi = mid - 1;
  }
  return NULL;
}

static int chan_ext_grow(bpc_ctx_t *ctx, bpc__neighbor_chan_t *c)
{
  if (c->next < c->capext)
    return BPC_OK;
  int ncap = c->capext ? 2 * c->capext : 16;
  bpc__msgpart_t *e = realloc(c->ext, sizeof *e * (size_t)ncap);
  if (e == NULL)
    return bpc__err(ctx, BPC_ENOMEM, "neighbour exchange: out of memory for references");
  c->ext = e;
  c->capext = ncap;
  return BPC_OK;
}

static int enqueue(bpc_neighbor_t *nb, int gid, int dst_gid, const void *item, int by_ref,
                   const char *fn)
{
  if (nb == NULL)
    return BPC_ENULL;
  bpc_ctx_t *ctx = nb->ctx;
  int li = bpc__neighbor_local_index(nb, gid);
  if (li < 0)
    return bpc__err(ctx, BPC_ENOTFOUND, "%s: gid %d is not a block of rank %d", fn, gid,
                    ctx->rank);
  const bpc__neighbor_block_t *b = &nb->blocks[li];
  if (find_sorted(b->out, b->nout, dst_gid) < 0)
    return bpc__err(ctx, BPC_EINVAL,
                    "%s: block %d enqueued for gid %d, which is not one of its %d linked "
                    "blocks%s%d%s",
                    fn, gid, dst_gid, b->nout, b->nout > 0 ? " (first: " : "",
                    b->nout > 0 ? b->out[0] : 0, b->nout > 0 ? ")" : "");
  if (by_ref && nb->type.kind != BPC_TYPE_CONTIGUOUS)
    return bpc__err(ctx, BPC_ETYPE, "%s: items by reference need a contiguous type", fn);
  size_t bytes = 0;
  int rc = bpc_type_size(ctx, &nb->type, item, &bytes);
  if (rc != BPC_OK)
    return rc;
  bpc__neighbor_chan_t *c = chan_of(nb, bpc__assign_rank(nb->assign, dst_gid));
  if (c == NULL) /* cannot happen: every linked block's rank has a channel */
    return bpc__err(ctx, BPC_ESTATE, "%s: no channel for gid %d", fn, dst_gid);
  /* small items are copied even when given by reference; large ones for
   * this process are copied later, in the exchange (BPC__NB_REF_MIN). With
   * partial synchrony every item is copied: a round that does not wait for
   * all its messages cannot wait for its own sends to be taken either (the
   * receiver may take them a round later, or be in a collective call) */
  const int ext = by_ref && bytes >= BPC__NB_REF_MIN && nb->synchrony >= 1.0;
#ifdef _OPENMP
  omp_set_lock(&c->lock);
#endif
  size_t off = ALIGN_UP(c->pos);
  size_t room = ext ? 0 : bytes;
  if (off < c->pos || room > SIZE_MAX / 2 - off)
    rc = bpc__err(ctx, BPC_ERANGE, "%s: bundle size overflows", fn);
  if (rc == BPC_OK)
    rc = chan_reserve(ctx, c, off + room);
  if (rc == BPC_OK)
    rc = chan_index_grow(ctx, c);
  if (rc == BPC_OK && ext)
    rc = chan_ext_grow(ctx, c);
  if (rc == BPC_OK) {
    unsigned char *p = c->buf + c->head;
    if (off > c->pos)
      memset(p + c->pos, 0, off - c->pos);
    if (!ext)
      rc = bpc__type_pack_exact(ctx, &nb->type, item, p + off, bytes);
    if (rc == BPC_OK) {
      uint64_t key = ((uint64_t)(uint32_t)gid << 32) | (uint64_t)(uint32_t)dst_gid;
      if (ext) {
        key |= BPC__NB_KEY_EXT;
        c->ext[c->next].data = ((const bpc_buf_t *)item)->data;
        c->ext[c->next].bytes = bytes;
        c->next++;
      }
      c->sizes[c->n] = (uint64_t)room;
      c->keys[c->n] = (int64_t)key;
      c->n++;
      c->pos = off + room;
    }
  }
#ifdef _OPENMP
  omp_unset_lock(&c->lock);
#endif
  if (rc == BPC_OK) {
#pragma omp atomic
    nb->items_sent++;
  }
  return rc;
}

int bpc_neighbor_enqueue(bpc_neighbor_t *nb, int gid, int dst_gid, const void *item)
{
  return enqueue(nb, gid, dst_gid, item, 0, "bpc_neighbor_enqueue");
}

int bpc_neighbor_enqueue_ref(bpc_neighbor_t *nb, int gid, int dst_gid, const bpc_buf_t *item)
{
  return enqueue(nb, gid, dst_gid, item, 1, "bpc_neighbor_enqueue_ref");
}

int bpc__neighbor_count_refs(const void *bundle, size_t bytes)
{
  uint64_t n = 0;
  if (bundle == NULL || bytes < 8)
    return 0;
  memcpy(&n, bundle, sizeof n);
  if (n > (bytes - 8) / 16)
    return 0;
  const unsigned char *keys = (const unsigned char *)bundle + 8 + 8 * n;
  int k = 0;
  for (uint64_t i = 0; i < n; i++) {
    uint64_t key;
    memcpy(&key, keys + 8 * i, sizeof key);
    k += (key & BPC__NB_KEY_EXT) != 0;
  }
  return k;
}

int bpc__neighbor_chan_finish(bpc_neighbor_t *nb, bpc__neighbor_chan_t *c, const void **bundle,
                              size_t *bytes, void **buf, size_t *cap)
{
  bpc_ctx_t *ctx = nb->ctx;
  int rc = BPC_OK;
  *bundle = &empty_bundle;
  *bytes = sizeof empty_bundle;
  *buf = NULL;
  *cap = 0;
  c->last_n = c->n;
  c->last_pos = c->pos;
  if (c->n == 0) {
    c->next = 0;
    if (c->buf != NULL) { /* an enqueue that failed after reserving */
      bpc__pool_put(ctx, c->buf, c->cap);
      c->buf = NULL;
      c->cap = 0;
    }
    c->pos = c->head = 0;
    return BPC_OK;
  }
  size_t room = index_room((size_t)c->n);
  if (room > c->head) {
    /* the reservation was too small: move the payload once */
    size_t ncap = 0;
    unsigned char *nbuf = bpc__pool_get(ctx, room + c->pos, &ncap);
    if (nbuf == NULL) {
      rc = bpc__err(ctx, BPC_ENOMEM,
                    "neighbour exchange: out of memory for a bundle of %d items (%zu bytes)",
                    c->n, room + c->pos);
      /* the items are lost: drop them, send an empty bundle */
      bpc__pool_put(ctx, c->buf, c->cap);
      goto reset;
    }
    memcpy(nbuf + room, c->buf + c->head, c->pos);
    bpc__pool_put(ctx, c->buf, c->cap);
    c->buf = nbuf;
    c->cap = ncap;
    c->head = room;
  }
  unsigned char *start = c->buf + c->head - room;
  uint64_t count = (uint64_t)c->n;
  memcpy(start, &count, sizeof count);
  memcpy(start + 8, c->sizes, 8u * (size_t)c->n);
  memcpy(start + 8 + 8u * (size_t)c->n, c->keys, 8u * (size_t)c->n);
  size_t idx = 8u + 16u * (size_t)c->n;
  if (room > idx)
    memset(start + idx, 0, room - idx);
  *bundle = start;
  *bytes = room + c->pos;
  *buf = c->buf;
  *cap = c->cap;
reset:
  c->buf = NULL;
  c->cap = 0;
  c->head = 0;
  c->pos = 0;
  c->n = 0;
  return rc;
}

int bpc__neighbor_copy_local_refs(bpc_neighbor_t *nb)
{
  bpc_ctx_t *ctx = nb->ctx;
  bpc__neighbor_chan_t *c = &nb->local;
  const int k = c->next;
  c->next = 0;
  nb->nlrefs = 0;
  if (k == 0)
    return BPC_OK;
  size_t total = 0;
  for (int i = 0; i < k; i++) {
    size_t b = ALIGN_UP(c->ext[i].bytes);
    if (b < c->ext[i].bytes || total > SIZE_MAX - b)
      return bpc__err(ctx, BPC_ERANGE, "neighbour exchange: local items by reference overflow");
    total += b;
  }
  if (k > nb->caplrefs) {
    bpc__msgpart_t *v = realloc(nb->lrefs, sizeof *v * (size_t)k);
    if (v == NULL)
      return bpc__err(ctx, BPC_ENOMEM, "neighbour exchange: out of memory for %d references", k);
    nb->lrefs = v;
    nb->caplrefs = k;
  }
  nb->lrbuf = bpc__pool_get(ctx, total, &nb->lrcap);
  if (nb->lrbuf == NULL)
    return bpc__err(ctx, BPC_ENOMEM,
                    "neighbour exchange: out of memory for %zu bytes of local items", total);
  unsigned char *p = nb->lrbuf;
  for (int i = 0; i < k; i++) {
    memcpy(p, c->ext[i].data, c->ext[i].bytes);
    nb->lrefs[i].data = p;
    nb->lrefs[i].bytes = c->ext[i].bytes;
    nb->lrefs[i].seq = 0;
    p += ALIGN_UP(c->ext[i].bytes);
  }
  nb->nlrefs = k;
  bpc__stats_sent(ctx, total, 1);
  bpc__stats_recv(ctx, total, 1);
  return BPC_OK;
}

void bpc__neighbor_release_incoming(bpc_neighbor_t *nb)
{
  for (int i = 0; i < nb->nmsgs; i++)
    bpc__msg_release(nb->ex, nb->msgs[i]);
  nb->nmsgs = 0;
  if (nb->lbuf != NULL)
    bpc__pool_put(nb->ctx, nb->lbuf, nb->lcap);
  if (nb->lrbuf != NULL)
    bpc__pool_put(nb->ctx, nb->lrbuf, nb->lrcap);
  nb->lrbuf = NULL;
  nb->lrcap = 0;
  nb->nlrefs = 0;
  nb->lbuf = NULL;
  nb->lbundle = NULL;
  nb->lcap = nb->llen = 0;
  nb->nents = 0;
  for (int i = 0; i < nb->nlocal && nb->blocks; i++) {
    nb->blocks[i].ent0 = nb->blocks[i].nent = 0;
    nb->blocks[i].nsrc = 0;
  }
}

/* Entries from one bundle; its parts by reference are, in order, the
 * messages refs[0 .. nrefs) (a bundle from another process) or the copies
 * lrefs[0 .. nrefs) (the local bundle). */
static int add_entries(bpc_neighbor_t *nb, void *data, size_t bytes, int seq, int from_rank,
                       bpc__msg_t **refs, const bpc__msgpart_t *lrefs, int nrefs)
{
  bpc_ctx_t *ctx = nb->ctx;
  int n = 0, rc, used = 0;
  bpc__part_t *parts = NULL;
  rc = bpc__unpack_many(ctx, data, bytes, &n, &parts);
  if (rc != BPC_OK)
    return rc;
  if (nb->nents + n > nb->capents) {
    int ncap = nb->capents ? nb->capents : 64;
    while (ncap < nb->nents + n)
      ncap *= 2;
    bpc__neighbor_entry_t *e = realloc(nb->ents, sizeof *e * (size_t)ncap);
    if (e == NULL) {
      rc = bpc__err(ctx, BPC_ENOMEM, "neighbour exchange: out of memory for %d items",
                    nb->nents + n);
      goto cleanup;
    }
    nb->ents = e;
    nb->capents = ncap;
  }
  for (int i = 0; i < n; i++) {
    uint64_t k = (uint64_t)parts[i].key;
    int src = (int)(int32_t)(uint32_t)(k >> 32);
    int dst = (int)(uint32_t)(k & 0x7fffffffu);
    int li = bpc__neighbor_local_index(nb, dst);
    if (li < 0 || src < 0 || src >= nb->assign->nblocks ||
        bpc__assign_rank(nb->assign, src) != from_rank) {
      rc = bpc__err(ctx, BPC_ETRUNC,
                    "neighbour exchange: a message from rank %d carries an item from gid %d for "
                    "gid %d, which is not a block of rank %d (or not a block of the sender)",
                    from_rank, src, dst, ctx->rank);
      goto cleanup;
    }
    bpc__neighbor_entry_t *e = &nb->ents[nb->nents++];
    memset(e, 0, sizeof *e);
    e->src = src;
    e->dst_li = li;
    e->seq = seq;
    e->idx = i;
    e->data = parts[i].data;
    e->bytes = parts[i].bytes;
    if (k & BPC__NB_KEY_EXT) {
      if (used >= nrefs) {
        rc = bpc__err(ctx, BPC_ETRUNC,
                      "neighbour exchange: a message from rank %d refers to more items than "
                      "followed it (%d)",
                      from_rank, nrefs);
        goto cleanup;
      }
      e->data = refs != NULL ? refs[used]->data : (void *)lrefs[used].data;
      e->bytes = refs != NULL ? refs[used]->bytes : lrefs[used].bytes;
      used++;
    }
  }
cleanup:
  free(parts);
  return rc;
}

static int cmp_entry(const void *a, const void *b)
{
  const bpc__neighbor_entry_t *x = a, *y = b;
  if (x->dst_li != y->dst_li)
    return x->dst_li < y->dst_li ? -1 : 1;
  if (x->src != y->src)
    return x->src < y->src ? -1 : 1;
  if (x->seq != y->seq)
    return x->seq < y->seq ? -1 : 1;
  return (x->idx > y->idx) - (x->idx < y->idx);
}

static int block_sources(bpc_ctx_t *ctx, bpc__neighbor_block_t *b,
                         const bpc__neighbor_entry_t *ents)
{
  int ns = 0;
  for (int j = 0; j < b->nent; j++)
    if (j == 0 || ents[b->ent0 + j].src != ents[b->ent0 + j - 1].src)
      ns++;
  if (ns > b->capsrc) {
    int ncap = b->capsrc ? b->capsrc : 8;
    while (ncap < ns)
      ncap *= 2;
    int *s = realloc(b->srcs, sizeof(int) * (size_t)ncap);
    if (s != NULL)
      b->srcs = s;
    int *f = realloc(b->src_first, sizeof(int) * (size_t)ncap);
    if (f != NULL)
      b->src_first = f;
    int *c = realloc(b->src_count, sizeof(int) * (size_t)ncap);
    if (c != NULL)
      b->src_count = c;
    int *nx = realloc(b->src_next, sizeof(int) * (size_t)ncap);
    if (nx != NULL)
      b->src_next = nx;
    if (s == NULL || f == NULL || c == NULL || nx == NULL)
      return bpc__err(ctx, BPC_ENOMEM, "neighbour exchange: out of memory for %d sources", ns);
    b->capsrc = ncap;
  }
  b->nsrc = 0;
  for (int j = 0; j < b->nent; j++) {
    const bpc__neighbor_entry_t *e = &ents[b->ent0 + j];
    if (b->nsrc == 0 || b->srcs[b->nsrc - 1] != e->src) {
      b->srcs[b->nsrc] = e->src;
      b->src_first[b->nsrc] = b->ent0 + j;
      b->src_count[b->nsrc] = 0;
      b->src_next[b->nsrc] = 0;
      b->nsrc++;
    }
    b->src_count[b->nsrc - 1]++;
  }
  return BPC_OK;
}

int bpc__neighbor_deliver(bpc_neighbor_t *nb)
{
  bpc_ctx_t *ctx = nb->ctx;
  int rc = BPC_OK;
  nb->nents = 0;
  if (nb->lbuf != NULL)
    rc = add_entries(nb, nb->lbundle, nb->llen, nb->round - 1, ctx->rank, NULL, nb->lrefs,
                     nb->nlrefs);
  /* each bundle is followed in msgs by the messages of its references */
  for (int i = 0; i < nb->nmsgs && rc == BPC_OK;) {
    bpc__msg_t *m = nb->msgs[i++];
    int nrefs = m != NULL ? bpc__neighbor_count_refs(m->data, m->bytes) : 0;
    int whole = m != NULL && nrefs <= nb->nmsgs - i;
    for (int k = 0; k < nrefs && whole; k++)
      whole = nb->msgs[i + k] != NULL;
    if (!whole) /* only after a failed wait, which has reported its error */
      rc = bpc__err(ctx, BPC_ESTATE, "neighbour exchange: a message from rank %d is incomplete",
                    m != NULL ? m->src_gid : -1);
    else
      rc = add_entries(nb, m->data, m->bytes, m->seq, m->src_gid, nb->msgs + i, NULL, nrefs);
    i += nrefs;
  }
  if (rc != BPC_OK) {
    nb->nents = 0;
    return rc;
  }
  if (nb->nents > 1)
    qsort(nb->ents, (size_t)nb->nents, sizeof *nb->ents, cmp_entry);
  int j = 0;
  for (int li = 0; li < nb->nlocal; li++) {
    bpc__neighbor_block_t *b = &nb->blocks[li];
    b->ent0 = j;
    while (j < nb->nents && nb->ents[j].dst_li == li)
      j++;
    b->nent = j - b->ent0;
    int r = block_sources(ctx, b, nb->ents);
    if (r != BPC_OK && rc == BPC_OK)
      rc = r;
  }
  nb->items_recv += nb->nents;
  return rc;
}

int bpc_neighbor_incoming(const bpc_neighbor_t *nb, int gid, const int **srcs, int *n)
{
  if (nb == NULL || srcs == NULL || n == NULL)
    return bpc__err(nb ? nb->ctx : NULL, BPC_ENULL, "bpc_neighbor_incoming: NULL argument");
  int li = bpc__neighbor_local_index(nb, gid);
  if (li < 0)
    return bpc__err(nb->ctx, BPC_ENOTFOUND,
                    "bpc_neighbor_incoming: gid %d is not a block of rank %d", gid, nb->ctx->rank);
  *n = nb->blocks[li].nsrc;
  *srcs = *n > 0 ? nb->blocks[li].srcs : NULL;
  return BPC_OK;
}

int bpc_neighbor_count(const bpc_neighbor_t *nb, int gid, int src_gid, int *count)
{
  if (nb == NULL || count == NULL)
    return bpc__err(nb ? nb->ctx : NULL, BPC_ENULL, "bpc_neighbor_count: NULL argument");
  *count = 0;
  int li = bpc__neighbor_local_index(nb, gid);
  if (li < 0)
    return bpc__err(nb->ctx, BPC_ENOTFOUND, "bpc_neighbor_count: gid %d is not a block of rank %d",
                    gid, nb->ctx->rank);
  const bpc__neighbor_block_t *b = &nb->blocks[li];
  int k = find_sorted(b->srcs, b->nsrc, src_gid);
  if (k >= 0)
    *count = b->src_count[k] - b->src_next[k];
  return BPC_OK;
}

int bpc_neighbor_dequeue(bpc_neighbor_t *nb, int gid, int src_gid, void **item, int *got)
{
  if (nb == NULL || item == NULL || got == NULL)
    return bpc__err(nb ? nb->ctx : NULL, BPC_ENULL, "bpc_neighbor_dequeue: NULL argument");
  *item = NULL;
  *got = 0;
  int li = bpc__neighbor_local_index(nb, gid);
  if (li < 0)
    return bpc__err(nb->ctx, BPC_ENOTFOUND,
                    "bpc_neighbor_dequeue: gid %d is not a block of rank %d", gid, nb->ctx->rank);
  bpc__neighbor_block_t *b = &nb->blocks[li];
  int k = find_sorted(b->srcs, b->nsrc, src_gid);
  if (k < 0 || b->src_next[k] >= b->src_count[k])
    return BPC_OK;
  bpc__neighbor_entry_t *e = &nb->ents[b->src_first[k] + b->src_next[k]];
  b->src_next[k]++;
  int owned = 0;
  int rc = bpc__type_view(nb->ctx, &nb->type, e->data, e->bytes, &e->view, item, &owned);
  if (rc == BPC_OK)
    *got = 1;
  return rc;
}
