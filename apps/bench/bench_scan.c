/*
 * apps/bench/bench_scan.c - bpc-bench scan: the prefix scan (bpc_scan,
 * every global algorithm of bpc_algorithms("scan")) against MPI_Exscan with
 * the same user MPI_Op, on an operator of fixed CPU cost (busy work).
 *
 * n = p * blocks-per-proc blocks (contiguous), --items items per block, an
 * item is a 2x2 matrix of uint32 (16 bytes), the operator the matrix
 * product (non-commutative) after --op-ms milliseconds of busy waiting.
 * bpc: bpc_scan inclusive, scan-then-propagate. Baseline: each rank scans
 * its items sequentially, MPI_Exscan of the rank totals with a
 * non-commutative MPI_Op (Open MPI's default: a chain; recursive doubling
 * with OMPI_MCA_coll_tuned_use_dynamic_rules=1
 * OMPI_MCA_coll_tuned_scan_algorithm=2 ... for MPI_Scan), then the prefix
 * applied to every item. The JSON line (--json) adds the model's bound
 * (the larger of critical-path calls x cost and total calls x cost / cores)
 * and the operator calls of the busiest rank; on stderr rank 0 prints them
 * for the table too.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

typedef struct scan_state {
  bench_env_t *env;
  bpc_assign_t *assign;
  const int *gids;
  int nlocal, n, items;
  double op_s;
  bpc_type_t type;
  bpc_scan_op_t op;
  bpc_scan_params_t params;
  bpc_buf_t *in, *out;
  uint32_t *base; /* baseline results, nlocal * items matrices */
  MPI_Datatype m4;
  MPI_Op mop;
  long long ops_max;
} scan_state_t;

static double g_op_s; /* the busy time of one operator call */

static void busy(void)
{
  const double t0 = MPI_Wtime();
  while (MPI_Wtime() - t0 < g_op_s) {
  }
}

static void matmul(const uint32_t *a, const uint32_t *b, uint32_t *c)
{
  uint32_t t[4] = {a[0] * b[0] + a[1] * b[2], a[0] * b[1] + a[1] * b[3],
                   a[2] * b[0] + a[3] * b[2], a[2] * b[1] + a[3] * b[3]};
  memcpy(c, t, sizeof t);
}

static int scan_op(const void *l, const void *r, void *res, void *user)
{
  (void)user;
  busy();
  matmul(l, r, res);
  return 0;
}

/* MPI: inout = in op inout (in holds the lower ranks' prefix). */
static void mpi_op(void *in, void *inout, int *len, MPI_Datatype *dt)
{
  (void)dt;
  for (int i = 0; i < *len; i++) {
    busy();
    matmul((uint32_t *)in + 4 * i, (uint32_t *)inout + 4 * i, (uint32_t *)inout + 4 * i);
  }
}

static void item(int g, int i, uint32_t *m)
{
  m[0] = 1u + (uint32_t)(g * 7 + i) % 3u;
  m[1] = (uint32_t)(g + 2 * i) % 2u;
  m[2] = (uint32_t)(g * 3 + i) % 2u;
  m[3] = 1u;
}

static int prepare(void *st, int rep, int is_bpc)
{
  (void)rep;
  scan_state_t *s = st;
  for (int l = 0; l < s->nlocal && is_bpc; l++) {
    for (int i = 0; i < s->items; i++)
      item(s->gids[l], i, (uint32_t *)s->in[l].data + 4 * i);
    s->out[l].count = 0;
    memset(s->out[l].data, 0, 16 * (size_t)s->items);
  }
  return 0;
}

static int run_bpc(void *st)
{
  scan_state_t *s = st;
  return bpc_scan(s->env->ctx, s->assign, &s->type, BPC_SCAN_INCLUSIVE, s->in, s->out, &s->op,
                  &s->params, NULL);
}

