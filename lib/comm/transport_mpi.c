/*
 * lib/comm/transport_mpi.c - the MPI transport: one bpc message is one MPI
 * message (inline payloads) or a header message followed by a payload message
 * sent from the user's memory (see tags.h for the wire format and why a
 * probe can never match a payload). Receivers learn sizes from the header,
 * so the receive side never needs to know a message's size in advance.
 */
#include "comm/transport.h"

#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define CHUNK ((size_t)1 << 30)

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

static int mpi_post_send(bpc__exch_t *ex, int dst_rank, bpc__sendrec_t *s, const void *data)
{
  bpc_ctx_t *ctx = ex->ctx;
  size_t bytes = (size_t)s->hdr.bytes;
  int mrc;
  s->dtype = MPI_DATATYPE_NULL;
  if (bytes <= BPC__INLINE_MAX) {
    s->hdr.flags = BPC__HDR_INLINE;
    s->buf = bpc__pool_get(ctx, sizeof s->hdr + bytes, &s->cap);
    if (s->buf == NULL)
      return bpc__err(ctx, BPC_ENOMEM, "send: out of memory");
    memcpy(s->buf, &s->hdr, sizeof s->hdr);
    if (bytes)
      memcpy((char *)s->buf + sizeof s->hdr, data, bytes);
    mrc = MPI_Isend(s->buf, (int)(sizeof s->hdr + bytes), MPI_BYTE, dst_rank, ex->tag, ctx->comm,
                    &s->req[0]);
    if (mrc != MPI_SUCCESS) {
      bpc__pool_put(ctx, s->buf, s->cap);
      s->buf = NULL;
      return bpc__err_mpi(ctx, mrc, "MPI_Isend");
    }
    s->nreq = 1;
    return BPC_OK;
  }
  s->hdr.flags = 0;
  s->hdr.page_off = (uint32_t)((uintptr_t)data & 4095u);
  mrc = MPI_Isend(&s->hdr, (int)sizeof s->hdr, MPI_BYTE, dst_rank, ex->tag, ctx->comm, &s->req[0]);
  if (mrc != MPI_SUCCESS)
    return bpc__err_mpi(ctx, mrc, "MPI_Isend (header)");
  s->nreq = 1;
  if (bytes <= (size_t)INT_MAX) {
    mrc = MPI_Isend(data, (int)bytes, MPI_BYTE, dst_rank, ex->tag, ctx->comm, &s->req[1]);
  } else {
    mrc = big_bytes_type(bytes, &s->dtype);
    if (mrc == MPI_SUCCESS)
      mrc = MPI_Isend(data, 1, s->dtype, dst_rank, ex->tag, ctx->comm, &s->req[1]);
  }
  if (mrc != MPI_SUCCESS) {
    /* the header is out; nothing sensible can follow it */
    MPI_Wait(&s->req[0], MPI_STATUS_IGNORE);
    s->nreq = 0;
    if (s->dtype != MPI_DATATYPE_NULL)
      MPI_Type_free(&s->dtype);
    return bpc__err_mpi(ctx, mrc, "MPI_Isend (payload)");
  }
  s->nreq = 2;
  return BPC_OK;
}

static int mpi_test_send(bpc__exch_t *ex, bpc__sendrec_t *s, int *done)
{
  int flag = 0;
  *done = 0;
  int mrc = s->nreq ? MPI_Testall(s->nreq, s->req, &flag, MPI_STATUSES_IGNORE) : MPI_SUCCESS;
  if (s->nreq == 0)
    flag = 1;
  if (mrc != MPI_SUCCESS)
    return bpc__err_mpi(ex->ctx, mrc, "MPI_Testall (sends)");
  if (flag) {
    if (s->dtype != MPI_DATATYPE_NULL)
      MPI_Type_free(&s->dtype);
    if (s->buf)
      bpc__pool_put(ex->ctx, s->buf, s->cap);
    s->buf = NULL;
    *done = 1;
  }
  return BPC_OK;
}

static int add_recv(bpc__exch_t *ex, bpc__msg_t *m, MPI_Request req)
{
  if (ex->nrecv == ex->caprecv) {
    int ncap = ex->caprecv ? 2 * ex->caprecv : 16;
    MPI_Request *nr = realloc(ex->rreq, sizeof *nr * (size_t)ncap);
    if (nr == NULL)
      return BPC_ENOMEM;
    ex->rreq = nr;
    bpc__msg_t **nm = realloc(ex->rmsg, sizeof *nm * (size_t)ncap);
    if (nm == NULL)
      return BPC_ENOMEM;
    ex->rmsg = nm;
    ex->caprecv = ncap;
  }
  ex->rreq[ex->nrecv] = req;
  ex->rmsg[ex->nrecv] = m;
  ex->nrecv++;
  return BPC_OK;
}

