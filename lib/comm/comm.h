/*
 * lib/comm/comm.h - block-addressed messaging (internal).
 *
 * Engines talk in gids, never ranks. One engine call opens one exchange
 * (bpc__exch_open), which reserves a tag epoch from the context so that
 * back-to-back and interleaved calls never match each other's messages.
 * Within an exchange a message is addressed by (src gid, dst gid, seq);
 * `seq` is the engine's own sub-tag (round number, stage...). Messages with
 * the same (src, dst, seq) are delivered in the order they were sent.
 *
 * The receiver need not know a message's size: it gets a bpc__msg_t whose
 * payload lives in a receive buffer taken from the context's pool (reused
 * across calls). The payload may be read (and modified) in place until
 * bpc__msg_release returns the buffer.
 *
 * Transfers between blocks of the same process skip MPI: the payload is
 * copied once into a pool buffer, or not at all with BPC__SEND_BORROW.
 *
 * Underneath sits a transport table (transport.h): "mpi" (a 32-byte header
 * and the payload: one MPI message for small payloads, else a header message
 * and a payload message sent straight from the sender's memory; headers are
 * matched with MPI_Improbe/MPI_Mrecv, see tags.h) and "self" (the in-process
 * transport of bpc_init_serial contexts, where every block is local).
 *
 * Threading: exchange calls are made by one thread at a time (the master
 * thread in OpenMP regions: MPI_THREAD_FUNNELED suffices).
 */
#ifndef BPC_LIB_COMM_H
#define BPC_LIB_COMM_H

#include "core/core.h"
#include "comm/coll.h"

typedef struct bpc__exch bpc__exch_t;

/* Internal code (never returned by a public call): another rank failed
 * inside this exchange and said so (bpc__exch_end); the waits of this
 * rank's exchange return it instead of waiting for its messages. */
#define BPC__EPEER (-1000)

typedef struct bpc__msg {
  int src_gid, dst_gid, seq;
  void *data;   /* payload (NULL when bytes == 0) */
  size_t bytes; /* payload size */
  /* internal */
  int local;            /* arrived without MPI */
  int borrowed;         /* data is the sender's memory, not a pool buffer */
  int pending;          /* in the mailbox (keeping its place in the order)
                           but its payload is still arriving */
  void *buf;            /* pool buffer holding header + payload, or NULL */
  size_t cap;           /* its capacity */
  struct bpc__shared *shared; /* or the receive buffer of a bundle, shared
                                 with the bundle's other messages */
  struct bpc__msg *next;
} bpc__msg_t;

enum {
  /* Local transfer without copy: the sender keeps `data` valid and unchanged
   * until the receiver has released the message (engines use it when the
   * receiver finishes with the message before the sender's buffer changes). */
  BPC__SEND_BORROW = 1
};

/*
 * Open an exchange for one engine call on assignment-level rank map
 * `rank_of` (a callback giving the rank of a gid; `arg` is passed back).
 * Collective in the sense that all ranks open exchanges in the same order.
 * Starts a statistics record named `engine` (NULL: leave it alone), unless
 * the call's argument agreement (bpc__agree_args with the same engine
 * name, just before) already began it: then the record goes on, so it
 * holds the agreement's collectives too.
 */
int bpc__exch_open(bpc_ctx_t *ctx, const char *engine, int (*rank_of)(const void *arg, int gid),
                   const void *arg, bpc__exch_t **out);

/*
 * Post a send of `bytes` bytes at `data` from block src to block dst. The
 * send buffer must stay valid and unchanged until bpc__exch_flush (or
 * bpc__exch_close) returns, except for local copies (done at once).
 */
int bpc__exch_send(bpc__exch_t *ex, int src_gid, int dst_gid, int seq, const void *data,
                   size_t bytes, int flags);

/*
 * A message followed by parts: the same as bpc__exch_send of (data, bytes)
 * with `seq` and then of every part with its own seq, in order (each part
 * is a message of its own to the receiver, taken with its seq), but sent as
 * one group. Over MPI the group has one header, which lists the parts'
 * sizes, so the receiver posts the receives of all parts the moment the
 * header arrives: no header message and no probe per part. Every buffer
 * (head and parts) must stay valid until the sends complete, as for
 * bpc__exch_send.
 */
typedef struct bpc__msgpart {
  const void *data;
  size_t bytes;
  int seq;
} bpc__msgpart_t;
int bpc__exch_send_parts(bpc__exch_t *ex, int src_gid, int dst_gid, int seq, const void *data,
                         size_t bytes, const bpc__msgpart_t *parts, int nparts);