static int run_baseline(void *st)
{
  scan_state_t *s = st;
  uint32_t tot[4] = {1, 0, 0, 1}, pre[4] = {1, 0, 0, 1};
  int have = 0;
  for (int l = 0; l < s->nlocal; l++)
    for (int i = 0; i < s->items; i++) {
      uint32_t *o = s->base + 4 * ((size_t)l * s->items + i);
      const uint32_t *x = (const uint32_t *)s->in[l].data + 4 * i;
      if (have) {
        busy();
        matmul(tot, x, o);
      } else {
        memcpy(o, x, 16);
      }
      memcpy(tot, o, 16);
      have = 1;
    }
  if (MPI_Exscan(tot, pre, 1, s->m4, s->mop, MPI_COMM_WORLD) != MPI_SUCCESS)
    return BPC_EMPI;
  if (s->env->rank > 0)
    for (int k = 0; k < s->nlocal * s->items; k++) {
      busy();
      matmul(pre, s->base + 4 * k, s->base + 4 * k);
    }
  return 0;
}

static int check(void *st, int *correct)
{
  scan_state_t *s = st;
  *correct = 1;
  for (int l = 0; l < s->nlocal; l++)
    if (s->out[l].count != (size_t)s->items ||
        memcmp(s->out[l].data, s->base + 4 * (size_t)l * s->items, 16 * (size_t)s->items) != 0)
      *correct = 0;
  return 0;
}

