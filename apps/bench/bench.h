/*
 * apps/bench/bench.h - the harness of bpc-bench, shared by every benchmark.
 *
 * bpc-bench times a bpc engine against its MPI counterpart inside one run.
 * Each benchmark ("engine") lives in one file bench_<engine>.c that defines a
 * bench_engine_t and is listed in the table in bench.c. The harness parses
 * the common options, creates the bpc context, and for every configuration
 * the engine hands it (a bench_case_t: one algorithm, one size, one block
 * count) runs the warm-up and timed repetitions, alternating the bpc variant
 * and the MPI baseline, checks correctness after every repetition, collects
 * bpc's statistics and prints one result line (table or JSON).
 *
 * Timing of one operation: MPI_Barrier, t0, operation, t1 on every rank; the
 * operation's time is the maximum over ranks of t1 - t0 (one MPI_Allreduce
 * MAX over all repetitions at the end, so no collective sits between the
 * timed operations other than the barriers and the error agreement).
 */
#ifndef BPC_APPS_BENCH_H
#define BPC_APPS_BENCH_H

#include <stddef.h>
#include <stdint.h>

#include <mpi.h>

#include "bpc.h"

#define BENCH_MAX_SIZES 64
#define BENCH_MAX_K 32
#define BENCH_MAX_ALGOS 32
#define BENCH_MAX_EOPTS 16

/* Exit codes of the program. */
enum { BENCH_EXIT_OK = 0, BENCH_EXIT_FAIL = 1, BENCH_EXIT_USAGE = 2 };

/* The common options, identical on every rank. */
typedef struct bench_opts {
  size_t bytes[BENCH_MAX_SIZES]; /* --bytes: sizes to run (engine default if nbytes 0) */
  int nbytes;
  int blocks_per_proc; /* --blocks-per-proc; 0 = engine default */
  int reps;            /* --reps: timed repetitions (>= 1) */
  int warmup;          /* --warmup: untimed repetitions before them (>= 0) */
  const char *algorithm; /* --algorithm: a name, "auto" (default) or "all" */
  int k[BENCH_MAX_K];  /* --k: k-vector, nk entries; k_auto when "auto" or not given */
  int nk;
  int k_auto;
  int k_given;
  int json; /* --json: one JSON object per result line */
  int breakdown; /* --breakdown: where a bpc call's time goes (phases of the frame) */
  /* engine-specific options: value of the engine's options[i] (NULL: not
   * given; "1" for a flag) */
  const char *eopt[BENCH_MAX_EOPTS];
} bench_opts_t;

struct bench_engine;

/* What a benchmark sees: the world, the bpc context and the options. */
typedef struct bench_env {
  MPI_Comm world; /* MPI_COMM_WORLD */
  int rank, size;
  bpc_ctx_t *ctx; /* bpc context over MPI_COMM_WORLD */
  const bench_opts_t *opts;
  const struct bench_engine *engine;
  int header_done; /* the table header has been printed */
  int nfail;       /* result lines with correct == 0 */
  /* Simulated build with shared payloads (bpc-smpirun --shared: SMPI's
   * allocations above a threshold are shared by all ranks, so their
   * contents are garbage): results are not checked (correct n/a). */
  int shared;
} bench_env_t;

/*
 * One configuration to measure. The engine fills it and calls bench_run_case.
 * Callbacks get `state`; every one returns 0 (BPC_OK) or a nonzero code on
 * this rank (the harness agrees on it over ranks, so a failure stops every
 * rank at the same point). Per repetition the harness calls, in this order:
 *   run_bpc and run_baseline, timed, alternating which goes first (bpc first
 *     on even repetitions, baseline first on odd ones), each preceded by
 *     prepare(state, rep, is_bpc) (untimed, may be NULL: e.g. restore an
 *     input that the operation overwrites; `rep` counts warm-up repetitions
 *     too, from 0) and an MPI_Barrier on the world;
 *   check (untimed): *correct = 1 if this rank's bpc result matches the
 *     baseline's (and the expected data), else 0;
 *   bpc_done (untimed, may be NULL): release what run_bpc kept for check.
 *     Called after run_bpc even if it or check failed.
 */
typedef struct bench_case {
  const char *algorithm; /* the bpc variant's name */
  const char *baseline;  /* the MPI counterpart's name, e.g. "MPI_Isend/MPI_Irecv" */
  const char *kvec;      /* k-vector text ("4x2"), or NULL when it does not apply */
  int nblocks;
  size_t bytes;                /* the size parameter of the line (per block) */
  uint64_t lower_bound_bytes;  /* model: least bytes a rank must send to other processes */
  uint64_t lower_bound_msgs;   /* model: least messages to other processes (0: n/a) */
  /* extra JSON members for this line, e.g. "\"assign\":\"contiguous\"" (or NULL) */
  const char *extra_json;
  void *state;
  int (*prepare)(void *state, int rep, int is_bpc);
  int (*run_bpc)(void *state);
  int (*run_baseline)(void *state);
  int (*check)(void *state, int *correct);
  int (*bpc_done)(void *state);
  /* With an engine's ref_label: the reference time of this line's variant
   * (e.g. the same strategy on dense data, measured earlier in the run), in
   * seconds; <= 0 = unknown (null). ref_self: this line is its own
   * reference (ratio 1). */
  double ref_s;
  int ref_self;
  /* If not NULL: set to the bpc variant's median time (s) on every rank. */
  double *median_out;
} bench_case_t;

