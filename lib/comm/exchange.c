/*
 * lib/comm/exchange.c - block-addressed messaging: one exchange per engine
 * call, a mailbox of arrived messages per destination gid, local delivery
 * without MPI, and the transport table underneath (transport.h). This file
 * makes no MPI call.
 */
#include "comm/transport.h"

#include <sched.h>
#include <stddef.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>

/* A gid's mailbox bucket: multiplicative hashing (the top bits of gid times
 * 2^32 / golden ratio), so the gids of one process spread over the buckets
 * whatever their stride (round-robin gids r + i P all fell into one bucket
 * with the low bits when P is a multiple of the bucket count) */
static unsigned bucket_of(int gid)
{
  return ((uint32_t)gid * 2654435769u) >> (32 - BPC__MAILBOX_BITS);
}

/* ------------------------------------------------ the context's cache */

/* What the exchanges of one context keep between calls, so that a call in
 * steady state allocates nothing here: the last closed exchange with its
 * arrays (sends, receive requests, stages, destinations keep their
 * capacity), and free lists of message, send and shared-bundle records (at
 * most CACHE_RECS each; records beyond go back to malloc). Messages may be
 * released by OpenMP threads at once: the lists take a spin lock, held for
 * a push or a pop. Freed by the context's cleanup (bpc_finalize). */

/* A free list of records of one kind (their link field at a byte offset). */
typedef struct reclist {
  void *head;
  int n;
} reclist_t;

typedef struct comm_cache {
  bpc__exch_t *ex;
  reclist_t msgs, sends, shared;
  int lock;
} comm_cache_t;

#define CACHE_RECS 4096
/* Most bytes of pool buffers one size class gets reserved for a call
 * (bpc__exch_reserve_payload). */
#define RESERVE_CAP ((size_t)64 << 20)

static void exch_free(bpc__exch_t *ex);

static void *rec_next(const void *rec, size_t off)
{
  void *next;
  memcpy(&next, (const char *)rec + off, sizeof next);
  return next;
}

static void rec_link(void *rec, size_t off, void *next)
{
  memcpy((char *)rec + off, &next, sizeof next);
}

static void rec_empty(reclist_t *l, size_t off)
{
  while (l->head != NULL) {
    void *r = l->head;
    l->head = rec_next(r, off);
    free(r);
  }
  l->n = 0;
}

#define MSG_LINK offsetof(bpc__msg_t, next)
#define SEND_LINK offsetof(bpc__sendrec_t, next_free)
#define SHARED_LINK offsetof(bpc__shared_t, next_free)

/* Free what the cache holds (the cache stays: its cleanup is registered
 * once). */
static void cache_empty(comm_cache_t *c)
{
  if (c->ex != NULL)
    exch_free(c->ex);
  c->ex = NULL;
  rec_empty(&c->msgs, MSG_LINK);
  rec_empty(&c->sends, SEND_LINK);
  rec_empty(&c->shared, SHARED_LINK);
}

static void cache_destroy(void *arg)
{
  bpc_ctx_t *ctx = arg;
  comm_cache_t *c = ctx->comm_cache;
  if (c == NULL)
    return;
  cache_empty(c);
  free(c);
  ctx->comm_cache = NULL;
}

void bpc__comm_trim(bpc_ctx_t *ctx)
{
  if (ctx->comm_cache != NULL)
    cache_empty(ctx->comm_cache);
  bpc__pool_trim(ctx);
  for (int i = 0; i < BPC__SCR_N; i++) {
    free(ctx->scratch[i]);
    ctx->scratch[i] = NULL;
    ctx->scratch_cap[i] = 0;
  }
}

void bpc__comm_set_reserve(bpc_ctx_t *ctx, int on) { ctx->no_reserve = !on; }

/* The context's cache, made on first use (NULL when there is no memory:
 * then records come from malloc and go back to it). */
static comm_cache_t *cache_of(bpc_ctx_t *ctx)
{
  if (ctx->comm_cache == NULL) {
    comm_cache_t *c = bpc__calloc(1, sizeof *c);
    if (c == NULL)
      return NULL;
    if (bpc__cleanup_add(ctx, "comm cache", cache_destroy, ctx) != BPC_OK) {
      free(c);
      return NULL;
    }
    ctx->comm_cache = c;
  }
  return ctx->comm_cache;
}

static void cache_lock(comm_cache_t *c)
{
  while (__atomic_exchange_n(&c->lock, 1, __ATOMIC_ACQUIRE))
    while (__atomic_load_n(&c->lock, __ATOMIC_RELAXED))
      ;
}

static void cache_unlock(comm_cache_t *c) { __atomic_store_n(&c->lock, 0, __ATOMIC_RELEASE); }

/* A zeroed record of `size` bytes: off list l of the context's cache, or
 * new. The cache is never made here (OpenMP threads release messages:
 * bpc__exch_open made it). */
static void *rec_new(bpc_ctx_t *ctx, size_t which, size_t off, size_t size)
{
  comm_cache_t *c = ctx->comm_cache;
  void *r = NULL;
  if (c != NULL) {
    reclist_t *l = (reclist_t *)((char *)c + which);
    cache_lock(c);
    if ((r = l->head) != NULL) {
      l->head = rec_next(r, off);
      l->n--;
    }
    cache_unlock(c);
  }
  if (r == NULL)
    return bpc__calloc(1, size);
  memset(r, 0, size);
  return r;
}

/* Back onto list l (at most CACHE_RECS kept), else free. */
static void rec_free(bpc_ctx_t *ctx, size_t which, size_t off, void *r)
{
  comm_cache_t *c = ctx->comm_cache;
  if (c != NULL) {
    reclist_t *l = (reclist_t *)((char *)c + which);
    cache_lock(c);
    const int keep = l->n < CACHE_RECS;
    if (keep) {
      rec_link(r, off, l->head);
      l->head = r;
      l->n++;
    }
    cache_unlock(c);
    if (keep)
      return;
  }
  free(r);
}

#define MSGS offsetof(comm_cache_t, msgs)
#define SENDS offsetof(comm_cache_t, sends)
#define SHARED offsetof(comm_cache_t, shared)

bpc__msg_t *bpc__msg_new(bpc_ctx_t *ctx)
{
  return rec_new(ctx, MSGS, MSG_LINK, sizeof(bpc__msg_t));
}