static int scan_run(bench_env_t *env)
{
  scan_state_t s;
  memset(&s, 0, sizeof s);
  s.env = env;
  const char *ms = bench_eopt(env, "op-ms"), *it = bench_eopt(env, "items");
  double op_ms = ms != NULL ? strtod(ms, NULL) : 1.0;
  s.items = it != NULL ? atoi(it) : 1;
  if (!(op_ms >= 0 && op_ms < 1e4) || s.items < 1 || s.items > 1 << 20) {
    if (env->rank == 0)
      bench_error(env, "scan: --op-ms wants 0..1e4, --items 1..2^20");
    return BENCH_EXIT_USAGE;
  }
  g_op_s = s.op_s = op_ms * 1e-3;
  const int bpp = bench_blocks_per_proc(env);
  s.n = bpp * env->size;
  const char *algos[BENCH_MAX_ALGOS];
  const int nalgos = bench_algorithms(env, algos, BENCH_MAX_ALGOS);
  int ret = BENCH_EXIT_FAIL;
  int rc = bpc_assign_create(env->ctx, s.n, BPC_ASSIGN_CONTIGUOUS, NULL, &s.assign);
  if (rc == BPC_OK)
    rc = bpc_assign_local(s.assign, &s.gids, &s.nlocal);
  s.in = calloc((size_t)s.nlocal + 1, sizeof *s.in);
  s.out = calloc((size_t)s.nlocal + 1, sizeof *s.out);
  s.base = calloc((size_t)s.nlocal * s.items + 1, 16);
  if (rc == BPC_OK && (s.in == NULL || s.out == NULL || s.base == NULL))
    rc = BPC_ENOMEM;
  for (int l = 0; l < s.nlocal && rc == BPC_OK; l++) {
    s.in[l].count = (size_t)s.items;
    s.in[l].data = malloc(16 * (size_t)s.items);
    s.out[l].data = malloc(16 * (size_t)s.items);
    if (s.in[l].data == NULL || s.out[l].data == NULL)
      rc = BPC_ENOMEM;
  }
  if (rc == BPC_OK && (MPI_Type_contiguous(4, MPI_UINT32_T, &s.m4) != MPI_SUCCESS ||
                       MPI_Type_commit(&s.m4) != MPI_SUCCESS ||
                       MPI_Op_create(mpi_op, 0, &s.mop) != MPI_SUCCESS))
    rc = BPC_EMPI;
  if (bench_agree(env, rc) != 0) {
    bench_error(env, "scan: setup failed: %s", bpc_err_name(rc));
    goto cleanup;
  }
  s.type = bpc_type_contiguous(16, MPI_BYTE);
  s.op.fn = scan_op;
  ret = BENCH_EXIT_OK;
  for (int a = 0; a < nalgos && ret == BENCH_EXIT_OK; a++) {
    s.params = bpc_scan_params_default();
    s.params.algorithm = algos[a];
    s.params.op_seconds = s.op_s;
    s.params.nthreads = 1;
    char extra[256];
    /* model bound of the bpc run (scan-then-propagate, one core per rank):
     * computed from the counts of the first timed run, see doc/scan.md */
    bench_case_t c;
    memset(&c, 0, sizeof c);
    c.algorithm = algos[a];
    c.baseline = "MPI_Exscan+user op";
    c.nblocks = s.n;
    c.bytes = 16;
    c.state = &s;
    c.prepare = prepare;
    c.run_bpc = run_bpc;
    c.run_baseline = run_baseline;
    c.check = check;
    /* one untimed run for the counts of the line's model bound */
    bpc_scan_info_t info;
    prepare(&s, 0, 1);
    rc = bpc_scan(env->ctx, s.assign, &s.type, BPC_SCAN_INCLUSIVE, s.in, s.out, &s.op, &s.params,
                  &info);
    if (bench_agree(env, rc) != 0) {
      bench_error(env, "scan %s: %s (%s)", algos[a], bpc_err_name(rc), bpc_last_error(env->ctx));
      ret = BENCH_EXIT_FAIL;
      break;
    }
    MPI_Allreduce(&info.ops_local, &s.ops_max, 1, MPI_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
    const double crit = (double)info.depth * s.op_s;
    const double work = (double)info.ops_total * s.op_s / env->size;
    const double bound = crit > work ? crit : work;
    snprintf(extra, sizeof extra,
             "\"op_ms\":%g,\"items\":%d,\"model_bound_s\":%.6f,\"ops_per_rank_max\":%lld,"
             "\"ops_total\":%lld,\"depth\":%lld",
             op_ms, s.items, bound, s.ops_max, info.ops_total, info.depth);
    c.extra_json = extra;
    if (env->rank == 0 && !env->opts->json)
      fprintf(stderr, "scan %s: model bound %.3f ms, %lld calls on the busiest rank, %lld in all, "
                      "depth %lld\n",
              algos[a], bound * 1e3, s.ops_max, info.ops_total, info.depth);
    ret = bench_run_case(env, &c);
  }
cleanup:
  for (int l = 0; l < s.nlocal && s.in != NULL; l++) {
    free(s.in[l].data);
    free(s.out[l].data);
  }
  free(s.in);
  free(s.out);
  free(s.base);
  if (s.mop != MPI_OP_NULL && s.mop != 0)
    MPI_Op_free(&s.mop);
  if (s.m4 != MPI_DATATYPE_NULL && s.m4 != 0)
    MPI_Type_free(&s.m4);
  bpc_assign_destroy(&s.assign);
  return ret;
}

static const size_t scan_default_bytes[] = {16};
static const bench_eopt_t scan_options[] = {
    {"op-ms", "MS", "operator cost in milliseconds of busy work (default 1)"},
    {"items", "K", "items per block (default 1)"},
    {NULL, NULL, NULL},
};

const bench_engine_t bench_engine_scan = {
    .name = "scan",
    .desc = "prefix scan (bpc_scan) vs MPI_Exscan with a user MPI_Op, expensive operator",
    .registry = "scan",
    .auto_algorithms = BENCH_AUTO_ROWS,
    .default_bytes = scan_default_bytes,
    .n_default_bytes = 1,
    .default_blocks_per_proc = 1,
    .options = scan_options,
    .notes = "  n = p * blocks-per-proc blocks, --items 2x2 uint32 matrices each (16 bytes),\n"
             "  the product after --op-ms of busy work. bpc: bpc_scan inclusive, every\n"
             "  algorithm; baseline: local chain + MPI_Exscan (non-commutative MPI_Op) +\n"
             "  propagate. JSON adds the model bound and the operator calls per rank.\n",
    .run = scan_run,
};
