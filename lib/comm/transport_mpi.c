/*
 * lib/comm/transport_mpi.c - the MPI transport: one bpc message is one MPI
 * message (inline payloads) or a header message followed by a payload message
 * sent from the user's memory (see tags.h for the wire format and why a
 * probe can never match a payload). Receivers learn sizes from the header,
 * so the receive side never needs to know a message's size in advance.
 */
#include "comm/transport.h"

#include <limits.h>
#include <sched.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHUNK ((size_t)1 << 30)

/*
 * Matched probes. A header is probed with MPI_Improbe/MPI_Mprobe and taken
 * with MPI_Mrecv. SimGrid's SMPI (3.32; the --with-smpi build) has no matched
 * probes, so there a probe is MPI_Iprobe/MPI_Probe and the take an MPI_Recv
 * from the probed source and tag. That receives the same message: only one
 * thread of a process calls MPI here (MPI_THREAD_FUNNELED, comm.h), so no
 * other receive runs between the probe and the take, and the receives this
 * transport has posted with that source and tag are for payloads, which
 * their sender sent before any later header (non-overtaking), so none of
 * them can match the probed header.
 */
#ifdef BPC_SMPI
typedef struct {
  int source, tag;
  MPI_Comm comm;
} msg_t;
static int msg_iprobe(int tag, MPI_Comm comm, int *flag, msg_t *m, MPI_Status *st)
{
  int rc = MPI_Iprobe(MPI_ANY_SOURCE, tag, comm, flag, st);
  if (rc == MPI_SUCCESS && *flag)
    *m = (msg_t){st->MPI_SOURCE, tag, comm};
  return rc;
}
static int msg_probe(int tag, MPI_Comm comm, msg_t *m, MPI_Status *st)
{
  int rc = MPI_Probe(MPI_ANY_SOURCE, tag, comm, st);
  *m = (msg_t){st->MPI_SOURCE, tag, comm};
  return rc;
}
static int msg_recv(void *buf, int count, MPI_Datatype t, msg_t *m)
{
  return MPI_Recv(buf, count, t, m->source, m->tag, m->comm, MPI_STATUS_IGNORE);
}
#define MSG_PROBE_NAME "MPI_Probe"
#define MSG_IPROBE_NAME "MPI_Iprobe"
#define MSG_RECV_NAME "MPI_Recv"
#else
typedef MPI_Message msg_t;
static int msg_iprobe(int tag, MPI_Comm comm, int *flag, msg_t *m, MPI_Status *st)
{
  return MPI_Improbe(MPI_ANY_SOURCE, tag, comm, flag, m, st);
}
static int msg_probe(int tag, MPI_Comm comm, msg_t *m, MPI_Status *st)
{
  return MPI_Mprobe(MPI_ANY_SOURCE, tag, comm, m, st);
}
static int msg_recv(void *buf, int count, MPI_Datatype t, msg_t *m)
{
  return MPI_Mrecv(buf, count, t, m, MPI_STATUS_IGNORE);
}
#define MSG_PROBE_NAME "MPI_Mprobe"
#define MSG_IPROBE_NAME "MPI_Improbe"
#define MSG_RECV_NAME "MPI_Mrecv"
#endif

/* A datatype describing `bytes` contiguous bytes for messages above
 * INT_MAX: nchunks blocks of 1 GiB then the remainder. */
static int big_bytes_type(size_t bytes, MPI_Datatype *type)
{
  MPI_Datatype chunk;
  int nchunks = (int)(bytes / CHUNK);
  int rem = (int)(bytes % CHUNK);
  int rc = MPI_Type_contiguous((int)CHUNK, MPI_BYTE, &chunk);
  if (rc != MPI_SUCCESS)
    return rc;
  int bl[2] = {nchunks, rem};
  MPI_Aint disp[2] = {0, (MPI_Aint)((size_t)nchunks * CHUNK)};
  MPI_Datatype types[2] = {chunk, MPI_BYTE};
  rc = MPI_Type_create_struct(rem ? 2 : 1, bl, disp, types, type);
  MPI_Type_free(&chunk);
  if (rc == MPI_SUCCESS)
    rc = MPI_Type_commit(type);
  return rc;
}

