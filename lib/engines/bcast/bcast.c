/*
 * lib/engines/bcast/bcast.c - the s-to-p broadcast engine: its algorithm
 * table and registry entry, params, and the public entry bpc_bcast.
 *
 * One call (the engine frame of doc/design.md): check every argument on
 * this rank, pick the algorithm (argument, BPC_BCAST_ALGORITHM, built-in
 * rule), choose the mesh view, then ONE bpc__agree_args on the rank's code
 * and the signature (algorithm, block count, mesh, number of sources,
 * source list, type kind and element size) before any message; open one
 * exchange, run the row (it builds its schedule and runs the shared
 * executor, bcast_exec.c), close the exchange, agree on the outcome.
 */
#include "engines/bcast/bcast_internal.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/coll.h"
#include "datatype/datatype.h"
#include "decomp/decomp.h"
#include "patterns/patterns.h"

static const bpc__algo_t bcast_rows[] = {
    {{BPC_BCAST_BR_LIN, "br_lin",
      "recursive halving along the snake order of the mesh, messages combined"},
     bpc__bcast_br_lin,
     &(const bpc__bcast_row_t){BPC__BDIST_LDIAG, 1, NULL, NULL}},
    {{BPC_BCAST_BR_XY_SOURCE, "br_xy_source",
      "br_lin in rows then columns, the dimension with fewer sources per line first"},
     bpc__bcast_br_xy_source,
     &(const bpc__bcast_row_t){BPC__BDIST_ROW, 1, NULL, NULL}},
    {{BPC_BCAST_BR_XY_DIM, "br_xy_dim", "br_lin in rows then columns, the longer lines first"},
     bpc__bcast_br_xy_dim,
     &(const bpc__bcast_row_t){BPC__BC_DIST_LONGER, 1, NULL, NULL}},
    {{BPC_BCAST_2STEP, "2step", "gather at the first source, then a binomial broadcast"},
     bpc__bcast_2step,
     &(const bpc__bcast_row_t){BPC__BC_DIST_NONE, 1, NULL, NULL}},
    {{BPC_BCAST_XOR, "xor", "recursive doubling with partner id xor 2^i, messages combined"},
     bpc__bcast_xor,
     &(const bpc__bcast_row_t){BPC__BDIST_EQUAL, 1, NULL, NULL}},
    {{BPC_BCAST_MPI, "mpi", "baseline: one MPI_Allgatherv over ranks (sizes by one reduction)"},
     bpc__bcast_mpi,
     &(const bpc__bcast_row_t){BPC__BC_DIST_NONE, 0, bpc__bcast_mpi_model, bpc__bcast_mpi_join}},
};

const bpc__engine_t bpc__engine_bcast = {"bcast", "BPC_BCAST_ALGORITHM", bcast_rows,
                                         BPC__NROWS(bcast_rows), NULL};

bpc_bcast_params_t bpc_bcast_params_default(void)
{
  bpc_bcast_params_t p;
  memset(&p, 0, sizeof p);
  p.algorithm = "auto";
  return p;
}

/* The cost model's machine constants (doc/bcast.md "Choosing"): latency
 * per message and time per byte, a shared-memory or fast-network node. */
#define BC_ALPHA 2e-6
#define BC_BETA 2e-10
/* Processes the model evaluates besides the first and last rank and the
 * first and last source's (all of them when there are at most
 * BC_SAMPLE + 4). */
#define BC_SAMPLE 12

/* A model constant: environment variable `name` (seconds, resp. seconds
 * per byte: what `bpc-bench bcast --calibrate` prints) when it holds a
 * positive number, else the built-in value. */
static double bcast_const(const char *name, double dflt)
{
  const char *e = getenv(name);
  char *end = NULL;
  const double v = e != NULL ? strtod(e, &end) : 0.0;
  return e != NULL && end != e && *end == '\0' && v > 0.0 && v < 1.0 ? v : dflt;
}

/* The row's schedule in two halves plus the final exchange, built only
 * (C->S); positions = where the sources start (ascending). */
