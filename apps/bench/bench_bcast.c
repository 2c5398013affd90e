/*
 * apps/bench/bench_bcast.c - bpc-bench bcast: the s-to-p broadcast
 * (bpc_bcast, every algorithm of its table) against the two things users
 * write instead, in the same run: one MPI_Allgatherv (zero counts on
 * ranks without sources) and s calls of MPI_Bcast (one per source, rooted
 * at its rank). Per configuration: blocks per process (--blocks-per-proc,
 * default 1: the paper's one block per processor), the source
 * distribution (--dist, default every one), s (--s, default 1, 2, p/4,
 * p/2, p) and B bytes per source item (--bytes, default 32, 1K, 16K).
 * Two result lines per configuration, one per baseline.
 */
#include "bench.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engines/bcast/bcast_internal.h"
#include "patterns/patterns.h"

typedef struct bc_state {
  bench_env_t *env;
  bpc_assign_t *a;
  const char *algo;
  int bcast_baseline; /* 1: s x MPI_Bcast, 0: MPI_Allgatherv */
  int n, s;
  const int *src;
  int *src_rank;
  size_t bytes;
  unsigned char *items;   /* s x bytes: the local sources' items (others unused) */
  bpc_buf_t *bufs;        /* per source */
  unsigned char *got;     /* s x bytes: bpc, first local block's copies */
  unsigned char *base;    /* s x bytes: the baseline's result */
  unsigned char *mine;    /* the local sources' items, concatenated (allgatherv) */
  int *counts, *displs;   /* allgatherv, in bytes */
  int first;              /* the first local gid, or -1 */
  long long delivered;
  int rep;
  int reposition, partition;
} bc_state_t;

static int bc_item(int src, const void **item, void *user)
{
  bc_state_t *S = user;
  for (int i = 0; i < S->s; i++)
    if (S->src[i] == src) {
      *item = &S->bufs[i];
      return 0;
    }
  return 1;
}

static int bc_recv(int dst, int src, void *item, void *user)
{
  bc_state_t *S = user;
  const bpc_buf_t *b = item;
  S->delivered++;
  if (dst != S->first)
    return 0;
  int i = 0;
  while (i < S->s && S->src[i] != src)
    i++;
  if (i == S->s || b->count != S->bytes)
    return 2;
  memcpy(S->got + (size_t)i * S->bytes, b->data, S->bytes);
  return 0;
}

static int bc_prepare(void *st, int rep, int is_bpc)
{
  bc_state_t *S = st;
  S->rep = rep;
  (void)is_bpc;
  for (int i = 0; i < S->s; i++)
    if (S->src_rank[i] == S->env->rank)
      bench_pattern_fill(S->items + (size_t)i * S->bytes, S->bytes, (uint64_t)S->src[i] + 1, rep,
                         0, S->bytes / 8);
  size_t off = 0;
  for (int i = 0; i < S->s; i++)
    if (S->src_rank[i] == S->env->rank) {
      memcpy(S->mine + off, S->items + (size_t)i * S->bytes, S->bytes);
      memcpy(S->base + (size_t)i * S->bytes, S->items + (size_t)i * S->bytes, S->bytes);
      off += S->bytes;
    }
  return 0;
}

/* A variant's bpc_bcast parameters: lib_auto (the library's own choice,
 * flags included), <row>+r (repositioned), <row>+p (partitioned), <row>+rp;
 * name (32 bytes) holds the algorithm P points to. */
static bpc_bcast_params_t bc_params(const bc_state_t *S, const char *algo, char *name)
{
  bpc_bcast_params_t P = bpc_bcast_params_default();
  snprintf(name, 32, "%s", strcmp(algo, "lib_auto") == 0 ? "auto" : algo);
  char *plus = strchr(name, '+');
  P.reposition = S->reposition || (plus != NULL && strchr(plus, 'r') != NULL);
  P.partition = S->partition || (plus != NULL && strchr(plus, 'p') != NULL);
  if (plus != NULL)
    *plus = '\0';
  P.algorithm = name;
  return P;
}

static int bc_run_bpc(void *st)
{
  bc_state_t *S = st;
  bpc_type_t t = bpc_type_contiguous(1, MPI_BYTE);
  char name[32];
  const bpc_bcast_params_t P = bc_params(S, S->algo, name);
  S->delivered = 0;
  return bpc_bcast(S->env->ctx, S->a, &t, S->src, S->s, bc_item, bc_recv, S, &P, NULL);
}

