/*
 * bpc/core.h - context, error codes, logging, statistics, timers.
 *
 * Every public bpc call that can fail returns int: BPC_OK (0) or a negative
 * BPC_E* code, with results through out-parameters. The ones that cannot
 * fail return their value: the string getters (bpc_strerror, bpc_err_name,
 * bpc_last_error, bpc_version, bpc_plan_engine; never NULL), bpc_wtime,
 * the *_default() constructors of options and params, the type
 * constructors bpc_type_contiguous / bpc_type_custom (checked where used),
 * and bpc_assign_ctx / bpc_decomp_assign (NULL for NULL); doc/design.md,
 * "API exceptions", says why. After a failure,
 * bpc_last_error(ctx) gives the detailed message of the last failure on this
 * rank. The library never prints to stdout and never aborts, with one
 * exception: when neither malloc nor the kernel's pages can give a buffer
 * that an MPI collective already under way on the other ranks needs, it
 * logs what it wanted and calls MPI_Abort instead of hanging them (see
 * doc/design.md, "Departures from DESIGN.md").
 *
 * Re-entrancy: a collective call (any engine, bpc_neighbor_exchange/round/
 * iterate, the neighbour creators, bpc_composite, bpc_finalize,
 * bpc_neighbor_destroy) made from inside a callback of a call running on
 * the same context returns BPC_EBUSY at once on that rank (nothing is
 * sent); the running call then reports the callback's failure
 * (BPC_ECALLBACK) on every rank. Local queries and calls on another context
 * are allowed; making a collective call on another context collective there
 * is the caller's job. See doc/core.md.
 */
#ifndef BPC_CORE_H
#define BPC_CORE_H

#include <stddef.h>
#include <stdint.h>
#include <mpi.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ errors */

/* XX(name, value, text): the one list every error code comes from. */
#define BPC_ERRNO_MAP(XX)                                                       \
  XX(OK, 0, "success")                                                          \
  XX(EINVAL, -1, "invalid argument")                                            \
  XX(ENULL, -2, "NULL handle or pointer")                                       \
  XX(ENOMEM, -3, "out of memory")                                               \
  XX(EMPI, -4, "MPI call failed")                                               \
  XX(EDIM, -5, "dimension out of range")                                        \
  XX(ENBLOCKS, -6, "block count out of range")                                  \
  XX(EDIVS, -7, "divisions do not fit the block count or domain")               \
  XX(EASSIGN, -8, "bad block-to-rank assignment")                               \
  XX(EKVEC, -9, "k-vector does not match the block count")                      \
  XX(EGHOST, -10, "negative ghost width")                                       \
  XX(ECALLBACK, -11, "user callback returned an error")                         \
  XX(ERANGE, -12, "value out of range")                                         \
  XX(ENOTFOUND, -13, "not found")                                               \
  XX(ETYPE, -14, "bad item type")                                               \
  XX(EALGO, -15, "unknown algorithm")                                           \
  XX(EPERM, -16, "not a permutation")                                           \
  XX(ESTATE, -17, "call out of order or in a bad state")                        \
  XX(ETRUNC, -18, "message truncated or malformed")                            \
  XX(EMISMATCH, -19, "arguments differ between ranks")                         \
  XX(EBUSY, -20, "collective call from inside a callback on the same context") \
  XX(EIO, -21, "file I/O failed")                                               \
  XX(EFORMAT, -22, "not a bpc checkpoint, another format version, or corrupted")

enum bpc_errno {
#define BPC__ERR_ENUM(name, value, text) BPC_##name = (value),
  BPC_ERRNO_MAP(BPC__ERR_ENUM)
#undef BPC__ERR_ENUM
};

/* Short text for a code ("invalid argument"); never NULL. */
const char *bpc_strerror(int code);
/* Symbolic name for a code ("BPC_EINVAL"); never NULL. */
const char *bpc_err_name(int code);

/* ----------------------------------------------------------------- context */

typedef struct bpc_ctx bpc_ctx_t;

typedef enum bpc_log_level {
  BPC_LOG_DEFAULT = -1, /* options only: BPC_LOG from the environment, else warn */
  BPC_LOG_NONE = 0,
  BPC_LOG_ERROR = 1,
  BPC_LOG_WARN = 2,
  BPC_LOG_INFO = 3,
  BPC_LOG_DEBUG = 4
} bpc_log_level_t;

typedef struct bpc_options {
  /* Log level; BPC_LOG_DEFAULT means "from BPC_LOG, else warn". */
  bpc_log_level_t log_level;
  /* Bytes of receive buffers kept for reuse across calls; -1 means default
   * (256 MiB, or BPC_POOL_BYTES from the environment). */
  long long pool_bytes;
} bpc_options_t;