/* Post the send (`send`) or receive of `bytes` contiguous bytes at data to
 * or from `rank` with the exchange's tag; above INT_MAX through a derived
 * type, freed at once (MPI keeps it alive for the request). */
static int post_bytes(bpc__exch_t *ex, int send, void *data, size_t bytes, int rank,
                      MPI_Request *req)
{
  MPI_Datatype t = MPI_BYTE;
  int count = (int)bytes, mrc = MPI_SUCCESS;
  if (bytes > (size_t)INT_MAX) {
    count = 1;
    mrc = big_bytes_type(bytes, &t);
  }
  if (mrc == MPI_SUCCESS)
    mrc = send ? MPI_Isend(data, count, t, rank, ex->tag, ex->ctx->comm, req)
               : MPI_Irecv(data, count, t, rank, ex->tag, ex->ctx->comm, req);
  if (t != MPI_BYTE)
    MPI_Type_free(&t);
  return mrc;
}

static void send_release(bpc__exch_t *ex, bpc__sendrec_t *s)
{
  if (s->buf != NULL)
    bpc__pool_put(ex->ctx, s->buf, s->cap);
  s->buf = NULL;
  if (s->req != s->req_in)
    free(s->req);
  s->req = s->req_in;
  s->nreq = 0;
}

/* The header message (tags.h), then the large head payload and the parts'
 * payloads, each from the sender's memory. */
static int mpi_post_send(bpc__exch_t *ex, int dst_rank, bpc__sendrec_t *s, const void *data,
                         const bpc__msgpart_t *parts, int nparts)
{
  bpc_ctx_t *ctx = ex->ctx;
  const size_t bytes = (size_t)s->hdr.bytes;
  const int is_inline = bytes <= BPC__INLINE_MAX;
  s->req = s->req_in;
  s->nreq = 0;
  s->buf = NULL;
  if (nparts > BPC__MAX_PARTS)
    return bpc__err(ctx, BPC_ERANGE, "send: %d parts, more than the %d one message can have",
                    nparts, BPC__MAX_PARTS);
  int nreq = 1 + !is_inline;
  for (int i = 0; i < nparts; i++)
    nreq += parts[i].bytes > 0;
  if (nreq > BPC__SEND_REQS && (s->req = bpc__malloc(sizeof *s->req * (size_t)nreq)) == NULL) {
    s->req = s->req_in;
    return bpc__err(ctx, BPC_ENOMEM, "send: out of memory");
  }
  s->hdr.flags = is_inline ? BPC__HDR_INLINE : 0;
  if (nparts > 0)
    s->hdr.flags |= BPC__HDR_PARTS | ((uint32_t)nparts << BPC__HDR_NPARTS_SHIFT);
  s->hdr.page_off = is_inline ? 0 : (uint32_t)((uintptr_t)data & 4095u);
  const size_t hlen =
      sizeof s->hdr + (is_inline ? bytes : 0) + (size_t)nparts * sizeof(bpc__part_desc_t);
  const void *hmsg = &s->hdr;
  if (hlen > sizeof s->hdr) {
    s->buf = bpc__pool_get(ctx, hlen, &s->cap);
    if (s->buf == NULL) {
      send_release(ex, s);
      return bpc__err(ctx, BPC_ENOMEM, "send: out of memory");
    }
    char *p = s->buf;
    memcpy(p, &s->hdr, sizeof s->hdr);
    p += sizeof s->hdr;
    if (is_inline && bytes > 0) {
      memcpy(p, data, bytes);
      p += bytes;
    }
    for (int i = 0; i < nparts; i++) {
      bpc__part_desc_t d = {parts[i].bytes, parts[i].seq,
                            (uint32_t)((uintptr_t)parts[i].data & 4095u)};
      memcpy(p, &d, sizeof d);
      p += sizeof d;
    }
    hmsg = s->buf;
  }
  int mrc = MPI_Isend(hmsg, (int)hlen, MPI_BYTE, dst_rank, ex->tag, ctx->comm, &s->req[0]);
  if (mrc != MPI_SUCCESS) {
    send_release(ex, s);
    return bpc__err_mpi(ctx, mrc, "MPI_Isend (header)");
  }
  s->nreq = 1;
  if (!is_inline)
    mrc = post_bytes(ex, 1, (void *)data, bytes, dst_rank, &s->req[s->nreq++]);
  for (int i = 0; i < nparts && mrc == MPI_SUCCESS; i++)
    if (parts[i].bytes > 0)
      mrc = post_bytes(ex, 1, (void *)parts[i].data, parts[i].bytes, dst_rank,
                       &s->req[s->nreq++]);
  if (mrc != MPI_SUCCESS) {
    /* the header is out; nothing sensible can follow it */
    s->nreq--;
    ex->nsent_wire += s->nreq;
    MPI_Waitall(s->nreq, s->req, MPI_STATUSES_IGNORE);
    send_release(ex, s);
    return bpc__err_mpi(ctx, mrc, "MPI_Isend (payload)");
  }
  bpc__stats_wire(ctx, (uint64_t)s->nreq);
  ex->nsent_wire += s->nreq;
  return BPC_OK;
}

