/*
 * lib/engines/bcast/bcast_internal.h - the s-to-p broadcast engine's
 * registry entry, call state, schedule builder and executor (internal).
 *
 * bcast.c has the entry and the table; bcast_model.c auto's cost model and
 * bcast_cache.c its decision cache; bcast_exec.c the schedule type and
 * the executor every algorithm shares; one file per algorithm
 * (bcast_<name>.c: bcast_br_lin.c, bcast_br_xy_source.c, bcast_br_xy_dim.c,
 * bcast_2step.c, bcast_xor.c) builds its schedule of block-to-block
 * transfers and hands it to the executor; bcast_mpi.c is the MPI baseline.
 */
#ifndef BPC_LIB_ENGINES_BCAST_INTERNAL_H
#define BPC_LIB_ENGINES_BCAST_INTERNAL_H

#include "bpc/bcast.h"
#include "comm/coll.h"
#include "comm/comm.h"
#include "core/core.h"
#include "core/registry.h"
#include "patterns/patterns.h"

/* The registry entry (lib/engines/engines.c lists it). */
extern const bpc__engine_t bpc__engine_bcast;

/*
 * A schedule: transfers (step, from gid, to gid). A transfer means "block
 * `from` sends every item it has that block `to` lacks" (combining); a
 * step's transfers use what the blocks held when the step began. Built in
 * any order, sorted by step (stably) by the executor.
 */
typedef struct bpc__bcast_sched {
  int n, cap;
  int *step, *from, *to;
  int nsteps; /* 1 + the largest step added */
  int base;   /* added to every step given to bpc__bcast_add (repositioning) */
  const int *map; /* when set, bpc__bcast_add maps both blocks through it (partitioning) */
  /* when set (block gid -> rank): transfers between blocks of one process
   * are not stored, and br_lin / tree segments whose blocks all sit on one
   * process are not walked (only the steps they take count in nsteps);
   * the executor and the model drop such transfers anyway */
  const int *rk;
  int err;    /* BPC_ENOMEM when an add failed */
} bpc__bcast_sched_t;

/* One call, as the entry hands it to an algorithm's run function. */
typedef struct bpc__bcast_call {
  bpc_ctx_t *ctx;
  bpc__exch_t *ex;
  const bpc_assign_t *assign;
  const bpc_type_t *type;
  const int *sources; /* ascending gids: where the schedule starts */
  const int *ids;     /* the items' source gids (== sources unless repositioned) */
  int s;              /* number of sources */
  int p;              /* number of blocks */
  int rows, cols;     /* mesh view: rows * cols == p */
  const void **items; /* per source: the item item_of gave (local sources only) */
  bpc_bcast_recv_fn recv;
  void *user;
  bpc__bcast_sched_t S;
  int reposition; /* move the sources to the row's ideal distribution first */
  int partition;  /* run the row in two halves, then exchange between them */
  int plan_only; /* 1: build the schedule, do not run it (bpc__bcast_sched_check) */
  int model_oom;  /* the cost model ran out of memory (its choice would be another) */
  double alpha, beta; /* the cost model's constants (auto) */
  int *rk;            /* per block: its rank (bcast_ranks makes it when a schedule
                       * is built; NULL until then, and on auto's cache hits) */
  struct bpc__bcast_plan *plan;      /* set: the executor runs this plan (auto's cache) */
  struct bpc__bcast_plan *keep_plan; /* set: the executor hands the plan it built here */
  /* results for info */
  int steps;
  long long msgs, bytes;
} bpc__bcast_call_t;

/* Add one transfer (both gids valid, from != to). Failures are kept in
 * S->err (the executor reports them). */
void bpc__bcast_add(bpc__bcast_sched_t *S, int step, int from, int to);
/* Add an exchange: from -> to and to -> from in the same step. */
void bpc__bcast_xchg(bpc__bcast_sched_t *S, int step, int a, int b);

/* br_lin's recursive halving over the blocks order[0..n), its first step
 * being `base`. Returns the number of steps it takes (ceil(log2 n)). */
