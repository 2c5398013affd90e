/*
 * lib/engines/neighbor/neighbor_internal.h - internal state of the neighbourhood
 * exchange engine, shared by its files:
 *   neighbor.c          public entry: parameters, the entry frame (argument
 *                       checks agreed over ranks), the algorithm table
 *                       (bpc__engine_neighbor), creation of links
 *                       (decomposition or graph), destroy, queries;
 *   neighbor_queue.c    outgoing bundles (enqueue), incoming items (delivery,
 *                       incoming, count, dequeue);
 *   neighbor_round.c    one round of the "packed" algorithm (its row's run):
 *                       send bundles, wait for the synchrony fraction of
 *                       arrivals, deliver; round driver with callbacks; the
 *                       final drain;
 *   neighbor_iterate.c  the iterate-until-done driver and its termination
 *                       detection.
 * Not installed.
 *
 * Wire use of the comm layer: the engine opens one exchange per object, with
 * a rank map that is the identity, so the "gids" of its comm messages are
 * process ranks: a message (src = sending rank, dst = receiving rank, seq =
 * the sender's round) carries one bundle (lib/datatype/datatype.h layout)
 * whose part keys are (src gid << 32 | dst gid). seq BPC__NB_MARK_SEQ is the
 * drain marker (payload: the sender's round count as int64).
 */
#ifndef BPC_LIB_ENGINES_NEIGHBOR_INTERNAL_H
#define BPC_LIB_ENGINES_NEIGHBOR_INTERNAL_H

#include "bpc/neighbor.h"
#include "comm/coll.h"
#include "comm/comm.h"
#include "core/core.h"
#include "core/registry.h"
#include "datatype/datatype.h"
#include "decomp/decomp.h"

#include <limits.h>
#include <stdint.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#define BPC__NB_MARK_SEQ INT_MAX
/* Rounds are comm seqs below BPC__NB_EXT_BASE. */
#define BPC__NB_MAX_ROUND ((1 << 30) - 1)
/* Items enqueued by reference travel as parts of their bundle's comm message
 * (bpc__exch_send_parts: one MPI message each, straight from the caller's
 * memory, received as their own comm messages), with seqs BPC__NB_EXT_BASE + (a per-pair count mod 2^29); their
 * bundle lists them as empty parts whose key has BPC__NB_KEY_EXT set. */
#define BPC__NB_EXT_BASE (1 << 30)
#define BPC__NB_EXT_MOD (1u << 29)
#define BPC__NB_KEY_EXT ((uint64_t)1 << 31)
/* Items by reference smaller than this are copied into the bundle anyway:
 * a message of their own would cost more than the copy. Larger ones for
 * blocks of this process are copied too (the caller may change the data
 * once the round returns), but only in the exchange, after the round's
 * messages to other processes are out, so that the copies overlap those
 * transfers instead of delaying them. */
#define BPC__NB_REF_MIN ((size_t)16384)

enum { BPC__NB_ALGO_PACKED = 0 };

/* The engine's algorithm table (neighbor.c), listed in lib/engines/engines.c. */
extern const bpc__engine_t bpc__engine_neighbor;

/* An outgoing bundle being built: to one other process, or to this one. */
typedef struct bpc__neighbor_chan {
  int rank;           /* destination process */
  unsigned char *buf; /* pool buffer (NULL until the first item) */
  size_t cap;
  size_t head;   /* bytes before the payload area, reserved for the index */
  size_t pos;    /* payload bytes written, from buf + head */
  int n, capn;   /* items (parts) so far */
  uint64_t *sizes;
  int64_t *keys;
  int last_n;      /* items in the previous bundle: sizes the next reservation */
  size_t last_pos; /* payload bytes of the previous bundle: likewise */
  /* items by reference (enqueue_ref), sent as parts of the bundle */
  bpc__msgpart_t *ext;
  int next, capext;
  unsigned ext_count; /* references sent to this process so far */
#ifdef _OPENMP
  omp_lock_t lock;
#endif
} bpc__neighbor_chan_t;

/* One delivered item. */
typedef struct bpc__neighbor_entry {
  int src;      /* source gid */
  int dst_li;   /* destination's local index */
  int seq;      /* round the sender sent it in */
  int idx;      /* position in its bundle */
  void *data;   /* payload (NULL when bytes is 0) */
  size_t bytes;
  bpc_buf_t view; /* contiguous types: what dequeue hands out */
} bpc__neighbor_entry_t;

/* A local block: links, and what arrived for it this round. */
typedef struct bpc__neighbor_block {
  int gid;
  bpc_link_t *links; /* in the decomposition's (or graph's) order */
  int nlinks;
  int *out; /* sorted unique linked gids */
  int nout;
  /* incoming of the current round: entries [ent0, ent0 + nent) of the
   * object's entry array, sorted by (src, seq, idx); sources s[0..nsrc) with
   * their first entry and count, and a dequeue cursor per source */
  int ent0, nent;
  int *srcs, *src_first, *src_count, *src_next;
  int nsrc, capsrc;
} bpc__neighbor_block_t;

