/*
 * apps/bench/bench_tree.c - `bpc-bench tree`: the ordered OpenMP tree
 * reduction of lib/threads alone: bpp buffers (default 8 blocks of 16 MiB,
 * float4 over, bpc's built-in) reduced into one, with --threads T (default
 * 2) against the same tree with 1 thread; and "swap-local": bpc_swap of
 * bpp local blocks in one process (k = [bpp]) with T threads against 1
 * thread. Meant for -np 1.
 */
#define _GNU_SOURCE /* sched_getaffinity */
#include "bench.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "threads/threads.h"

#include "../common/app_mix.h"

typedef struct tr_state {
  bench_env_t *env;
  int m, T;
  size_t count; /* float4 elements per buffer */
  float **orig, **wb, **wm;
  int swap_local;
  bpc_assign_t *assign;
  bpc_swap_piece_t *pieces;
} tr_state_t;

/* Pixel e of buffer b: premultiplied RGBA, alpha in [0.1, 0.9]. */
static void tr_pixel(int b, size_t e, float *out)
{
  const uint64_t h = app_mix64(((uint64_t)b << 40) ^ (uint64_t)e);
  const float a = 0.1f + 0.8f * (float)(h & 1023u) / 1023.0f;
  out[0] = a * (float)((h >> 10) & 255u) / 255.0f;
  out[1] = a * (float)((h >> 18) & 255u) / 255.0f;
  out[2] = a * (float)((h >> 26) & 63u) / 63.0f;
  out[3] = a;
}

static int tr_prepare(void *st, int rep, int is_bpc)
{
  tr_state_t *s = st;
  (void)rep;
  for (int i = 0; i < s->m; i++)
    memcpy(is_bpc ? s->wb[i] : s->wm[i], s->orig[i], s->count * 16);
  return 0;
}

static int tr_run(tr_state_t *s, float **w, int T)
{
  if (s->swap_local) {
    bpc_op_t op;
    bpc_op_builtin("over", MPI_FLOAT, &op);
    bpc_swap_params_t P = bpc_swap_params_default();
    int k[1] = {s->m};
    P.algorithm = "radixk";
    P.k = s->m > 1 ? k : NULL;
    P.nk = s->m > 1 ? 1 : 0;
    P.nthreads = T;
    P.deterministic = 1;
    bpc_type_t t = bpc_type_contiguous(16, MPI_BYTE);
    return bpc_swap(s->env->ctx, s->assign, &t, (void *const *)w, s->count, &op, &P, s->pieces,
                    NULL);
  }
  bpc_op_t over;
  bpc_op_builtin("over", MPI_FLOAT, &over);
  bpc__tree_t t = {over.fn, NULL, 16, T, BPC__TREE_MIN_CHUNK};
  return bpc__tree_reduce(&t, (void *const *)w, s->m, -1, s->count, NULL, NULL) == 0
             ? 0
             : BPC_ECALLBACK;
}

static int tr_run_bpc(void *st)
{
  tr_state_t *s = st;
  return tr_run(s, s->wb, s->T);
}

static int tr_run_base(void *st)
{
  tr_state_t *s = st;
  return tr_run(s, s->wm, 1);
}

static int tr_check(void *st, int *correct)
{
  tr_state_t *s = st;
  int ok = 1;
  if (s->swap_local) {
    for (int i = 0; i < s->m && ok; i++)
      ok = memcmp(s->wb[i] + 4 * s->pieces[i].offset, s->wm[i] + 4 * s->pieces[i].offset,
                  s->pieces[i].count * 16) == 0;
  } else {
    ok = memcmp(s->wb[0], s->wm[0], s->count * 16) == 0;
  }
  if (!ok)
    bench_error(s->env, "tree: %d threads and 1 thread give different bits", s->T);
  *correct = ok;
  return 0;
}

static void tr_free(tr_state_t *s)
{
  for (int i = 0; i < s->m; i++) {
    if (s->orig)
      free(s->orig[i]);
    if (s->wb)
      free(s->wb[i]);
    if (s->wm)
      free(s->wm[i]);
  }
  free(s->orig);
  free(s->wb);
  free(s->wm);
  s->orig = s->wb = s->wm = NULL;
}

static const char *const tr_algorithms[] = {"tree", "swap-local", NULL};
static const size_t tr_default_bytes[] = {16 << 20};
static const bench_eopt_t tr_options[] = {
    {"threads", "N", "threads of the measured variant (default 2; baseline: 1)"},
    {NULL, NULL, NULL},
};