/*
 * Bundling (off when an exchange opens). With it on, remote sends of at most
 * BPC__INLINE_MAX payload bytes without parts are copied at once into one
 * bundle per destination process (the caller's buffer is free on return)
 * and leave as one MPI message (tags.h) when the exchange is next pushed:
 * bpc__exch_push, or any progress, wait, flush or close, or a larger send
 * to the same process (which must not overtake them). Engines turn it on
 * where a round sends many small messages between blocks of the same pair
 * of processes, and push after posting a round's sends when the round
 * computes before it waits. Receivers see no difference. Statistics count
 * every message in msgs_sent/msgs_recv; wire_sent counts MPI messages.
 * The environment variable BPC_BUNDLE=0 (read when a context is made)
 * keeps bundling off everywhere on that context.
 */
void bpc__exch_bundle(bpc__exch_t *ex, int on);
int bpc__exch_push(bpc__exch_t *ex);

/* Is a remote send to dst_gid with this seq still incomplete (its buffer
 * still in use)? Answers from the last progress/flush; seq -1 matches any.
 * Local sends complete at once and are never pending. */
int bpc__exch_send_pending(const bpc__exch_t *ex, int dst_gid, int seq);

/* Make progress on pending sends and receives without blocking. */
int bpc__exch_progress(bpc__exch_t *ex);

/* Take an arrived message (src, dst, seq) if there is one (*msg NULL if
 * not); src_gid or seq -1 match any. Never blocks. */
int bpc__exch_take(bpc__exch_t *ex, int dst_gid, int src_gid, int seq, bpc__msg_t **msg);

/* Block until a message matching (dst, src, seq) arrives and take it (-1 for
 * src or seq: any). A wait for a local source that has not sent is an error
 * (BPC_ESTATE) rather than a hang. */
int bpc__exch_wait(bpc__exch_t *ex, int dst_gid, int src_gid, int seq, bpc__msg_t **msg);

/*
 * Have the payload of the next message (src_gid -> dst_gid, seq) land in
 * the caller's `buf` (`cap` bytes) instead of a pool buffer: a remote
 * payload is received straight into it, a local one copied into it once.
 * The message is then taken as any other (bpc__exch_wait/take), with data
 * == buf; bpc__msg_release leaves buf alone. Post destinations before this
 * rank makes progress on the exchange (any wait, take, progress or flush),
 * so that the message cannot have arrived yet; several for the same
 * envelope are used in the order posted. A message that arrived earlier, or
 * whose payload is larger than cap, lands in a pool buffer as usual (the
 * caller sees data != buf). Unused destinations are dropped at close.
 * Errors: BPC_ENULL (buf NULL with cap > 0), BPC_ENOMEM.
 */
int bpc__exch_recv_into(bpc__exch_t *ex, int dst_gid, int src_gid, int seq, void *buf,
                        size_t cap);

/* Return a message's buffer to the pool (NULL allowed). */
void bpc__msg_release(bpc__exch_t *ex, bpc__msg_t *msg);

/* Wait for every posted send of this exchange to complete. */
int bpc__exch_flush(bpc__exch_t *ex);

/* After a failure: the exchange takes pool buffers that sends of this
 * exchange may still read (n of them, NULL entries allowed, and the two
 * arrays themselves, malloc'ed) and returns them to the pool when it is
 * closed, after every send completed. Once per exchange. */
void bpc__exch_adopt(bpc__exch_t *ex, void **bufs, size_t *caps, int n);

/* Flush sends and free the exchange. Messages that arrived and were never
 * taken are released and reported as BPC_ESTATE (a schedule bug). */
int bpc__exch_close(bpc__exch_t **ex);

/*
 * The end of an engine call's exchange, collective: `rc` is this rank's
 * outcome of the call so far. Finishes the exchange (sends complete,
 * receives in flight land, nothing left untaken), agrees on the outcome
 * (bpc__agree: every rank gets the same code) and closes it. A rank that
 * failed first tells every other rank (an abort header), so that ranks
 * waiting for its messages stop waiting (their waits return BPC__EPEER,
 * which is not counted as a failure of their own); after a failure every
 * rank drains the messages still on their way (tags.h). So a failure on
 * any subset of ranks at any point of a call -- out of memory for a
 * message, a bad message -- is the same error everywhere, never a hang.
 * *ex may be NULL (the open failed): then only the agreement.
 */
int bpc__exch_end(bpc_ctx_t *ctx, bpc__exch_t **ex, int rc);