/* A sent bundle's buffer, kept until the comm layer has completed the send
 * (identified by destination rank and round: one bundle per pair). */
typedef struct bpc__neighbor_retired {
  void *buf;
  size_t cap;
  int rank, seq;
} bpc__neighbor_retired_t;

struct bpc_neighbor {
  bpc_ctx_t *ctx;
  const bpc_assign_t *assign; /* not owned */
  int is_decomp;
  const bpc__algo_t *row; /* the algorithm: row->run runs one round */
  bpc_algo_source_t source;
  bpc_type_t type;
  double synchrony;
  int nthreads;
  long long max_rounds;

  int nlocal;
  bpc__neighbor_block_t *blocks; /* local blocks, gid order (bpc_assign_local) */
  int *cb_rc;   /* per local block: the last callback's return value */
  int *cb_more; /* per local block: the last callback's "more work" flag */

  /* processes this one sends to (ascending, not itself) and receives from */
  int nout;
  bpc__neighbor_chan_t *chans;
  bpc__neighbor_chan_t local; /* items for blocks of this process */
  int nin;
  int *in_ranks;
  int *next_seq; /* per in-process: the next round whose bundle is expected */
  unsigned *ext_next; /* per in-process: references taken so far */
  /* per in-process: parts by reference of its last taken bundle still to
   * take, and the slot in msgs the next one goes to (a bundle is followed in
   * msgs by one slot per part, filled as the parts arrive) */
  int *ref_left, *ref_slot;
  long long refs_missing; /* sum of ref_left */
  int sent_refs;      /* this round sent items by reference: flush before returning */

  bpc__exch_t *ex;
  int round; /* rounds sent so far (the next round's seq) */
  /* A failure inside a round's communication (bpc__neighbor_fail): its code, the
   * round and the message; BPC_OK while the object is whole. */
  int failed, fail_round;
  int fail_followon; /* failed only because a peer did (its abort) */
  char failmsg[BPC__ERRMSG_LEN];
  /* some process runs below synchrony 1 (agreed by bpc__neighbor_enter) */
  int any_partial;

  /* remote send buffers until the comm layer has completed their sends */
  bpc__neighbor_retired_t *retired;
  int nretired, capretired;

  /* this round's arrivals, kept until the next exchange */
  bpc__msg_t **msgs;
  int nmsgs, capmsgs;
  unsigned char *lbuf; /* pool buffer holding the local bundle of the round */
  size_t lcap;
  void *lbundle; /* the local bundle (inside lbuf), llen bytes */
  size_t llen;
  /* the local bundle's items by reference, copied in the exchange: views
   * into one pool buffer, in bundle order */
  unsigned char *lrbuf;
  size_t lrcap;
  bpc__msgpart_t *lrefs;
  int nlrefs, caplrefs;
  int64_t mark_val; /* the drain marker's payload (must outlive its send) */
  bpc__neighbor_entry_t *ents;
  int nents, capents;

  /* counters (items_sent is updated atomically by enqueue) */
  long long items_sent, items_recv;
  long long bundles_sent, bundles_recv, bundles_late;
  long long rounds_total, waves;
};

/* neighbor_queue.c */
int bpc__neighbor_local_index(const bpc_neighbor_t *nb, int gid);
int bpc__neighbor_chan_init(bpc__neighbor_chan_t *c, int rank);
void bpc__neighbor_chan_free(bpc_ctx_t *ctx, bpc__neighbor_chan_t *c);
/* The comm seq of reference number k. */
static inline int bpc__neighbor_ext_seq(unsigned k)
{
  return BPC__NB_EXT_BASE + (int)(k % BPC__NB_EXT_MOD);
}
/* Number of parts by reference in a received bundle (0 if malformed: the
 * delivery reports it). */
int bpc__neighbor_count_refs(const void *bundle, size_t bytes);
/* Finish c's bundle: *bundle and *bytes give the message to send (a static empty
 * bundle when c has no item); *buf and *cap give the pool buffer holding it
 * (NULL when none), which the caller owns from here on; c starts afresh. */
int bpc__neighbor_chan_finish(bpc_neighbor_t *nb, bpc__neighbor_chan_t *c, const void **bundle,
                              size_t *bytes, void **buf, size_t *cap);
/* Copy the local bundle's items by reference (just finished) into one pool
 * buffer: nb->lrefs, in bundle order. Resets the local channel's list. */
int bpc__neighbor_copy_local_refs(bpc_neighbor_t *nb);
/* Free what the previous round delivered (items not dequeued included). */
void bpc__neighbor_release_incoming(bpc_neighbor_t *nb);
/* Turn the local bundle and the taken messages into per-block entries. */
int bpc__neighbor_deliver(bpc_neighbor_t *nb);