static int bcast_partition(bpc__bcast_call_t *C, const bpc__algo_t *row, const int *pos)
{
  const int R = C->rows, Cc = C->cols, p = C->p, s = C->s;
  const int by_rows = R >= 2;
  const int r1 = by_rows ? R / 2 : 1, c1 = by_rows ? Cc : Cc / 2;
  const int p1 = r1 * c1, p2 = p - p1;
  int *map = malloc(sizeof(int) * (size_t)p), *vs = malloc(sizeof(int) * (size_t)(s + 1));
  int *inv = malloc(sizeof(int) * (size_t)p);
  if (map == NULL || vs == NULL || inv == NULL) {
    free(map);
    free(vs);
    free(inv);
    return bpc__err(C->ctx, BPC_ENOMEM, "bpc_bcast: out of memory");
  }
  /* half 0: gids of rows [0, r1) (or columns [0, c1) of the line), in
   * row-major order; half 1: the rest */
  int k = 0;
  for (int g = 0; g < p; g++)
    if (by_rows ? g / Cc < r1 : g % Cc < c1)
      map[k++] = g;
  for (int g = 0; g < p; g++)
    if (!(by_rows ? g / Cc < r1 : g % Cc < c1))
      map[k++] = g;
  for (int v = 0; v < p; v++)
    inv[map[v]] = v;
  int rc = BPC_OK;
  for (int h = 0; h < 2 && rc == BPC_OK; h++) {
    const int off = h ? p1 : 0, n = h ? p2 : p1;
    bpc__bcast_call_t H = *C;
    H.p = n;
    H.rows = by_rows ? (h ? R - r1 : r1) : 1;
    H.cols = by_rows ? Cc : (h ? Cc - c1 : c1);
    H.plan_only = 1;
    H.reposition = 0;
    H.partition = 0;
    H.s = 0;
    for (int i = 0; i < s; i++) /* virtual index of each source in this half */
      if (inv[pos[i]] >= off && inv[pos[i]] < off + n)
        vs[H.s++] = inv[pos[i]] - off;
    H.sources = vs;
    H.S.map = map + off;
    rc = row->run(&H);
    C->S = H.S;
    C->S.map = NULL;
  }
  if (rc == BPC_OK && p1 > 0 && p2 > 0) {
    const int t = C->S.nsteps - C->S.base;
    for (int v = 0; v < p2; v++) {
      if (v < p1)
        bpc__bcast_xchg(&C->S, t, map[v], map[p1 + v]);
      else
        bpc__bcast_add(&C->S, t, map[v % p1], map[p1 + v]);
    }
  }
  free(map);
  free(vs);
  free(inv);
  return rc;
}

/* The flags that take effect for the row: repositioning needs sources and
 * a schedule that starts from them (the row's dist), partitioning a row
 * that partitions and 2 blocks or more. */
static void bcast_effective(const bpc__bcast_call_t *C, const bpc__algo_t *row, int *rep, int *part)
{
  *rep = C->reposition && C->s > 0 && bpc__bcast_row(row)->dist != BPC__BC_DIST_NONE;
  *part = C->partition && bpc__bcast_row(row)->partitions && C->p >= 2;
}

int bpc__bcast_run_row(bpc__bcast_call_t *C, const bpc__algo_t *row)
{
  const int s = C->s, p = C->p;
  int rep, part;
  bcast_effective(C, row, &rep, &part);
  if (!rep && !part)
    return row->run(C);
  int *T = malloc(sizeof(int) * (size_t)(s + 1));
  unsigned char *inT = calloc((size_t)p, 1), *used = calloc((size_t)p, 1);
  int rc = BPC_OK;
  if (T == NULL || inT == NULL || used == NULL) {
    rc = bpc__err(C->ctx, BPC_ENOMEM, "bpc_bcast: out of memory");
    goto out;
  }
  if (rep) {
    const int dist = bpc__bcast_row(row)->dist;
    const int kind = dist != BPC__BC_DIST_LONGER     ? dist
                     : C->cols >= C->rows ? BPC__BDIST_COL
                                          : BPC__BDIST_ROW;
    if (bpc__bcast_dist(kind, C->rows, C->cols, s, 0u, T) != BPC_OK) {
      rc = bpc__err(C->ctx, BPC_ENOMEM, "bpc_bcast: out of memory");
      goto out;
    }
    for (int i = 0; i < s; i++)
      inT[T[i]] = 1;
    for (int i = 0; i < s; i++)
      if (inT[C->ids[i]])
        used[C->ids[i]] = 1;
    int j = 0;
    for (int i = 0; i < s; i++)
      if (!inT[C->ids[i]]) {
        while (used[T[j]])
          j++;
        used[T[j]] = 1;
        bpc__bcast_add(&C->S, 0, C->ids[i], T[j]);
      }
    if (C->S.nsteps < 1)
      C->S.nsteps = 1;
    C->S.base = 1;
  } else {
    for (int i = 0; i < s; i++)
      T[i] = C->ids[i];
  }
  if (part) {
    rc = bcast_partition(C, row, T);
    C->S.base = 0;
    if (rc == BPC_OK)
      rc = C->plan_only ? BPC_OK : bpc__bcast_exec(C);
  } else {
    const int *save = C->sources;
    C->sources = T;
    rc = row->run(C);
    C->sources = save;
    C->S.base = 0;
  }
out:
  free(T);
  free(inT);
  free(used);
  return rc;
}