/* Options with every field at its default. */
bpc_options_t bpc_options_default(void);

/*
 * bpc_init: create a context over the processes of `comm`.
 * `comm` is duplicated (the user's communicator is never used for bpc
 * messages) and MPI_ERRORS_RETURN is set on the duplicate. MPI must be
 * initialised. Collective over `comm`. `opts` may be NULL (defaults).
 * Ownership: *ctx is allocated here and freed by bpc_finalize.
 * Errors (after the duplication, agreed: the lowest code of any rank on
 * every rank): BPC_ENULL (ctx NULL), BPC_ENOMEM; BPC_EMPI; returned at once:
 * BPC_EINVAL (comm is MPI_COMM_NULL or MPI not initialised).
 */
int bpc_init(MPI_Comm comm, const bpc_options_t *opts, bpc_ctx_t **ctx);

/*
 * bpc_init_serial: a context for one process that never calls MPI (the
 * in-process transport). Every block lives on rank 0 of 1. Used to test
 * engines without mpirun; MPI need not be initialised.
 */
int bpc_init_serial(const bpc_options_t *opts, bpc_ctx_t **ctx);

/* Free the context and everything it holds; sets *ctx to NULL. Collective
 * for MPI contexts (frees the duplicated communicator). NULL is allowed.
 * Errors: BPC_EBUSY from inside a callback of a call running on the
 * context (nothing is freed), BPC_EMPI. */
int bpc_finalize(bpc_ctx_t **ctx);

/* Rank and size of the context's communicator (0 and 1 for serial). */
int bpc_ctx_rank(const bpc_ctx_t *ctx, int *rank);
int bpc_ctx_size(const bpc_ctx_t *ctx, int *size);
/* The duplicated communicator (MPI_COMM_NULL for serial). Do not free. */
int bpc_ctx_comm(const bpc_ctx_t *ctx, MPI_Comm *comm);

/* The detailed message of the last failure on this rank, or "" if none.
 * Only failures returned to the caller: a collective call that returns
 * BPC_OK leaves it as it was before the call (internal probes and
 * recovered failures never show). The string belongs to the context; valid
 * until the next bpc call on it. */
const char *bpc_last_error(const bpc_ctx_t *ctx);

/* Set the log level at run time. Errors: BPC_ENULL (ctx NULL), BPC_ERANGE
 * (level not one of BPC_LOG_NONE .. BPC_LOG_DEBUG). */
int bpc_set_log_level(bpc_ctx_t *ctx, bpc_log_level_t level);

/* Seconds since an arbitrary origin (MPI_Wtime, or a monotonic clock for
 * serial contexts). */
double bpc_wtime(const bpc_ctx_t *ctx);

/* ---------------------------------------------------- persistent plans */

/*
 * A persistent plan: a collective call prepared once for fixed arguments
 * and started many times (the idea of MPI-4's persistent collectives,
 * MPI_Allreduce_init / MPI_Start). An engine's init call (bpc_merge_init,
 * ...) checks and agrees on every argument, picks the algorithm and builds
 * the schedule once; each bpc_plan_start then runs the call on the
 * arguments' current contents (the items the init call was given: the
 * user may change the data they point to, and what the engine's init says
 * may change) without picking, building or allocating anything.
 *
 * Every start is collective over the plan's context: every rank starts
 * the same plan, in the same order relative to the context's other
 * collective calls. A start checks what may have changed on this rank
 * and agrees on it and on the plan's identity in one small reduction
 * before any message (a bad item on some ranks, or ranks starting
 * different plans, fail on every rank with BPC_EINVAL / BPC_EMISMATCH,
 * never hang), and agrees on the outcome at the end (a callback failure
 * anywhere is BPC_ECALLBACK everywhere), as every collective call does.
 *
 * What a start cannot catch: ranks where one starts a plan and another
 * makes a different collective call on the context (bpc_merge, another
 * engine, bpc_finalize) wait for each other for ever, as mismatched MPI
 * collectives do (the start's agreement is made of point-to-point
 * messages, which no other call answers); and an MPI error inside the
 * start's agreement on one rank leaves the others waiting (MPI's default
 * error handler aborts the job first). Two different plans are caught.
 *
 * A plan holds pointers to the context, the assignment, the type and the
 * items it was made with: they must outlive it.
 */
typedef struct bpc_plan bpc_plan_t;

/* Run the plan once. Errors: those of the engine's call (the same code on
 * every rank); BPC_ENULL (plan NULL, on that rank only); BPC_EBUSY from
 * inside a callback of a call running on the context. */
int bpc_plan_start(bpc_plan_t *plan);

/* Free a plan (local; NULL and *plan == NULL allowed); sets *plan to NULL.
 * Errors: BPC_EBUSY from inside a callback of a call running on its
 * context (nothing is freed). */