/* neighbor.c */
/* The signature every entry agrees on (bpc__agree_args): which entry
 * (`who`), block count, the assignment (bpc__sig_assign), item type kind
 * and element size, algorithm id and max_rounds. The creators add the
 * synchrony and the decomposition's geometry (bpc__sig_decomp; none for a
 * graph). */
void bpc__neighbor_sig(bpc__sig_t *s, const char *who, const bpc_assign_t *a,
                       const bpc_type_t *type, int algo, long long max_rounds);

/* neighbor_round.c */
/* The termination detection of bpc_neighbor_iterate (neighbor_iterate.c). */
typedef struct bpc__neighbor_wave bpc__neighbor_wave_t;
/* A round's call state, for the algorithm row's run. */
typedef struct bpc__neighbor_call {
  bpc_neighbor_t *nb;
  bpc__neighbor_wave_t *wave;
} bpc__neighbor_call_t;
/* One round by nb's algorithm: send this round's bundles and receive by the
 * synchrony fraction, then deliver. `wave` (may be NULL) is tested while
 * waiting; the wait ends early when it reports the end. */
int bpc__neighbor_round_comm(bpc_neighbor_t *nb, bpc__neighbor_wave_t *wave);
/* The "packed" row's run (call: a bpc__neighbor_call_t). */
int bpc__neighbor_run_packed(void *call);
/* The entry frame of a round or iterate call (`who` names it in messages):
 * checks on this rank (fn not NULL, `blocks` (may be NULL) holding nb's
 * local blocks), then one bpc__agree_args with bpc__neighbor_sig, before any
 * message. The same code on every rank. */
int bpc__neighbor_enter(bpc_neighbor_t *nb, bpc_blocks_t *blocks, bpc_neighbor_fn fn,
                        const char *who);
/* Run fn over local blocks into nb->cb_rc / nb->cb_more; the first failing
 * callback -> BPC_ECALLBACK with a message, BPC_OK if none. */
int bpc__neighbor_callbacks(bpc_neighbor_t *nb, bpc_blocks_t *blocks, bpc_neighbor_fn fn,
                            void *user);
/* Drain: tell out-neighbours how many rounds were sent, receive every
 * bundle in-neighbours sent, reset round counters. *undelivered counts
 * items found in bundles that no round delivered. */
int bpc__neighbor_drain(bpc_neighbor_t *nb, long long *undelivered);
/* A failure `rc` of a round's communication, or of a drain, on this rank:
 * the object fails for good (rounds return BPC_ESTATE at once; only
 * destroy is left). An own failure is told to every other rank (an abort
 * header, bpc__exch_abort), whose waits on the object then fail too;
 * BPC__EPEER (such an abort taken here) becomes the failing rank's code,
 * with a message naming it. Returns the code; the message is kept. */
int bpc__neighbor_fail(bpc_neighbor_t *nb, int rc);
/* BPC_ESTATE with a message saying that nb failed earlier (`who` names
 * the call). */
int bpc__neighbor_failed_err(bpc_neighbor_t *nb, const char *who);
/* A call's first error (round, iterate): its code, its own message (later
 * rounds may record others over it) and whether it only follows a peer's
 * failure (an abort taken by the object's communication). */
typedef struct bpc__neighbor_first {
  int err, follow;
  char msg[BPC__ERRMSG_LEN];
} bpc__neighbor_first_t;
/* Keep e as f's error if it is the first (from_comm: it came from the
 * object's communication, bpc__neighbor_round_comm or bpc__neighbor_drain). */
void bpc__neighbor_keep_first(bpc_neighbor_t *nb, bpc__neighbor_first_t *f, int e, int from_comm);
/* The closing agreement on f (bpc__agree_ex, poll(nb) while it waits when
 * not NULL): every rank gets the first failure's code and its own message,
 * a follow-on giving way to the failure it follows. */
int bpc__neighbor_agree_first(bpc_neighbor_t *nb, const bpc__neighbor_first_t *f,
                              void (*poll)(void *arg));
/* Give back the retired send buffers whose sends have completed (all of
 * them with force, after a flush). */
void bpc__neighbor_reclaim(bpc_neighbor_t *nb, int force);

/* neighbor_iterate.c: the termination detection. */
/* Start a reduction of this process's counters unless one is in flight
 * (called by the round after its sends, before its wait). */
void bpc__neighbor_wave_contribute(bpc__neighbor_wave_t *w);
/* Test the reduction in flight; returns 1 once the detection has decided
 * that the iteration ends (*rc: a failed reduction, else BPC_OK). */
int bpc__neighbor_wave_test(bpc__neighbor_wave_t *w, int *rc);
/* The termination waves decided that the iteration ends because some
 * process failed (a round then leaves what it has not taken to the drain). */
int bpc__neighbor_wave_failed(const bpc__neighbor_wave_t *w);

#endif /* BPC_LIB_ENGINES_NEIGHBOR_INTERNAL_H */