void bpc__msg_free(bpc_ctx_t *ctx, bpc__msg_t *m) { rec_free(ctx, MSGS, MSG_LINK, m); }

bpc__shared_t *bpc__shared_new(bpc_ctx_t *ctx)
{
  return rec_new(ctx, SHARED, SHARED_LINK, sizeof(bpc__shared_t));
}

void bpc__shared_free(bpc_ctx_t *ctx, bpc__shared_t *sh)
{
  rec_free(ctx, SHARED, SHARED_LINK, sh);
}

bpc__sendrec_t *bpc__sendrec_new(bpc_ctx_t *ctx)
{
  bpc__sendrec_t *s = rec_new(ctx, SENDS, SEND_LINK, sizeof(bpc__sendrec_t));
  if (s != NULL)
    s->req = s->req_in;
  return s;
}

void bpc__sendrec_free(bpc_ctx_t *ctx, bpc__sendrec_t *s) { rec_free(ctx, SENDS, SEND_LINK, s); }

void bpc__exch_deliver(bpc__exch_t *ex, bpc__msg_t *m)
{
  unsigned b = bucket_of(m->dst_gid);
  m->next = NULL;
  if (ex->tail[b])
    ex->tail[b]->next = m;
  else
    ex->head[b] = m;
  ex->tail[b] = m;
  ex->narrived++;
  if (m->pending)
    ex->npending++;
  else
    bpc__stats_recv(ex->ctx, m->bytes, m->local);
}

void bpc__exch_complete(bpc__exch_t *ex, bpc__msg_t *m)
{
  m->pending = 0;
  ex->npending--;
  bpc__stats_recv(ex->ctx, m->bytes, m->local);
}

void bpc__exch_reserve(bpc__exch_t *ex, int nmsgs, int nremote, int nsends)
{
  bpc_ctx_t *ctx = ex->ctx;
  comm_cache_t *c = ctx->no_reserve ? NULL : cache_of(ctx);
  if (c == NULL)
    return;
  nmsgs = nmsgs < CACHE_RECS ? nmsgs : CACHE_RECS;
  nremote = nremote < CACHE_RECS ? nremote : CACHE_RECS;
  nsends = nsends < CACHE_RECS ? nsends : CACHE_RECS;
  /* records: new ones straight onto the free lists */
  static const size_t which[3] = {MSGS, SHARED, SENDS}, link[3] = {MSG_LINK, SHARED_LINK,
                                                                    SEND_LINK};
  static const size_t size[3] = {sizeof(bpc__msg_t), sizeof(bpc__shared_t),
                                 sizeof(bpc__sendrec_t)};
  const int want[3] = {nmsgs, nremote, nsends};
  for (int k = 0; k < 3; k++)
    for (int have = ((reclist_t *)((char *)c + which[k]))->n; have < want[k]; have++) {
      void *r = bpc__calloc(1, size[k]);
      if (r == NULL)
        return;
      rec_free(ctx, which[k], link[k], r);
    }
  /* arrays: the list of sends (and its scratch), the requests tested at
   * once (a send has at most a header and a payload here; larger part
   * lists grow as they come) and the receives in flight */
  if (bpc__exch_grow_sends(ex, nsends) == BPC_OK &&
      bpc__exch_grow_sreqs(ex, 2 * nsends) == BPC_OK)
    bpc__exch_grow_recvs(ex, nremote);
}

/* The next capacity of a growing array: doubled from 16 until >= need. */
static int grown(int cap, int need)
{
  int ncap = cap > 0 ? cap : 16;
  while (ncap < need)
    ncap *= 2;
  return ncap;
}

int bpc__exch_grow_sends(bpc__exch_t *ex, int need)
{
  if (need <= ex->capsends)
    return BPC_OK;
  const int ncap = grown(ex->capsends, need);
  bpc__sendrec_t **ns = realloc(ex->sends, sizeof *ns * (size_t)ncap);
  if (ns == NULL)
    return BPC_ENOMEM;
  ex->sends = ns;
  int *nd = realloc(ex->sdone, sizeof *nd * (size_t)ncap);
  if (nd == NULL)
    return BPC_ENOMEM;
  ex->sdone = nd;
  ex->capsends = ncap;
  return BPC_OK;
}

int bpc__exch_grow_sreqs(bpc__exch_t *ex, int need)
{
  if (need <= ex->capsreq)
    return BPC_OK;
  const int ncap = grown(ex->capsreq, need);
  MPI_Request *r = realloc(ex->sreq, sizeof *r * (size_t)ncap);
  if (r == NULL)
    return BPC_ENOMEM;
  ex->sreq = r;
  int *x = realloc(ex->sidx, sizeof *x * (size_t)ncap);
  if (x == NULL)
    return BPC_ENOMEM;
  ex->sidx = x;
  ex->capsreq = ncap;
  return BPC_OK;
}

int bpc__exch_grow_recvs(bpc__exch_t *ex, int need)
{
  if (need <= ex->caprecv)
    return BPC_OK;
  const int ncap = grown(ex->caprecv, need);
  MPI_Request *r = realloc(ex->rreq, sizeof *r * (size_t)ncap);
  if (r == NULL)
    return BPC_ENOMEM;
  ex->rreq = r;
  bpc__msg_t **m = realloc(ex->rmsg, sizeof *m * (size_t)ncap);
  if (m == NULL)
    return BPC_ENOMEM;
  ex->rmsg = m;
  ex->caprecv = ncap;
  return BPC_OK;
}

