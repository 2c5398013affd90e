/*
 * apps/bench/bench_scan.c - bpc-bench scan: the prefix scan (bpc_scan, every
 * strategy x every global algorithm of bpc_algorithms("scan")) against
 * MPI_Scan with the same user MPI_Op, Open MPI's linear chain and its
 * recursive doubling in the same run, on an operator of fixed CPU cost.
 *
 * Items: a 2x2 uint32 matrix plus a depth word (20 bytes). The operator is
 * the matrix product (non-commutative, exactly associative mod 2^32, so
 * every variant must give the reference's bits) after a busy wait of
 * --op-ms milliseconds of this thread's CPU time (CLOCK_THREAD_CPUTIME_ID:
 * a call costs the same CPU whether or not the thread is descheduled, so on
 * an oversubscribed node the cores are the limit, as the model says). The
 * result's depth is max(left, right) + 1: the operator calls on the
 * longest dependency chain of every result, measured the same way for bpc
 * and MPI.
 *
 * N items in total (--n LIST; "p" = one per block) over n = p x
 * blocks-per-proc blocks, block g holding N/n items (+1 for g < N mod n).
 * bpc: bpc_scan inclusive, gid order. MPI: each rank scans its items, an
 * MPI_Scan of the rank totals (user MPI_Op, non-commutative) gives the last
 * item's result, a shift (MPI_Sendrecv, only when a rank has more than one
 * item) hands rank r the prefix of ranks < r, which is applied to its other
 * items. The two MPI variants run on two duplicates of the world whose
 * coll_tuned_scan_algorithm was set through MPI_T before MPI_Comm_dup (1
 * linear, 2 recursive doubling; needs OMPI_MCA_coll_tuned_use_dynamic_rules=1
 * at launch, else the recursive-doubling line is left out). Which algorithm
 * ran is verified from the operator calls inside MPI_Scan on every rank.
 *
 * Per repetition every variant runs once, the order rotated by one each
 * repetition; warm-up repetitions use a zero-cost operator. Per line: median
 * over reps (of the max over ranks), the model bound max(depth x cost,
 * total calls x cost / cores), ratios to it and to MPI_Scan linear, the
 * busiest rank's and all operator calls, the depth, whether the calls equal
 * the formulas (thesis Table 3.1; doc/scan.md), messages and bytes sent per
 * rank (bpc: measured; MPI: from Open MPI's schedule), and correctness.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

#define IW 5 /* words per item: m[4], depth */
#define IB ((size_t)IW * sizeof(uint32_t))
#define MAX_LIST 16
#define MAX_VARIANTS (6 * BENCH_MAX_ALGOS + 2)

enum { V_BPC, V_MPI_LINEAR, V_MPI_RD };

typedef struct variant {
  char name[48];
  int kind;         /* V_* */
  const char *algo; /* bpc: the registry name */
  int strategy;     /* bpc: bpc_scan_strategy_t */
  int lockstep;     /* bpc: --lockstep twin (BPC_SCAN_OVERLAP=0 for its calls) */
  int failed;       /* a bpc call failed: left out from then on */
  /* of the last timed run, this rank */
  long long calls, mpi_calls, ops_total, ops_global, depth_info;
  long long vdepth; /* depth measured in the results (max over ranks) */
  uint64_t msgs, bytes;
  int correct;
} variant_t;

typedef struct scan_bench {
  bench_env_t *env;
  int n, nlocal, items_local; /* blocks, local blocks, local items */
  const int *gids;
  bpc_assign_t *assign;
  bpc_type_t type;
  bpc_scan_op_t op;
  bpc_buf_t *in, *out;
  uint32_t *ref;  /* reference results of the local items */
  uint32_t *base; /* MPI variants' results */
  MPI_Datatype dt;
  MPI_Op mop;
  MPI_Comm comm[2]; /* linear, recursive doubling */
  int have_rd;
} scan_bench_t;

static double g_op_s;        /* busy CPU time of one operator call */
static long long g_mpi_calls; /* calls inside MPI_Scan on this rank */

