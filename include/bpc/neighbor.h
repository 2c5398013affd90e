/*
 * bpc/neighbor.h - neighbourhood exchange with adjustable synchrony (DIY
 * Algorithm 3, generalised), and a driver that iterates rounds until global
 * quiescence.
 *
 * A neighbourhood object (bpc_neighbor_t) knows, for every local block, its
 * links: the blocks it may send to. Links come from a regular decomposition
 * (faces, edges and corners, with periodic wrap; bpc_decomp_links) or from any
 * user graph of gids.
 *
 * One round: local blocks enqueue items (of the object's bpc_type_t, any
 * size, any number per neighbour) for linked blocks; bpc_neighbor_exchange
 * delivers them; afterwards each block dequeues what arrived, per source gid.
 * Items for blocks of the same process never touch MPI; items for the blocks
 * of one other process travel as one message per round (a bundle: block ids,
 * sizes, then payloads).
 *
 * Ordering guarantees (see doc/neighbor.md):
 *  - bpc_neighbor_incoming lists a block's sources in ascending gid order;
 *  - items from one source to one destination are dequeued in the order they
 *    were enqueued, across rounds too (an item enqueued in an earlier round is
 *    never dequeued after one enqueued later);
 *  - with synchrony 1.0 every item enqueued before exchange call r is
 *    delivered by exchange call r; with synchrony f < 1 a round waits only
 *    for a fraction of the expected messages, and the rest are delivered in
 *    a later round: never lost, never duplicated.
 *
 * Threading: enqueue and dequeue may be called from several threads at once
 * for different local blocks. The callback drivers (round, iterate) run
 * blocks in parallel with OpenMP unless params.nthreads is 1 (the default,
 * 0, is the OpenMP default: OMP_NUM_THREADS), so their callbacks must be
 * thread-safe unless nthreads is 1. Everything else - exchange, round,
 * iterate, create, destroy - is called by one thread at a time (the comm
 * layer's rule; MPI_THREAD_FUNNELED is enough).
 *
 * Collective calls (create_decomp, create_graph, round, iterate) check
 * their arguments on every rank and agree before any message: a bad
 * argument on some ranks returns the same code on every rank (that rank's
 * message in bpc_last_error), and values that must match (block count, item
 * type kind and element size, algorithm, max_rounds, and at creation the
 * synchrony) but differ between ranks give BPC_EMISMATCH everywhere. Only a
 * NULL ctx (create) or NULL object (round, iterate) returns at once, on its
 * own rank. bpc_neighbor_exchange does not agree (see it).
 */
#ifndef BPC_NEIGHBOR_H
#define BPC_NEIGHBOR_H

#include "bpc/core.h"
#include "bpc/datatype.h"
#include "bpc/decomp.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct bpc_neighbor bpc_neighbor_t;

typedef struct bpc_neighbor_params {
  /* Algorithm variant by name, case-insensitive: NULL or "auto" (default:
   * the environment variable BPC_NEIGHBOR_ALGORITHM if set, else the
   * built-in choice), or a name of bpc_algorithms("neighbor"): "packed"
   * (one bundle per process pair and round, DIY Algorithm 3). The same on
   * every rank. */
  const char *algorithm;
  /* Fraction of the expected arrivals a round waits for, in (0, 1]. 1.0 is
   * fully synchronous. A negative value (the default) means: the
   * environment variable BPC_NEIGHBOR_SYNCHRONY if set, else 1.0. The same
   * on every rank at creation (bpc_neighbor_set_synchrony may change it per
   * process later). */
  double synchrony;
  /* Threads running the callbacks of bpc_neighbor_round/iterate over local
   * blocks: 0 (default) the OpenMP default (OMP_NUM_THREADS), 1 none, n
   * that many. Callbacks must be thread-safe unless this is 1. May differ
   * between ranks. */
  int nthreads;
  /* bpc_neighbor_iterate stops with BPC_ERANGE on every process once some
   * process has run this many rounds in the call. 0 (default): no limit.
   * The same on every rank. */
  long long max_rounds;
} bpc_neighbor_params_t;

/* Parameters with every field at its default. */
bpc_neighbor_params_t bpc_neighbor_params_default(void);