static int mpi_post_bundle(bpc__exch_t *ex, int dst_rank, bpc__sendrec_t *s, size_t len)
{
  s->req = s->req_in;
  s->nreq = 0;
  int mrc = MPI_Isend(s->buf, (int)len, MPI_BYTE, dst_rank, ex->tag, ex->ctx->comm, &s->req[0]);
  if (mrc != MPI_SUCCESS) {
    send_release(ex, s);
    return bpc__err_mpi(ex->ctx, mrc, "MPI_Isend (bundle)");
  }
  s->nreq = 1;
  bpc__stats_wire(ex->ctx, 1);
  ex->nsent_wire++;
  return BPC_OK;
}

static int mpi_test_sends(bpc__exch_t *ex, bpc__sendrec_t **s, int n, int *done)
{
  int total = 0;
  for (int i = 0; i < n; i++)
    total += s[i]->nreq;
  if (bpc__exch_grow_sreqs(ex, total) != BPC_OK)
    return bpc__err(ex->ctx, BPC_ENOMEM, "send test: out of memory");
  int k = 0;
  for (int i = 0; i < n; i++)
    for (int j = 0; j < s[i]->nreq; j++)
      ex->sreq[k++] = s[i]->req[j];
  int outcount = 0, mrc = MPI_SUCCESS;
  if (total > 0)
    mrc = MPI_Testsome(total, ex->sreq, &outcount, ex->sidx, MPI_STATUSES_IGNORE);
  if (mrc != MPI_SUCCESS)
    return bpc__err_mpi(ex->ctx, mrc, "MPI_Testsome (sends)");
  /* completed requests came back as MPI_REQUEST_NULL */
  k = 0;
  for (int i = 0; i < n; i++) {
    int all = 1;
    for (int j = 0; j < s[i]->nreq; j++) {
      s[i]->req[j] = ex->sreq[k++];
      all = all && s[i]->req[j] == MPI_REQUEST_NULL;
    }
    done[i] = all;
    if (all)
      send_release(ex, s[i]);
  }
  return BPC_OK;
}

/* Room for k more receives in flight. */
static int reserve_recv(bpc__exch_t *ex, int k)
{
  return bpc__exch_grow_recvs(ex, ex->nrecv + k);
}

/* A message record with the header's envelope, or NULL. */
static bpc__msg_t *msg_of(bpc_ctx_t *ctx, const bpc__hdr_t *h, int seq, size_t bytes)
{
  bpc__msg_t *m = bpc__msg_new(ctx);
  if (m != NULL) {
    m->src_gid = h->src_gid;
    m->dst_gid = h->dst_gid;
    m->seq = seq;
    m->bytes = bytes;
  }
  return m;
}