#ifndef BPC_SMPI
static double thread_cpu(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
#endif

static void busy(void)
{
  if (g_op_s <= 0)
    return;
#ifdef BPC_SMPI
  /* simulated: the operator's cost is charged to the calling rank's
   * clock without spinning (every call is made in user code here, see
   * scan_totals) */
  smpi_execute_benched(g_op_s);
#else
  const double t0 = thread_cpu();
  while (thread_cpu() - t0 < g_op_s) {
  }
#endif
}

/* c = a op b, without the busy work (also the reference's operator) */
static void combine(const uint32_t *a, const uint32_t *b, uint32_t *c)
{
  uint32_t t[IW] = {a[0] * b[0] + a[1] * b[2], a[0] * b[1] + a[1] * b[3],
                    a[2] * b[0] + a[3] * b[2], a[2] * b[1] + a[3] * b[3],
                    (a[4] > b[4] ? a[4] : b[4]) + 1};
  memcpy(c, t, sizeof t);
}

static void op_call(const uint32_t *a, const uint32_t *b, uint32_t *c)
{
  busy();
  combine(a, b, c);
}

static int scan_op(const void *l, const void *r, void *res, void *user)
{
  (void)user;
  op_call(l, r, res);
  return 0;
}

/* MPI: inout = in op inout (in holds the lower ranks' prefix). */
static void mpi_op(void *in, void *inout, int *len, MPI_Datatype *dt)
{
  (void)dt;
  for (int i = 0; i < *len; i++) {
    g_mpi_calls++;
    op_call((uint32_t *)in + IW * i, (uint32_t *)inout + IW * i, (uint32_t *)inout + IW * i);
  }
}

/* item i of block g */
static void item(int g, long i, uint32_t *m)
{
  m[0] = 1u + (uint32_t)(g * 7 + i) % 3u;
  m[1] = (uint32_t)(g + 2 * i) % 2u;
  m[2] = (uint32_t)(g * 3 + i) % 2u;
  m[3] = 1u;
  m[4] = 0u;
}

static long block_count(long N, int n, int g)
{
  return N / n + (g < N % n);
}

static int log2up(int p)
{
  int k = 0;
  while ((1 << k) < p)
    k++;
  return k;
}

/* ------------------------------------------------------ the formulas */

/* Global-stage calls of algorithm `name` over P present totals: thesis
 * Table 3.1 for powers of two (Blelloch without its log2 P identity
 * calls, doc/scan.md), doc/scan.md's sums otherwise; -1 if unknown. */
static long long global_calls(const char *name, int P)
{
  const int K = log2up(P);
  const int pow2 = (1 << K) == P;
  long long w = 0;
  if (strcmp(name, "serial") == 0)
    return P - 1;
  if (strcmp(name, "blelloch") == 0)
    return 2LL * (P - 1) - K;
  if (strcmp(name, "kogge-stone") == 0) {
    if (pow2)
      return (long long)P * K - P + 1;
    for (int r = 0; r < K; r++)
      w += P - (1 << r);
    return w;
  }
  if (strcmp(name, "sklansky") == 0) {
    if (pow2)
      return (long long)P / 2 * K;
    for (int r = 0; r < K; r++)
      for (int q = 0; q < P; q++)
        w += (q >> r) & 1;
    return w;
  }
  if (strcmp(name, "brent-kung") == 0) {
    if (pow2)
      return P > 1 ? 2LL * P - K - 2 : 0;
    w = P - 1;
    for (int d = 0; d + 2 <= K; d++)
      for (int q = 0; q + 1 < P; q++)
        w += (q + 1) % (2 << d) == (1 << d) && q >= 3 * (1 << d) - 1;
    return w;
  }
  return -1;
}

/* Calls of a whole bpc_scan (inclusive, every block non-empty), given the
 * global stage's: local scans sum(c_g - 1); propagation per block after
 * the first c_g (scan-then-propagate), c_g - 1 (inclusive-global, but not
 * Blelloch, whose global stage is exclusive), c_g plus the first block's
 * c_0 - 1 (reduce-then-scan: it rescans every block). */
static long long total_calls(long N, int n, int strategy, const char *name, long long global)
{
  long long t = global + (N - n);
  const long long rest = N - block_count(N, n, 0);
  if (strategy == BPC_SCAN_REDUCE_THEN_SCAN)
    t += rest + (block_count(N, n, 0) - 1);
  else if (strategy == BPC_SCAN_INCLUSIVE_GLOBAL && strcmp(name, "blelloch") != 0)
    t += rest - (n - 1);
  else
    t += rest;
  return t;
}

/* Calls inside Open MPI's MPI_Scan on `rank` of P (one item): linear: one
 * per rank after the first; recursive doubling: per step, one (lower rank
 * of the pair) or two (higher rank: prefix and partial sum). */
static long long mpi_scan_calls(int kind, int rank, int P)
{
  if (kind == V_MPI_LINEAR)
    return rank > 0;
  long long c = 0;
  for (int mask = 1; mask < P; mask <<= 1) {
    int remote = rank ^ mask;
    if (remote < P)
      c += rank > remote ? 2 : 1;
  }
  return c;
}

/* ------------------------------------------------------------- runs */

static void prepare(scan_bench_t *s)
{
  for (int l = 0; l < s->nlocal; l++)
    for (size_t i = 0; i < s->in[l].count; i++) {
      item(s->gids[l], (long)i, (uint32_t *)s->in[l].data + IW * i);
      memset((uint32_t *)s->out[l].data + IW * i, 0, IB);
    }
  memset(s->base, 0, IB * (size_t)(s->items_local > 0 ? s->items_local : 1));
}

static int run_bpc(scan_bench_t *s, variant_t *v, bpc_scan_info_t *info)
{
  bpc_scan_params_t p = bpc_scan_params_default();
  p.algorithm = v->algo;
  p.strategy = (bpc_scan_strategy_t)v->strategy;
  p.op_seconds = g_op_s;
  p.nthreads = 0; /* OMP_NUM_THREADS */
  /* --lockstep: twins of every line, the same call with the lock-step
   * driver (bpc_scan reads BPC_SCAN_OVERLAP on every call) */
  if (bench_eopt(s->env, "lockstep") != NULL)
    setenv("BPC_SCAN_OVERLAP", v->lockstep ? "0" : "1", 1);
  for (int l = 0; l < s->nlocal; l++)
    s->out[l].count = 0;
  return bpc_scan(s->env->ctx, s->assign, &s->type, BPC_SCAN_INCLUSIVE, s->in, s->out, &s->op,
                  &p, info);
}

#ifdef BPC_SMPI
/* Under SMPI (3.32) MPI_Scan with a non-commutative operator returns the
 * rank's own value (its wait loop never applies the operator), so the MPI
 * lines run Open MPI's two algorithms written out with point-to-point
 * calls, step for step as Open MPI's coll/base does them: linear, rank r
 * receives the prefix of r - 1, applies it and sends the result on;
 * recursive doubling, per mask the pair exchanges partial sums, the
 * higher rank applies the lower's to its result and its partial sum, the
 * lower to its partial sum. The operator calls go through mpi_op, counted
 * as inside MPI_Scan, so the schedule check below still holds. */
static int scan_totals(scan_bench_t *s, int kind, const uint32_t *tot, uint32_t *incl,
                       MPI_Comm comm)
{
  const int rank = s->env->rank, size = s->env->size;
  int one = 1;
  uint32_t in[IW], part[IW];
  memcpy(incl, tot, IB);
  if (kind == V_MPI_LINEAR) {
    if (rank > 0) {
      if (MPI_Recv(in, 1, s->dt, rank - 1, 1, comm, MPI_STATUS_IGNORE) != MPI_SUCCESS)
        return BPC_EMPI;
      mpi_op(in, incl, &one, &s->dt);
    }
    if (rank + 1 < size && MPI_Send(incl, 1, s->dt, rank + 1, 1, comm) != MPI_SUCCESS)
      return BPC_EMPI;
    return 0;
  }
  memcpy(part, tot, IB);
  for (int mask = 1; mask < size; mask <<= 1) {
    const int remote = rank ^ mask;
    if (remote >= size)
      continue;
    if (MPI_Sendrecv(part, 1, s->dt, remote, 2, in, 1, s->dt, remote, 2, comm,
                     MPI_STATUS_IGNORE) != MPI_SUCCESS)
      return BPC_EMPI;
    if (rank > remote) {
      mpi_op(in, incl, &one, &s->dt);
      mpi_op(in, part, &one, &s->dt);
    } else { /* part = part op in: mpi_op computes inout = in op inout */
      uint32_t t[IW];
      memcpy(t, in, IB);
      mpi_op(part, t, &one, &s->dt);
      memcpy(part, t, IB);
    }
  }
  return 0;
}
#endif

/* Local chain, MPI_Scan of the totals, shift, propagate; returns the calls
 * made outside MPI_Scan in *calls. */
static int run_mpi(scan_bench_t *s, MPI_Comm comm, int kind, int shift, long long *calls)
{
  const int c = s->items_local, rank = s->env->rank, size = s->env->size;
  uint32_t tot[IW], incl[IW], pre[IW];
  long long k = 0;
  int rc = 0;
  for (int l = 0, j = 0; l < s->nlocal; l++)
    for (size_t i = 0; i < s->in[l].count; i++, j++) {
      const uint32_t *x = (const uint32_t *)s->in[l].data + IW * i;
      uint32_t *o = s->base + IW * (size_t)j;
      if (j > 0) {
        op_call(o - IW, x, o);
        k++;
      } else {
        memcpy(o, x, IB);
      }
    }
  memcpy(tot, s->base + IW * (size_t)(c - 1), IB);
#ifdef BPC_SMPI
  rc = scan_totals(s, kind, tot, incl, comm);
#else
  (void)kind;
  if (MPI_Scan(tot, incl, 1, s->dt, s->mop, comm) != MPI_SUCCESS)
    rc = BPC_EMPI;
#endif
  if (rc == 0 && shift &&
      MPI_Sendrecv(incl, 1, s->dt, rank + 1 < size ? rank + 1 : MPI_PROC_NULL, 0, pre, 1, s->dt,
                   rank > 0 ? rank - 1 : MPI_PROC_NULL, 0, comm, MPI_STATUS_IGNORE) != MPI_SUCCESS)
    rc = BPC_EMPI;
  if (rc == 0) {
    for (int j = 0; rank > 0 && j + 1 < c; j++, k++)
      op_call(pre, s->base + IW * (size_t)j, s->base + IW * (size_t)j);
    memcpy(s->base + IW * (size_t)(c - 1), incl, IB);
  }
  *calls = k;
  return rc;
}

/* Compare results with the reference (matrices only); the max depth. */
static int check(scan_bench_t *s, const variant_t *v, uint32_t *depth)
{
  int ok = 1;
  *depth = 0;
  for (int l = 0, j = 0; l < s->nlocal; l++) {
    if (v->kind == V_BPC && s->out[l].count != s->in[l].count)
      ok = 0;
    for (size_t i = 0; i < s->in[l].count; i++, j++) {
      const uint32_t *r = v->kind == V_BPC ? (const uint32_t *)s->out[l].data + IW * i
                                           : s->base + IW * (size_t)j;
      if (memcmp(r, s->ref + IW * (size_t)j, 4 * sizeof(uint32_t)) != 0)
        ok = 0;
      if (r[4] > *depth)
        *depth = r[4];
    }
  }
  return ok;
}

/* ----------------------------------------------------------- MPI_T */

/* Duplicate the world twice, coll_tuned_scan_algorithm set to 1 (linear)
 * and 2 (recursive doubling) through MPI_T before each MPI_Comm_dup; have_rd
 * says whether the second can be recursive doubling (dynamic rules on). */
#ifdef BPC_SMPI
/* SMPI has no MPI_T control variables: both communicators are plain
 * duplicates, and the MPI lines run scan_totals. */
static int make_comms(scan_bench_t *s)
{
  int rc = 0;
  for (int a = 0; a < 2 && rc == 0; a++)
    if (MPI_Comm_dup(MPI_COMM_WORLD, &s->comm[a]) != MPI_SUCCESS)
      rc = BPC_EMPI;
  s->have_rd = 1; /* both written out: scan_totals */
  return rc;
}
#else
static int make_comms(scan_bench_t *s)
{
  int provided, idx = -1, ridx = -1, dyn = 0, old = 0, rc = 0, tinit;
  MPI_T_cvar_handle h = MPI_T_CVAR_HANDLE_NULL, hr = MPI_T_CVAR_HANDLE_NULL;
  tinit = MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) == MPI_SUCCESS;
  if (tinit && MPI_T_cvar_get_index("coll_tuned_use_dynamic_rules", &ridx) == MPI_SUCCESS) {
    int cnt;
    if (MPI_T_cvar_handle_alloc(ridx, NULL, &hr, &cnt) == MPI_SUCCESS) {
      MPI_T_cvar_read(hr, &dyn);
      MPI_T_cvar_handle_free(&hr);
    }
  }
  if (tinit && MPI_T_cvar_get_index("coll_tuned_scan_algorithm", &idx) == MPI_SUCCESS) {
    int cnt;
    if (MPI_T_cvar_handle_alloc(idx, NULL, &h, &cnt) != MPI_SUCCESS || cnt != 1 ||
        MPI_T_cvar_read(h, &old) != MPI_SUCCESS)
      idx = -1;
  } else {
    idx = -1;
  }
  for (int a = 0; a < 2 && rc == 0; a++) {
    int val = a + 1;
    if (idx >= 0 && MPI_T_cvar_write(h, &val) != MPI_SUCCESS)
      idx = -1;
    if (MPI_Comm_dup(MPI_COMM_WORLD, &s->comm[a]) != MPI_SUCCESS)
      rc = BPC_EMPI;
  }
  if (idx >= 0)
    MPI_T_cvar_write(h, &old);
  if (h != MPI_T_CVAR_HANDLE_NULL)
    MPI_T_cvar_handle_free(&h);
  if (tinit)
    MPI_T_finalize();
  /* every rank alike: the smallest verdict */
  int mine = idx >= 0 && dyn != 0, all = 0;
  MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  s->have_rd = all;
  return rc;
}
#endif