/*
 * bpc_neighbor_create_decomp: a neighbourhood whose links are those of the
 * decomposition d (bpc_decomp_links: faces, edges and corners, periodic wrap;
 * a block may be its own neighbour, and a block may appear several times in
 * one block's links when a dimension has 1 or 2 blocks and wraps).
 * `type` is the item type of every enqueue/dequeue on this object (copied;
 * type->user must outlive the object). `params` may be NULL (defaults).
 * Collective over the context's processes (every rank calls it, in the same
 * order as the other engine calls); only agreements, no message between
 * blocks. d must outlive the object.
 * Ownership: *out is freed with bpc_neighbor_destroy (NULL on failure).
 * Errors (on every rank alike, with the failing rank's message): BPC_ENULL
 * (out, d or type NULL), BPC_ETYPE (bad type), BPC_EINVAL (synchrony
 * outside (0, 1] or a bad BPC_NEIGHBOR_SYNCHRONY, negative nthreads or
 * max_rounds, d made on another context), BPC_EALGO (unknown algorithm),
 * BPC_EMISMATCH (ranks pass a different block count, item type kind or
 * element size, algorithm, synchrony or max_rounds), BPC_ENOMEM.
 */
int bpc_neighbor_create_decomp(bpc_ctx_t *ctx, const bpc_decomp_t *d, const bpc_type_t *type,
                               const bpc_neighbor_params_t *params, bpc_neighbor_t **out);

/*
 * bpc_neighbor_create_graph: a neighbourhood over any directed graph of gids.
 * Each rank gives the links of its own blocks, in the order of
 * bpc_assign_local(a): local block i may send to the gids
 * targets[offsets[i] .. offsets[i+1]) (offsets has nlocal + 1 entries,
 * offsets[0] == 0; duplicates and self-links allowed; targets may be NULL
 * when there are no links). Links need not be symmetric: a block receives
 * from whoever links to it. Collective (one all-to-all of one int per
 * process finds who sends to whom). `a` must outlive the object; `params`
 * as for bpc_neighbor_create_decomp.
 * Ownership: *out is freed with bpc_neighbor_destroy (NULL on failure).
 * Errors (on every rank alike, naming the rank and block at fault):
 * BPC_ENULL (out, a, offsets or type NULL, or targets NULL with links),
 * BPC_ETYPE, BPC_EINVAL (offsets[0] not 0, decreasing offsets, a made on
 * another context, bad params as for create_decomp), BPC_ERANGE (a
 * neighbour gid outside [0, nblocks)), BPC_EALGO, BPC_EMISMATCH (as for
 * create_decomp), BPC_ENOMEM, BPC_EMPI.
 */
int bpc_neighbor_create_graph(bpc_ctx_t *ctx, const bpc_assign_t *a, const int *offsets,
                              const int *targets, const bpc_type_t *type,
                              const bpc_neighbor_params_t *params, bpc_neighbor_t **out);

/*
 * bpc_neighbor_destroy: free the object. Collective: messages still in
 * flight (rounds run with synchrony < 1) are received first, so no peer is
 * left waiting. Items that arrived after the last round, or were enqueued
 * after it, and were never delivered are freed and reported as BPC_ESTATE
 * on every rank (naming a rank that had them; end partially synchronous
 * round sequences with a round at synchrony 1.0 to deliver everything).
 * Items delivered by the last round and not dequeued are freed silently.
 * If a round failed on some process (see bpc_neighbor_exchange), every
 * process frees the object all the same, drops the messages still on
 * their way, and returns that failure's code and message (agreed: one
 * reduction). NULL or *nb NULL is allowed. Sets *nb to NULL.
 */
int bpc_neighbor_destroy(bpc_neighbor_t **nb);

/* What the object runs: its row of bpc_algorithms("neighbor"). */
typedef struct bpc_neighbor_info {
  int algorithm;            /* the row's id */
  const char *name;         /* its name ("packed", ...; static) */
  bpc_algo_source_t source; /* where the choice came from */
} bpc_neighbor_info_t;

/* The algorithm in use (chosen at creation). Errors: BPC_ENULL (nb or
 * info NULL). */
int bpc_neighbor_info(const bpc_neighbor_t *nb, bpc_neighbor_info_t *info);

/*
 * The links of local block gid, in the decomposition's order (or the order
 * the graph gave them). For graph objects dir, wrap and nonzero are 0.
 * *links belongs to the object. Errors: BPC_ENULL, BPC_ENOTFOUND (gid not a
 * local block).
 */
int bpc_neighbor_links(const bpc_neighbor_t *nb, int gid, const bpc_link_t **links, int *n);

/*
 * Change the synchrony fraction for the following rounds (0 < f <= 1).
 * Processes may use different fractions. Lowering it below 1 while items
 * by reference for other processes wait for the next exchange is
 * BPC_ESTATE (see bpc_neighbor_enqueue_ref). Errors: BPC_ENULL,
 * BPC_EINVAL, BPC_ESTATE.
 */
int bpc_neighbor_set_synchrony(bpc_neighbor_t *nb, double synchrony);