static int tr_run_all(bench_env_t *env)
{
  tr_state_t s;
  const size_t *sizes;
  const char *algos[BENCH_MAX_ALGOS];
  const int nsizes = bench_sizes(env, &sizes);
  const int nalgos = bench_algorithms(env, algos, BENCH_MAX_ALGOS);
  int ret = BENCH_EXIT_OK, rc;
  memset(&s, 0, sizeof s);
  s.env = env;
  s.m = bench_blocks_per_proc(env);
  s.T = bench_eopt(env, "threads") ? atoi(bench_eopt(env, "threads")) : 2;
  if (s.T < 1)
    s.T = 1;
#ifdef CPU_COUNT
  {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (env->rank == 0 && sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) < s.T)
      fprintf(stderr,
              "bpc-bench tree: warning: this process may run on %d CPU(s) only, fewer "
              "than %d threads (mpirun binds to a core by default: use --bind-to none)\n",
              CPU_COUNT(&set), s.T);
  }
#endif
  /* every rank reduces its own m blocks (gids r*m .. r*m+m-1) */
  int *map = malloc(sizeof(int) * (size_t)s.m * (size_t)env->size);
  for (int g = 0; g < s.m * env->size; g++)
    map[g] = g / s.m;
  rc = bpc_assign_create(env->ctx, s.m * env->size, BPC_ASSIGN_USER, map, &s.assign);
  free(map);
  s.pieces = calloc((size_t)s.m, sizeof *s.pieces);
  if (bench_agree(env, rc != BPC_OK || s.pieces == NULL) != 0) {
    bench_error(env, "tree: setup failed");
    ret = BENCH_EXIT_FAIL;
    goto cleanup;
  }
  for (int si = 0; si < nsizes && ret == BENCH_EXIT_OK; si++) {
    s.count = sizes[si] / 16;
    s.orig = calloc((size_t)s.m, sizeof(float *));
    s.wb = calloc((size_t)s.m, sizeof(float *));
    s.wm = calloc((size_t)s.m, sizeof(float *));
    rc = (s.orig && s.wb && s.wm) ? 0 : BPC_ENOMEM;
    for (int i = 0; i < s.m && rc == 0; i++) {
      s.orig[i] = malloc(s.count * 16 + 64);
      s.wb[i] = malloc(s.count * 16 + 64);
      s.wm[i] = malloc(s.count * 16 + 64);
      if (!s.orig[i] || !s.wb[i] || !s.wm[i]) {
        rc = BPC_ENOMEM;
        break;
      }
      for (size_t e = 0; e < s.count; e++)
        tr_pixel(env->rank * s.m + i, e, s.orig[i] + 4 * e);
      memcpy(s.wb[i], s.orig[i], s.count * 16);
      memcpy(s.wm[i], s.orig[i], s.count * 16);
    }
    if (bench_agree(env, rc) != 0) {
      bench_error(env, "tree: out of memory");
      ret = BENCH_EXIT_FAIL;
      tr_free(&s);
      break;
    }
    char extra[64];
    snprintf(extra, sizeof extra, "\"threads\":%d,\"op\":\"over\"", s.T);
    char bname[32];
    snprintf(bname, sizeof bname, "same, 1 thread");
    for (int ai = 0; ai < nalgos && ret == BENCH_EXIT_OK; ai++) {
      bench_case_t c;
      memset(&c, 0, sizeof c);
      char aname[48];
      snprintf(aname, sizeof aname, "%s-%dt", algos[ai], s.T);
      s.swap_local = strcmp(algos[ai], "swap-local") == 0;
      c.algorithm = aname;
      c.baseline = bname;
      c.nblocks = s.m * env->size;
      c.bytes = sizes[si];
      c.extra_json = extra;
      c.state = &s;
      c.prepare = tr_prepare;
      c.run_bpc = tr_run_bpc;
      c.run_baseline = tr_run_base;
      c.check = tr_check;
      ret = bench_run_case(env, &c);
    }
    tr_free(&s);
  }
cleanup:
  tr_free(&s);
  free(s.pieces);
  bpc_assign_destroy(&s.assign);
  return ret;
}

const bench_engine_t bench_engine_tree = {
    .name = "tree",
    .desc = "ordered OpenMP tree reduction (lib/threads), T threads vs 1",
    .algorithms = tr_algorithms,
    .auto_algorithms = NULL,
    .uses_k = 0,
    .default_bytes = tr_default_bytes,
    .n_default_bytes = 1,
    .default_blocks_per_proc = 8,
    .options = tr_options,
    .notes = "  Reduces blocks-per-proc float4 buffers (RGBA over) of the given size into one\n"
             "  with the ordered tree of lib/threads using --threads T (default 2); the\n"
             "  baseline is the same tree with 1 thread (ratio < 1: threads help; the\n"
             "  results must be bit-identical). swap-local: bpc_swap of the blocks of one\n"
             "  process (k = [blocks]) with T threads vs 1. Run with -np 1.\n",
    .run = tr_run_all,
};