/* Cores of the model: --cores, else per node min(online CPUs, ranks on the
 * node x OMP_NUM_THREADS), summed over nodes (simulated: ranks x threads,
 * bpc-smpirun places one rank on each core of a host). */
static int model_cores(const bench_env_t *env)
{
  const char *c = bench_eopt(env, "cores");
  if (c != NULL)
    return atoi(c);
  const char *t = getenv("OMP_NUM_THREADS");
  long thr = t != NULL ? atol(t) : 1, cpus = sysconf(_SC_NPROCESSORS_ONLN);
  MPI_Comm node;
  int lrank = 0, lsize = 1, mine = 0, all = 0;
  if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) ==
      MPI_SUCCESS) {
    MPI_Comm_rank(node, &lrank);
    MPI_Comm_size(node, &lsize);
    MPI_Comm_free(&node);
  }
  if (thr < 1)
    thr = 1;
  if (cpus < 1)
    cpus = 1;
#ifdef BPC_SMPI
  cpus = lsize * thr; /* simulated: a core for every rank of the host (bpc-smpirun) */
#endif
  if (lrank == 0)
    mine = (int)(cpus < lsize * thr ? cpus : lsize * thr);
  MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  return all > 0 ? all : 1;
}

/* ---------------------------------------------------------- options */

