/*
 * bpc/bcast.h - s-to-p broadcast: s source blocks each hold one item, every
 * block receives all s of them. See doc/bcast.md.
 */
#ifndef BPC_BCAST_H
#define BPC_BCAST_H

#include "bpc/core.h"
#include "bpc/datatype.h"
#include "bpc/decomp.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Give source block src_gid's item: *item = a bpc_buf_t * for contiguous
 * types or the user's item for custom types; NULL is an empty item. Called
 * once per local source block, before the arguments are agreed (a failure
 * is BPC_ECALLBACK on every rank before any message). The item stays the
 * caller's and must stay valid and unchanged until bpc_bcast returns.
 * Return 0 or a nonzero value (BPC_ECALLBACK).
 */
typedef int (*bpc_bcast_item_fn)(int src_gid, const void **item, void *user);

/*
 * Receive the item of source src_gid at block dst_gid: a bpc_buf_t * view
 * into bpc's receive buffer (contiguous types; for a local source, into the
 * source's own memory) or an item made once per process by the type's
 * unpack (custom types; the same item is handed to every local block and
 * destroyed by bpc after the last one). Read-only and valid only during the
 * callback: copy what you keep. Called for every local block in local
 * order, and for each block for every source in ascending gid order (its
 * own item included when the block is a source). Return 0 or a nonzero
 * value (BPC_ECALLBACK).
 */
typedef int (*bpc_bcast_recv_fn)(int dst_gid, int src_gid, void *item, void *user);

/* Algorithms (the ids of the table: bpc_algorithms("bcast")). */
typedef enum bpc_bcast_algorithm {
  BPC_BCAST_AUTO = 0,
  BPC_BCAST_BR_LIN = 1,       /* recursive halving along a snake order */
  BPC_BCAST_BR_XY_SOURCE = 2, /* br_lin in rows then columns, order by source counts */
  BPC_BCAST_BR_XY_DIM = 3,    /* br_lin in rows then columns, longer lines first */
  BPC_BCAST_2STEP = 4,        /* gather at one block, then a binomial broadcast */
  BPC_BCAST_XOR = 5,          /* recursive doubling: partner = id xor 2^i */
  BPC_BCAST_MPI = 6           /* baseline: one MPI_Allgatherv over ranks */
} bpc_bcast_algorithm_t;

typedef struct bpc_bcast_params {
  /* "br_lin", "br_xy_source", "br_xy_dim", "2step", "xor", "mpi" or "auto" (NULL =
   * "auto"; case-insensitive). "auto" uses BPC_BCAST_ALGORITHM from the
   * environment if set (with reposition and partition as given), else
   * the cheapest row, with or without repositioning and partitioning
   * (the two flags are then ignored), by the cost model of doc/bcast.md
   * (alpha-beta, each schedule's messages counted per process with the
   * largest item size, agreed in the argument agreement; alpha and beta
   * from BPC_BCAST_ALPHA and BPC_BCAST_BETA, which
   * `bpc-bench bcast --calibrate` measures, else built-in values). */
  const char *algorithm;
  /* OpenMP threads: 0 = OpenMP default, 1 = none. Accepted (and checked)
   * for the common convention; unused: the engine works on the calling
   * thread (doc/bcast.md "Threads" says why). */
  int nthreads;
  /* The mesh view of the blocks (gid = row * cols + col): rows x cols ==
   * nblocks, or {0, 0} for the near-square factorisation (rows = the
   * largest divisor of nblocks not above its square root). Must be the
   * same on every rank. */
  int rows, cols;
  /* 1: repositioning: first move the source items to the algorithm's
   * ideal distribution (one step, one message per moved item), then run
   * the algorithm from there (doc/bcast.md; no effect on 2step and mpi;
   * auto's built-in rule decides by itself). 0 (default): no. Must be the
   * same on every rank. */
  int reposition;
  /* 1: partitioning: cut the mesh in two halves (rows, or a line in two),
   * run the algorithm inside both halves at once, then one exchange step
   * between them (doc/bcast.md; combines with reposition; no effect on
   * mpi; auto's built-in rule decides by itself). 0 (default): no. Must
   * be the same on every rank. */
  int partition;
} bpc_bcast_params_t;

/* Parameters with every field at its default (auto, OpenMP default
 * threads, near-square mesh). */
bpc_bcast_params_t bpc_bcast_params_default(void);

/* What a call ran (filled by bpc_bcast). */
typedef struct bpc_bcast_info {
  bpc_bcast_algorithm_t algorithm; /* never AUTO */
  char name[16];
  bpc_algo_source_t source; /* argument, BPC_BCAST_ALGORITHM or built-in */
  int rows, cols;           /* the mesh view used */
  int reposition, partition; /* 1 when the sources were repositioned, resp. the mesh
                              * partitioned (auto decides both) */
  int steps;                /* steps of the schedule */
  long long msgs_sent;      /* messages this rank sent to other ranks */
  long long bytes_sent;     /* payload bytes of those (items only) */
} bpc_bcast_info_t;

/*
 * bpc_bcast: s-to-p broadcast. The nsources blocks listed in `sources`
 * (gids in strictly ascending order, 0 <= nsources <= nblocks; the same
 * list on every rank) each give one item (item_of, called on the rank that
 * holds the source); every block of the assignment receives all nsources
 * items through `recv`, in ascending source order. Messages combine every
 * item the sender has (one message per partner and step); the schedule is
 * the chosen algorithm's over the blocks, run per process: steps between
 * blocks of the same process cost nothing, and a process receives each item
 * at most once (over MPI) and hands it to all its blocks without copies.
 * Items of any bpc type and size (0 included); receivers need not know the
 * sizes. Collective over the context (ranks without blocks too), with the
 * same assignment, sources, type and params on every rank. params may be
 * NULL (defaults). info (may be NULL): on success, what ran.
 * Errors (on every rank alike; nothing is sent before the arguments agree,
 * so a bad argument on some ranks only never hangs): BPC_ENULL (ctx,
 * assign, type, item_of or recv NULL, sources NULL with nsources > 0),
 * BPC_EINVAL (an assignment of another context, nthreads < 0, sources not
 * strictly ascending gids of the assignment, nsources out of range),
 * BPC_EDIVS (rows x cols is not nblocks), BPC_ETYPE (bad type), BPC_EALGO
 * (unknown algorithm, also in BPC_BCAST_ALGORITHM), BPC_EMISMATCH (valid
 * arguments that differ between ranks: block count, sources, mesh,
 * reposition, partition, algorithm, type kind or element size; auto's
 * model constants from BPC_BCAST_ALPHA/BETA), BPC_ECALLBACK (an item, recv,
 * pack or unpack callback failed on some rank; the schedule still
 * completes), BPC_ETRUNC (a contiguous item whose size is not a multiple of
 * the element size), BPC_ENOMEM, BPC_EMPI.
 */
int bpc_bcast(bpc_ctx_t *ctx, const bpc_assign_t *assign, const bpc_type_t *type,
              const int *sources, int nsources, bpc_bcast_item_fn item_of, bpc_bcast_recv_fn recv,
              void *user, const bpc_bcast_params_t *params, bpc_bcast_info_t *info);

#ifdef __cplusplus
}
#endif
#endif /* BPC_BCAST_H */
