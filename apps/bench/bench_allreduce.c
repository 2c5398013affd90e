/*
 * apps/bench/bench_allreduce.c - `bpc-bench allreduce`: the all-reduce
 * engine (bpc_allreduce) against MPI_Allreduce.
 *
 * n = p * blocks-per-proc blocks (contiguous assignment), each with B
 * bytes (--bytes) of floats whose values are small integers (sums exact in
 * any order). bpc: bpc_allreduce with bpc's built-in "sum", every row of
 * the table ("auto" runs them all, and bpc's own choice as "auto"). Baseline:
 * the rank folds its blocks in order, then one MPI_Allreduce(MPI_SUM) on a
 * duplicate of the world and a copy of the result into its other blocks.
 * Each side restores its input from a pristine copy before every run
 * (untimed) and checks every element of every block against the expected
 * sum. The model's lower bound per rank: 2 (p-1)/p B bytes (reduce-scatter
 * + allgather), in ceil(log2 p) messages.
 */
#include "bench.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct ar_state {
  bench_env_t *env;
  bpc_assign_t *assign;
  MPI_Comm comm;
  MPI_Op sum;
  const int *gids;
  int nlocal, n;
  size_t count;          /* floats per block */
  float *orig, *wb, *wm; /* nlocal * count each: pristine, bpc's, MPI's */
  bpc_buf_t *bufs;       /* bpc's items (views into wb) */
  bpc_type_t type;
  bpc_op_t op;
  bpc_allreduce_params_t params;
} ar_state_t;

static float ar_val(int gid, size_t e) { return (float)((gid * 7 + (int)(e % 13)) % 16); }

static int ar_prepare(void *st, int rep, int is_bpc)
{
  ar_state_t *s = st;
  (void)rep;
  memcpy(is_bpc ? s->wb : s->wm, s->orig, (size_t)s->nlocal * s->count * sizeof(float));
  return 0;
}

static int ar_run_bpc(void *st)
{
  ar_state_t *s = st;
  return bpc_allreduce(s->env->ctx, s->assign, &s->type, s->bufs, &s->op, &s->params, NULL);
}

static int ar_run_baseline(void *st)
{
  ar_state_t *s = st;
  float *acc = s->wm; /* the first local block folds the others, in order */
  for (int l = 1; l < s->nlocal; l++)
    s->op.fn(s->wm + (size_t)l * s->count, acc, s->count, 0, NULL);
  int mrc = MPI_Allreduce(MPI_IN_PLACE, acc, (int)s->count, MPI_FLOAT, s->sum, s->comm);
  for (int l = 1; l < s->nlocal; l++)
    memcpy(s->wm + (size_t)l * s->count, acc, s->count * sizeof(float));
  return mrc == MPI_SUCCESS ? 0 : BPC_EMPI;
}

static int ar_check(void *st, int *correct)
{
  ar_state_t *s = st;
  int ok = 1;
  for (size_t e = 0; e < s->count && ok; e++) {
    float want = 0.0f;
    for (int g = 0; g < s->n; g++)
      want += ar_val(g, e);
    for (int l = 0; l < s->nlocal && ok; l++)
      ok = s->wb[(size_t)l * s->count + e] == want && s->wm[(size_t)l * s->count + e] == want;
  }
  *correct = ok;
  return 0;
}

static void ar_free(ar_state_t *s)
{
  free(s->orig);
  free(s->wb);
  free(s->wm);
  free(s->bufs);
  s->orig = s->wb = s->wm = NULL;
  s->bufs = NULL;
}

static int ar_alloc(ar_state_t *s, size_t bytes)
{
  ar_free(s);
  s->count = bytes / sizeof(float);
  const size_t all = (size_t)s->nlocal * s->count;
  s->orig = malloc(all * sizeof(float) + 1);
  s->wb = malloc(all * sizeof(float) + 1);
  s->wm = malloc(all * sizeof(float) + 1);
  s->bufs = calloc((size_t)s->nlocal + 1, sizeof *s->bufs);
  if (!s->orig || !s->wb || !s->wm || !s->bufs)
    return BPC_ENOMEM;
  for (int l = 0; l < s->nlocal; l++) {
    for (size_t e = 0; e < s->count; e++)
      s->orig[(size_t)l * s->count + e] = ar_val(s->gids[l], e);
    s->bufs[l].data = s->wb + (size_t)l * s->count;
    s->bufs[l].count = s->count;
  }
  return 0;
}

static const size_t ar_default_bytes[] = {16, 64 << 10, 1 << 20};