int bpc__bcast_lin(bpc__bcast_sched_t *S, int base, const int *order, int n);
/* A one-way binomial tree from order[0] over order[0..n) (ceil(log2 n)
 * steps from `base`); returns the number of steps. */
int bpc__bcast_tree(bpc__bcast_sched_t *S, int base, const int *order, int n);
/* br_lin in every row (rows_first) or column, then in the other dimension. */
int bpc__bcast_xy(bpc__bcast_call_t *C, int rows_first);

/* An item as a process holds it: its bytes (the user's memory, a packed
 * custom item or a receive buffer). */
typedef struct bpc__bcast_item {
  const void *data;
  size_t bytes;
  int have;
} bpc__bcast_item_t;

/* Hand every item to every local block (bcast_exec.c); see there. */
int bpc__bcast_deliver(bpc__bcast_call_t *C, const bpc__bcast_item_t *it, int *cb_rc);

/* The bytes of local source i's item in *it: a contiguous item's own
 * memory (no copy), or a custom item packed into *packed (malloc'd, the
 * caller frees it; NULL for an empty item). Returns BPC_OK or the first
 * error (pack failure, out of memory), recorded with a message. */
int bpc__bcast_item_bytes(bpc__bcast_call_t *C, int i, bpc__bcast_item_t *it, void **packed);

/*
 * Run a row, with repositioning when C->reposition is set (params.reposition;
 * not for 2step and mpi): step 0 moves every source item whose block is not
 * in the row's ideal distribution (br_lin: left diagonal, br_xy_source: row,
 * br_xy_dim: column when rows go first, else row; xor: equal) to a free
 * block of it, then the row's schedule runs from step 1 with the ideal
 * positions as its sources (C->sources), while the items keep their
 * identity (C->ids). bcast.c.
 */
int bpc__bcast_run_row(bpc__bcast_call_t *C, const bpc__algo_t *row);
/*
 * Partitioning (C->partition, params.partition; not for mpi): the mesh is
 * cut in two halves (the first floor(rows/2) rows and the rest, or on a
 * 1 x c line the first floor(c/2) blocks and the rest); the row's schedule
 * runs inside each half at the same time on that half's sources, then one
 * step pairs block v of the first half with block v of the second (both
 * directions) and sends from block v mod p1 of the first half to every
 * further block v of the second. Combines with repositioning (the move
 * comes first). bcast.c.
 */

/*
 * The process-level view of a built schedule (bcast_plan.c): per step and
 * receiving process, the distinct sending processes in schedule order,
 * each with the first block transfer standing for it, and the items by the
 * process they start on. A transfer's items come from cones (the
 * processes that reached its sender, resp. its receiver, before the
 * step), so no rank simulates every process.
 */
typedef struct bpc__bcast_plan {
  int nr, nsteps, s;
  int *in_start; /* nsteps * nr + 1: edges into (step t, process B) start at [t * nr + B] */
  int *in_from;  /* per edge: the sending process */
  int *in_a, *in_b; /* per edge: the block transfer a -> b it stands for */
  int ne;
  int *it_start, *it_idx; /* items (indices, ascending) starting on process r */
  int *mark, *L, stamp;   /* cone scratch (2 x nr each) */
  int *out;               /* scratch for callers */
} bpc__bcast_plan_t;

/* Bucket schedule S (built with S->rk set: its block -> rank array is
 * read here) for nr processes; ids = the items' starting blocks. BPC_OK or
 * BPC_ENOMEM (nothing recorded). */
int bpc__bcast_plan_init(bpc__bcast_plan_t *P, const bpc__bcast_sched_t *S, int nr, const int *ids,
                         int s);
void bpc__bcast_plan_free(bpc__bcast_plan_t *P);
/* The items edge e (of step t, into process B) carries: *n of them, their
 * indices ascending in items[] when items is not NULL (room for s). */
void bpc__bcast_plan_carry(bpc__bcast_plan_t *P, int t, int B, int e, int *items, long long *n);

/* Run a built schedule: per process (bpc__bcast_plan_t: who sends what), send and
 * receive the combined messages, deliver every item to every local block.
 * Returns a messaging error at once; callback failures after the schedule
 * has completed. */