int bpc_plan_free(bpc_plan_t **plan);

/* The engine a plan runs ("merge", ...), or NULL for a NULL plan. */
const char *bpc_plan_engine(const bpc_plan_t *plan);

/* -------------------------------------------------------------- statistics */

#define BPC_STATS_MAX_ROUNDS 64

/* Counters of one rank. Payload bytes only (bpc's 32-byte message header is
 * not counted). "local" transfers stay inside the process (no MPI). */
typedef struct bpc_counters {
  uint64_t bytes_sent;
  uint64_t msgs_sent;
  uint64_t bytes_recv;
  uint64_t msgs_recv;
  uint64_t local_bytes;
  uint64_t local_msgs;
  uint64_t op_calls; /* user-operator applications (merge, reduce, ...) */
  uint64_t colls;    /* collective operations (agreements, reductions, ...) */
  /* MPI point-to-point messages this rank posted for engines' transfers:
   * a bundle of small messages to one process counts once, a large message
   * counts its header and payload (msgs_sent counts bpc's messages). */
  uint64_t wire_sent;
} bpc_counters_t;

/* Counters of the most recent engine call on this rank, total and per round.
 * Rounds at or beyond BPC_STATS_MAX_ROUNDS are added to the last slot. */
typedef struct bpc_call_stats {
  char engine[32];
  int nrounds;
  bpc_counters_t total; /* total.op_calls: this rank's operator calls */
  bpc_counters_t round[BPC_STATS_MAX_ROUNDS];
  /* Critical-path depth: operator calls on the longest dependency chain
   * ending in a result this rank holds (the prefix scan: the maximum over
   * ranks is bpc_scan_info_t.depth). 0 for engines that do not track it. */
  uint64_t op_depth;
} bpc_call_stats_t;

/* Totals since the context was created or last reset. */
int bpc_stats_total(const bpc_ctx_t *ctx, bpc_counters_t *out);
/* The last engine call (engine "" and zeros if none since the reset). */
int bpc_stats_last_call(const bpc_ctx_t *ctx, bpc_call_stats_t *out);
/* Zero the totals and the last-call record. */
int bpc_stats_reset(bpc_ctx_t *ctx);

/* -------------------------------------------------------------- algorithms */

/* Where a call's algorithm came from (the `source` of every engine's info). */
typedef enum bpc_algo_source {
  BPC_SOURCE_ARGUMENT = 0, /* named in the call's parameters */
  BPC_SOURCE_ENV = 1,      /* BPC_<ENGINE>_ALGORITHM from the environment */
  BPC_SOURCE_TUNING = 2,   /* the tuning file named by BPC_TUNING_FILE */
  BPC_SOURCE_BUILTIN = 3   /* the engine's built-in choice ("auto") */
} bpc_algo_source_t;

/* One row of an engine's algorithm table. */
typedef struct bpc_algo_info {
  int id;           /* the engine's algorithm enum (never 0, which is "auto") */
  const char *name; /* as accepted by params.algorithm (any case, '-' or '_') */
  const char *desc; /* one line */
} bpc_algo_info_t;

/*
 * bpc_algorithms: the algorithm table of an engine: "merge", "swap",
 * "alltoall", "allreduce", "neighbor", "bcast", "scan" or "composite" (its
 * strategies). Writes at most
 * `cap` rows to `table` (may be NULL with cap 0: a size query) and the row
 * count to *n. Names are matched case-insensitively everywhere, with '-'
 * and '_' alike ("br-lin" is br_lin, "kogge_stone" kogge-stone), and
 * "auto" is never a row. Pure function; no context needed.
 * Errors: BPC_ENULL (engine or n NULL, table NULL with cap > 0),
 * BPC_ENOTFOUND (no such engine), BPC_ERANGE (cap < *n other than the size
 * query: *n is set and the first cap rows written).
 */
int bpc_algorithms(const char *engine, bpc_algo_info_t *table, int cap, int *n);

/* ----------------------------------------------------------------- version */

/* The version of the bpc library this program runs with: MAJOR.MINOR.PATCH
 * through the three out-parameters (each may be NULL) and as a string such
 * as "0.1.0" (returned; static, never freed). The macros BPC_VERSION_MAJOR,
 * BPC_VERSION_MINOR, BPC_VERSION_PATCH and BPC_VERSION_STRING of
 * bpc/version.h (included by bpc.h) give the version of the headers the
 * program was compiled against; the two differ only when the shared library
 * was replaced after the build. Needs no context and never fails. */
const char *bpc_version(int *major, int *minor, int *patch);

#ifdef __cplusplus
}
#endif
#endif /* BPC_CORE_H */