long long bpc__bcast_model_L(long long L)
{
  if (L <= 8)
    return L < 0 ? 0 : L;
  long long e = 1;
  while (2 * e <= L)
    e *= 2;
  const long long q = e / 4; /* quarter steps of the octave [e, 2e) */
  return e + (L - e + q - 1) / q * q;
}

int bpc__bcast_choose(bpc__bcast_call_t *C, double L, const bpc__algo_t **row, int *reposition,
                      int *partition, double *T)
{
  const int rep0 = C->reposition, part0 = C->partition;
  const bpc__algo_t *best_row = NULL;
  double best = 0.0;
  int rep = 0, part = 0;
  for (int k = 0; k < bpc__engine_bcast.nrows; k++)
    for (int v = 0; v < 4; v++) {
      const bpc__algo_t *r = &bpc__engine_bcast.rows[k];
      if (((v & 1) && bpc__bcast_row(r)->dist == BPC__BC_DIST_NONE) ||
          ((v >> 1) && !bpc__bcast_row(r)->partitions))
        continue; /* variants without effect */
      C->reposition = v & 1;
      C->partition = v >> 1;
      const double t = bpc__bcast_model(C, r, L);
      if (best_row == NULL || t < best) {
        best = t;
        best_row = r;
        rep = C->reposition;
        part = C->partition;
      }
    }
  C->reposition = rep0;
  C->partition = part0;
  *row = best_row;
  *reposition = rep;
  *partition = part;
  if (T != NULL)
    *T = best;
  return best < 1e30 && !C->model_oom ? BPC_OK : BPC_ENOMEM;
}

double bpc__bcast_model(bpc__bcast_call_t *C0, const bpc__algo_t *row, double L)
{
  const int nr = C0->ctx->size, s = C0->s;
  const double alpha = C0->alpha, beta = C0->beta;
  if (bpc__bcast_row(row)->model != NULL)
    return bpc__bcast_row(row)->model(C0, L);
  bpc__bcast_call_t C = *C0;
  memset(&C.S, 0, sizeof C.S);
  C.S.rk = C0->rk;
  C.plan_only = 1;
  double T = 0.0;
  bpc__bcast_plan_t P;
  memset(&P, 0, sizeof P);
  /* the processes modelled: all when there are few, else the first and
   * last rank, the first and last source's and BC_SAMPLE evenly spaced */
  int *pick = calloc((size_t)nr, sizeof(int)), ns = 0;
  long long *load = NULL;
  const int rrc = pick != NULL ? bpc__bcast_run_row(&C, row) : BPC_ENOMEM;
  const int prc =
      rrc == BPC_OK && C.S.err == BPC_OK ? bpc__bcast_plan_init(&P, &C.S, nr, C.ids, s) : BPC_OK;
  if (rrc != BPC_OK || C.S.err != BPC_OK || prc != BPC_OK) {
    /* out of memory is not "this row does not apply": the choice would
     * differ from the other ranks' */
    if (rrc == BPC_ENOMEM || C.S.err == BPC_ENOMEM || prc != BPC_OK)
      C0->model_oom = 1;
    T = 1e30;
    goto out;
  }
  {
    int cand[BC_SAMPLE + 4], nc = 0;
    if (nr <= BC_SAMPLE + 4) {
      for (int r = 0; r < nr; r++)
        cand[nc++] = r;
    } else {
      cand[nc++] = 0;
      cand[nc++] = nr - 1;
      if (s > 0) {
        cand[nc++] = C.S.rk[C.ids[0]];
        cand[nc++] = C.S.rk[C.ids[s - 1]];
      }
      for (int k = 1; k <= BC_SAMPLE; k++)
        cand[nc++] = (int)((long long)k * nr / (BC_SAMPLE + 1));
    }
    for (int k = 0; k < nc; k++)
      if (!pick[cand[k]]) {
        pick[cand[k]] = ++ns;
      }
  }
  load = calloc((size_t)ns * 4, sizeof(long long));
  if (load == NULL) {
    C0->model_oom = 1;
    T = 1e30;
    goto out;
  }
  for (int t = 0; t < P.nsteps; t++) {
    memset(load, 0, sizeof(long long) * 4 * (size_t)ns);
    for (int B = 0; B < nr; B++) {
      const size_t g = (size_t)t * nr + B;
      for (int e = P.in_start[g]; e < P.in_start[g + 1]; e++) {
        const int a = pick[P.in_from[e]] - 1, b = pick[B] - 1;
        if (a < 0 && b < 0)
          continue;
        long long k = 0;
        bpc__bcast_plan_carry(&P, t, B, e, NULL, &k);
        if (k == 0)
          continue;
        if (a >= 0) {
          load[4 * a]++;
          load[4 * a + 1] += k;
        }
        if (b >= 0) {
          load[4 * b + 2]++;
          load[4 * b + 3] += k;
        }
      }
    }
    double worst = 0.0;
    for (int r = 0; r < ns; r++) {
      const double o = load[4 * r] * alpha + load[4 * r + 1] * L * beta;
      const double in = load[4 * r + 2] * alpha + load[4 * r + 3] * L * beta;
      const double m = o > in ? o : in;
      worst = m > worst ? m : worst;
    }
    T += worst;
  }
out:
  free(pick);
  free(load);
  bpc__bcast_plan_free(&P);
  free(C.S.step);
  free(C.S.from);
  free(C.S.to);
  return T;
}