/* An option only one benchmark knows (`--name VALUE`, or a flag). */
typedef struct bench_eopt {
  const char *name; /* without the leading dashes */
  const char *arg;  /* what the value is ("MODE"), or NULL for a flag */
  const char *help;
} bench_eopt_t;

/* One benchmark: `bpc-bench <name> [options]`. */
typedef struct bench_engine {
  const char *name;
  const char *desc;                   /* one line for the usage text */
  /* bpc variants: the rows of bpc_algorithms(registry) when registry is
   * set, then `algorithms` (bench-only variants, NULL-terminated; may be
   * NULL). bench_variants() gives the whole list. */
  const char *registry;
  const char *const *algorithms;
  /* what "auto" runs, NULL-terminated (NULL: the first variant;
   * BENCH_AUTO_ROWS: every row of the registry; BENCH_AUTO_ALL: every
   * variant) */
  const char *const *auto_algorithms;
  int uses_k;                         /* --k applies */
  const size_t *default_bytes;        /* default --bytes, n_default_bytes entries */
  int n_default_bytes;
  int default_blocks_per_proc;
  const bench_eopt_t *options; /* its own options, terminated by a NULL name; or NULL */
  const char *notes; /* extra usage text (what is measured), or NULL */
  /* If set (e.g. "dense"): every line also reports its case's ref_s as
   * "<label>_s" and median / ref_s as "vs_<label>" (JSON), columns
   * "<label>_us" and "vs_<label>" in the table. */
  const char *ref_label;
  /* Run every configuration (bench_run_case for each). Returns a
   * BENCH_EXIT_* code, the same on every rank. */
  int (*run)(bench_env_t *env);
} bench_engine_t;

/* auto_algorithms values: "auto" runs every registry row / every variant. */
extern const char *const BENCH_AUTO_ROWS[];
extern const char *const BENCH_AUTO_ALL[];

/* Every variant of engine e (registry rows, then e->algorithms),
 * NULL-terminated; static storage. */
const char *const *bench_variants(const bench_engine_t *e);
/* The registry id of variant `name` of e (0: not a registry row). */
int bench_variant_id(const bench_engine_t *e, const char *name);

/* The benchmarks (one per bench_<engine>.c). */
/* Test payloads: word j of the message identified by `key` in repetition
 * `rep` (rep only changes the first and last word, so a stale message from
 * another repetition is caught while restamping stays cheap). fill writes
 * words [j0, j1); ok checks all of buf. */
void bench_pattern_fill(unsigned char *buf, size_t bytes, uint64_t key, int rep, size_t j0,
                        size_t j1);
int bench_pattern_ok(const unsigned char *buf, size_t bytes, uint64_t key, int rep);

/* Fair charging in the simulated build (configure --with-smpi, doc/scale.md
 * "Charging MPI's operators"). SMPI applies an MPI_Op inside its collectives
 * without charging the operator's CPU time to the simulated clock, while
 * bpc's operators run in user code, whose CPU time SMPI measures and
 * charges. A baseline's MPI_Op body is bracketed by bench_op_enter and
 * bench_op_leave, which charge its thread CPU time (smpi_execute) the same
 * way. Outside SMPI both do nothing. bench_mpi_sum_float is MPI_SUM on
 * floats, except under SMPI: a user MPI_Op (commutative) doing the same
 * additions, charged; free it with bench_mpi_op_free. */
double bench_op_enter(void);
void bench_op_leave(double t0);
int bench_mpi_sum_float(MPI_Op *op);
void bench_mpi_op_free(MPI_Op *op);

extern const bench_engine_t bench_engine_comm;
extern const bench_engine_t bench_engine_merge;
extern const bench_engine_t bench_engine_swap;
extern const bench_engine_t bench_engine_alltoall;
extern const bench_engine_t bench_engine_allreduce;
extern const bench_engine_t bench_engine_tree;
extern const bench_engine_t bench_engine_neighbor;
extern const bench_engine_t bench_engine_composite;
extern const bench_engine_t bench_engine_bcast;
extern const bench_engine_t bench_engine_scan;
extern const bench_engine_t bench_engine_io;
extern const bench_engine_t bench_engine_agree;

/*
 * Measure one configuration and print its result line on rank 0.
 * Collective over the world. Returns BENCH_EXIT_OK, or BENCH_EXIT_FAIL on
 * every rank if a callback failed on any rank (message on stderr).
 */
int bench_run_case(bench_env_t *env, const bench_case_t *c);

/* The algorithms to run for the current --algorithm (names point into the
 * engine's table). Returns the count (>= 1); the option was validated in
 * bench.c. */
int bench_algorithms(const bench_env_t *env, const char **names, int cap);

/* The sizes to run (--bytes, or the engine default). Returns the count. */
int bench_sizes(const bench_env_t *env, const size_t **sizes);

/* Value of the engine's own option `name` (NULL if not given). */
const char *bench_eopt(const bench_env_t *env, const char *name);

/* Blocks per process (--blocks-per-proc, or the engine default). */
int bench_blocks_per_proc(const bench_env_t *env);

/* Agree over ranks on a local status (0 = fine): returns the first nonzero
 * status (lowest) seen on any rank, or 0. */
int bench_agree(const bench_env_t *env, int status);

/* Print an error on stderr, prefixed with the program name and the rank. */
void bench_error(const bench_env_t *env, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Format a byte count with a binary suffix (8, 1K, 64K, 1M, 1.5M). */
void bench_format_bytes(uint64_t bytes, char *buf, size_t len);

#endif /* BPC_APPS_BENCH_H */