void bpc__exch_reserve_payload(bpc__exch_t *ex, const size_t *bytes, const int *nrecv,
                               const int *nsend, int n)
{
  enum { MAXC = 16 };
  size_t cls[MAXC];
  int cnt[MAXC], nc = 0;
  if (ex->ctx->no_reserve)
    return;
  /* a payload's buffers: small ones travel in bundles (one each at worst:
   * the header, a descriptor, the payload padded to 8 bytes; a sender's
   * bundle starts at 4 KiB), large ones land in a buffer of their own (at
   * the sender's page offset) after a header message */
  for (int i = 0; i < n; i++) {
    const int small = bytes[i] <= BPC__INLINE_MAX;
    const size_t bundle =
        sizeof(bpc__hdr_t) + sizeof(bpc__bundle_desc_t) + ((bytes[i] + 7u) & ~(size_t)7u);
    const size_t want[3] = {small ? bundle : bytes[i] + 4095u,
                            small ? (bundle > 4096 ? bundle : 4096) : 0,
                            small ? 0 : sizeof(bpc__hdr_t)};
    const int count[3] = {nrecv[i], nsend[i], nrecv[i] > 0 ? 1 : 0};
    for (int w = 0; w < 3; w++) {
      if (want[w] == 0 || count[w] <= 0)
        continue;
      const size_t c = bpc__pool_class(want[w]);
      int j = 0;
      while (j < nc && cls[j] != c)
        j++;
      if (j == nc) {
        if (nc == MAXC)
          continue;
        cls[nc] = c;
        cnt[nc++] = 0;
      }
      cnt[j] += count[w];
    }
  }
  /* at most RESERVE_CAP bytes a class: beyond, a call whose messages all
   * arrive before it takes any may still allocate (memory stays in
   * proportion to what is in flight, not to the whole call) */
  for (int j = 0; j < nc; j++) {
    const size_t most = RESERVE_CAP / cls[j] > 0 ? RESERVE_CAP / cls[j] : 1;
    bpc__pool_reserve(ex->ctx, cls[j], (size_t)cnt[j] < most ? cnt[j] : (int)most);
  }
}

/* A closed exchange made ready for the next call: every field zero but
 * the arrays and their capacities (empty: close leaves no message, send,
 * receive, stage or destination behind). */
static void exch_reset(bpc__exch_t *ex)
{
  bpc__sendrec_t **sends = ex->sends;
  int *sdone = ex->sdone, capsends = ex->capsends;
  MPI_Request *rreq = ex->rreq, *sreq = ex->sreq;
  bpc__msg_t **rmsg = ex->rmsg;
  int caprecv = ex->caprecv, *sidx = ex->sidx, capsreq = ex->capsreq;
  struct bpc__stage *stages = ex->stages;
  int capstages = ex->capstages, *tab = ex->tab, tabcap = ex->tabcap;
  struct bpc__dest *dests = ex->dests;
  int capdests = ex->capdests;
  memset(ex, 0, sizeof *ex);
  ex->sends = sends;
  ex->sdone = sdone;
  ex->capsends = capsends;
  ex->rreq = rreq;
  ex->rmsg = rmsg;
  ex->caprecv = caprecv;
  ex->sreq = sreq;
  ex->sidx = sidx;
  ex->capsreq = capsreq;
  ex->stages = stages;
  ex->capstages = capstages;
  ex->tab = tab;
  ex->tabcap = tabcap;
  ex->dests = dests;
  ex->capdests = capdests;
}

/* Free an exchange's arrays (closed: nothing in them). */
static void exch_free_arrays(bpc__exch_t *ex)
{
  free(ex->stages);
  free(ex->tab);
  free(ex->dests);
  free(ex->sends);
  free(ex->sdone);
  free(ex->rreq);
  free(ex->rmsg);
  free(ex->sreq);
  free(ex->sidx);
}

/* Free an exchange and its arrays. */
static void exch_free(bpc__exch_t *ex)
{
  exch_free_arrays(ex);
  free(ex);
}

int bpc__exch_open(bpc_ctx_t *ctx, const char *engine, int (*rank_of)(const void *arg, int gid),
                   const void *arg, bpc__exch_t **out)
{
  if (ctx == NULL || rank_of == NULL || out == NULL)
    return bpc__err(ctx, BPC_ENULL, "bpc__exch_open: NULL argument");
  /* the tag epoch first, so the ranks' epochs stay in step even when the
   * allocation below fails on one of them */
  const int tag = bpc__next_tag(ctx);
  if (ctx->exch_spare == NULL) { /* once a context, and again while one is in use */
    ctx->exch_spare_bytes = sizeof(bpc__exch_t);
    ctx->exch_spare = bpc__must_alloc(ctx, ctx->exch_spare_bytes, &ctx->exch_spare_paged,
                                      "a spare exchange");
  }
  comm_cache_t *cache = cache_of(ctx);
  bpc__exch_t *ex = NULL;
  if (cache != NULL && cache->ex != NULL) { /* the last one, with its arrays */
    ex = cache->ex;
    cache->ex = NULL;
    exch_reset(ex);
  } else {
    ex = bpc__calloc(1, sizeof *ex);
  }
  int rc = BPC_OK;
  if (ex == NULL) {
    /* the spare (unused: one exchange of a call is ended before the next
     * opens) lets bpc__exch_end tell the others */
    rc = bpc__err(ctx, BPC_ENOMEM, "exchange: out of memory");
    ex = ctx->exch_spare;
    ctx->exch_spare = NULL;
    memset(ex, 0, sizeof *ex);
    ex->spare = 1;
    ex->spare_paged = ctx->exch_spare_paged;
    ex->err = ex->broken = rc;
  }
  ex->ctx = ctx;
  ex->tp = ctx->serial ? &bpc__transport_self : &bpc__transport_mpi;
  ex->tag = tag;
  ex->rank_of = rank_of;
  ex->rank_arg = arg;
  /* a new statistics record, unless this call's argument agreement began
   * it (bpc__agree_args with the same engine name) */
  if (engine != NULL && !(ctx->stats_agreed && strcmp(ctx->last.engine, engine) == 0))
    bpc__stats_begin_call(ctx, engine);
  ctx->stats_agreed = 0;
  *out = ex;
  bpc__phase(ctx, BPC__PH_OPEN1);
  return rc;
}

static int record_err(bpc__exch_t *ex, int rc)
{
  if (rc != BPC_OK && ex->err == BPC_OK)
    ex->err = rc;
  return rc;
}

/* One poll of the transport. A failure there may have lost a message (a
 * header taken whose payload could not be posted for, a bundle not
 * unpacked): the exchange is broken from then on, and its waits, progress
 * calls and polls return that error at once (the first failure's code and
 * message is what the call reports; a refused send, which loses nothing,
 * only records its error for close). */
static int guard_test(bpc__exch_t *ex);
static int guard_advance(bpc__exch_t *ex, int wait);

