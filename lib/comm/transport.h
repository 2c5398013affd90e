/*
 * lib/comm/transport.h - the transport table under the exchange layer, and
 * the exchange's internal state shared by exchange.c and the transports.
 *
 * exchange.c owns the mailbox (arrived messages, looked up by destination),
 * local (same-process) delivery and the public-to-engines API; it makes no
 * MPI call. A transport moves messages between processes:
 *  - transport_mpi.c: MPI point-to-point on the context's communicator;
 *  - transport_self.c: the in-process transport of serial contexts (one
 *    process, every block local: nothing ever crosses a process boundary).
 */
#ifndef BPC_LIB_COMM_TRANSPORT_H
#define BPC_LIB_COMM_TRANSPORT_H

#include <mpi.h>

#include "comm/comm.h"
#include "comm/tags.h"

#define BPC__MAILBOX_BITS 8
#define BPC__MAILBOX_BUCKETS (1 << BPC__MAILBOX_BITS)

#define BPC__SEND_REQS 8

/* One posted remote send: its header must live until the send completes. */
typedef struct bpc__sendrec {
  bpc__hdr_t hdr;
  /* requests: in place for up to BPC__SEND_REQS (header, head payload and
   * a few parts), else an array allocated for this send */
  MPI_Request req_in[BPC__SEND_REQS];
  MPI_Request *req;
  int nreq;
  void *buf; /* pool buffer of the header message when it is not hdr alone */
  size_t cap;
  struct bpc__sendrec *next_free; /* in the context's free list (exchange.c) */
} bpc__sendrec_t;

typedef struct bpc__transport {
  const char *name;
  /* Post the remote send described by s->hdr (payload at data), followed
   * by nparts parts (bpc__exch_send_parts; 0 and NULL for a plain send). */
  int (*post_send)(bpc__exch_t *ex, int dst_rank, bpc__sendrec_t *s, const void *data,
                   const bpc__msgpart_t *parts, int nparts);
  /* Post a bundle (tags.h) built in the pool buffer s->buf: `len` bytes,
   * its header included; s->buf goes back to the pool when it completes. */
  int (*post_bundle)(bpc__exch_t *ex, int dst_rank, bpc__sendrec_t *s, size_t len);
  /* Complete what has finished of the n sends s[]; done[i] = 1 when s[i]
   * is complete (its resources released). One progress step of the
   * transport for all of them: under an oversubscribed MPI every call
   * that finds nothing to do may give the core away. */
  int (*test_sends)(bpc__exch_t *ex, bpc__sendrec_t **s, int n, int *done);
  /* Pull arrived messages into the mailbox (bpc__exch_deliver). With
   * block != 0, do not return before at least one message was delivered or
   * one pending receive completed. *events counts what happened. */
  int (*poll)(bpc__exch_t *ex, int block, int *events);
  /* Number of receives started but not finished. */
  int (*pending)(const bpc__exch_t *ex);
  /* Release the transport's per-exchange state: receives still in flight
   * (only after an error) are cancelled; their messages stay in the mailbox
   * for exchange.c to free. */
  void (*close)(bpc__exch_t *ex);
  /* After a failure (bpc__exch_end). abort: tell every other rank that
   * this one failed (one header each). drain: collective over the ranks
   * of the exchange; receives and discards every message of the exchange
   * still on its way here (counted: what every rank sent against what
   * every rank received), so that no message is left behind to match a
   * later call and every send of this rank completes. */
  void (*abort)(bpc__exch_t *ex, int code);
  int (*drain)(bpc__exch_t *ex);
} bpc__transport_t;

extern const bpc__transport_t bpc__transport_mpi;
extern const bpc__transport_t bpc__transport_self;

struct bpc__exch {
  bpc_ctx_t *ctx;
  const bpc__transport_t *tp;
  int tag;
  int (*rank_of)(const void *arg, int gid);
  const void *rank_arg;

  /* posted remote sends not yet complete */
  bpc__sendrec_t **sends;
  int nsends, capsends;
  int stest_at; /* bpc__exch_wait tests sends once nsends reaches this */
  int *sdone; /* scratch for test_sends, capsends long */

  /* mailbox: arrived, untaken messages, FIFO per bucket (dst_gid hash) */
  bpc__msg_t *head[BPC__MAILBOX_BUCKETS];
  bpc__msg_t *tail[BPC__MAILBOX_BUCKETS];
  long long narrived;
  long long npending; /* of which still arriving */
  int drop_untaken;   /* after a failure: close drops them without an error */

  /* MPI transport: receives of large payloads in flight */
  MPI_Request *rreq;
  bpc__msg_t **rmsg;
  int nrecv, caprecv;
  /* MPI transport: scratch for testing all sends at once */
  MPI_Request *sreq;
  int *sidx;
  int capsreq;