/* Post the receive of m's payload (m->bytes > 0) from `source` into the
 * caller's destination if one was posted (bpc__exch_recv_into), else into a
 * pool buffer at the sender's page offset (tags.h; the pages past the
 * payload are never touched, so rounding the buffer up costs no memory),
 * and put m in the mailbox as pending: it holds its place, so a later
 * message with the same envelope cannot overtake it. Room for the request
 * is reserved. */
static int post_payload(bpc__exch_t *ex, bpc__msg_t *m, uint32_t page_off, int source)
{
  bpc_ctx_t *ctx = ex->ctx;
  void *dest =
      ex->ndests > 0 ? bpc__exch_dest(ex, m->src_gid, m->dst_gid, m->seq, m->bytes) : NULL;
  if (dest != NULL) {
    m->data = dest;
  } else {
    m->buf = bpc__pool_get(ctx, m->bytes + 4095u, &m->cap);
    if (m->buf == NULL) {
      size_t bytes = m->bytes;
      bpc__msg_free(ctx, m);
      return bpc__err(ctx, BPC_ENOMEM, "receive of %zu bytes: out of memory", bytes);
    }
    m->data = (char *)m->buf + ((page_off - (uintptr_t)m->buf) & 4095u);
  }
  int mrc = post_bytes(ex, 0, m->data, m->bytes, source, &ex->rreq[ex->nrecv]);
  if (mrc != MPI_SUCCESS) {
    if (m->buf != NULL)
      bpc__pool_put(ctx, m->buf, m->cap);
    bpc__msg_free(ctx, m);
    return bpc__err_mpi(ctx, mrc, "MPI_Irecv (payload)");
  }
  ex->rmsg[ex->nrecv++] = m;
  m->pending = 1;
  bpc__exch_deliver(ex, m);
  return BPC_OK;
}

/* Deliver the messages of a received bundle (tags.h), in order; their
 * payloads stay in buf, which is shared by them and goes back to the pool
 * with the last one released (or at once if none keeps it). */
static int take_bundle(bpc__exch_t *ex, const bpc__hdr_t *h, void *buf, size_t cap, size_t n,
                       int source)
{
  bpc_ctx_t *ctx = ex->ctx;
  int rc = BPC_OK;
  bpc__shared_t *sh = bpc__shared_new(ctx);
  if (sh == NULL) {
    bpc__pool_put(ctx, buf, cap);
    return bpc__err(ctx, BPC_ENOMEM, "receive: out of memory");
  }
  sh->buf = buf;
  sh->cap = cap;
  sh->refs = 1; /* this function's, dropped at the end */
  const char *p = (const char *)buf + sizeof *h, *end = (const char *)buf + n;
  if (sizeof *h + h->bytes != n || h->seq < 0)
    rc = bpc__err(ctx, BPC_ETRUNC, "bundle from rank %d: header says %llu bytes and %d "
                                   "messages, %zu bytes arrived",
                  source, (unsigned long long)h->bytes, (int)h->seq, n);
  for (int i = 0; i < h->seq && rc == BPC_OK; i++) {
    bpc__bundle_desc_t d;
    if (end - p < (ptrdiff_t)sizeof d) {
      rc = bpc__err(ctx, BPC_ETRUNC, "bundle from rank %d ends in message %d of %d", source, i,
                    (int)h->seq);
      break;
    }
    memcpy(&d, p, sizeof d);
    p += sizeof d;
    const size_t room = ((size_t)d.bytes + 7u) & ~(size_t)7u;
    if ((size_t)(end - p) < room) {
      rc = bpc__err(ctx, BPC_ETRUNC, "bundle from rank %d: message %d of %u bytes passes its end",
                    source, i, (unsigned)d.bytes);
      break;
    }
    bpc__msg_t *m = bpc__msg_new(ctx);
    if (m == NULL) {
      rc = bpc__err(ctx, BPC_ENOMEM, "receive: out of memory");
      break;
    }
    m->src_gid = d.src_gid;
    m->dst_gid = d.dst_gid;
    m->seq = d.seq;
    m->bytes = d.bytes;
    void *dest = ex->ndests > 0 ? bpc__exch_dest(ex, d.src_gid, d.dst_gid, d.seq, d.bytes) : NULL;
    if (d.bytes == 0) {
      m->data = NULL;
    } else if (dest != NULL) { /* the caller's destination (bpc__exch_recv_into) */
      memcpy(dest, p, d.bytes);
      m->data = dest;
    } else {
      m->data = (void *)p;
      m->shared = sh;
      sh->refs++;
    }
    p += room;
    bpc__exch_deliver(ex, m);
  }
  if (rc == BPC_OK && p != end)
    rc = bpc__err(ctx, BPC_ETRUNC, "bundle from rank %d: %td bytes after its last message",
                  source, end - p);
  bpc__shared_unref(ctx, sh);
  return rc;
}