static int poll_tp(bpc__exch_t *ex, int block, int *events)
{
  if (ex->broken != BPC_OK)
    return ex->broken;
  if (ex->guard_pending) { /* a verdict against the call stops it here */
    int grc = guard_test(ex);
    if (grc == BPC_OK && ex->guard_pending && block) {
      /* what has arrived, without blocking; if nothing, wait for the
       * guard's next step rather than for a message (the message waits in
       * MPI meanwhile; a poll after the guard's verdict blocks for it) */
      const int before = *events;
      int rc = ex->tp->poll(ex, 0, events);
      if (rc != BPC_OK) {
        if (ex->broken == BPC_OK)
          ex->broken = rc;
        return rc;
      }
      if (*events > before)
        return BPC_OK;
      grc = guard_advance(ex, 1);
      if (grc == BPC_OK)
        (*events)++; /* progress: the caller looks again */
    }
    if (grc != BPC_OK)
      return ex->broken = grc;
    if (ex->guard_pending)
      block = 0;
  }
  int rc = ex->tp->poll(ex, block, events);
  if (rc != BPC_OK && ex->broken == BPC_OK)
    ex->broken = rc;
  return rc;
}

static unsigned dest_hash(int src, int dst, int seq)
{
  uint64_t h = (uint32_t)src * 0x9E3779B97F4A7C15ull;
  h ^= (uint32_t)dst + 0x7F4A7C15ull + (h << 6) + (h >> 2);
  h *= 0xBF58476D1CE4E5B9ull;
  h ^= (uint32_t)seq + (h >> 29);
  h *= 0x94D049BB133111EBull;
  return (unsigned)(h >> 32);
}

/* Put d in the first free slot of its chain (the table has room). */
static void dest_put(bpc__exch_t *ex, const bpc__dest_t *d)
{
  const unsigned mask = (unsigned)ex->capdests - 1u;
  unsigned i = dest_hash(d->src_gid, d->dst_gid, d->seq) & mask;
  while (ex->dests[i].used)
    i = (i + 1) & mask;
  ex->dests[i] = *d;
  ex->ndests++;
}

int bpc__exch_recv_into(bpc__exch_t *ex, int dst_gid, int src_gid, int seq, void *buf,
                        size_t cap)
{
  if (buf == NULL && cap > 0)
    return record_err(ex, bpc__err(ex->ctx, BPC_ENULL, "receive destination of %zu bytes for "
                                                       "gid %d is NULL", cap, dst_gid));
  if (2 * (ex->ndests + 1) > ex->capdests) { /* at most half full: short probes */
    const int ncap = ex->capdests ? 2 * ex->capdests : 64;
    bpc__dest_t *nd = bpc__calloc((size_t)ncap, sizeof *nd);
    if (nd == NULL)
      return record_err(ex, bpc__err(ex->ctx, BPC_ENOMEM, "receive destinations: out of memory"));
    bpc__dest_t *od = ex->dests;
    const int ocap = ex->capdests;
    ex->dests = nd;
    ex->capdests = ncap;
    ex->ndests = 0;
    /* in slot order from each chain's start: posts of one key keep their
     * order (they sit in one chain, earlier ones first) */
    int start = 0;
    while (start < ocap && od[start].used)
      start++; /* an empty slot: no chain wraps past it */
    for (int k = 0; k < ocap; k++) {
      const bpc__dest_t *d = &od[(start + k) % ocap];
      if (d->used)
        dest_put(ex, d);
    }
    free(od);
  }
  const bpc__dest_t d = {src_gid, dst_gid, seq, 1, buf, cap};
  dest_put(ex, &d);
  return BPC_OK;
}

void *bpc__exch_dest(bpc__exch_t *ex, int src_gid, int dst_gid, int seq, size_t bytes)
{
  if (ex->ndests == 0)
    return NULL;
  const unsigned mask = (unsigned)ex->capdests - 1u;
  unsigned i = dest_hash(src_gid, dst_gid, seq) & mask;
  for (; ex->dests[i].used; i = (i + 1) & mask) {
    const bpc__dest_t *d = &ex->dests[i];
    if (d->src_gid == src_gid && d->dst_gid == dst_gid && d->seq == seq)
      break;
  }
  if (!ex->dests[i].used)
    return NULL;
  void *buf = bytes <= ex->dests[i].cap ? ex->dests[i].buf : NULL;
  /* delete by moving later entries of the chain back (no tombstones): an
   * entry moves into the hole when its home slot does not lie in the
   * cyclic range (hole, its slot] */
  unsigned hole = i;
  for (unsigned j = (i + 1) & mask; ex->dests[j].used; j = (j + 1) & mask) {
    const bpc__dest_t *e = &ex->dests[j];
    const unsigned home = dest_hash(e->src_gid, e->dst_gid, e->seq) & mask;
    if (((j - home) & mask) >= ((j - hole) & mask)) {
      ex->dests[hole] = *e;
      hole = j;
    }
  }
  ex->dests[hole].used = 0;
  ex->ndests--;
  return buf;
}

/* Deliver a message to a block of this process: no MPI; the payload is
 * copied once into a pool buffer (or into the caller's destination), or
 * borrowed. */
static int send_local(bpc__exch_t *ex, int src_gid, int dst_gid, int seq, const void *data,
                      size_t bytes, int flags)
{
  bpc_ctx_t *ctx = ex->ctx;
  bpc__msg_t *m = bpc__msg_new(ctx);
  if (m == NULL)
    return record_err(ex, bpc__err(ctx, BPC_ENOMEM, "local send: out of memory"));
  m->src_gid = src_gid;
  m->dst_gid = dst_gid;
  m->seq = seq;
  m->bytes = bytes;
  m->local = 1;
  void *dest = ex->ndests > 0 ? bpc__exch_dest(ex, src_gid, dst_gid, seq, bytes) : NULL;
  if (bytes == 0) {
    m->data = NULL;
  } else if (dest != NULL) {
    memcpy(dest, data, bytes);
    m->data = dest;
  } else if (flags & BPC__SEND_BORROW) {
    m->borrowed = 1;
    m->data = (void *)data;
  } else {
    m->buf = bpc__pool_get(ctx, bytes, &m->cap);
    if (m->buf == NULL) {
      bpc__msg_free(ctx, m);
      return record_err(ex, bpc__err(ctx, BPC_ENOMEM, "local send of %zu bytes: out of memory",
                                     bytes));
    }
    memcpy(m->buf, data, bytes);
    m->data = m->buf;
  }
  bpc__stats_sent(ctx, bytes, 1);
  bpc__exch_deliver(ex, m);
  return BPC_OK;
}