static int bc_run_baseline(void *st)
{
  bc_state_t *S = st;
  int rc = MPI_SUCCESS;
  if (S->bcast_baseline) {
    for (int i = 0; i < S->s && rc == MPI_SUCCESS; i++)
      rc = MPI_Bcast(S->base + (size_t)i * S->bytes, (int)S->bytes, MPI_BYTE, S->src_rank[i],
                     S->env->world);
  } else {
    /* sources are ascending gids; the rank-order concatenation is gid
     * order only for a contiguous assignment (which this bench uses) */
    rc = MPI_Allgatherv(S->mine, S->counts[S->env->rank], MPI_BYTE, S->base, S->counts,
                        S->displs, MPI_BYTE, S->env->world);
  }
  return rc == MPI_SUCCESS ? 0 : BPC_EMPI;
}

static int bc_check(void *st, int *correct)
{
  bc_state_t *S = st;
  int ok = 1;
  for (int i = 0; i < S->s; i++) {
    if (!bench_pattern_ok(S->base + (size_t)i * S->bytes, S->bytes, (uint64_t)S->src[i] + 1,
                          S->rep))
      ok = 0;
    if (S->first >= 0 &&
        !bench_pattern_ok(S->got + (size_t)i * S->bytes, S->bytes, (uint64_t)S->src[i] + 1,
                          S->rep))
      ok = 0;
  }
  if (!ok)
    bench_error(S->env, "bcast: %s: wrong item data", S->algo);
  *correct = ok;
  return 0;
}

static const size_t bc_default_bytes[] = {32, 1024, 16384};
/* After the registry's rows: the library's auto as a line of its own, and
 * the repositioned and partitioned variants (the paper's repos_* and
 * part_*). */
static const char *const bc_variants[] = {
    "lib_auto",   "br_lin+r", "br_xy_source+r", "br_xy_dim+r",     "xor+r",
    "br_lin+p",   "br_xy_source+p", "br_lin+rp", "br_xy_source+rp", NULL};
static const bench_eopt_t bc_options[] = {
    {"dist", "NAME", "source distribution: row, col, equal, rdiag, ldiag, band, cross, block, "
                     "random (default: every one)"},
    {"s", "N", "number of sources (default: 1, 2, p/4, p/2, p)"},
    {"reposition", NULL, "move the sources to each algorithm's ideal distribution first"},
    {"partition", NULL, "run each algorithm in two halves, then one exchange between them"},
    {"calibrate", NULL, "no benchmark: measure alpha and beta of auto's cost model by ping-pong "
                        "between ranks 0 and 1 and print them as BPC_BCAST_ALPHA/BETA"},
    {NULL, NULL, NULL},
};

/* Half the round trip of `bytes` between ranks 0 and 1, the median of
 * 15 batches of 20 (rank 0's value; other ranks wait in the barriers). */
static double bc_pingpong(bench_env_t *env, unsigned char *buf, int bytes)
{
  double t[15];
  for (int b = 0; b < 15; b++) {
    MPI_Barrier(env->world);
    const double t0 = MPI_Wtime();
    for (int i = 0; i < 20 && env->rank < 2; i++) {
      if (env->rank == 0) {
        MPI_Send(buf, bytes, MPI_BYTE, 1, 7, env->world);
        MPI_Recv(buf, bytes, MPI_BYTE, 1, 7, env->world, MPI_STATUS_IGNORE);
      } else {
        MPI_Recv(buf, bytes, MPI_BYTE, 0, 7, env->world, MPI_STATUS_IGNORE);
        MPI_Send(buf, bytes, MPI_BYTE, 0, 7, env->world);
      }
    }
    t[b] = (MPI_Wtime() - t0) / 40.0;
  }
  for (int i = 1; i < 15; i++) /* insertion sort: the median */
    for (int j = i; j > 0 && t[j] < t[j - 1]; j--) {
      const double x = t[j];
      t[j] = t[j - 1];
      t[j - 1] = x;
    }
  return t[7];
}

/* --calibrate: alpha = the one-way time of an empty message, beta = the
 * extra time per byte of a 1 MiB one; printed as shell exports (rank 0),
 * which bpc_bcast's auto reads from the environment. */