  /* bundling (bpc__exch_bundle): one bundle being filled per destination
   * process; tab maps a rank to its stage (open addressing, index + 1) */
  int bundling;
  struct bpc__stage *stages;
  int nstages, capstages;
  int *tab;
  int tabcap;
  int nfull; /* stages holding messages */

  /* caller buffers posted with bpc__exch_recv_into: a hash table on
   * (src, dst, seq) with linear probing, capdests slots (a power of two,
   * at most half full), ndests in use; posts of one key are found in
   * posting order */
  struct bpc__dest *dests;
  int ndests, capdests;

  int err; /* first error seen inside the exchange */
  int broken; /* a failure that may have lost a message (exchange.c poll_tp) */

  /* failure handling (bpc__exch_end): MPI messages of this exchange sent
   * and received by this rank (headers, payloads, bundles, aborts), the
   * number of abort headers taken (the first one's rank and code), whether
   * this rank sent its own, and the header every abort sends */
  long long nsent_wire, nrecv_wire;
  int aborted, abort_rank, abort_code;
  int abort_sent;
  bpc__hdr_t abort_hdr;
  int spare; /* the context's spare exchange (bpc__exch_open ran out of memory) */
  int spare_paged; /* its bpc__must_alloc flag */
  /* the check running alongside the schedule (bpc__exch_guard): pending
   * until its reduction finished, then its verdict */
  int (*guard_start)(void *arg);
  int guard_started;
  int (*guard_test)(void *arg, int *done, int wait);
  int (*guard_verdict)(void *arg);
  void *guard_arg;
  int guard_pending;
  int guard_rc;
  /* pool buffers of the engine's sends, released at close (bpc__exch_adopt) */
  void **adopt_bufs;
  size_t *adopt_caps;
  int nadopt;
};

typedef struct bpc__stage {
  int rank;
  int count;   /* messages in the bundle */
  void *buf;   /* pool buffer: header, then descriptors and payloads */
  size_t cap, used;
} bpc__stage_t;

/* A bundle's receive buffer, shared by its messages (bpc__msg_t.shared). */
typedef struct bpc__shared {
  void *buf;
  size_t cap;
  int refs;
  struct bpc__shared *next_free; /* in the context's free list (exchange.c) */
} bpc__shared_t;

typedef struct bpc__dest {
  int src_gid, dst_gid, seq;
  int used;
  void *buf;
  size_t cap;
} bpc__dest_t;

/* The caller's buffer posted (bpc__exch_recv_into) for the message
 * (src, dst, seq) of `bytes` payload bytes, taken off the list; NULL when
 * none was posted or it is too small (then it is dropped). */
void *bpc__exch_dest(bpc__exch_t *ex, int src_gid, int dst_gid, int seq, size_t bytes);

/* Put a message in the mailbox, in arrival order of its header. If
 * m->pending, it holds its place (messages with the same envelope behind it
 * wait) until bpc__exch_complete; otherwise it is counted in the statistics
 * at once. */
void bpc__exch_deliver(bpc__exch_t *ex, bpc__msg_t *m);
/* The payload of a pending message has arrived. */
void bpc__exch_complete(bpc__exch_t *ex, bpc__msg_t *m);
/* Drop one reference to a bundle's receive buffer (the pool takes it back
 * with the last). */
void bpc__shared_unref(bpc_ctx_t *ctx, bpc__shared_t *sh);
/* Grow the exchange's arrays to at least `need` entries (doubling):
 * sends and their done flags, send requests tested at once, receives in
 * flight. BPC_ENOMEM (nothing recorded) or BPC_OK. */
int bpc__exch_grow_sends(bpc__exch_t *ex, int need);
int bpc__exch_grow_sreqs(bpc__exch_t *ex, int need);
int bpc__exch_grow_recvs(bpc__exch_t *ex, int need);

/* A fresh message record (zeroed), or NULL; give it back with
 * bpc__msg_free (its buffers already released). Records are recycled
 * through the context (thread-safe). */
bpc__msg_t *bpc__msg_new(bpc_ctx_t *ctx);
void bpc__msg_free(bpc_ctx_t *ctx, bpc__msg_t *m);
/* The same for a bundle's shared receive buffer record (zeroed). */
bpc__shared_t *bpc__shared_new(bpc_ctx_t *ctx);
void bpc__shared_free(bpc_ctx_t *ctx, bpc__shared_t *sh);
/* The same for send records (zeroed; s->req back at s->req_in). */
bpc__sendrec_t *bpc__sendrec_new(bpc_ctx_t *ctx);
void bpc__sendrec_free(bpc_ctx_t *ctx, bpc__sendrec_t *s);

#endif /* BPC_LIB_COMM_TRANSPORT_H */