/* ----------------------------------------------------------- bundling */

void bpc__shared_unref(bpc_ctx_t *ctx, bpc__shared_t *sh)
{
  /* messages may be released by OpenMP threads at once */
  if (sh != NULL && __atomic_sub_fetch(&sh->refs, 1, __ATOMIC_ACQ_REL) == 0) {
    bpc__pool_put(ctx, sh->buf, sh->cap);
    bpc__shared_free(ctx, sh);
  }
}

static unsigned rank_hash(int rank, int tabcap)
{
  return ((unsigned)rank * 2654435761u) & (unsigned)(tabcap - 1);
}

/* The stage (bundle in the making) for dst_rank, created if need be. */
static bpc__stage_t *stage_of(bpc__exch_t *ex, int dst_rank)
{
  if (ex->tabcap > 0) {
    for (unsigned h = rank_hash(dst_rank, ex->tabcap);; h = (h + 1) & (unsigned)(ex->tabcap - 1)) {
      const int i = ex->tab[h] - 1;
      if (i < 0)
        break;
      if (ex->stages[i].rank == dst_rank)
        return &ex->stages[i];
    }
  }
  if (ex->nstages == ex->capstages) {
    const int ncap = ex->capstages ? 2 * ex->capstages : 8;
    bpc__stage_t *ns = realloc(ex->stages, sizeof *ns * (size_t)ncap);
    int *nt = bpc__calloc((size_t)(2 * ncap), sizeof *nt);
    if (ns == NULL || nt == NULL) {
      if (ns != NULL)
        ex->stages = ns;
      free(nt);
      return NULL;
    }
    ex->stages = ns;
    ex->capstages = ncap;
    free(ex->tab);
    ex->tab = nt;
    ex->tabcap = 2 * ncap;
    for (int i = 0; i < ex->nstages; i++) {
      unsigned h = rank_hash(ex->stages[i].rank, ex->tabcap);
      while (ex->tab[h] != 0)
        h = (h + 1) & (unsigned)(ex->tabcap - 1);
      ex->tab[h] = i + 1;
    }
  }
  bpc__stage_t *st = &ex->stages[ex->nstages];
  *st = (bpc__stage_t){.rank = dst_rank};
  unsigned h = rank_hash(dst_rank, ex->tabcap);
  while (ex->tab[h] != 0)
    h = (h + 1) & (unsigned)(ex->tabcap - 1);
  ex->tab[h] = ++ex->nstages;
  return st;
}

static int reserve_send(bpc__exch_t *ex);

/* Send the bundle of one stage (if it holds messages). */
static int push_stage(bpc__exch_t *ex, bpc__stage_t *st)
{
  if (st->count == 0)
    return BPC_OK;
  bpc_ctx_t *ctx = ex->ctx;
  bpc__hdr_t h = {.magic = BPC__MSG_MAGIC,
                  .flags = BPC__HDR_BUNDLE,
                  .src_gid = -1,
                  .dst_gid = -1,
                  .seq = st->count,
                  .bytes = st->used - sizeof h};
  memcpy(st->buf, &h, sizeof h);
  int rc = reserve_send(ex);
  bpc__sendrec_t *s = rc == BPC_OK ? bpc__sendrec_new(ctx) : NULL;
  if (s == NULL) {
    bpc__pool_put(ctx, st->buf, st->cap);
    if (rc == BPC_OK)
      rc = bpc__err(ctx, BPC_ENOMEM, "bundle: out of memory");
  } else {
    s->hdr = h;
    s->buf = st->buf;
    s->cap = st->cap;
    rc = ex->tp->post_bundle(ex, st->rank, s, st->used); /* owns s->buf from here */
    if (rc == BPC_OK)
      ex->sends[ex->nsends++] = s;
    else
      bpc__sendrec_free(ctx, s);
  }
  st->buf = NULL;
  st->cap = st->used = 0;
  st->count = 0;
  ex->nfull--;
  return record_err(ex, rc);
}

int bpc__exch_push(bpc__exch_t *ex)
{
  int rc = BPC_OK;
  for (int i = 0; i < ex->nstages && ex->nfull > 0; i++) {
    int r = push_stage(ex, &ex->stages[i]);
    if (rc == BPC_OK)
      rc = r;
  }
  return rc;
}

void bpc__exch_bundle(bpc__exch_t *ex, int on)
{
  if (!on)
    bpc__exch_push(ex);
  /* BPC_BUNDLE=0 keeps it off (to measure what it brings; read when the
   * context was made, not at every call) */
  ex->bundling = on && !ex->ctx->serial && !ex->ctx->no_bundle;
}

/* Copy a small message into the bundle for dst_rank. */
static int stage_send(bpc__exch_t *ex, int dst_rank, int src_gid, int dst_gid, int seq,
                      const void *data, size_t bytes)
{
  bpc_ctx_t *ctx = ex->ctx;
  bpc__stage_t *st = stage_of(ex, dst_rank);
  if (st == NULL)
    return record_err(ex, bpc__err(ctx, BPC_ENOMEM, "bundle: out of memory"));
  const size_t room = sizeof(bpc__bundle_desc_t) + ((bytes + 7u) & ~(size_t)7u);
  if (st->count > 0 && st->used + room > BPC__BUNDLE_MAX) {
    int rc = push_stage(ex, st);
    if (rc != BPC_OK)
      return rc;
  }
  if (st->used + room > st->cap) {
    size_t want = st->cap ? 2 * st->cap : 4096;
    while (want < sizeof(bpc__hdr_t) + room || want < st->used + room)
      want *= 2;
    size_t ncap = 0;
    void *nb = bpc__pool_get(ctx, want, &ncap);
    if (nb == NULL)
      return record_err(ex, bpc__err(ctx, BPC_ENOMEM, "bundle of %zu bytes: out of memory", want));
    if (st->buf != NULL) {
      memcpy(nb, st->buf, st->used);
      bpc__pool_put(ctx, st->buf, st->cap);
    } else {
      st->used = sizeof(bpc__hdr_t);
    }
    st->buf = nb;
    st->cap = ncap;
  }
  char *p = (char *)st->buf + st->used;
  bpc__bundle_desc_t d = {src_gid, dst_gid, seq, (uint32_t)bytes};
  memcpy(p, &d, sizeof d);
  if (bytes > 0)
    memcpy(p + sizeof d, data, bytes);
  memset(p + sizeof d + bytes, 0, room - sizeof d - bytes);
  st->used += room;
  if (st->count++ == 0)
    ex->nfull++;
  bpc__stats_sent(ctx, bytes, 0);
  return BPC_OK;
}