static int bc_calibrate(bench_env_t *env)
{
  if (env->size < 2) {
    if (env->rank == 0)
      bench_error(env, "bcast --calibrate: needs at least 2 ranks");
    return BENCH_EXIT_USAGE;
  }
  const int big = 1 << 20;
  unsigned char *buf = calloc((size_t)big, 1);
  if (buf == NULL)
    return BENCH_EXIT_FAIL;
  bc_pingpong(env, buf, big); /* warm-up */
  const double t0 = bc_pingpong(env, buf, 0), t1 = bc_pingpong(env, buf, big);
  free(buf);
  double alpha = t0 > 1e-9 ? t0 : 1e-9, beta = (t1 - t0) / big;
  if (beta < 1e-13)
    beta = 1e-13;
  if (env->rank == 0)
    printf("# bpc-bench bcast --calibrate: ping-pong ranks 0-1, median of 15 x 20\n"
           "export BPC_BCAST_ALPHA=%.6g\nexport BPC_BCAST_BETA=%.6g\n",
           alpha, beta);
  return BENCH_EXIT_OK;
}

static int bc_run(bench_env_t *env)
{
  if (bench_eopt(env, "calibrate") != NULL)
    return bc_calibrate(env);
  const int bpp = bench_blocks_per_proc(env);
  const int n = bpp * env->size;
  const char *algos[BENCH_MAX_ALGOS];
  const int nalgos = bench_algorithms(env, algos, BENCH_MAX_ALGOS);
  const size_t *sizes;
  const int nsizes = bench_sizes(env, &sizes);
  int dists[BPC__BDIST_COUNT], nd = 0;
  const char *dopt = bench_eopt(env, "dist");
  for (int d = 0; d < BPC__BDIST_COUNT; d++)
    if (dopt == NULL || strcmp(dopt, bpc__bcast_dist_name(d)) == 0)
      dists[nd++] = d;
  if (nd == 0) {
    if (env->rank == 0)
      bench_error(env, "bcast: --dist '%s' is not a distribution", dopt);
    return BENCH_EXIT_USAGE;
  }
  int svals[5], ns = 0;
  const char *sopt = bench_eopt(env, "s");
  if (sopt != NULL) {
    svals[ns++] = atoi(sopt);
    if (svals[0] < 1 || svals[0] > n) {
      if (env->rank == 0)
        bench_error(env, "bcast: --s %s: want 1..%d", sopt, n);
      return BENCH_EXIT_USAGE;
    }
  } else {
    const int cand[5] = {1, 2, n / 4, n / 2, n};
    for (int i = 0; i < 5; i++)
      if (cand[i] >= 1 && cand[i] <= n && (ns == 0 || cand[i] > svals[ns - 1]))
        svals[ns++] = cand[i];
  }
  int r = 1;
  for (int d = 1; d * d <= n; d++)
    if (n % d == 0)
      r = d;
  bpc_assign_t *a = NULL;
  if (bpc_assign_create(env->ctx, n, BPC_ASSIGN_CONTIGUOUS, NULL, &a) != BPC_OK)
    return BENCH_EXIT_FAIL;
  const int *gids;
  int nl;
  bpc_assign_local(a, &gids, &nl);
  int ret = BENCH_EXIT_OK;
  int *src = malloc(sizeof(int) * (size_t)n), *src_rank = malloc(sizeof(int) * (size_t)n);
  int *counts = calloc((size_t)env->size, sizeof(int)), *displs = calloc((size_t)env->size,
                                                                         sizeof(int));
  for (int di = 0; di < nd && ret == BENCH_EXIT_OK; di++)
    for (int si = 0; si < ns && ret == BENCH_EXIT_OK; si++) {
      const int s = svals[si];
      bpc__bcast_dist(dists[di], r, n / r, s, 1u, src);
      int nmine = 0;
      for (int i = 0; i < s; i++) {
        bpc_assign_rank(a, src[i], &src_rank[i]);
        nmine += src_rank[i] == env->rank;
      }
      for (int zi = 0; zi < nsizes && ret == BENCH_EXIT_OK; zi++) {
        const size_t B = sizes[zi];
        bc_state_t S;
        memset(&S, 0, sizeof S);
        S.env = env;
        S.a = a;
        S.n = n;
        S.s = s;
        S.src = src;
        S.src_rank = src_rank;
        S.bytes = B;
        S.first = nl > 0 ? gids[0] : -1;
        S.reposition = bench_eopt(env, "reposition") != NULL;
        S.partition = bench_eopt(env, "partition") != NULL;
        S.items = calloc((size_t)s, B + 8);
        S.got = calloc((size_t)s, B + 8);
        S.base = calloc((size_t)s, B + 8);
        S.mine = calloc((size_t)nmine + 1, B + 8);
        S.bufs = calloc((size_t)s, sizeof *S.bufs);
        for (int i = 0; i < s; i++) {
          S.bufs[i].data = S.items + (size_t)i * B;
          S.bufs[i].count = B;
        }
        for (int q = 0; q < env->size; q++)
          counts[q] = 0;
        for (int i = 0; i < s; i++)
          counts[src_rank[i]] += (int)B;
        for (int q = 1; q < env->size; q++)
          displs[q] = displs[q - 1] + counts[q - 1];
        S.counts = counts;
        S.displs = displs;
        for (int k = 0; k < nalgos && ret == BENCH_EXIT_OK; k++) {
          /* auto's cost model beside the measurement: the variant's
           * modelled time (lib_auto: of what auto picks, named in
           * model_pick), computed untimed, on every rank alike */
          char name[32], pick[48] = "", extra[256];
          const bpc_bcast_params_t P = bc_params(&S, algos[k], name);
          double model = -1.0;
          if (bpc__bcast_model_time(env->ctx, a, src, s, r, n / r, (long long)B, P.algorithm,
                                    P.reposition, P.partition, &model, pick,
                                    sizeof pick) != BPC_OK)
            model = -1.0;
          snprintf(extra, sizeof extra,
                   "\"dist\":\"%s\",\"s\":%d,\"mesh\":\"%dx%d\",\"model_s\":%.6g,"
                   "\"model_pick\":\"%s\"",
                   bpc__bcast_dist_name(dists[di]), s, r, n / r, model, pick);
          for (int bl = 0; bl < 2 && ret == BENCH_EXIT_OK; bl++) {
            char name[64];
            snprintf(name, sizeof name, "%s-%s-s%d", algos[k], bpc__bcast_dist_name(dists[di]),
                     s);
            S.algo = algos[k];
            S.bcast_baseline = bl;
            bench_case_t c;
            memset(&c, 0, sizeof c);
            c.algorithm = name;
            c.baseline = bl ? "s x MPI_Bcast" : "MPI_Allgatherv";
            c.nblocks = n;
            c.bytes = B;
            /* a source's item must leave its process at least once */
            c.lower_bound_bytes = env->size > 1 ? (uint64_t)nmine * B : 0;
            c.lower_bound_msgs = env->size > 1 && nmine > 0 ? 1 : 0;
            c.extra_json = extra;
            c.state = &S;
            c.prepare = bc_prepare;
            c.run_bpc = bc_run_bpc;
            c.run_baseline = bc_run_baseline;
            c.check = bc_check;
            ret = bench_run_case(env, &c);
          }
        }
        free(S.items);
        free(S.got);
        free(S.base);
        free(S.mine);
        free(S.bufs);
      }
    }
  free(src);
  free(src_rank);
  free(counts);
  free(displs);
  bpc_assign_destroy(&a);
  return ret;
}