int bpc__bcast_exec(bpc__bcast_call_t *C);

/*
 * Test hook: build algorithm `name`'s schedule for p = rows x cols blocks
 * and these sources (repositioned first when `reposition`), and simulate it with every block its own process.
 * BPC_OK when every block ends with every item, BPC_ESTATE (with *missing
 * = the number of (block, item) pairs left out) otherwise; *steps and
 * *msgs (transfers that carry something: the paper's messages with one
 * block per processor) may be NULL. BPC_EALGO, BPC_EINVAL, BPC_ENOMEM.
 */
int bpc__bcast_sched_check(const char *name, int rows, int cols, const int *sources, int s,
                           int reposition, int *missing, int *steps, long long *msgs);

/* The cost model of `auto` (bcast_model.c, doc/bcast.md "Choosing"): the
 * modelled time in seconds of running row's schedule per process, with
 * every item of L bytes. */
double bpc__bcast_model(bpc__bcast_call_t *C, const bpc__algo_t *row, double L);

/* The item size the model takes for a largest item of L bytes: L up to
 * 8 bytes, above it L rounded up to a quarter of its power-of-two octave
 * (e.g. 1000 -> 1024, 1100 -> 1280): at most 25% more, so calls whose
 * sizes vary a little share auto's cached decision. */
long long bpc__bcast_model_L(long long L);
/* auto's rule: every row's variants (plain, repositioned, partitioned,
 * both; none without effect) through bpc__bcast_model with items of L bytes,
 * the cheapest (ties: the first) in *row, *reposition, *partition, its
 * modelled time in *T (may be NULL). C's reposition/partition are left
 * as they were. BPC_OK, or BPC_ENOMEM when no variant could be modelled. */
int bpc__bcast_choose(bpc__bcast_call_t *C, double L, const bpc__algo_t **row, int *reposition,
                      int *partition, double *T);
/*
 * auto's decision cache on the context (bcast_cache.c): off >= 0 turns it off
 * (1: every call runs the model, nothing is stored or looked up) or on
 * (0); *hits and *misses (may be NULL) count auto calls answered from the
 * cache, resp. by the model, since the context began. Test hook.
 */
int bpc__bcast_cache(bpc_ctx_t *ctx, int off, long long *hits, long long *misses);
/*
 * The model's time (seconds) of variant `name` (a row's name with the
 * reposition and partition flags; "auto" or NULL: what auto picks, flags
 * included) for these arguments on ctx's ranks, every item taken as
 * bpc__bcast_model_L(L) bytes, alpha and beta as bpc_bcast reads them.
 * Local: no messages. *pick (npick bytes, may be NULL) gets the variant
 * as bpc-bench names it (e.g. "br_lin+r"). BPC_OK, BPC_EINVAL, BPC_EALGO,
 * BPC_ENOMEM. bpc-bench bcast prints it as model_s.
 */
int bpc__bcast_model_time(bpc_ctx_t *ctx, const bpc_assign_t *assign, const int *sources,
                          int nsources, int rows, int cols, long long L, const char *name,
                          int reposition, int partition, double *T, char *pick, size_t npick);

/* The model's machine constants: BPC_BCAST_ALPHA (seconds per message)
 * and BPC_BCAST_BETA (seconds per byte) when set to a number in (0, 1),
 * else built-in values (bcast_model.c). */
double bpc__bcast_alpha(void);
double bpc__bcast_beta(void);
/* A call's state with the fields the model and the executor share. */
void bpc__bcast_call_init(bpc__bcast_call_t *C, bpc_ctx_t *ctx, const bpc_assign_t *assign,
                          const int *sources, int s, int rows, int cols, int reposition,
                          int partition, double alpha, double beta);
/* Every block's rank in C->rk and C->S.rk, made once per call when a
 * schedule is built (the caller frees C->rk). BPC_ENOMEM. */