/*
 * bpc_neighbor_enqueue: queue `item` from local block gid for block dst_gid,
 * which must be one of gid's links. The item is copied (packed) at once; the
 * caller keeps it. For a contiguous type item is a bpc_buf_t * (NULL or
 * count 0: an empty item, which is still delivered); for a custom type it is
 * the user's item, measured and packed by the type's callbacks.
 * Safe to call from several threads for different gids.
 * Errors: BPC_ENULL, BPC_ENOTFOUND (gid is not a local block), BPC_EINVAL
 * (dst_gid is not linked from gid), BPC_ECALLBACK (a type callback failed),
 * BPC_ETYPE, BPC_ERANGE, BPC_ENOMEM. Nothing is queued on failure.
 */
int bpc_neighbor_enqueue(bpc_neighbor_t *nb, int gid, int dst_gid, const void *item);

/*
 * bpc_neighbor_enqueue_ref: like bpc_neighbor_enqueue for a contiguous type,
 * but without the copy when dst_gid lives on another process: the item's
 * data is sent straight from the caller's memory, as its own message after
 * the round's bundle. The data must stay valid and unchanged until the next
 * bpc_neighbor_exchange (or round) returns; that call then also waits until
 * these sends have completed (the receivers have taken them), so it is meant
 * for large items in synchronous rounds. Items under 16 KiB are copied at
 * once as by bpc_neighbor_enqueue; larger ones for blocks of this process
 * are copied by the exchange, after it has posted the round's messages to
 * other processes (so the data must stay unchanged until then, as above).
 * With synchrony below 1 (this process's, at the enqueue) every item is
 * copied at once as by bpc_neighbor_enqueue: a round that does not wait
 * for all its messages cannot wait for its own sends to be taken either
 * (the receiver may take them a round later, or be in a collective call).
 * A process at synchrony 1 still sends by reference to receivers at a
 * lower one: its exchange then waits until they take the items, which
 * bpc_neighbor_round does in its closing agreement; with bare exchanges a
 * receiver takes them in its next exchange (or destroy), so it must not
 * wait in another collective call first. After a failed round (see
 * bpc_neighbor_exchange) the data may be read until bpc_neighbor_destroy
 * returns. Delivery and order are the same.
 * Errors: those of bpc_neighbor_enqueue, and BPC_ETYPE for a custom type.
 */
int bpc_neighbor_enqueue_ref(bpc_neighbor_t *nb, int gid, int dst_gid, const bpc_buf_t *item);

/*
 * bpc_neighbor_exchange: one round. Sends what local blocks enqueued since
 * the last round and receives, by the object's synchrony, what neighbours
 * sent. Items delivered by the previous round and not dequeued are freed
 * first. Every process calls it the same number of times (processes without
 * blocks too); there is no global synchronisation: a process waits only for
 * messages from the processes that link to its blocks.
 * An error inside a round (out of memory, MPI failure, a malformed
 * message) fails the object for good: the process where it happened tells
 * every other process at once (no collective), so a process that waits
 * for its messages in this or a later round stops waiting and returns the
 * same code, with a message naming that process; it is not agreed over
 * processes (that would make every round wait for every process, which
 * partial synchrony avoids), so a process that needs nothing from it may
 * still return BPC_OK. After that every round on the object returns
 * BPC_ESTATE at once; only bpc_neighbor_destroy is left (it frees the
 * object on every process without a hang). Its only argument error is a
 * NULL nb (BPC_ENULL, returned at once); every process must call it alike.
 */
int bpc_neighbor_exchange(bpc_neighbor_t *nb);

/*
 * After an exchange: the source gids with items for local block gid, in
 * ascending order (*srcs belongs to the object, valid until the next
 * exchange; NULL when *n is 0). A source appears when it enqueued at least
 * one item (possibly empty) that this round delivered.
 * Errors: BPC_ENULL, BPC_ENOTFOUND (gid not local).
 */
int bpc_neighbor_incoming(const bpc_neighbor_t *nb, int gid, const int **srcs, int *n);

/* Number of items from src_gid for local block gid not yet dequeued in this
 * round (0 for a source with nothing). Errors: BPC_ENULL, BPC_ENOTFOUND. */
int bpc_neighbor_count(const bpc_neighbor_t *nb, int gid, int src_gid, int *count);

/*
 * bpc_neighbor_dequeue: the next item from src_gid for local block gid, in
 * enqueue order. *got = 1 and *item set when there was one, else *got = 0.
 *  - contiguous type: *item is a bpc_buf_t * view into the received message
 *    (no copy), owned by the object and valid until the next exchange; the
 *    data may be read and modified in place.
 *  - custom type: *item is a new item from the type's unpack callback, owned
 *    by the caller (free it with bpc_type_item_destroy).
 * Safe to call from several threads for different gids.
 * Errors: BPC_ENULL, BPC_ENOTFOUND (gid not local), BPC_ECALLBACK (unpack
 * failed; the item is consumed), BPC_ETRUNC (contiguous data not a multiple
 * of the element size).
 */
