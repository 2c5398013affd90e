/*
 * apps/bench/bench_agree.c - `bpc-bench agree`: what the fail-everywhere
 * rule costs a collective call (DESIGN's errors section; lib/comm/coll.h).
 *
 * Every engine entry makes two agreements around its schedule: the
 * argument agreement before any message (bpc__agree_args: each rank's
 * validity and the call's signature, one reduction of 2 n + 1 long longs
 * for n fields) and the outcome's agreement at the end (bpc__agree: the
 * lowest (code, rank), one MINLOC reduction). This benchmark times exactly
 * that pair, with a signature of typical size (--fields, default 10: an
 * engine's type, assignment, sizes and options):
 *  - bpc ("pair"): bpc__agree_args then bpc__agree, both with BPC_OK;
 *    "args": bpc__agree_args alone; "outcome": bpc__agree alone;
 *  - baseline: one MPI_Allreduce of one int (MPI_MIN) on a duplicate of
 *    the world, the cheapest collective an agreement could be.
 * Divide a line's bpc time by an engine's time at the same p (same run or
 * platform) for the share of that engine's call that the guarantee costs
 * (doc/scale.md). --bytes is ignored (one line per variant); correct is
 * "yes" when every rank got BPC_OK.
 */
#include "bench.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/coll.h"

typedef struct agree_state {
  bench_env_t *env;
  MPI_Comm comm;
  int variant; /* 0 pair, 1 args, 2 outcome */
  int fields;
  int last_rc;
} agree_state_t;

static int agree_run_bpc(void *st)
{
  agree_state_t *s = st;
  int rc = BPC_OK;
  if (s->variant != 2) {
    bpc__sig_t sig;
    bpc__sig_init(&sig);
    static const char *const names[] = {"f0", "f1", "f2", "f3", "f4", "f5", "f6", "f7",
                                        "f8", "f9", "f10", "f11", "f12", "f13", "f14", "f15",
                                        "f16", "f17", "f18", "f19", "f20", "f21", "f22", "f23"};
    for (int i = 0; i < s->fields; i++)
      bpc__sig_int(&sig, names[i], 1000 + i);
    rc = bpc__agree_args(s->env->ctx, "agree", BPC_OK, &sig);
  }
  if (rc == BPC_OK && s->variant != 1)
    rc = bpc__agree(s->env->ctx, BPC_OK);
  s->last_rc = rc;
  return rc;
}

static int agree_run_baseline(void *st)
{
  agree_state_t *s = st;
  int in = 0, out = 1;
  return MPI_Allreduce(&in, &out, 1, MPI_INT, MPI_MIN, s->comm) == MPI_SUCCESS && out == 0
             ? 0
             : BPC_EMPI;
}

static int agree_check(void *st, int *correct)
{
  agree_state_t *s = st;
  *correct = s->last_rc == BPC_OK;
  return 0;
}

static const char *const agree_algorithms[] = {"pair", "args", "outcome", NULL};
static const char *const agree_auto[] = {"pair", NULL};
static const size_t agree_default_bytes[] = {0};
static const bench_eopt_t agree_options[] = {
    {"fields", "N", "signature fields of the argument agreement (1-24, default 10)"},
    {NULL, NULL, NULL},
};

static int agree_run(bench_env_t *env)
{
  const char *names[BENCH_MAX_ALGOS];
  const int nalgos = bench_algorithms(env, names, BENCH_MAX_ALGOS);
  agree_state_t s;
  memset(&s, 0, sizeof s);
  s.env = env;
  s.fields = 10;
  const char *f = bench_eopt(env, "fields");
  if (f != NULL) {
    char *end = NULL;
    long v = strtol(f, &end, 10);
    if (end == f || *end != '\0' || v < 1 || v > BPC__SIG_MAX) {
      if (env->rank == 0)
        bench_error(env, "agree: --fields %s: want 1 to %d", f, BPC__SIG_MAX);
      return BENCH_EXIT_USAGE;
    }
    s.fields = (int)v;
  }
  if (bench_agree(env, MPI_Comm_dup(env->world, &s.comm) == MPI_SUCCESS ? 0 : BPC_EMPI) != 0) {
    bench_error(env, "agree: MPI_Comm_dup failed");
    return BENCH_EXIT_FAIL;
  }
  int ret = BENCH_EXIT_OK;
  char extra[64];
  snprintf(extra, sizeof extra, "\"fields\":%d", s.fields);
  for (int a = 0; a < nalgos && ret == BENCH_EXIT_OK; a++) {
    s.variant = strcmp(names[a], "pair") == 0 ? 0 : strcmp(names[a], "args") == 0 ? 1 : 2;
    bench_case_t c;
    memset(&c, 0, sizeof c);
    c.algorithm = names[a];
    c.baseline = "MPI_Allreduce(1 int)";
    c.nblocks = env->size;
    c.bytes = 0;
    c.extra_json = extra;
    c.state = &s;
    c.run_bpc = agree_run_bpc;
    c.run_baseline = agree_run_baseline;
    c.check = agree_check;
    ret = bench_run_case(env, &c);
  }
  MPI_Comm_free(&s.comm);
  return ret;
}

const bench_engine_t bench_engine_agree = {
    .name = "agree",
    .desc = "the two agreements of every collective call vs one MPI_Allreduce of an int",
    .algorithms = agree_algorithms,
    .auto_algorithms = agree_auto,
    .uses_k = 0,
    .default_bytes = agree_default_bytes,
    .n_default_bytes = 1,
    .default_blocks_per_proc = 1,
    .options = agree_options,
    .notes = "  bpc: pair = the argument agreement (bpc__agree_args, --fields signature\n"
             "  fields) then the outcome's (bpc__agree), as every engine call makes them;\n"
             "  args, outcome: each alone. Baseline: MPI_Allreduce of one int (MPI_MIN).\n"
             "  Its share of an engine's call: this line's time over the engine's at the\n"
             "  same p (doc/scale.md).\n",
    .run = agree_run,
};