const bench_engine_t bench_engine_bcast = {
    .name = "bcast",
    .desc = "s-to-p broadcast vs MPI_Allgatherv and s x MPI_Bcast, per source distribution",
    .registry = "bcast",
    .algorithms = bc_variants,
    .auto_algorithms = BENCH_AUTO_ALL,
    .uses_k = 0,
    .default_bytes = bc_default_bytes,
    .n_default_bytes = 3,
    .default_blocks_per_proc = 1,
    .options = bc_options,
    .notes = "  s source blocks (a distribution on the near-square mesh of the blocks) each\n"
             "  hold B bytes; every block gets all s items. bpc: bpc_bcast, recv copies the\n"
             "  items of the first local block out (timed). Baselines, each on its own line:\n"
             "  one MPI_Allgatherv of the sources' items (packed once per repetition,\n"
             "  untimed) and s x MPI_Bcast rooted at each source's rank. Lines are named\n"
             "  <algorithm>-<dist>-s<s>. Variants after the registry's rows: lib_auto\n"
             "  (bpc_bcast's own auto, which also decides repositioning and partitioning),\n"
             "  <row>+r repositioned, <row>+p partitioned, <row>+rp both. JSON: model_s,\n"
             "  auto's cost model of the variant (lib_auto: of what auto picks, named\n"
             "  in model_pick). --calibrate: no benchmark, print BPC_BCAST_ALPHA/BETA\n"
             "  measured by ping-pong.\n"
             "  apps/bench/bcast_sweep.sh runs the whole sweep of doc/bcast.md.\n",
    .run = bc_run,
};