/*
 * auto's decision cache (doc/bcast.md "Choosing"): the last BC_CACHE_N
 * decisions of the cost model on this context, least recently used out.
 * The key is the call's agreed signature (every field: algorithm, block
 * count, assignment, mesh, flags, number of sources and their list's
 * hash, type, alpha, beta, and the largest item rounded as the model
 * takes it, bpc__bcast_model_L) with the process count and a copy of the
 * source list, so every rank hits or misses alike and a hit returns what
 * the model would return.
 */
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

typedef struct bcast_cache {
  bcast_choice_t e[BC_CACHE_N];
  unsigned long long tick;
  long long hits, misses;
  int off; /* 1: every call runs the model (bpc__bcast_cache) */
} bcast_cache_t;

/* Empty every entry (all ranks at once: after an agreed failure). */
static void bcast_cache_clear(bcast_cache_t *c)
{
  for (int i = 0; c != NULL && i < BC_CACHE_N; i++) {
    free(c->e[i].sources);
    bpc__bcast_plan_free(&c->e[i].plan);
    memset(&c->e[i], 0, sizeof c->e[i]);
  }
}

static void bcast_cache_free(void *arg)
{
  bcast_cache_clear(arg);
  free(arg);
}

/* The context's cache, made on first use (NULL when out of memory: an
 * error of the call, agreed before auto looks at it, so that every rank
 * has one and hits and misses alike). */
static bcast_cache_t *bcast_cache(bpc_ctx_t *ctx)
{
  bcast_cache_t *c = bpc__cleanup_find(ctx, "bcast_auto");
  if (c == NULL) {
    c = bpc__calloc(1, sizeof *c);
    if (c != NULL && bpc__cleanup_add(ctx, "bcast_auto", bcast_cache_free, c) != BPC_OK) {
      free(c);
      c = NULL;
    }
  }
  return c;
}

/* The key of a call: the agreed signature values, the process count. */
static int bcast_key(const bpc_ctx_t *ctx, const bpc__sig_t *sig, const long long *vals,
                     long long Lq, long long *key)
{
  int n = 0;
  for (int i = 0; i < sig->n; i++)
    key[n++] = sig->kind[i] == BPC__SIG_MAXED ? Lq : vals[i];
  key[n++] = ctx->size;
  return n;
}

static bcast_choice_t *bcast_lookup(bcast_cache_t *c, const long long *key, int nk,
                                    const int *sources, int s)
{
  for (int i = 0; i < BC_CACHE_N; i++) {
    bcast_choice_t *e = &c->e[i];
    if (e->used != 0 && e->nk == nk && e->s == s &&
        memcmp(e->key, key, sizeof(long long) * (size_t)nk) == 0 &&
        (s == 0 || memcmp(e->sources, sources, sizeof(int) * (size_t)s) == 0))
      return e;
  }
  return NULL;
}