/* Parse a comma list of positive numbers (or "p" -> pval). */
static int parse_list(const char *text, double pval, double *out, int cap)
{
  int n = 0;
  const char *p = text;
  while (p != NULL && *p != '\0' && n < cap) {
    char *end;
    double v = (p[0] == 'p' || p[0] == 'P') ? (end = (char *)p + 1, pval) : strtod(p, &end);
    if (end == p || (*end != ',' && *end != '\0') || !(v >= 0))
      return -1;
    out[n++] = v;
    p = *end == ',' ? end + 1 : NULL;
  }
  return p == NULL ? n : -1;
}

static const struct {
  const char *key;
  int strategy;
} strategies[] = {
    {"stp", BPC_SCAN_SCAN_THEN_PROPAGATE},
    {"rts", BPC_SCAN_REDUCE_THEN_SCAN},
    {"ig", BPC_SCAN_INCLUSIVE_GLOBAL},
};

/* The variants: every strategy of --strategies x every algorithm, then the
 * MPI lines. Returns the count, or -1 on a bad --strategies. */
static int make_variants(bench_env_t *env, const scan_bench_t *s, variant_t *v)
{
  const char *algos[BENCH_MAX_ALGOS];
  const int na = bench_algorithms(env, algos, BENCH_MAX_ALGOS);
  const char *want = bench_eopt(env, "strategies");
  int nv = 0, bad = 0;
  if (want == NULL)
    want = "stp,rts,ig";
  for (const char *p = want; *p != '\0';) {
    size_t len = strcspn(p, ",");
    int found = 0;
    for (int k = 0; k < 3; k++)
      if (strlen(strategies[k].key) == len && strncmp(p, strategies[k].key, len) == 0) {
        found = 1;
        for (int a = 0; a < na && nv < MAX_VARIANTS - 2; a++, nv++) {
#ifdef BPC_SMPI
          /* bpc's 'mpi' row calls MPI_Scan/MPI_Exscan with a
           * non-commutative operator: wrong under SMPI 3.32 (see
           * scan_totals); left out of the simulated runs */
          if (strcmp(algos[a], "mpi") == 0) {
            nv--;
            continue;
          }
#endif
          memset(&v[nv], 0, sizeof v[nv]);
          v[nv].kind = V_BPC;
          v[nv].algo = algos[a];
          v[nv].strategy = strategies[k].strategy;
          snprintf(v[nv].name, sizeof v[nv].name, "%s:%s", strategies[k].key, algos[a]);
        }
      }
    bad |= !found;
    p += len + (p[len] == ',');
  }
  if (bench_eopt(env, "lockstep") != NULL)
    for (int i = 0, nb = nv; i < nb && nv < MAX_VARIANTS - 2; i++, nv++) {
      v[nv] = v[i];
      v[nv].lockstep = 1;
      const size_t len = strnlen(v[i].name, sizeof v[nv].name - 4);
      memcpy(v[nv].name + len, "/ls", 4);
    }
  for (int k = 0; k < 2; k++) {
    if (k == 1 && !s->have_rd)
      continue;
    memset(&v[nv], 0, sizeof v[nv]);
    v[nv].kind = k == 0 ? V_MPI_LINEAR : V_MPI_RD;
    snprintf(v[nv].name, sizeof v[nv].name, "MPI_Scan:%s", k == 0 ? "linear" : "recdbl");
    nv++;
  }
  return bad ? -1 : nv;
}

