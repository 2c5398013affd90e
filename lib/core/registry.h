/*
 * lib/core/registry.h - the algorithm registry every engine uses (internal).
 *
 * An engine describes its variants with one table of rows {info, run, data}
 * (info is the public bpc_algo_info_t: id, name, one-line description; run
 * is the variant's entry, called with the engine's own call state; data is
 * optional engine-specific static data of the variant) and one
 * bpc__engine_t naming the table, the environment variable and an optional
 * tuning-file lookup. bpc__algo_pick turns the caller's name into a row by
 * one rule for every engine:
 *   1. the argument, unless NULL or "auto";
 *   2. else the environment variable (BPC_<ENGINE>_ALGORITHM), unless unset,
 *      empty or "auto";
 *   3. else the engine's tuning hook, if it has one and it has an entry;
 *   4. else no row: the engine's built-in rule decides (source BUILTIN).
 * Names are matched case-insensitively. An unknown name is BPC_EALGO with a
 * message that lists the known ones and says where the name came from.
 *
 * Adding a variant is one row in the engine's table plus the file that
 * defines its run function (see doc/contributing.md).
 */
#ifndef BPC_LIB_CORE_REGISTRY_H
#define BPC_LIB_CORE_REGISTRY_H

#include "core/core.h"

/* A variant's entry: `call` is the engine's own call state. */
typedef int (*bpc__algo_run_fn)(void *call);

typedef struct bpc__algo {
  bpc_algo_info_t info;
  bpc__algo_run_fn run;
  /* optional engine-specific description of the variant (e.g. merge's
   * schedule: groups and roots per round), or NULL */
  const void *data;
} bpc__algo_t;

typedef struct bpc__engine {
  const char *name; /* "swap": the engine's name in messages and bpc_algorithms */
  const char *env;  /* "BPC_SWAP_ALGORITHM" */
  const bpc__algo_t *rows;
  int nrows;
  /* Optional: the tuning file's choice for this call (`arg` is what the
   * engine passed to bpc__algo_pick). Returns 1 and sets *id when it has
   * an entry, else 0. */
  int (*tune)(bpc_ctx_t *ctx, void *arg, int *id);
} bpc__engine_t;

#define BPC__NROWS(rows) ((int)(sizeof(rows) / sizeof((rows)[0])))

/* The row named `name` (case-insensitive), or NULL. */
const bpc__algo_t *bpc__algo_find(const bpc__engine_t *e, const char *name);
/* The row with this id, or NULL. */
const bpc__algo_t *bpc__algo_by_id(const bpc__engine_t *e, int id);
/* The name of the row with this id, or "?" (never NULL). */
const char *bpc__algo_name(const bpc__engine_t *e, int id);

/*
 * The picker (rule at the top of this file). On success *row is the chosen
 * row, or NULL when the built-in rule is to decide, and *source says where
 * the choice came from. Deterministic given the same argument, environment
 * and tuning file, so every rank picks alike; engines still put the result
 * in their argument signature (bpc__agree_args). Errors: BPC_EALGO.
 */
int bpc__algo_pick(bpc_ctx_t *ctx, const bpc__engine_t *e, const char *arg, void *tune_arg,
                   const bpc__algo_t **row, bpc_algo_source_t *source);

/* Copy an engine's rows out (the body of bpc_algorithms). */
int bpc__algo_table(const bpc__engine_t *e, bpc_algo_info_t *table, int cap, int *n);

/* Every engine's table, for bpc_algorithms (lib/engines/engines.c). */
extern const bpc__engine_t *const bpc__engines[];
extern const int bpc__nengines;

#endif /* BPC_LIB_CORE_REGISTRY_H */