static bcast_choice_t *bcast_store(bcast_cache_t *c, const long long *key, int nk,
                                   const int *sources, int s, int row, int rep, int part)
{
  bcast_choice_t *e = &c->e[0];
  for (int i = 1; i < BC_CACHE_N; i++)
    if (c->e[i].used < e->used)
      e = &c->e[i];
  int *copy = malloc(sizeof(int) * (size_t)(s > 0 ? s : 1));
  if (copy == NULL)
    return NULL; /* not cached: the next call runs the model again */
  if (s > 0)
    memcpy(copy, sources, sizeof(int) * (size_t)s);
  free(e->sources);
  bpc__bcast_plan_free(&e->plan);
  e->nsteps = 0;
  e->sources = copy;
  e->s = s;
  e->nk = nk;
  memcpy(e->key, key, sizeof(long long) * (size_t)nk);
  e->row = row;
  e->reposition = rep;
  e->partition = part;
  e->used = ++c->tick;
  return e;
}

int bpc__bcast_cache(bpc_ctx_t *ctx, int off, long long *hits, long long *misses)
{
  bcast_cache_t *c = bcast_cache(ctx);
  if (c == NULL)
    return BPC_ENOMEM;
  if (off >= 0)
    c->off = off != 0;
  if (hits != NULL)
    *hits = c->hits;
  if (misses != NULL)
    *misses = c->misses;
  return BPC_OK;
}

/* Every block's rank, computed once per call and only when a schedule is
 * built (the model, or the executor without auto's cached plan): C->rk and
 * C->S.rk (the schedules drop transfers inside a process as they are
 * built, the plans read it). The caller frees C->rk. */
static int bcast_ranks(bpc__bcast_call_t *C)
{
  if (C->rk != NULL)
    return BPC_OK;
  C->rk = malloc(sizeof(int) * (size_t)(C->p > 0 ? C->p : 1));
  if (C->rk == NULL)
    return BPC_ENOMEM;
  for (int g = 0; g < C->p; g++)
    C->rk[g] = bpc__assign_rank(C->assign, g);
  C->S.rk = C->rk;
  return BPC_OK;
}

/* auto: the cheapest row and flags by the model, from the cache when the
 * same agreed inputs were seen; *ce: the cache entry (NULL: cache off). */
static int bcast_auto(bpc__bcast_call_t *C, const bpc__sig_t *sig, const long long *vals,
                      long long L, const bpc__algo_t **row, bcast_choice_t **ce)
{
  *ce = NULL;
  const long long Lq = bpc__bcast_model_L(L);
  long long key[BPC__SIG_MAX + 1];
  const int nk = bcast_key(C->ctx, sig, vals, Lq, key);
  bcast_cache_t *c = bcast_cache(C->ctx); /* made before the call's agreement */
  bcast_choice_t *e = !c->off ? bcast_lookup(c, key, nk, C->ids, C->s) : NULL;
  if (e != NULL) {
    c->hits++;
    e->used = ++c->tick;
    *row = &bpc__engine_bcast.rows[e->row];
    C->reposition = e->reposition;
    C->partition = e->partition;
    *ce = e;
    return BPC_OK;
  }
  /* a miss (the same on every rank: the caches hold the same entries, see
   * bcast_entry) */
  int rep = 0, part = 0;
  int rc = bcast_ranks(C);
  if (rc == BPC_OK)
    rc = bpc__bcast_choose(C, (double)Lq, row, &rep, &part, NULL);
  if (rc != BPC_OK)
    rc = bpc__err(C->ctx, rc, "bpc_bcast: out of memory in auto's cost model");
  /* agreed: a rank whose model failed knows no row, while the others' may
   * be "mpi", whose collectives no abort message can stop */
  rc = bpc__agree(C->ctx, rc);
  if (rc != BPC_OK) {
    *row = NULL;
    return rc;
  }
  C->reposition = rep;
  C->partition = part;
  c->misses++;
  if (!c->off) {
    *ce = bcast_store(c, key, nk, C->ids, C->s, (int)(*row - bpc__engine_bcast.rows), rep, part);
    if (*ce == NULL) /* the row is known: the call fails as any other would */
      return bpc__err(C->ctx, BPC_ENOMEM, "bpc_bcast: no memory to cache auto's choice");
  }
  return BPC_OK;
}