static int send_group(bpc__exch_t *ex, int src_gid, int dst_gid, int seq, const void *data,
                      size_t bytes, const bpc__msgpart_t *parts, int nparts, int flags)
{
  bpc_ctx_t *ctx = ex->ctx;
  int rc = BPC_OK;
  if (bytes > 0 && data == NULL)
    return record_err(ex, bpc__err(ctx, BPC_ENULL, "send of %zu bytes from gid %d to gid %d "
                                                   "has a NULL buffer", bytes, src_gid, dst_gid));
  if (nparts < 0 || (nparts > 0 && parts == NULL))
    return record_err(ex, bpc__err(ctx, BPC_ENULL, "send from gid %d to gid %d: %d parts at %p",
                                   src_gid, dst_gid, nparts, (const void *)parts));
  for (int i = 0; i < nparts; i++)
    if (parts[i].bytes > 0 && parts[i].data == NULL)
      return record_err(ex, bpc__err(ctx, BPC_ENULL, "part %d (%zu bytes) of a send from gid %d "
                                                     "to gid %d has a NULL buffer",
                                     i, parts[i].bytes, src_gid, dst_gid));
  int dst_rank = ex->rank_of(ex->rank_arg, dst_gid);
  if (dst_rank < 0 || dst_rank >= ctx->size)
    return record_err(ex, bpc__err(ctx, BPC_ERANGE, "gid %d maps to rank %d, not a rank of "
                                                    "this context", dst_gid, dst_rank));
  if (dst_rank == ctx->rank) {
    rc = send_local(ex, src_gid, dst_gid, seq, data, bytes, flags);
    for (int i = 0; i < nparts && rc == BPC_OK; i++)
      rc = send_local(ex, src_gid, dst_gid, parts[i].seq, parts[i].data, parts[i].bytes, flags);
    return rc;
  }
  if (ex->bundling) {
    if (nparts == 0 && bytes <= BPC__INLINE_MAX)
      return stage_send(ex, dst_rank, src_gid, dst_gid, seq, data, bytes);
    /* a larger send must not overtake the small ones before it */
    bpc__stage_t *st = ex->nfull > 0 ? stage_of(ex, dst_rank) : NULL;
    if (st != NULL && st->count > 0 && (rc = push_stage(ex, st)) != BPC_OK)
      return rc;
  }
  if ((rc = reserve_send(ex)) != BPC_OK)
    return rc;
  bpc__sendrec_t *s = bpc__sendrec_new(ctx);
  if (s == NULL)
    return record_err(ex, bpc__err(ctx, BPC_ENOMEM, "send: out of memory"));
  s->hdr.magic = BPC__MSG_MAGIC;
  s->hdr.src_gid = src_gid;
  s->hdr.dst_gid = dst_gid;
  s->hdr.seq = seq;
  s->hdr.bytes = bytes;
  rc = ex->tp->post_send(ex, dst_rank, s, data, parts, nparts);
  if (rc != BPC_OK) {
    bpc__sendrec_free(ctx, s);
    return record_err(ex, rc);
  }
  ex->sends[ex->nsends++] = s;
  bpc__stats_sent(ctx, bytes, 0);
  for (int i = 0; i < nparts; i++)
    bpc__stats_sent(ctx, parts[i].bytes, 0);
  return BPC_OK;
}

/* Room in the list of sends for one more (reserved before posting it, so
 * that a posted send is always recorded until it completes). */
static int reserve_send(bpc__exch_t *ex)
{
  if (bpc__exch_grow_sends(ex, ex->nsends + 1) != BPC_OK)
    return record_err(ex, bpc__err(ex->ctx, BPC_ENOMEM, "send: out of memory"));
  return BPC_OK;
}

int bpc__exch_send(bpc__exch_t *ex, int src_gid, int dst_gid, int seq, const void *data,
                   size_t bytes, int flags)
{
  return send_group(ex, src_gid, dst_gid, seq, data, bytes, NULL, 0, flags);
}

int bpc__exch_send_parts(bpc__exch_t *ex, int src_gid, int dst_gid, int seq, const void *data,
                         size_t bytes, const bpc__msgpart_t *parts, int nparts)
{
  return send_group(ex, src_gid, dst_gid, seq, data, bytes, parts, nparts, 0);
}

/* Complete finished sends (compacting the list): one transport call for
 * all of them. */
static int test_sends(bpc__exch_t *ex, int *events)
{
  if (ex->nsends == 0)
    return BPC_OK;
  int rc = ex->tp->test_sends(ex, ex->sends, ex->nsends, ex->sdone);
  if (rc != BPC_OK)
    return record_err(ex, rc);
  int j = 0;
  for (int i = 0; i < ex->nsends; i++) {
    if (ex->sdone[i]) {
      bpc__sendrec_free(ex->ctx, ex->sends[i]);
      if (events)
        (*events)++;
    } else {
      ex->sends[j++] = ex->sends[i];
    }
  }
  ex->nsends = j;
  return BPC_OK;
}

int bpc__exch_send_pending(const bpc__exch_t *ex, int dst_gid, int seq)
{
  for (int i = 0; i < ex->nsends; i++)
    if (ex->sends[i]->hdr.dst_gid == dst_gid && (seq < 0 || ex->sends[i]->hdr.seq == seq))
      return 1;
  return 0;
}

int bpc__exch_progress(bpc__exch_t *ex)
{
  if (ex->broken != BPC_OK)
    return ex->broken; /* as bpc__exch_wait */
  if (ex->nfull > 0) {
    const int prc = bpc__exch_push(ex);
    if (prc != BPC_OK)
      return ex->broken = prc; /* a bundle lost */
  }
  int events = 0;
  int rc = poll_tp(ex, 0, &events);
  int rc2 = test_sends(ex, &events);
  return record_err(ex, rc != BPC_OK ? rc : rc2);
}

