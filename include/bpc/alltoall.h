/*
 * bpc/alltoall.h - all-to-all exchange: every block gives an item to every
 * block and receives all items addressed to it. See doc/swap.md
 * ("All-to-all").
 */
#ifndef BPC_ALLTOALL_H
#define BPC_ALLTOALL_H

#include "bpc/core.h"
#include "bpc/datatype.h"
#include "bpc/decomp.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Longest k-vector (rounds) the all-to-all engine accepts. */
#define BPC_ALLTOALL_MAX_K 64

/*
 * Give the item block src_gid sends to block dst_gid (every dst, itself
 * included): *item = a bpc_buf_t * for contiguous types or the user's item
 * for custom types, or NULL for "nothing" (no delivery). A non-NULL empty
 * item (count 0, or a custom item that packs to 0 bytes) is delivered. The
 * item stays the caller's and must stay valid and unchanged until
 * bpc_alltoall returns. Return 0 or a nonzero value (BPC_ECALLBACK).
 */
typedef int (*bpc_a2a_send_fn)(int src_gid, int dst_gid, const void **item, void *user);

/*
 * Receive the item src_gid sent to dst_gid: a bpc_buf_t * view into bpc's
 * receive buffer (contiguous types) or an item made by the type's unpack
 * (custom types; destroyed by bpc after the callback). Valid only during
 * the call: copy what you keep. Called for every non-NULL item, for each
 * local block in local order, sources in ascending gid order. Return 0 or a
 * nonzero value (BPC_ECALLBACK).
 */
typedef int (*bpc_a2a_recv_fn)(int dst_gid, int src_gid, void *item, void *user);

/* Routings (the ids of the algorithm table: bpc_algorithms("alltoall")). */
typedef enum bpc_alltoall_algorithm {
  BPC_ALLTOALL_AUTO = 0,
  BPC_ALLTOALL_ROUNDS = 1 /* k-ary swap rounds (one round: direct exchange) */
} bpc_alltoall_algorithm_t;

typedef struct bpc_alltoall_params {
  /* "rounds" or "auto" (NULL = "auto"; case-insensitive). "auto" uses
   * BPC_ALLTOALL_ALGORITHM from the environment if set, else "rounds". */
  const char *algorithm;
  /* OpenMP threads: 0 = OpenMP default (OMP_NUM_THREADS), 1 = none. The
   * rounds routing packs and delivers on the calling thread; accepted for
   * the common convention. */
  int nthreads;
  /* k-vector of the rounds (nk entries >= 2, product nblocks), or NULL / 0
   * for an automatic one. One round with k = nblocks is a direct exchange.
   * Must be the same on every rank. */
  const int *k;
  int nk;
} bpc_alltoall_params_t;

/* Parameters with every field at its default (auto, OpenMP default
 * threads, automatic k-vector). */
bpc_alltoall_params_t bpc_alltoall_params_default(void);

/* What a call ran (filled by bpc_alltoall). */
typedef struct bpc_alltoall_info {
  bpc_alltoall_algorithm_t algorithm; /* never AUTO */
  char name[16];
  bpc_algo_source_t source; /* argument, BPC_ALLTOALL_ALGORITHM or built-in */
  int nk;                   /* the k-vector of the rounds */
  int k[BPC_ALLTOALL_MAX_K];
  /* The most bytes of bundle buffers this rank held at once (pool
   * capacity): the bundles of a round are freed once the next round has
   * forwarded their items, so this stays near two rounds' data, never the
   * sum over all rounds. */
  unsigned long long peak_bundle_bytes;
} bpc_alltoall_info_t;

/*
 * bpc_alltoall: every block gives an item to every block and receives all
 * items addressed to it, routed by k-ary swap rounds (DIY's all_to_all):
 * in round r each block bundles the items it holds by the round-r digit of
 * their destination and sends one bundle to each of the other k[r] - 1
 * members of its group, so a block sends sum(k[r] - 1) messages in all and
 * an item travels at most R hops. Items of any bpc type; local transfers
 * skip MPI. Collective over the context (ranks without blocks too), with
 * the same assignment, type and params on every rank. params may be NULL
 * (defaults). info (may be NULL): on success, what ran.
 * Errors (on every rank alike, with the failing rank's message; nothing is
 * sent before the arguments agree, so a bad argument on some ranks only
 * never hangs): BPC_ENULL (ctx, assign, type, send or recv NULL), BPC_EINVAL
 * (an assignment of another context, nthreads < 0), BPC_ETYPE (bad type),
 * BPC_EALGO (unknown algorithm, also in BPC_ALLTOALL_ALGORITHM), BPC_EKVEC
 * (k-vector does not multiply to nblocks, a k < 2, a negative nk or more
 * than BPC_ALLTOALL_MAX_K rounds), BPC_ERANGE (too many blocks),
 * BPC_EMISMATCH (valid arguments that differ between ranks: block count,
 * k-vector, algorithm, type kind or element size), BPC_ECALLBACK (a
 * send/recv/pack/unpack callback failed on some rank; the rounds are still
 * completed), BPC_ETRUNC, BPC_ENOMEM, BPC_EMPI.
 */
int bpc_alltoall(bpc_ctx_t *ctx, const bpc_assign_t *assign, const bpc_type_t *type,
                 bpc_a2a_send_fn send, bpc_a2a_recv_fn recv, void *user,
                 const bpc_alltoall_params_t *params, bpc_alltoall_info_t *info);

#ifdef __cplusplus
}
#endif
#endif /* BPC_ALLTOALL_H */