/* Receive a matched message whole and drop it. A receive into a smaller
 * buffer is not safe (Open MPI writes the whole message past the end of a
 * buffer given a smaller count, as seen with this transport's headers), so
 * into a buffer of its size, from malloc or the kernel's pages (not the
 * pool: memory may be what ran out); without even those, the job is
 * aborted with a message instead of writing over memory (bpc__must_alloc,
 * bpc__abort_job). */
static void drop_message(bpc_ctx_t *ctx, msg_t *mm, MPI_Status *st)
{
  MPI_Count n = 0;
#ifdef BPC_SMPI
  int n_int = 0; /* SMPI 3.32 has no MPI_Get_elements_x (nor messages past INT_MAX) */
  MPI_Get_count(st, MPI_BYTE, &n_int);
  n = n_int;
#else
  MPI_Get_elements_x(st, MPI_BYTE, &n);
#endif
  const size_t bytes = n > 0 ? (size_t)n : 1;
  int paged = 0;
  void *buf = bpc__must_alloc(ctx, bytes, &paged, "a message to drop");
  MPI_Datatype t = MPI_BYTE;
  int count = (int)n;
  if (bytes > (size_t)INT_MAX) {
    count = 1;
    if (big_bytes_type(bytes, &t) != MPI_SUCCESS) {
      char why[128];
      snprintf(why, sizeof why, "no MPI type to receive (and drop) a message of %zu bytes", bytes);
      bpc__abort_job(ctx, why);
    }
  }
  msg_recv(buf, count, t, mm);
  if (t != MPI_BYTE)
    MPI_Type_free(&t);
  bpc__must_free(buf, bytes, paged);
}

/* Receive a matched header message; deliver its message (inline) or post
 * the receive of its payload, then likewise for its parts, in the order the
 * sender posted them, before anything else is probed. */
