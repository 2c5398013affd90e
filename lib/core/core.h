/*
 * lib/core/core.h - internal view of the context: error recording, logging,
 * statistics hooks and the collective error agreement every engine uses.
 * Not installed.
 */
#ifndef BPC_LIB_CORE_H
#define BPC_LIB_CORE_H

#include "bpc/core.h"

#include <stdarg.h>

#define BPC__ERRMSG_LEN 512
#define BPC__MAX_CLEANUPS 8

/* Scratch slots of the context (bpc__scratch): one per user at a time. */
enum { BPC__SCR_MERGE, BPC__SCR_MERGE_UNITS, BPC__SCR_MERGE_ORDER, BPC__SCR_N };

/* Phase stamps of a collective call (bpc-bench --breakdown): where the
 * frame of doc/design.md passes from one step to the next. Taken with
 * bpc_wtime only while ctx->phase_on; the caller zeroes them before the
 * call, so a step the call did not make stays 0. With several exchanges in
 * one call the last one's stamps remain. */
enum {
  BPC__PH_ARGS0,   /* argument agreement begins (bpc__agree_args_vals) */
  BPC__PH_ARGS1,   /* ... ends */
  BPC__PH_OPEN1,   /* the exchange is open (bpc__exch_open returns) */
  BPC__PH_END0,    /* the schedule is done: bpc__exch_end begins */
  BPC__PH_FINISH1, /* its messages are finished: the outcome agreement begins */
  BPC__PH_END1,    /* the outcome is agreed */
  BPC__PH_N
};

#if defined(__GNUC__)
#define BPC__PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define BPC__PRINTF(a, b)
#endif

/* A destructor that another layer hangs on the context (e.g. the comm
 * layer's buffer pool). Run by bpc_finalize in reverse order. */
typedef struct bpc__cleanup {
  void (*fn)(void *arg);
  void *arg;
  const char *name; /* lookup key */
} bpc__cleanup_t;

struct bpc_ctx {
  int serial;    /* 1: in-process context, no MPI at all */
  MPI_Comm comm; /* duplicate of the user's communicator */
  int rank, size;
  int log_level;
  long long pool_bytes;
  char errmsg[BPC__ERRMSG_LEN];

  /* statistics */
  bpc_counters_t total;
  bpc_call_stats_t last;
  int cur_round;
  /* the record in `last` was begun by the argument agreement of the call
   * now running (bpc__agree_args); the call's exchange continues it */
  int stats_agreed;

  /* the collective call running on this context (bpc__enter): busy is 0
   * or 1, read and written atomically (callbacks may run on OpenMP
   * threads); busy_call names the running call */
  int busy;
  const char *busy_call;
  /* bpc_last_error as the running call found it: restored when the call
   * succeeds, so internal probes and recovered failures never show */
  char errmsg_before[BPC__ERRMSG_LEN];

  /* tag epochs: one per engine call, identical on every rank */
  unsigned long long epoch;
  int tag_ub;

  bpc__cleanup_t cleanup[BPC__MAX_CLEANUPS];
  int ncleanup;

  /* an exchange kept aside for a bpc__exch_open that runs out of memory:
   * the call can still tell the other ranks and fail everywhere (made with
   * bpc__must_alloc: its size and whether it is paged) */
  void *exch_spare;
  size_t exch_spare_bytes;
  int exch_spare_paged;

  /* lib/comm's records kept between calls (exchange.c: the last closed
   * exchange with its arrays, free message and send records), so that a
   * call in steady state allocates nothing there; freed by its cleanup */
  void *comm_cache;
  int no_reserve; /* bpc__comm_set_reserve(ctx, 0): reservations off */
  int no_bundle;  /* BPC_BUNDLE=0 when the context was made (lib/comm) */

  /* persistent plans made on this context (their ids: the same on every
   * rank, as plans are made collectively) */
  long long plan_seq;

  /* scratch buffers kept between calls (bpc__scratch) */
  void *scratch[BPC__SCR_N];
  size_t scratch_cap[BPC__SCR_N];

  /* phase stamps (BPC__PH_*), taken while phase_on (bpc__phase) */
  int phase_on;
  double phase_t[BPC__PH_N];
};

/* The common head of every engine's persistent plan (bpc_plan_t). An
 * engine's plan struct starts with it; start runs one call (inside the
 * guard: bpc_plan_start enters and leaves), destroy frees the engine's
 * part and the plan. */
struct bpc_plan {
  bpc_ctx_t *ctx;
  const char *engine; /* "merge", ... */
  const char *call;   /* the guard's name, e.g. "bpc_merge" */
  long long id;       /* ctx->plan_seq at its making: the same on every rank */
  int (*start)(bpc_plan_t *plan);
  void (*destroy)(bpc_plan_t *plan);
};

/* Stamp phase `ph` of the running call (when ctx->phase_on). */
static inline void bpc__phase(bpc_ctx_t *ctx, int ph)
{
  if (ctx != NULL && ctx->phase_on)
    ctx->phase_t[ph] = bpc_wtime(ctx);
}

/* Record a failure: formats the detailed message into ctx->errmsg, logs it at
 * debug level and returns `code` (so `return bpc__err(ctx, ...)` works).
 * ctx may be NULL (then only `code` is returned). */