static int ar_run(bench_env_t *env)
{
  ar_state_t s;
  const size_t *sizes;
  const char *algos[BENCH_MAX_ALGOS];
  const int nsizes = bench_sizes(env, &sizes);
  const int nalgos = bench_algorithms(env, algos, BENCH_MAX_ALGOS);
  int ret = BENCH_EXIT_FAIL;

  memset(&s, 0, sizeof s);
  s.env = env;
  s.comm = MPI_COMM_NULL;
  s.sum = MPI_OP_NULL;
  const int bpp = bench_blocks_per_proc(env);
  for (int i = 0; i < nsizes; i++)
    if (sizes[i] % 4 != 0 || sizes[i] == 0 || sizes[i] / 4 > (size_t)INT_MAX) {
      if (env->rank == 0)
        bench_error(env, "allreduce: --bytes %zu: want a positive multiple of 4 (floats)",
                    sizes[i]);
      return BENCH_EXIT_USAGE;
    }
  s.n = bpp * env->size;
  int rc = bpc_assign_create(env->ctx, s.n, BPC_ASSIGN_CONTIGUOUS, NULL, &s.assign);
  if (rc == BPC_OK)
    rc = bpc_assign_local(s.assign, &s.gids, &s.nlocal);
  if (rc == BPC_OK && MPI_Comm_dup(MPI_COMM_WORLD, &s.comm) != MPI_SUCCESS)
    rc = BPC_EMPI;
  if (rc == BPC_OK && bench_mpi_sum_float(&s.sum) != 0)
    rc = BPC_EMPI;
  if (bench_agree(env, rc) != 0) {
    bench_error(env, "allreduce: setup failed: %s", bpc_err_name(rc));
    goto cleanup;
  }
  s.type = bpc_type_contiguous(sizeof(float), MPI_FLOAT);
  bpc_op_builtin("sum", MPI_FLOAT, &s.op);
  s.params = bpc_allreduce_params_default();

  ret = BENCH_EXIT_OK;
  int lg = 0;
  while ((1 << lg) < env->size)
    lg++;
  for (int si = 0; si < nsizes && ret == BENCH_EXIT_OK; si++) {
    rc = ar_alloc(&s, sizes[si]);
    if (bench_agree(env, rc) != 0) {
      if (rc != 0)
        bench_error(env, "allreduce: out of memory for items of %zu bytes", sizes[si]);
      ret = BENCH_EXIT_FAIL;
      break;
    }
    for (int ai = 0; ai < nalgos && ret == BENCH_EXIT_OK; ai++) {
      bench_case_t c;
      memset(&c, 0, sizeof c);
      s.params.algorithm = algos[ai];
      c.algorithm = algos[ai];
      c.baseline = "MPI_Allreduce(SUM)";
      c.nblocks = s.n;
      c.bytes = sizes[si];
      c.lower_bound_bytes =
          env->size > 1 ? 2 * (uint64_t)(env->size - 1) * sizes[si] / (uint64_t)env->size : 0;
      c.lower_bound_msgs = (uint64_t)lg;
      c.state = &s;
      c.prepare = ar_prepare;
      c.run_bpc = ar_run_bpc;
      c.run_baseline = ar_run_baseline;
      c.check = ar_check;
      ret = bench_run_case(env, &c);
    }
  }

cleanup:
  ar_free(&s);
  bench_mpi_op_free(&s.sum);
  if (s.comm != MPI_COMM_NULL)
    MPI_Comm_free(&s.comm);
  bpc_assign_destroy(&s.assign);
  return ret;
}

static const char *const ar_variants[] = {"auto", NULL};

const bench_engine_t bench_engine_allreduce = {
    .name = "allreduce",
    .desc = "all-reduce (bpc_allreduce) vs MPI_Allreduce, float sums",
    .registry = "allreduce",
    .algorithms = ar_variants,
    .auto_algorithms = BENCH_AUTO_ALL,
    .uses_k = 0,
    .default_bytes = ar_default_bytes,
    .n_default_bytes = (int)(sizeof ar_default_bytes / sizeof ar_default_bytes[0]),
    .default_blocks_per_proc = 1,
    .options = NULL,
    .notes = "  n = p * blocks-per-proc blocks (contiguous), each B bytes of floats; bpc:\n"
             "  bpc_allreduce with the built-in sum, every row and bpc's own choice (auto).\n"
             "  Baseline: the rank folds its blocks, then MPI_Allreduce(MPI_SUM).\n",
    .run = ar_run,
};