int bpc_neighbor_dequeue(bpc_neighbor_t *nb, int gid, int src_gid, void **item, int *got);

/*
 * The callback of bpc_neighbor_round and bpc_neighbor_iterate, called once
 * per local block per round with the block's data (from the bpc_blocks_t,
 * or NULL when none was given). It dequeues what arrived for the block in
 * the previous round and enqueues for its neighbours. For
 * bpc_neighbor_iterate it sets *more to nonzero if the block has work left
 * that does not wait for new items (*more is 0 on entry); a block that
 * reports no work and receives nothing must not enqueue anything in later
 * rounds. A nonzero return stops the engine (BPC_ECALLBACK on every rank).
 */
typedef int (*bpc_neighbor_fn)(void *block, int gid, bpc_neighbor_t *nb, void *user, int *more);

/*
 * bpc_neighbor_round: call fn for every local block (in parallel unless
 * nthreads is 1: fn must then be thread-safe), then exchange. `blocks` may
 * be NULL; if given, it must hold the object's local blocks. The arguments
 * are agreed before the round (one reduction) and a callback failure on any
 * rank comes back as BPC_ECALLBACK on every rank (one more at the end of
 * the round: this call synchronises all processes; bpc_neighbor_iterate
 * does not). Collective.
 * Errors (on every rank alike): BPC_ENULL (nb NULL: at once, on that rank
 * only; fn NULL), BPC_EINVAL (blocks of another assignment), BPC_EMISMATCH
 * (ranks call round and iterate, or objects of a different block count,
 * item type, algorithm or max_rounds), BPC_ECALLBACK, BPC_ESTATE (the
 * object failed in an earlier round: destroy it), and the errors of
 * bpc_neighbor_exchange (agreed; such an error fails the object).
 */
int bpc_neighbor_round(bpc_neighbor_t *nb, bpc_blocks_t *blocks, bpc_neighbor_fn fn, void *user);

/*
 * bpc_neighbor_iterate: run rounds of "callbacks for every local block,
 * exchange" until no block anywhere has work left (*more 0 from every
 * callback) and no item is in flight. Termination is detected with
 * nonblocking all-reductions of counters (items sent, items delivered, busy
 * blocks, errors) that overlap the rounds, and confirmed by two consecutive
 * equal counts (see doc/neighbor.md); there is no barrier per round, and
 * processes may finish at different round counts. *rounds (may be NULL) gets
 * the number of rounds this process ran. After a success every item was
 * delivered and the callbacks of the last round saw everything; the object
 * can be used again. Callbacks run in parallel unless nthreads is 1 (fn
 * must then be thread-safe). Collective; the arguments are agreed before
 * the first round, as for bpc_neighbor_round.
 * Errors (on every rank alike): BPC_ENULL (nb NULL: at once, on that rank
 * only; fn NULL), BPC_EINVAL (blocks of another assignment), BPC_EMISMATCH
 * (as for bpc_neighbor_round), BPC_ECALLBACK (a callback or enqueue inside
 * failed), BPC_ERANGE (max_rounds reached), BPC_ESTATE (as for
 * bpc_neighbor_round), BPC_EMPI, BPC_ENOMEM (these two, from a round's
 * communication, fail the object as in bpc_neighbor_exchange).
 */
int bpc_neighbor_iterate(bpc_neighbor_t *nb, bpc_blocks_t *blocks, bpc_neighbor_fn fn,
                         void *user, long long *rounds);

/* Counters of this process since the object was created. */
typedef struct bpc_neighbor_stats {
  long long rounds;        /* exchange rounds run */
  long long items_sent;    /* items enqueued by local blocks */
  long long items_recv;    /* items delivered to local blocks */
  long long bundles_sent;  /* messages sent to other processes */
  long long bundles_recv;  /* messages received from other processes */
  long long bundles_late;  /* ... of them delivered in a later round than they were sent in */
  long long waves;         /* termination-detection reductions completed */
} bpc_neighbor_stats_t;

/* This process's counters of nb (bpc_neighbor_stats_t above).
 * Errors: BPC_ENULL. */
int bpc_neighbor_stats(const bpc_neighbor_t *nb, bpc_neighbor_stats_t *out);

#ifdef __cplusplus
}
#endif
#endif /* BPC_NEIGHBOR_H */