/* A call's state with the fields the model and the executor share. */
static void bcast_call_init(bpc__bcast_call_t *C, bpc_ctx_t *ctx, const bpc_assign_t *assign,
                            const int *sources, int s, int rows, int cols, int reposition,
                            int partition, double alpha, double beta)
{
  memset(C, 0, sizeof *C);
  C->ctx = ctx;
  C->assign = assign;
  C->sources = sources;
  C->ids = sources;
  C->s = s;
  C->p = assign->nblocks;
  C->rows = rows;
  C->cols = cols;
  C->reposition = reposition != 0;
  C->partition = partition != 0;
  C->alpha = alpha;
  C->beta = beta;
}

int bpc__bcast_model_time(bpc_ctx_t *ctx, const bpc_assign_t *assign, const int *sources,
                          int nsources, int rows, int cols, long long L, const char *name,
                          int reposition, int partition, double *T, char *pick, size_t npick)
{
  if (ctx == NULL || assign == NULL || T == NULL || (sources == NULL && nsources > 0) ||
      nsources < 0 || nsources > assign->nblocks || rows < 1 || cols < 1 ||
      (long long)rows * cols != assign->nblocks)
    return BPC_EINVAL;
  const int is_auto = name == NULL || strcmp(name, "auto") == 0;
  const bpc__algo_t *row = is_auto ? NULL : bpc__algo_find(&bpc__engine_bcast, name);
  if (!is_auto && row == NULL)
    return BPC_EALGO;
  bpc__bcast_call_t C;
  bcast_call_init(&C, ctx, assign, sources, nsources, rows, cols, reposition, partition,
                  bcast_const("BPC_BCAST_ALPHA", BC_ALPHA), bcast_const("BPC_BCAST_BETA", BC_BETA));
  if (bcast_ranks(&C) != BPC_OK)
    return BPC_ENOMEM;
  const double Lq = (double)bpc__bcast_model_L(L);
  int rc = BPC_OK;
  if (is_auto) {
    rc = bpc__bcast_choose(&C, Lq, &row, &C.reposition, &C.partition, T);
  } else {
    *T = bpc__bcast_model(&C, row, Lq);
    rc = *T < 1e30 ? BPC_OK : BPC_ENOMEM;
  }
  free(C.rk);
  if (rc == BPC_OK && pick != NULL && npick > 0) {
    int r, q;
    bcast_effective(&C, row, &r, &q);
    snprintf(pick, npick, "%s%s%s%s", row->info.name, r || q ? "+" : "", r ? "r" : "",
             q ? "p" : "");
  }
  return rc;
}

static int bcast_check(bpc_ctx_t *ctx, const bpc_assign_t *assign, const bpc_type_t *type,
                       const int *sources, int ns, bpc_bcast_item_fn item_of,
                       bpc_bcast_recv_fn recv, const bpc_bcast_params_t *P, const bpc__algo_t **row,
                       bpc_algo_source_t *source, int *rows, int *cols)
{
  if (assign == NULL || type == NULL || item_of == NULL || recv == NULL ||
      (sources == NULL && ns > 0))
    return bpc__err(ctx, BPC_ENULL, "bpc_bcast: %s is NULL",
                    assign == NULL    ? "assign"
                    : type == NULL    ? "type"
                    : item_of == NULL ? "item_of"
                    : recv == NULL    ? "recv"
                                      : "sources");
  if (assign->ctx != ctx)
    return bpc__err(ctx, BPC_EINVAL, "bpc_bcast: the assignment belongs to another context");
  int rc = bpc_type_check(ctx, type);
  if (rc != BPC_OK)
    return rc;
  const int n = assign->nblocks;
  if (ns < 0 || ns > n)
    return bpc__err(ctx, BPC_EINVAL, "bpc_bcast: %d sources for %d blocks", ns, n);
  for (int i = 0; i < ns; i++)
    if (sources[i] < 0 || sources[i] >= n || (i > 0 && sources[i] <= sources[i - 1]))
      return bpc__err(ctx, BPC_EINVAL,
                      "bpc_bcast: sources[%d] = %d: sources must be ascending gids in [0, %d)", i,
                      sources[i], n);
  if (P->nthreads < 0)
    return bpc__err(ctx, BPC_EINVAL, "bpc_bcast: nthreads %d is negative (0 = OpenMP default)",
                    P->nthreads);
  if (P->rows == 0 && P->cols == 0) {
    int r = 1;
    for (int d = 1; (long long)d * d <= n; d++)
      if (n % d == 0)
        r = d;
    *rows = r;
    *cols = n / r;
  } else if (P->rows <= 0 || P->cols <= 0 || (long long)P->rows * P->cols != n) {
    return bpc__err(ctx, BPC_EDIVS, "bpc_bcast: a %d x %d mesh for %d blocks", P->rows, P->cols,
                    n);
  } else {
    *rows = P->rows;
    *cols = P->cols;
  }
  /* *row stays NULL for the built-in rule: the cost model picks after
   * the agreement (it needs the agreed largest item size) */
  return bpc__algo_pick(ctx, &bpc__engine_bcast, P->algorithm, NULL, row, source);
}