/*
 * A check that runs alongside the schedule: the start agreement of a
 * persistent plan (bpc/core.h), a small non-blocking reduction
 * (bpc__minred_start), instead of a blocking agreement before any message.
 * `start(arg)` posts it: the exchange calls it once, at the first point
 * where it would otherwise wait or poll (after pushing the messages staged
 * so far, so that the schedule's first messages leave before it), and at
 * the latest in bpc__exch_end; `test(arg, &done, wait)` advances it, with
 * `wait` after waiting in MPI for its step in flight. Until it has
 * finished, a blocking wait of the exchange takes what has arrived and,
 * when nothing has, waits for the guard's step instead of for a message
 * (no spinning: the simulated build charges every poll); once finished,
 * `verdict(arg)` judges its result: BPC_OK, BPC__EPEER (a failure of
 * another rank's: the schedule stops, the outcome agreement brings its
 * message) or an error of this rank's (the schedule stops). Messages may go
 * out before it has finished (the drain of bpc__exch_end takes them after a
 * failure), but nothing a message brings may reach a check or callback
 * before: engines call bpc__exch_guard_wait first, and bpc__exch_end waits
 * for it before the outcome agreement. Every rank must register one (the
 * same sequence of reductions everywhere); `arg` must stay valid until the
 * end.
 */
void bpc__exch_guard(bpc__exch_t *ex, int (*start)(void *arg),
                     int (*test)(void *arg, int *done, int wait), int (*verdict)(void *arg),
                     void *arg);
/* Wait for the guard (if any, and not finished yet); its verdict, kept
 * (BPC_OK when there is none). */
int bpc__exch_guard_wait(bpc__exch_t *ex);

/* Tell every other rank that this one failed with `code` (a BPC_E* code):
 * one abort header each, sent once per exchange (later calls do nothing).
 * Their waits on this exchange then return BPC__EPEER. bpc__exch_end does
 * it for a call's own failure; an engine whose exchange outlives a call
 * (the neighbour exchange) calls it at the failure, and bpc__exch_end
 * later. */
void bpc__exch_abort(bpc__exch_t *ex, int code);

/* Whether a wait of this exchange took another rank's abort: 1 with that
 * rank and its code (the first abort taken), else 0. */
int bpc__exch_peer_failure(const bpc__exch_t *ex, int *rank, int *code);

/*
 * Room for a call's messages before it starts, so that a call in steady
 * state allocates nothing whatever the timing (what a call holds at once
 * depends on when its messages arrive: up to all of them). An engine that
 * knows its schedule says how many messages this rank may hold at once:
 * `nmsgs` received (of which `nremote` from other processes) and `nsends`
 * remote sends. The context's free lists of message, bundle and send
 * records are topped up to that, and the exchange's arrays of receives
 * and sends grown. Growth only, and best effort: on no memory nothing
 * fails (the call allocates as it goes, as without).
 */
void bpc__exch_reserve(bpc__exch_t *ex, int nmsgs, int nremote, int nsends);
/* The pool buffers of such a call: for each i < n, nrecv[i] messages of
 * bytes[i] payload bytes to receive from other processes and nsend[i] to
 * send to them (the buffers the transport takes for them: bundles,
 * payloads), counted per size class over all i. */
void bpc__exch_reserve_payload(bpc__exch_t *ex, const size_t *bytes, const int *nrecv,
                               const int *nsend, int n);

/* For the fault sweeps (tests/mpi/test_faults.c): free what the context
 * keeps between calls (the comm cache's exchange and records, the pool's
 * free buffers, the scratch slots), so that the next call is a first one;
 * and turn the reservations off or on again (off: a call allocates its
 * records and buffers as its messages come, the paths a failed
 * reservation leaves). Between calls only. */
void bpc__comm_trim(bpc_ctx_t *ctx);
void bpc__comm_set_reserve(bpc_ctx_t *ctx, int on);

/* Pool buffers (also used by engines for scratch space that should be
 * reused across calls). At least `bytes` bytes; *cap gets the capacity. */
void *bpc__pool_get(bpc_ctx_t *ctx, size_t bytes, size_t *cap);
void bpc__pool_put(bpc_ctx_t *ctx, void *buf, size_t cap);
/* At least `count` free buffers of the size class of `bytes` in the pool
 * (the shortfall allocated, as far as the pool's limit allows): what a
 * call about to take that many will find (bpc__exch_reserve). */
void bpc__pool_reserve(bpc_ctx_t *ctx, size_t bytes, int count);
/* Free the pool's free buffers (bpc__comm_trim). */
void bpc__pool_trim(bpc_ctx_t *ctx);
/* The pool's size class of a buffer of `bytes` bytes (its capacity). */
size_t bpc__pool_class(size_t bytes);

#endif /* BPC_LIB_COMM_H */