static int matches(const bpc__msg_t *m, int dst, int src, int seq)
{
  return m->dst_gid == dst && (src < 0 || m->src_gid == src) && (seq < 0 || m->seq == seq);
}

/* Is an earlier message of the bucket, still arriving, of the same envelope
 * as m? Then m must wait: same-envelope messages are taken in send order. */
static int blocked_by_pending(const bpc__msg_t *first, const bpc__msg_t *m)
{
  for (const bpc__msg_t *e = first; e != m; e = e->next)
    if (e->pending && e->dst_gid == m->dst_gid && e->src_gid == m->src_gid && e->seq == m->seq)
      return 1;
  return 0;
}

int bpc__exch_take(bpc__exch_t *ex, int dst_gid, int src_gid, int seq, bpc__msg_t **msg)
{
  unsigned b = bucket_of(dst_gid);
  bpc__msg_t *prev = NULL;
  *msg = NULL;
  for (bpc__msg_t *m = ex->head[b]; m != NULL; prev = m, m = m->next) {
    if (m->pending || !matches(m, dst_gid, src_gid, seq) ||
        (ex->npending > 0 && blocked_by_pending(ex->head[b], m)))
      continue;
    if (prev)
      prev->next = m->next;
    else
      ex->head[b] = m->next;
    if (ex->tail[b] == m)
      ex->tail[b] = prev;
    m->next = NULL;
    ex->narrived--;
    *msg = m;
    break;
  }
  return BPC_OK;
}

int bpc__exch_wait(bpc__exch_t *ex, int dst_gid, int src_gid, int seq, bpc__msg_t **msg)
{
  bpc_ctx_t *ctx = ex->ctx;
  *msg = NULL;
  /* after a failure that may have lost a message, nothing more: the first
   * error (and its message) is what the call reports, and what was lost
   * may be what this wait is for */
  if (ex->broken != BPC_OK)
    return ex->broken;
  int src_local = src_gid >= 0 && ex->rank_of(ex->rank_arg, src_gid) == ctx->rank;
  if (ex->nfull > 0) {
    const int prc = bpc__exch_push(ex);
    if (prc != BPC_OK) /* a bundle not sent: its receivers must hear of it (bpc__exch_end) */
      return ex->broken = prc;
  }
  for (;;) {
    bpc__exch_take(ex, dst_gid, src_gid, seq, msg);
    if (*msg != NULL)
      return BPC_OK;
    if (src_local && ex->err != BPC_OK)
      return ex->err; /* a send of this rank failed: that is the message missing */
    if (src_local)
      return record_err(ex, bpc__err(ctx, BPC_ESTATE,
                                     "gid %d waits for a message from local gid %d (seq %d) "
                                     "that was never sent", dst_gid, src_gid, seq));
    /* sends complete on their own inside MPI's progress: testing them here
     * would only add calls that find nothing to do. They are tested (to
     * free their records) only when their number has doubled since the
     * last test, so that a round with many thousands of sends in flight
     * does not test all of them on every poll (quadratic time). */
    int events = 0, rc = BPC_OK;
    if (ex->nsends >= ex->stest_at) {
      rc = test_sends(ex, &events);
      ex->stest_at = 2 * (ex->nsends > 32 ? ex->nsends : 32);
    }
    if (rc == BPC_OK)
      rc = poll_tp(ex, 1, &events);
    if (rc != BPC_OK)
      return record_err(ex, rc);
  }
}

void bpc__msg_release(bpc__exch_t *ex, bpc__msg_t *msg)
{
  if (msg == NULL)
    return;
  if (msg->buf != NULL)
    bpc__pool_put(ex->ctx, msg->buf, msg->cap);
  bpc__shared_unref(ex->ctx, msg->shared);
  bpc__msg_free(ex->ctx, msg);
}

int bpc__exch_flush(bpc__exch_t *ex)
{
  int rc = ex->nfull > 0 ? bpc__exch_push(ex) : BPC_OK, idle = 0;
  while (ex->nsends > 0) {
    int events = 0;
    rc = test_sends(ex, &events);
    if (rc != BPC_OK)
      break;
    /* keep receiving: a peer's large send completes only once this rank
     * has seen its header and posted the payload receive */
    rc = poll_tp(ex, 0, &events);
    if (rc != BPC_OK)
      break;
    /* spin a while, then let an oversubscribed core go to another rank */
    if (events == 0 && ++idle > 1024) {
      sched_yield();
      idle = 0;
    }
  }
  return record_err(ex, rc);
}

/* ------------------------------------------------------------ guard */

void bpc__exch_guard(bpc__exch_t *ex, int (*start)(void *arg),
                     int (*test)(void *arg, int *done, int wait), int (*verdict)(void *arg),
                     void *arg)
{
  ex->guard_start = start;
  ex->guard_started = 0;
  ex->guard_test = test;
  ex->guard_verdict = verdict;
  ex->guard_arg = arg;
  ex->guard_pending = 1;
  ex->guard_rc = BPC_OK;
}

/* Advance the guard once (`wait`: after waiting for its step in flight);
 * its verdict when it has finished (BPC_OK while it runs). */
static int guard_advance(bpc__exch_t *ex, int wait)
{
  int done = 0, rc = BPC_OK;
  if (!ex->guard_started) { /* the schedule's staged messages leave first */
    ex->guard_started = 1;
    if (ex->nfull > 0) {
      const int prc = bpc__exch_push(ex);
      if (prc != BPC_OK && ex->broken == BPC_OK)
        ex->broken = prc; /* a bundle lost: its receivers hear of it (bpc__exch_end) */
    }
    rc = ex->guard_start(ex->guard_arg);
  }
  if (rc == BPC_OK)
    rc = ex->guard_test(ex->guard_arg, &done, wait);
  if (rc == BPC_OK && !done)
    return BPC_OK;
  ex->guard_pending = 0;
  ex->guard_rc = rc != BPC_OK ? rc : ex->guard_verdict(ex->guard_arg);
  return ex->guard_rc;
}

static int guard_test(bpc__exch_t *ex) { return guard_advance(ex, 0); }

int bpc__exch_guard_wait(bpc__exch_t *ex)
{
  /* step by step, waiting in MPI (which yields an oversubscribed core) */
  while (ex->guard_pending && guard_advance(ex, 1) == BPC_OK)
    ;
  return ex->guard_rc;
}