int bpc__err(bpc_ctx_t *ctx, int code, const char *fmt, ...) BPC__PRINTF(3, 4);

/* Record an MPI failure with the MPI error string; returns BPC_EMPI. */
int bpc__err_mpi(bpc_ctx_t *ctx, int mpi_rc, const char *what);

/* Logging to stderr, prefixed with "[bpc r<rank> <level>]". */
void bpc__log(const bpc_ctx_t *ctx, int level, const char *fmt, ...) BPC__PRINTF(3, 4);

/* Re-entrancy guard of every collective entry (engines, neighbour
 * creators, round/iterate/exchange, composite). bpc__enter marks the
 * context busy with `call` (a static string, e.g. "bpc_merge") and returns
 * BPC_OK, or, when a collective call already runs on this context (a
 * callback of it called another one), returns BPC_EBUSY at once with a
 * message naming both calls; nothing is sent, so the callback's failure
 * then fails the running call on every rank (BPC_ECALLBACK). bpc__leave
 * clears the mark; call it once for every bpc__enter that returned BPC_OK,
 * with the call's code: when it is BPC_OK, bpc_last_error is put back to
 * what it was at bpc__enter (a successful call leaves it unchanged, whatever
 * internal probe or recovered failure wrote it on the way).
 * bpc__busy_check: the same test without marking (for calls that free the
 * objects a running call uses: bpc_finalize, bpc_neighbor_destroy).
 * Thread-safe; local queries never call these. */
int bpc__enter(bpc_ctx_t *ctx, const char *call);
void bpc__leave(bpc_ctx_t *ctx, int rc);
int bpc__busy_check(bpc_ctx_t *ctx, const char *call);

/* The whole body of a guarded public entry: with ctx NULL the call runs
 * unguarded (it reports BPC_ENULL itself); else bpc__enter, the call,
 * bpc__leave with its code. Usage: BPC__GUARDED_RETURN(ctx, "bpc_x",
 * x_entry(ctx, ...)); */
#define BPC__GUARDED_RETURN(ctx, name, call)                                  \
  do {                                                                        \
    bpc_ctx_t *bpc__g_ctx = (ctx);                                            \
    if (bpc__g_ctx == NULL)                                                   \
      return (call);                                                          \
    int bpc__g_rc = bpc__enter(bpc__g_ctx, (name));                           \
    if (bpc__g_rc == BPC_OK) {                                                \
      bpc__g_rc = (call);                                                     \
      bpc__leave(bpc__g_ctx, bpc__g_rc);                                      \
    }                                                                         \
    return bpc__g_rc;                                                         \
  } while (0)

/* Collective agreement (bpc__agree, bpc__agree_args) and the other
 * collectives live in lib/comm/coll.h. */

/* Reserve a tag epoch for one engine call; returns a tag in [1, tag_ub].
 * Every rank must call it the same number of times in the same order. */
int bpc__next_tag(bpc_ctx_t *ctx);

/* Hang a destructor on the context; `name` allows bpc__cleanup_find. */
int bpc__cleanup_add(bpc_ctx_t *ctx, const char *name, void (*fn)(void *), void *arg);
void *bpc__cleanup_find(const bpc_ctx_t *ctx, const char *name);

/* Statistics hooks (thread-safe: counters are updated atomically). */
void bpc__stats_begin_call(bpc_ctx_t *ctx, const char *engine);
void bpc__stats_set_round(bpc_ctx_t *ctx, int round);
void bpc__stats_sent(bpc_ctx_t *ctx, uint64_t bytes, int local);
void bpc__stats_recv(bpc_ctx_t *ctx, uint64_t bytes, int local);
/* n MPI messages posted (bpc_counters_t.wire_sent). */
void bpc__stats_wire(bpc_ctx_t *ctx, uint64_t n);
void bpc__stats_ops(bpc_ctx_t *ctx, uint64_t n);
/* The call's critical-path depth on this rank (the largest value given). */
void bpc__stats_depth(bpc_ctx_t *ctx, uint64_t depth);
void bpc__stats_coll(bpc_ctx_t *ctx);

/* Options from the environment: integer value of `name`, or `dflt`. */
long long bpc__env_ll(const char *name, long long dflt);

/* Checked allocation helpers: NULL on failure (caller records ENOMEM). */
void *bpc__malloc(size_t n);
void *bpc__calloc(size_t n, size_t size);

/* A buffer from malloc, or, when malloc has no memory, anonymous pages
 * from the kernel (*paged = 1); NULL when even those are refused. Free it
 * with bpc__must_free(p, bytes, paged). (bpc__must_alloc, lib/comm/comm.h,
 * is the same for buffers a collective under way cannot do without.) */
void *bpc__big_alloc(size_t bytes, int *paged);

/* Scratch memory of at least `bytes` bytes in slot `slot` of the context,
 * kept between calls (grow-only: a call in steady state allocates nothing;
 * freed by bpc_finalize). The contents are undefined; the buffer is valid
 * until the next bpc__scratch of the same slot. NULL when out of memory
 * (the slot keeps its old buffer). */
void *bpc__scratch(bpc_ctx_t *ctx, int slot, size_t bytes);
void bpc__must_free(void *p, size_t bytes, int paged);

#endif /* BPC_LIB_CORE_H */