static int take_header(bpc__exch_t *ex, msg_t *mm, MPI_Status *st)
{
  bpc_ctx_t *ctx = ex->ctx;
  int rc = BPC_OK, n = 0, mrc;
  size_t cap = 0;
  void *buf = NULL;
  const int source = st->MPI_SOURCE;
  MPI_Get_count(st, MPI_BYTE, &n);
  buf = bpc__pool_get(ctx, n > 0 ? (size_t)n : 1, &cap);
  if (buf == NULL) {
    drop_message(ctx, mm, st); /* still take the message off the queue */
    ex->nrecv_wire++;
    return bpc__err(ctx, BPC_ENOMEM, "receive of %d bytes: out of memory", n);
  }
  mrc = msg_recv(buf, n, MPI_BYTE, mm);
  if (mrc != MPI_SUCCESS) {
    bpc__pool_put(ctx, buf, cap);
    return bpc__err_mpi(ctx, mrc, MSG_RECV_NAME);
  }
  ex->nrecv_wire++;
  bpc__hdr_t h;
  if ((size_t)n < sizeof h) {
    bpc__pool_put(ctx, buf, cap);
    return bpc__err(ctx, BPC_ETRUNC, "a %d-byte message from rank %d is shorter than a header",
                    n, source);
  }
  memcpy(&h, buf, sizeof h);
  if (h.magic != BPC__MSG_MAGIC) {
    bpc__pool_put(ctx, buf, cap);
    return bpc__err(ctx, BPC_ETRUNC, "message from rank %d (tag %d) is not a bpc message",
                    source, ex->tag);
  }
  if (h.flags & BPC__HDR_ABORT) { /* rank `source` failed (bpc__exch_abort) */
    bpc__pool_put(ctx, buf, cap);
    if (ex->aborted++ == 0) {
      ex->abort_rank = source;
      ex->abort_code = h.seq < 0 ? h.seq : BPC_ESTATE; /* its error code */
    }
    return BPC__EPEER;
  }
  if (h.flags & BPC__HDR_BUNDLE)
    return take_bundle(ex, &h, buf, cap, (size_t)n, source);
  const int is_inline = (h.flags & BPC__HDR_INLINE) != 0;
  const int nparts = (h.flags & BPC__HDR_PARTS) ? (int)(h.flags >> BPC__HDR_NPARTS_SHIFT) : 0;
  const size_t want =
      sizeof h + (is_inline ? h.bytes : 0) + (size_t)nparts * sizeof(bpc__part_desc_t);
  /* the sender inlines exactly the payloads up to BPC__INLINE_MAX */
  if ((size_t)n != want || is_inline != (h.bytes <= BPC__INLINE_MAX)) {
    bpc__pool_put(ctx, buf, cap);
    return bpc__err(ctx, BPC_ETRUNC,
                    "message from rank %d: header says %llu payload bytes%s and %d parts, "
                    "%d bytes arrived",
                    source, (unsigned long long)h.bytes, is_inline ? " inline" : "", nparts, n);
  }
  /* the part table stays readable in buf until this function returns */
  const char *descs = (const char *)buf + sizeof h + (is_inline ? h.bytes : 0);
  int nposts = !is_inline && h.bytes > 0;
  for (int i = 0; i < nparts; i++) {
    bpc__part_desc_t d;
    memcpy(&d, descs + (size_t)i * sizeof d, sizeof d);
    nposts += d.bytes > 0;
  }
  bpc__msg_t *m = msg_of(ctx, &h, h.seq, (size_t)h.bytes);
  if (m == NULL || reserve_recv(ex, nposts) != BPC_OK) {
    if (m != NULL)
      bpc__msg_free(ctx, m);
    bpc__pool_put(ctx, buf, cap);
    return bpc__err(ctx, BPC_ENOMEM, "receive: out of memory");
  }
  void *keep = NULL; /* buf, once the head message owns it */
  if (is_inline) {
    void *dest = ex->ndests > 0 ? bpc__exch_dest(ex, m->src_gid, m->dst_gid, m->seq, m->bytes)
                                : NULL;
    if (dest != NULL) { /* the caller's destination (bpc__exch_recv_into) */
      if (h.bytes > 0)
        memcpy(dest, (char *)buf + sizeof h, (size_t)h.bytes);
      m->data = h.bytes ? dest : NULL;
    } else {
      m->buf = buf;
      m->cap = cap;
      m->data = h.bytes ? (char *)buf + sizeof h : NULL;
      keep = buf;
    }
    bpc__exch_deliver(ex, m);
  } else {
    rc = post_payload(ex, m, h.page_off, source);
  }
  for (int i = 0; i < nparts && rc == BPC_OK; i++) {
    bpc__part_desc_t d;
    memcpy(&d, descs + (size_t)i * sizeof d, sizeof d);
    bpc__msg_t *p = msg_of(ctx, &h, d.seq, (size_t)d.bytes);
    if (p == NULL)
      rc = bpc__err(ctx, BPC_ENOMEM, "receive: out of memory");
    else if (d.bytes == 0) {
      if (ex->ndests > 0) /* an empty part uses up its destination too */
        bpc__exch_dest(ex, p->src_gid, p->dst_gid, p->seq, 0);
      bpc__exch_deliver(ex, p);
    }
    else
      rc = post_payload(ex, p, d.page_off, source);
  }
  if (keep == NULL)
    bpc__pool_put(ctx, buf, cap);
  return rc;
}