/* Sends complete, receives in flight land (before their buffers go),
 * nothing left untaken: what bpc__exch_close checks, and bpc__exch_end
 * before its agreement (an abort from another rank stops the waits with
 * BPC__EPEER). The first error of the exchange, or BPC_OK. */
static int exch_finish(bpc__exch_t *ex)
{
  int rc = bpc__exch_flush(ex);
  while (rc == BPC_OK && ex->tp->pending(ex) > 0) {
    int events = 0;
    rc = record_err(ex, poll_tp(ex, 1, &events));
  }
  if (rc == BPC_OK && ex->narrived > 0 && !ex->drop_untaken)
    rc = record_err(ex, bpc__err(ex->ctx, BPC_ESTATE, "exchange closed with %lld message(s) "
                                                      "never taken", ex->narrived));
  return rc == BPC_OK ? ex->err : rc;
}

int bpc__exch_close(bpc__exch_t **pex)
{
  if (pex == NULL || *pex == NULL)
    return BPC_OK;
  bpc__exch_t *ex = *pex;
  const int rc = exch_finish(ex);
  ex->tp->close(ex); /* cancels receives left in flight by an error */
  for (int b = 0; ex->narrived > 0 && b < BPC__MAILBOX_BUCKETS; b++) { /* none: all taken */
    bpc__msg_t *m = ex->head[b];
    while (m) {
      bpc__msg_t *n = m->next;
      bpc__msg_release(ex, m);
      m = n;
    }
  }
  for (int i = 0; i < ex->nsends; i++)
    free(ex->sends[i]);
  for (int i = 0; i < ex->nadopt; i++)
    if (ex->adopt_bufs[i] != NULL)
      bpc__pool_put(ex->ctx, ex->adopt_bufs[i], ex->adopt_caps[i]);
  free(ex->adopt_bufs);
  free(ex->adopt_caps);
  for (int i = 0; i < ex->nstages; i++) /* left only by an error */
    if (ex->stages[i].buf != NULL)
      bpc__pool_put(ex->ctx, ex->stages[i].buf, ex->stages[i].cap);
  /* empty for the next call: destinations never used, the stage map */
  if (ex->ndests > 0)
    memset(ex->dests, 0, sizeof *ex->dests * (size_t)ex->capdests);
  if (ex->nstages > 0)
    memset(ex->tab, 0, sizeof *ex->tab * (size_t)ex->tabcap);
  bpc_ctx_t *ctx = ex->ctx;
  comm_cache_t *c = ctx->comm_cache;
  if (ex->spare) {
    const int paged = ex->spare_paged;
    exch_free_arrays(ex);
    if (ctx->exch_spare == NULL) { /* back aside */
      ctx->exch_spare = ex;
      ctx->exch_spare_paged = paged;
    } else {
      bpc__must_free(ex, sizeof *ex, paged);
    }
  } else if (c != NULL && c->ex == NULL) { /* kept for the next call */
    c->ex = ex;
  } else {
    exch_free(ex);
  }
  *pex = NULL;
  return rc;
}

void bpc__exch_adopt(bpc__exch_t *ex, void **bufs, size_t *caps, int n)
{
  if (ex->adopt_bufs != NULL) { /* a second set is a bug of the caller: its
                                 * buffers stay out of the pool (sends may
                                 * read them), the call fails */
    record_err(ex, bpc__err(ex->ctx, BPC_ESTATE, "exchange: buffers adopted twice"));
    return;
  }
  ex->adopt_bufs = bufs;
  ex->adopt_caps = caps;
  ex->nadopt = n;
}

void bpc__exch_abort(bpc__exch_t *ex, int code)
{
  if (ex->abort_sent)
    return;
  ex->abort_sent = 1;
  ex->tp->abort(ex, code);
}

int bpc__exch_peer_failure(const bpc__exch_t *ex, int *rank, int *code)
{
  if (ex->aborted == 0)
    return 0;
  *rank = ex->abort_rank;
  *code = ex->abort_code;
  return 1;
}

int bpc__exch_end(bpc_ctx_t *ctx, bpc__exch_t **pex, int rc)
{
  bpc__exch_t *ex = pex != NULL ? *pex : NULL;
  bpc__phase(ctx, BPC__PH_END0);
  /* a guard's verdict first: it may be the call's error (another rank's:
   * BPC__EPEER, whose message the agreement below brings) */
  if (ex != NULL && ex->guard_test != NULL) {
    const int grc = bpc__exch_guard_wait(ex);
    if (rc == BPC_OK && grc != BPC_OK)
      rc = ex->broken = grc;
  }
  if (ex == NULL) {
    bpc__phase(ctx, BPC__PH_FINISH1);
    rc = bpc__agree(ctx, rc);
    bpc__phase(ctx, BPC__PH_END1);
    return rc;
  }
  if (rc == BPC_OK)
    rc = exch_finish(ex);
  bpc__phase(ctx, BPC__PH_FINISH1);
  /* an abort taken from another rank is its failure, not this rank's (also
   * when an engine turned the wait's BPC__EPEER into a code of its own) */
  const int own = rc == BPC__EPEER || ex->aborted ? BPC_OK : rc;
  if (own != BPC_OK)
    bpc__exch_abort(ex, own);
  rc = bpc__agree(ctx, own);
  bpc__phase(ctx, BPC__PH_END1);
  if (rc == BPC_OK) {
    bpc__exch_close(pex); /* finished above: nothing left to fail */
    return rc;
  }
  /* every rank is here: what is still on its way goes, then the sends of
   * this rank can complete; the agreed message stays the call's */
  char msg[BPC__ERRMSG_LEN];
  memcpy(msg, ctx->errmsg, sizeof msg);
  if (ex->tp->drain(ex) != BPC_OK)
    bpc__log(ctx, BPC_LOG_DEBUG, "exchange: drain after a failure: %s", bpc_last_error(ctx));
  ex->nfull = 0; /* bundles never sent stay unsent (close frees them) */
  ex->err = ex->broken = BPC_OK;
  ex->drop_untaken = 1; /* taken or not, they go with the mailbox */
  bpc__exch_close(pex);
  memcpy(ctx->errmsg, msg, sizeof msg);
  return rc;
}