static int bcast_entry(bpc_ctx_t *ctx, const bpc_assign_t *assign, const bpc_type_t *type,
                       const int *sources, int nsources, bpc_bcast_item_fn item_of, bpc_bcast_recv_fn recv,
                       void *user, const bpc_bcast_params_t *params, bpc_bcast_info_t *info)
{
  if (ctx == NULL)
    return BPC_ENULL;
  const bpc_bcast_params_t P = params != NULL ? *params : bpc_bcast_params_default();
  const bpc__algo_t *row = NULL;
  bpc_algo_source_t source = BPC_SOURCE_BUILTIN;
  int rows = 0, cols = 0;
  bpc__sig_t sig;
  int rc = bcast_check(ctx, assign, type, sources, nsources, item_of, recv, &P, &row, &source,
                       &rows, &cols);
  /* the local sources' items, now (their sizes feed the cost model) */
  const void **items = NULL;
  long long maxL = 0;
  if (rc == BPC_OK && nsources > 0) {
    items = calloc((size_t)nsources, sizeof(void *));
    if (items == NULL)
      rc = bpc__err(ctx, BPC_ENOMEM, "bpc_bcast: out of memory");
    for (int i = 0; i < nsources && rc == BPC_OK; i++) {
      if (bpc__assign_rank(assign, sources[i]) != ctx->rank)
        continue;
      int u = item_of(sources[i], &items[i], user);
      if (u != 0) {
        rc = bpc__err(ctx, BPC_ECALLBACK, "bpc_bcast: item callback for source %d returned %d",
                      sources[i], u);
        break;
      }
      size_t b = 0;
      if (type->kind == BPC_TYPE_CONTIGUOUS) {
        const bpc_buf_t *x = items[i];
        b = x != NULL ? x->count * type->elem_size : 0;
      } else {
        rc = bpc_type_size(ctx, type, items[i], &b);
      }
      maxL = (long long)b > maxL ? (long long)b : maxL;
    }
  }
  const int ok = rc == BPC_OK;
  bpc__sig_init(&sig);
  bpc__sig_int(&sig, "algorithm", ok && row != NULL ? row->info.id : 0);
  bpc__sig_int(&sig, "nblocks", ok ? assign->nblocks : 0);
  bpc__sig_assign(&sig, ok ? assign : NULL);
  bpc__sig_int(&sig, "mesh rows", ok ? rows : 0);
  bpc__sig_int(&sig, "mesh cols", ok ? cols : 0);
  bpc__sig_int(&sig, "reposition", ok ? P.reposition != 0 : 0);
  bpc__sig_int(&sig, "partition", ok ? P.partition != 0 : 0);
  bpc__sig_int(&sig, "nsources", ok ? nsources : 0);
  bpc__sig_bytes(&sig, "sources", ok ? sources : NULL, ok ? sizeof(int) * (size_t)nsources : 0);
  bpc__sig_type(&sig, ok ? type : NULL);
  /* auto's model constants (they decide the algorithm: the same everywhere) */
  const double alpha = bcast_const("BPC_BCAST_ALPHA", BC_ALPHA);
  const double beta = bcast_const("BPC_BCAST_BETA", BC_BETA);
  bpc__sig_int(&sig, "model alpha (ps)", ok && row == NULL ? (long long)(alpha * 1e12 + 0.5) : 0);
  bpc__sig_int(&sig, "model beta (1e-18 s/byte)", ok && row == NULL ? (long long)(beta * 1e18 + 0.5) : 0);
  bpc__sig_max(&sig, "largest item", maxL);
  long long vals[BPC__SIG_MAX];
  /* auto's cache exists on every rank or the call fails everywhere */
  if (rc == BPC_OK && row == NULL && bcast_cache(ctx) == NULL)
    rc = bpc__err(ctx, BPC_ENOMEM, "bpc_bcast: no memory for auto's cache");
  rc = bpc__agree_args_vals(ctx, "bcast", rc, &sig, vals);
  if (rc != BPC_OK) {
    free(items);
    return rc;
  }

  bpc__bcast_call_t C;
  bcast_call_init(&C, ctx, assign, sources, nsources, rows, cols, P.reposition, P.partition, alpha,
                  beta);
  C.type = type;
  C.items = items;
  C.recv = recv;
  C.user = user;
  bcast_choice_t *ce = NULL;
  const int was_auto = rc == BPC_OK && row == NULL;
  if (was_auto) /* auto: the cheapest row and variant by the cost model */
    rc = bcast_auto(&C, &sig, vals, vals[sig.n - 1], &row, &ce);
  /* auto's cache also keeps the executor's plan of its choice: a repeated
   * call neither builds the schedule nor plans it */
  bpc__bcast_plan_t kept;
  memset(&kept, 0, sizeof kept);
  if (ce != NULL && ce->plan.in_start != NULL)
    C.plan = &ce->plan;
  else if (ce != NULL)
    C.keep_plan = &kept;
  if (rc == BPC_OK && C.plan == NULL && bcast_ranks(&C) != BPC_OK) /* a schedule is built */
    rc = bpc__err(ctx, BPC_ENOMEM, "bpc_bcast: out of memory");
  /* opened on every rank alike (exchanges are numbered in order) */
  const int rc_open = bpc__exch_open(ctx, "bcast", bpc__assign_rank_cb, assign, &C.ex);
  if (rc == BPC_OK)
    rc = rc_open;
  int ran = 0;
  if (rc_open == BPC_OK) {
    if (rc == BPC_OK && C.plan != NULL) {
      C.S.nsteps = ce->nsteps;
      rc = bpc__bcast_exec(&C);
      ran = 1;
    } else if (rc == BPC_OK) {
      rc = bpc__bcast_run_row(&C, row);
      ran = 1;
    }
  }
  /* the "mpi" row's collectives need every rank, also one that failed
   * before it (the others are in them: no abort message reaches them) */
  if (!ran && row != NULL && bpc__bcast_row(row)->join != NULL)
    rc = bpc__bcast_row(row)->join(&C, rc);
  /* the outcome, the same everywhere (a failure anywhere stops the others'
   * waits) */
  rc = bpc__exch_end(ctx, &C.ex, rc);
  if (rc != BPC_OK && was_auto) /* a rank may have missed storing the choice: */
    bcast_cache_clear(bcast_cache(ctx)); /* every rank's cache starts afresh, alike */
  free(C.S.step);
  free(C.S.from);
  free(C.S.to);
  free(items);
  if (kept.in_start != NULL) {
    if (rc == BPC_OK) { /* into auto's cache entry */
      ce->plan = kept;
      ce->nsteps = C.S.nsteps;
    } else {
      bpc__bcast_plan_free(&kept);
    }
  }
  free(C.rk);
  if (rc == BPC_OK && info != NULL) {
    memset(info, 0, sizeof *info);
    info->algorithm = (bpc_bcast_algorithm_t)row->info.id;
    snprintf(info->name, sizeof info->name, "%s", row->info.name);
    info->source = source;
    info->rows = rows;
    info->cols = cols;
    bcast_effective(&C, row, &info->reposition, &info->partition);
    info->steps = C.steps;
    info->msgs_sent = C.msgs;
    info->bytes_sent = C.bytes;
  }
  return rc;
}

/* The public entry: the re-entrancy guard (bpc__enter) around the call. */
int bpc_bcast(bpc_ctx_t *ctx, const bpc_assign_t *assign, const bpc_type_t *type,
              const int *sources, int nsources, bpc_bcast_item_fn item_of, bpc_bcast_recv_fn recv,
              void *user, const bpc_bcast_params_t *params, bpc_bcast_info_t *info)
{
  BPC__GUARDED_RETURN(ctx, "bpc_bcast",
      bcast_entry(ctx, assign, type, sources, nsources, item_of, recv, user, params, info));
}