/* Receive a matched header message; deliver it (inline) or post the receive
 * of its payload. */
static int take_header(bpc__exch_t *ex, MPI_Message *mm, MPI_Status *st)
{
  bpc_ctx_t *ctx = ex->ctx;
  int rc = BPC_OK, n = 0, mrc;
  size_t cap = 0;
  bpc__msg_t *m = NULL;
  void *buf = NULL;
  MPI_Get_count(st, MPI_BYTE, &n);
  buf = bpc__pool_get(ctx, n > 0 ? (size_t)n : 1, &cap);
  if (buf == NULL) {
    /* still take the message off the queue */
    char tmp[64];
    MPI_Mrecv(tmp, 0, MPI_BYTE, mm, MPI_STATUS_IGNORE);
    return bpc__err(ctx, BPC_ENOMEM, "receive of %d bytes: out of memory", n);
  }
  mrc = MPI_Mrecv(buf, n, MPI_BYTE, mm, MPI_STATUS_IGNORE);
  if (mrc != MPI_SUCCESS) {
    rc = bpc__err_mpi(ctx, mrc, "MPI_Mrecv");
    goto cleanup;
  }
  bpc__hdr_t h;
  if ((size_t)n < sizeof h) {
    rc = bpc__err(ctx, BPC_ETRUNC, "a %d-byte message from rank %d is shorter than a header", n,
                  st->MPI_SOURCE);
    goto cleanup;
  }
  memcpy(&h, buf, sizeof h);
  if (h.magic != BPC__MSG_MAGIC) {
    rc = bpc__err(ctx, BPC_ETRUNC, "message from rank %d (tag %d) is not a bpc message",
                  st->MPI_SOURCE, ex->tag);
    goto cleanup;
  }
  int is_inline = (h.flags & BPC__HDR_INLINE) != 0;
  if ((is_inline && (size_t)n != sizeof h + h.bytes) || (!is_inline && (size_t)n != sizeof h)) {
    rc = bpc__err(ctx, BPC_ETRUNC, "message from rank %d: header says %llu payload bytes, "
                                   "%d bytes arrived", st->MPI_SOURCE,
                  (unsigned long long)h.bytes, n);
    goto cleanup;
  }
  m = bpc__msg_new();
  if (m == NULL) {
    rc = bpc__err(ctx, BPC_ENOMEM, "receive: out of memory");
    goto cleanup;
  }
  m->src_gid = h.src_gid;
  m->dst_gid = h.dst_gid;
  m->seq = h.seq;
  m->bytes = (size_t)h.bytes;
  if (is_inline) {
    m->buf = buf;
    m->cap = cap;
    m->data = h.bytes ? (char *)buf + sizeof h : NULL;
    buf = NULL;
    bpc__exch_deliver(ex, m);
    m = NULL;
    goto cleanup;
  }
  /* large: post the payload receive before anything else is probed, at the
   * sender's page offset (tags.h); the pages past the payload are never
   * touched, so the rounding up of the buffer costs no memory */
  m->buf = bpc__pool_get(ctx, m->bytes + 4095u, &m->cap);
  if (m->buf == NULL) {
    rc = bpc__err(ctx, BPC_ENOMEM, "receive of %zu bytes: out of memory", m->bytes);
    goto cleanup;
  }
  m->data = (char *)m->buf + ((h.page_off - (uintptr_t)m->buf) & 4095u);
  MPI_Request req;
  if (m->bytes <= (size_t)INT_MAX) {
    mrc = MPI_Irecv(m->data, (int)m->bytes, MPI_BYTE, st->MPI_SOURCE, ex->tag, ctx->comm, &req);
  } else {
    MPI_Datatype t;
    mrc = big_bytes_type(m->bytes, &t);
    if (mrc == MPI_SUCCESS) {
      mrc = MPI_Irecv(m->data, 1, t, st->MPI_SOURCE, ex->tag, ctx->comm, &req);
      MPI_Type_free(&t); /* freeing a type in use by a request is allowed */
    }
  }
  if (mrc != MPI_SUCCESS) {
    rc = bpc__err_mpi(ctx, mrc, "MPI_Irecv (payload)");
    goto cleanup;
  }
  rc = add_recv(ex, m, req);
  if (rc != BPC_OK) {
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    rc = bpc__err(ctx, BPC_ENOMEM, "receive: out of memory");
    goto cleanup;
  }
  /* hold its place in the mailbox: a later inline message with the same
   * envelope must not overtake it */
  m->pending = 1;
  bpc__exch_deliver(ex, m);
  m = NULL;
cleanup:
  if (buf)
    bpc__pool_put(ctx, buf, cap);
  if (m) {
    if (m->buf)
      bpc__pool_put(ctx, m->buf, m->cap);
    free(m);
  }
  return rc;
}