int bpc__bcast_ranks(bpc__bcast_call_t *C);
/* The flags that take effect for the row (bcast.c). */
void bpc__bcast_effective(const bpc__bcast_call_t *C, const bpc__algo_t *row, int *rep, int *part);

/* auto's decision cache (bcast_cache.c): a choice and the context's
 * entries. */
#define BC_CACHE_N 8

typedef struct bcast_choice {
  int nk, s;
  long long key[BPC__SIG_MAX + 1];
  int *sources;
  int row, reposition, partition;
  unsigned long long used; /* LRU tick; 0: empty */
  /* the executor's plan of the chosen schedule once a call has run it
   * (in_start NULL: not yet; never for mpi), and the schedule's steps */
  bpc__bcast_plan_t plan;
  int nsteps;
} bcast_choice_t;

typedef struct bpc__bcast_cache {
  bcast_choice_t e[BC_CACHE_N];
  unsigned long long tick;
  long long hits, misses;
  int off; /* 1: every call runs the model (bpc__bcast_cache) */
} bcast_cache_t;
/* The context's cache, made on first use (NULL when out of memory). */
bcast_cache_t *bpc__bcast_cache_get(bpc_ctx_t *ctx);
/* Empty every entry (all ranks at once: after an agreed failure). */
void bpc__bcast_cache_clear(bcast_cache_t *c);
/* auto: the cheapest row and flags by the model, from the cache when the
 * same agreed inputs were seen; *ce: the cache entry (NULL: cache off). */
int bpc__bcast_auto(bpc__bcast_call_t *C, const bpc__sig_t *sig, const long long *vals, long long L,
                    const bpc__algo_t **row, bcast_choice_t **ce);

/* Algorithms (rows' run functions; `call` is a bpc__bcast_call_t). */
int bpc__bcast_br_lin(void *call);
int bpc__bcast_br_xy_source(void *call);
int bpc__bcast_br_xy_dim(void *call);
int bpc__bcast_2step(void *call);
int bpc__bcast_xor(void *call);
int bpc__bcast_mpi(void *call);
/* The "mpi" row on a rank that failed (rc) before running it: it still
 * joins the row's first collective, which carries its failure to every
 * rank (so none waits in the allgatherv for it). Returns rc. */
int bpc__bcast_mpi_join(bpc__bcast_call_t *C, int rc);
/* The "mpi" row's cost model: the size reduction and a recursive-doubling
 * allgatherv over ranks. */
double bpc__bcast_mpi_model(const bpc__bcast_call_t *C, double L);

/* Where repositioning moves the sources of a row whose lines are rows and
 * columns: along the longer lines (columns when cols >= rows, else rows). */
#define BPC__BC_DIST_LONGER (-1)
/* A row for which repositioning has no effect (it does not start from the
 * sources' blocks). */
#define BPC__BC_DIST_NONE (-2)

/*
 * What an algorithm is besides its run: every row's `data` (bcast.c's
 * table). The entry, the cost model and the choice read these traits and
 * never the row's id, so a new algorithm is its file and its row
 * (doc/contributing.md).
 */
typedef struct bpc__bcast_row {
  /* Where repositioning puts the sources first: a BPC__BDIST_* kind of
   * lib/patterns, BPC__BC_DIST_LONGER, or BPC__BC_DIST_NONE. */
  int dist;
  /* Partitioning (the schedule in two halves, then one exchange) applies. */
  int partitions;
  /* The row's own cost model (seconds for items of L bytes), or NULL: the
   * schedule is built and its steps costed (bpc__bcast_model). */
  double (*model)(const bpc__bcast_call_t *C, double L);
  /* A row made of MPI collectives: a rank that failed before running it
   * joins them with its code (returns it), so no rank waits in them for
   * it. NULL: a point-to-point row (the exchange's end carries failures). */
  int (*join)(bpc__bcast_call_t *C, int rc);
} bpc__bcast_row_t;

static inline const bpc__bcast_row_t *bpc__bcast_row(const bpc__algo_t *row)
{
  return (const bpc__bcast_row_t *)row->data;
}

#endif /* BPC_LIB_ENGINES_BCAST_INTERNAL_H */