/* Complete finished payload receives (one MPI_Testsome for all). */
static int test_recvs(bpc__exch_t *ex, int *events)
{
  int idx_small[64], outcount = 0;
  int *idx = ex->nrecv <= 64 ? idx_small : bpc__malloc(sizeof(int) * (size_t)ex->nrecv);
  if (idx == NULL)
    return bpc__err(ex->ctx, BPC_ENOMEM, "poll: out of memory");
  int mrc = MPI_Testsome(ex->nrecv, ex->rreq, &outcount, idx, MPI_STATUSES_IGNORE);
  if (mrc == MPI_SUCCESS && outcount != MPI_UNDEFINED && outcount > 0) {
    for (int i = 0; i < outcount; i++) {
      bpc__exch_complete(ex, ex->rmsg[idx[i]]);
      ex->rmsg[idx[i]] = NULL;
    }
    int j = 0;
    for (int i = 0; i < ex->nrecv; i++) {
      if (ex->rmsg[i] != NULL) {
        ex->rreq[j] = ex->rreq[i];
        ex->rmsg[j] = ex->rmsg[i];
        j++;
      }
    }
    ex->nrecv = j;
    *events += outcount;
    ex->nrecv_wire += outcount;
  }
  if (idx != idx_small)
    free(idx);
  if (mrc != MPI_SUCCESS)
    return bpc__err_mpi(ex->ctx, mrc, "MPI_Testsome");
  return BPC_OK;
}

/* Take the headers that have arrived (each posts its payload receives). */
static int take_headers(bpc__exch_t *ex, int *events)
{
  for (;;) {
    int flag = 0;
    msg_t mm;
    MPI_Status st;
    int mrc = msg_iprobe(ex->tag, ex->ctx->comm, &flag, &mm, &st);
    if (mrc != MPI_SUCCESS)
      return bpc__err_mpi(ex->ctx, mrc, MSG_IPROBE_NAME);
    if (!flag)
      return BPC_OK;
    int rc = take_header(ex, &mm, &st);
    if (rc != BPC_OK)
      return rc;
    (*events)++;
  }
}

/*
 * One poll: take the headers that have arrived (posting their payload
 * receives), then test the receives in flight; with `block`, if that found
 * nothing, sleep in one blocking MPI call. (Going to the blocking call
 * first, without the non-blocking checks, measured 10-15 % slower with 8
 * processes on 2 cores: Open MPI's blocking calls give the core away less
 * promptly than a failed test does.)
 */
static int mpi_poll(bpc__exch_t *ex, int block, int *events)
{
  bpc_ctx_t *ctx = ex->ctx;
  int start = *events, mrc;
  int rc = take_headers(ex, events);
  if (rc == BPC_OK && ex->nrecv > 0)
    rc = test_recvs(ex, events);
  if (rc != BPC_OK || !block || *events > start)
    return rc;
  if (ex->nrecv == 0) {
    /* nothing in flight here: sleep in MPI until a header comes */
    msg_t mm;
    MPI_Status st;
    mrc = msg_probe(ex->tag, ctx->comm, &mm, &st);
    if (mrc != MPI_SUCCESS)
      return bpc__err_mpi(ctx, mrc, MSG_PROBE_NAME);
    rc = take_header(ex, &mm, &st);
    if (rc != BPC_OK)
      return rc;
    (*events)++;
    return BPC_OK;
  }
  /* receives in flight: sleep in MPI until one of them lands (each has
   * its send posted already, so this returns) */
  int which = MPI_UNDEFINED;
  mrc = MPI_Waitany(ex->nrecv, ex->rreq, &which, MPI_STATUS_IGNORE);
  if (mrc != MPI_SUCCESS)
    return bpc__err_mpi(ctx, mrc, "MPI_Waitany");
  if (which != MPI_UNDEFINED) {
    ex->nrecv_wire++;
    bpc__exch_complete(ex, ex->rmsg[which]);
    ex->nrecv--;
    ex->rreq[which] = ex->rreq[ex->nrecv];
    ex->rmsg[which] = ex->rmsg[ex->nrecv];
    (*events)++;
  }
  return BPC_OK;
}