/* ---------------------------------------------------------- one config */

static int alloc_config(scan_bench_t *s, long N)
{
  int rc = BPC_OK;
  s->items_local = 0;
  for (int l = 0; l < s->nlocal; l++)
    s->items_local += (int)block_count(N, s->n, s->gids[l]);
  const size_t bytes = IB * (size_t)(s->items_local > 0 ? s->items_local : 1);
  s->ref = malloc(bytes);
  s->base = malloc(bytes);
  if (s->ref == NULL || s->base == NULL)
    rc = BPC_ENOMEM;
  for (int l = 0; l < s->nlocal && rc == BPC_OK; l++) {
    const size_t c = (size_t)block_count(N, s->n, s->gids[l]);
    s->in[l].count = c;
    s->in[l].data = malloc(IB * c);
    s->out[l].data = malloc(IB * c);
    if (s->in[l].data == NULL || s->out[l].data == NULL)
      rc = BPC_ENOMEM;
  }
  if (rc != BPC_OK)
    return rc;
  /* the reference: a serial chain over all N items (no busy work) */
  uint32_t run[IW], x[IW];
  const int g0 = s->nlocal > 0 ? s->gids[0] : s->n, g1 = g0 + s->nlocal;
  long j = 0;
  for (int g = 0; g < g1; g++)
    for (long i = 0; i < block_count(N, s->n, g); i++) {
      item(g, i, x);
      if (g == 0 && i == 0)
        memcpy(run, x, IB);
      else
        combine(run, x, run);
      if (g >= g0)
        memcpy(s->ref + IW * (size_t)j++, run, IB);
    }
  return BPC_OK;
}

static void free_config(scan_bench_t *s)
{
  for (int l = 0; l < s->nlocal; l++) {
    free(s->in[l].data);
    free(s->out[l].data);
    s->in[l].data = s->out[l].data = NULL;
  }
  free(s->ref);
  free(s->base);
  s->ref = s->base = NULL;
}