static int mpi_poll(bpc__exch_t *ex, int block, int *events)
{
  bpc_ctx_t *ctx = ex->ctx;
  int start = *events, mrc, rc;
  int idx_small[64];
  /* headers that have arrived */
  for (;;) {
    int flag = 0;
    MPI_Message mm;
    MPI_Status st;
    mrc = MPI_Improbe(MPI_ANY_SOURCE, ex->tag, ctx->comm, &flag, &mm, &st);
    if (mrc != MPI_SUCCESS)
      return bpc__err_mpi(ctx, mrc, "MPI_Improbe");
    if (!flag)
      break;
    rc = take_header(ex, &mm, &st);
    if (rc != BPC_OK)
      return rc;
    (*events)++;
  }
  /* payloads that have finished */
  if (ex->nrecv > 0) {
    int outcount = 0;
    int *idx = ex->nrecv <= 64 ? idx_small : bpc__malloc(sizeof(int) * (size_t)ex->nrecv);
    if (idx == NULL)
      return bpc__err(ctx, BPC_ENOMEM, "poll: out of memory");
    mrc = MPI_Testsome(ex->nrecv, ex->rreq, &outcount, idx, MPI_STATUSES_IGNORE);
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
    }
    if (idx != idx_small)
      free(idx);
    if (mrc != MPI_SUCCESS)
      return bpc__err_mpi(ctx, mrc, "MPI_Testsome");
  }
  if (!block || *events > start)
    return BPC_OK;
  if (ex->nrecv == 0) {
    /* nothing in flight here: sleep in MPI until a header comes */
    MPI_Message mm;
    MPI_Status st;
    mrc = MPI_Mprobe(MPI_ANY_SOURCE, ex->tag, ctx->comm, &mm, &st);
    if (mrc != MPI_SUCCESS)
      return bpc__err_mpi(ctx, mrc, "MPI_Mprobe");
    rc = take_header(ex, &mm, &st);
    if (rc != BPC_OK)
      return rc;
    (*events)++;
    return BPC_OK;
  }
  /* receives in flight: sleep in MPI until one of them lands */
  int which = MPI_UNDEFINED;
  mrc = MPI_Waitany(ex->nrecv, ex->rreq, &which, MPI_STATUS_IGNORE);
  if (mrc != MPI_SUCCESS)
    return bpc__err_mpi(ctx, mrc, "MPI_Waitany");
  if (which != MPI_UNDEFINED) {
    bpc__exch_complete(ex, ex->rmsg[which]);
    ex->nrecv--;
    ex->rreq[which] = ex->rreq[ex->nrecv];
    ex->rmsg[which] = ex->rmsg[ex->nrecv];
    (*events)++;
  }
  return BPC_OK;
}

static int mpi_pending(const bpc__exch_t *ex) { return ex->nrecv; }

static void mpi_close(bpc__exch_t *ex)
{
  for (int i = 0; i < ex->nrecv; i++) {
    MPI_Cancel(&ex->rreq[i]);
    MPI_Wait(&ex->rreq[i], MPI_STATUS_IGNORE);
    bpc__exch_complete(ex, ex->rmsg[i]); /* freed with the mailbox by exchange.c */
  }
  free(ex->rreq);
  free(ex->rmsg);
  ex->rreq = NULL;
  ex->rmsg = NULL;
  ex->nrecv = ex->caprecv = 0;
}

const bpc__transport_t bpc__transport_mpi = {
    .name = "mpi",
    .post_send = mpi_post_send,
    .test_send = mpi_test_send,
    .poll = mpi_poll,
    .pending = mpi_pending,
    .close = mpi_close,
};