static int mpi_pending(const bpc__exch_t *ex) { return ex->nrecv; }

/* Cancel the payload receives in flight (after an error); one that had
 * matched its message completes and counts as received. Their messages
 * stay in the mailbox, freed with it by exchange.c. */
static void cancel_recvs(bpc__exch_t *ex)
{
  for (int i = 0; i < ex->nrecv; i++) {
    MPI_Status st;
    int gone = 0;
    MPI_Cancel(&ex->rreq[i]);
    MPI_Wait(&ex->rreq[i], &st);
    MPI_Test_cancelled(&st, &gone);
    if (!gone)
      ex->nrecv_wire++;
    bpc__exch_complete(ex, ex->rmsg[i]);
  }
  ex->nrecv = 0;
}

static void mpi_close(bpc__exch_t *ex)
{
  cancel_recvs(ex);
  ex->nrecv = 0; /* the arrays stay with the exchange (exchange.c frees them) */
}

/* Tell every other rank that this one failed: a header each, fire and
 * forget (the drain, which every rank runs next, receives them before the
 * exchange and its abort_hdr go). */
static void mpi_abort(bpc__exch_t *ex, int code)
{
  bpc_ctx_t *ctx = ex->ctx;
  ex->abort_hdr = (bpc__hdr_t){.magic = BPC__MSG_MAGIC, .flags = BPC__HDR_ABORT, .src_gid = -1,
                               .dst_gid = -1, .seq = code};
  for (int r = 0; r < ctx->size; r++) {
    MPI_Request q;
    if (r != ctx->rank && MPI_Isend(&ex->abort_hdr, (int)sizeof ex->abort_hdr, MPI_BYTE, r,
                                    ex->tag, ctx->comm, &q) == MPI_SUCCESS) {
      MPI_Request_free(&q);
      ex->nsent_wire++;
    }
  }
}

/*
 * After a failure, on every rank: the payload receives in flight are
 * cancelled (one that has matched completes), then every message of the
 * exchange that is still on its way here is received and dropped (into a
 * small buffer: MPI truncates it and still takes it off the queue), until
 * a reduction of (sent - received) over the ranks reads 0. Sends are not
 * posted any more, so that sum only falls, and it is 0 exactly when every
 * message sent has been received. The reductions are non-blocking, so a
 * rank keeps taking messages while it waits for theirs.
 */
static int mpi_drain(bpc__exch_t *ex)
{
  bpc_ctx_t *ctx = ex->ctx;
  cancel_recvs(ex);
  for (;;) {
    long long left = ex->nsent_wire - ex->nrecv_wire, sum = 0;
    bpc__coll_req_t req = BPC__COLL_REQ_INIT;
    int rc = bpc__iallreduce_ll(ctx, &left, &sum, 1, BPC__RED_SUM, &req);
    if (rc != BPC_OK)
      return rc;
    int done = 0, idle = 0;
    while (!done) {
      int flag = 0;
      msg_t mm;
      MPI_Status st;
      if (msg_iprobe(ex->tag, ctx->comm, &flag, &mm, &st) != MPI_SUCCESS)
        flag = 0;
      if (flag) {
        drop_message(ctx, &mm, &st);
        ex->nrecv_wire++;
        idle = 0;
        continue;
      }
      rc = bpc__coll_test(ctx, &req, &done);
      if (rc != BPC_OK)
        return rc;
      if (!done && ++idle > 1024) {
        sched_yield();
        idle = 0;
      }
    }
    if (sum == 0)
      return BPC_OK;
  }
}

const bpc__transport_t bpc__transport_mpi = {
    .name = "mpi",
    .post_send = mpi_post_send,
    .post_bundle = mpi_post_bundle,
    .test_sends = mpi_test_sends,
    .poll = mpi_poll,
    .pending = mpi_pending,
    .close = mpi_close,
    .abort = mpi_abort,
    .drain = mpi_drain,
};