static void print_line(scan_bench_t *s, const variant_t *v, long N, double op_ms, int cores,
                       double med, double chain_med, const long long *agg, int calls_ok,
                       int correct)
{
  const bench_env_t *env = s->env;
  /* agg: calls max, calls total, depth, msgs max, bytes max */
  const double op_s = op_ms * 1e-3;
  const double crit = (double)agg[2] * op_s, work = (double)agg[1] * op_s / cores;
  const double bound = crit > work ? crit : work;
  const double xb = bound > 0 ? med / bound : 0, xc = chain_med > 0 ? med / chain_med : 0;
  const char *ok = calls_ok < 0 ? "n/a" : calls_ok ? "yes" : "NO";
  if (env->opts->json) {
    printf("{\"engine\":\"scan\",\"variant\":\"%s\",\"p\":%d,\"nblocks\":%d,\"n_items\":%ld,"
           "\"op_ms\":%g,\"cores\":%d,\"reps\":%d,\"failed\":%d,\"median_s\":%.9g,"
           "\"model_bound_s\":%.9g,\"x_bound\":%.6g,\"x_mpi_linear\":%.6g,"
           "\"calls_per_rank_max\":%lld,\"calls_total\":%lld,\"depth\":%lld,\"calls_ok\":%s,"
           "\"msgs_sent_max\":%lld,\"bytes_sent_max\":%lld,\"correct\":%d}\n",
           v->name, env->size, s->n, N, op_ms, cores, env->opts->reps, v->failed, med, bound, xb,
           xc, agg[0], agg[1], agg[2], calls_ok < 0 ? "null" : calls_ok ? "true" : "false",
           agg[3], agg[4], correct);
  } else if (v->failed) {
    printf("%-24s %3d %6ld %5d %6g  failed (see stderr)\n", v->name, env->size, N,
           (int)(N / s->n), op_ms);
  } else {
    printf("%-24s %3d %6ld %5d %6g %11.2f %10.2f %7.3f %7.3f %9lld %9lld %6lld %5s %5lld %7lld "
           "%4s\n",
           v->name, env->size, N, (int)(N / s->n), op_ms, med * 1e3, bound * 1e3, xb, xc, agg[0],
           agg[1], agg[2], ok, agg[3], agg[4], correct ? "yes" : "NO");
  }
  fflush(stdout);
}

static int cmp_double(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static int run_config(scan_bench_t *s, variant_t *v, int nv, long N, double op_ms, int cores)
{
  bench_env_t *env = s->env;
  const int reps = env->opts->reps, total = env->opts->warmup + reps;
  const int shift = N > env->size; /* some rank has more than one item */
  double *t = calloc((size_t)nv * reps, sizeof *t), *tmax = calloc((size_t)nv * reps, sizeof *t);
  int rc = bench_agree(env, t == NULL || tmax == NULL ? BPC_ENOMEM : alloc_config(s, N));
  if (rc != 0) {
    bench_error(env, "scan: setup for N=%ld failed: %s", N, bpc_err_name(rc));
    goto cleanup;
  }
  for (int i = 0; i < nv; i++)
    v[i].correct = 1;
  for (int rep = 0; rep < total; rep++) {
    const int timed = rep >= env->opts->warmup;
    g_op_s = timed ? op_ms * 1e-3 : 0.0; /* warm-up: zero-cost operator */
    for (int k = 0; k < nv; k++) {
      variant_t *x = &v[(k + rep) % nv];
      if (x->failed)
        continue;
      bpc_scan_info_t info;
      long long calls = 0;
      prepare(s);
      bpc_stats_reset(env->ctx);
      g_mpi_calls = 0;
      MPI_Barrier(MPI_COMM_WORLD);
      const double t0 = MPI_Wtime();
      int lrc = x->kind == V_BPC ? run_bpc(s, x, &info)
                                 : run_mpi(s, s->comm[x->kind == V_MPI_RD], x->kind, shift, &calls);
      const double t1 = MPI_Wtime();
      if (bench_agree(env, lrc) != 0) {
        if (lrc != 0)
          bench_error(env, "scan %s (N=%ld): %s (%s)", x->name, N, bpc_err_name(lrc),
                      x->kind == V_BPC ? bpc_last_error(env->ctx) : "MPI");
        x->failed = 1;
        continue;
      }
      uint32_t depth;
      x->correct &= check(s, x, &depth);
      if (timed)
        t[(size_t)((k + rep) % nv) * reps + (rep - env->opts->warmup)] = t1 - t0;
      if (x->kind == V_BPC) {
        bpc_counters_t cnt;
        memset(&cnt, 0, sizeof cnt);
        bpc_stats_total(env->ctx, &cnt);
        x->calls = info.ops_local;
        x->ops_total = info.ops_total;
        x->ops_global = info.ops_global;
        x->depth_info = info.depth;
        x->msgs = cnt.msgs_sent;
        x->bytes = cnt.bytes_sent;
      } else {
        /* Open MPI's schedule: linear sends one message (not the last
         * rank), recursive doubling one per step with a partner */
        int m = 0;
        if (x->kind == V_MPI_LINEAR)
          m = env->rank + 1 < env->size;
        else
          for (int mask = 1; mask < env->size; mask <<= 1)
            m += (env->rank ^ mask) < env->size;
        m += shift && env->rank + 1 < env->size;
        x->mpi_calls = g_mpi_calls;
        x->calls = calls + g_mpi_calls;
        x->msgs = (uint64_t)m;
        x->bytes = (uint64_t)m * IB;
      }
      /* depth measured in the values, max over ranks (untimed) */
      long long d = depth;
      MPI_Allreduce(&d, &x->vdepth, 1, MPI_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
    }
  }
  MPI_Allreduce(t, tmax, nv * reps, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);

  double chain = 0;
  double *med = calloc((size_t)nv, sizeof *med);
  for (int i = 0; med != NULL && i < nv; i++) {
    qsort(tmax + (size_t)i * reps, (size_t)reps, sizeof *tmax, cmp_double);
    const double *a = tmax + (size_t)i * reps;
    med[i] = reps % 2 ? a[reps / 2] : 0.5 * (a[reps / 2 - 1] + a[reps / 2]);
    if (v[i].kind == V_MPI_LINEAR && !v[i].failed)
      chain = med[i];
  }
  for (int i = 0; i < nv; i++) {
    variant_t *x = &v[i];
    /* per line: calls max, total, depth, msgs max, bytes max; checks */
    long long mine[5] = {x->calls, x->calls, x->vdepth, (long long)x->msgs, (long long)x->bytes},
              mx[5], sum[5];
    int bad = 0, known = 1;
    if (x->kind == V_BPC) {
      const long long g = global_calls(x->algo, s->n);
      known = g >= 0;
      bad = known && (x->ops_global != g ||
                      x->ops_total != total_calls(N, s->n, x->strategy, x->algo, g) ||
                      x->depth_info != x->vdepth);
    } else {
      long long exp = mpi_scan_calls(x->kind, env->rank, env->size);
      long long own = 0;
      for (int l = 0; l < s->nlocal; l++)
        own += (long long)s->in[l].count;
      exp += (own - 1) + (env->rank > 0 ? own - 1 : 0);
      bad = x->mpi_calls != mpi_scan_calls(x->kind, env->rank, env->size) || x->calls != exp;
    }
    int flags[3] = {bad, !x->correct, x->failed}, fl[3];
    MPI_Allreduce(mine, mx, 5, MPI_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
    MPI_Allreduce(mine, sum, 5, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(flags, fl, 3, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    long long agg[5] = {mx[0], x->kind == V_BPC ? x->ops_total : sum[1], mx[2], mx[3], mx[4]};
    if (fl[2])
      x->failed = 1;
    if (fl[1] || fl[2])
      env->nfail++; /* exit status 1 */
    if (env->rank == 0)
      print_line(s, x, N, op_ms, cores, med != NULL ? med[i] : 0, chain, agg,
                 known ? !fl[0] : -1, !fl[1]);
    x->failed = 0; /* the next configuration tries it again */
  }
  free(med);
cleanup:
  free(t);
  free(tmax);
  free_config(s);
  return rc;
}

/* ---------------------------------------------------------------- run */

static int scan_run(bench_env_t *env)
{
  scan_bench_t s;
  variant_t v[MAX_VARIANTS];
  double ops[MAX_LIST], ns[MAX_LIST];
  memset(&s, 0, sizeof s);
  s.env = env;
  s.dt = MPI_DATATYPE_NULL;
  s.mop = MPI_OP_NULL;
  s.comm[0] = s.comm[1] = MPI_COMM_NULL;
  const int bpp = bench_blocks_per_proc(env);
  s.n = bpp * env->size;
  const char *ms = bench_eopt(env, "op-ms"), *nl = bench_eopt(env, "n"),
             *it = bench_eopt(env, "items");
  char nbuf[32];
  if (nl == NULL) { /* --items per block (default 1) */
    snprintf(nbuf, sizeof nbuf, "%ld", (long)s.n * (it != NULL ? atol(it) : 1));
    nl = nbuf;
  }
  const int nops = parse_list(ms != NULL ? ms : "1", 0, ops, MAX_LIST);
  const int nns = parse_list(nl, s.n, ns, MAX_LIST);
  int usage = nops < 1 || nns < 1 || (it != NULL && atol(it) < 1);
  for (int i = 0; i < nops && !usage; i++)
    usage = !(ops[i] < 1e4);
  for (int i = 0; i < nns && !usage; i++)
    usage = ns[i] < s.n || ns[i] > 1e8;
  if (usage) {
    if (env->rank == 0)
      bench_error(env, "scan: --op-ms wants a list of 0..1e4, --n a list of item counts from "
                       "the block count (%d, or 'p') to 1e8, --items >= 1",
                  s.n);
    return BENCH_EXIT_USAGE;
  }
  const int cores = model_cores(env);
  if (cores < 1 || cores > 1 << 24) {
    if (env->rank == 0)
      bench_error(env, "scan: --cores wants 1..2^24");
    return BENCH_EXIT_USAGE;
  }
  int ret = BENCH_EXIT_FAIL;
  int rc = bpc_assign_create(env->ctx, s.n, BPC_ASSIGN_CONTIGUOUS, NULL, &s.assign);
  if (rc == BPC_OK)
    rc = bpc_assign_local(s.assign, &s.gids, &s.nlocal);
  s.in = calloc((size_t)s.nlocal + 1, sizeof *s.in);
  s.out = calloc((size_t)s.nlocal + 1, sizeof *s.out);
  if (rc == BPC_OK && (s.in == NULL || s.out == NULL))
    rc = BPC_ENOMEM;
  if (rc == BPC_OK && (MPI_Type_contiguous(IW, MPI_UINT32_T, &s.dt) != MPI_SUCCESS ||
                       MPI_Type_commit(&s.dt) != MPI_SUCCESS ||
                       MPI_Op_create(mpi_op, 0, &s.mop) != MPI_SUCCESS))
    rc = BPC_EMPI;
  if (rc == BPC_OK)
    rc = make_comms(&s);
  if (bench_agree(env, rc) != 0) {
    bench_error(env, "scan: setup failed: %s", bpc_err_name(rc));
    goto cleanup;
  }
  const int nv = make_variants(env, &s, v);
  if (nv < 0) {
    if (env->rank == 0)
      bench_error(env, "scan: --strategies wants a comma list of stp, rts, ig");
    ret = BENCH_EXIT_USAGE;
    goto cleanup;
  }
  if (env->rank == 0 && !s.have_rd)
    bench_error(env, "scan: no MPI_Scan recursive-doubling line: launch with "
                     "OMPI_MCA_coll_tuned_use_dynamic_rules=1 (Open MPI)");
  s.type = bpc_type_contiguous(IB, MPI_BYTE);
  s.op.fn = scan_op;
  if (env->rank == 0 && !env->opts->json && bench_eopt(env, "no-header") == NULL) {
    printf("# bpc-bench scan: inclusive scan of N 2x2-matrix items (20 bytes), operator = "
           "product + op_ms of\n# thread CPU busy work; n = p x %d blocks; reps=%d (median of "
           "the max over ranks), warmup=%d\n# (zero-cost); cores=%d (model); bound = "
           "max(depth x op, calls_tot x op / cores);\n# x_bound, x_lin: time / bound, time / "
           "MPI_Scan:linear; calls_max: busiest rank; depth: longest\n# chain of calls of any "
           "result; calls_ok: = thesis Table 3.1 / doc/scan.md formulas (bpc),\n# = Open MPI's "
           "schedule (MPI); msgs, bytes: sent per rank (max; MPI lines: the schedule's)\n",
           bpp, env->opts->reps, env->opts->warmup, cores);
    printf("%-24s %3s %6s %5s %6s %11s %10s %7s %7s %9s %9s %6s %5s %5s %7s %4s\n", "variant",
           "p", "N", "N/blk", "op_ms", "median_ms", "bound_ms", "x_bound", "x_lin", "calls_max",
           "calls_tot", "depth", "ok", "msgs", "bytes", "corr");
  }
  ret = BENCH_EXIT_OK;
  for (int a = 0; a < nops && ret == BENCH_EXIT_OK; a++)
    for (int b = 0; b < nns && ret == BENCH_EXIT_OK; b++)
      if (run_config(&s, v, nv, (long)ns[b], ops[a], cores) != 0)
        ret = BENCH_EXIT_FAIL;
cleanup:
  free(s.in);
  free(s.out);
  for (int k = 0; k < 2; k++)
    if (s.comm[k] != MPI_COMM_NULL)
      MPI_Comm_free(&s.comm[k]);
  if (s.mop != MPI_OP_NULL)
    MPI_Op_free(&s.mop);
  if (s.dt != MPI_DATATYPE_NULL)
    MPI_Type_free(&s.dt);
  bpc_assign_destroy(&s.assign);
  return ret;
}

static const size_t scan_default_bytes[] = {IB};
static const bench_eopt_t scan_options[] = {
    {"op-ms", "LIST", "operator costs in ms of thread CPU busy work (default 1)"},
    {"n", "LIST", "items in total ('p': one per block; default blocks x --items)"},
    {"items", "K", "items per block when --n is not given (default 1)"},
    {"strategies", "LIST", "of stp (scan-then-propagate), rts, ig (default all)"},
    {"cores", "C", "cores of the model bound (default: CPUs of the nodes used)"},
    {"lockstep", NULL, "add a twin of every bpc line run with the lock-step driver (name/ls;"
                       " BPC_SCAN_OVERLAP=0 for its calls, =1 for the others)"},
    {"no-header", NULL, "omit the table's header (for concatenated sweeps)"},
    {NULL, NULL, NULL},
};

const bench_engine_t bench_engine_scan = {
    .name = "scan",
    .desc = "prefix scan (bpc_scan) vs MPI_Scan linear and recursive doubling, costly operator",
    .registry = "scan",
    .auto_algorithms = BENCH_AUTO_ROWS,
    .default_bytes = scan_default_bytes,
    .n_default_bytes = 1,
    .default_blocks_per_proc = 1,
    .options = scan_options,
    .notes = "  N items (2x2 uint32 matrix + depth word, 20 bytes) over p x blocks-per-proc\n"
             "  blocks; operator: the product after --op-ms of thread CPU busy work. Lines:\n"
             "  every strategy x algorithm of bpc_scan (inclusive), MPI_Scan:linear and\n"
             "  MPI_Scan:recdbl (coll_tuned_scan_algorithm set through MPI_T; launch with\n"
             "  OMPI_MCA_coll_tuned_use_dynamic_rules=1), all alternating in one run. The\n"
             "  sweep: apps/bench/scan_sweep.sh; see doc/scan.md.\n",
    .run = scan_run,
};
