/*
 * lib/engines/bcast/bcast_model.c - the cost model of the broadcast's
 * "auto" (doc/bcast.md "Choosing"): its machine constants, a row's
 * modelled time, the choice among every row's variants, and the call
 * state the model and the executor share (blocks' ranks, the call's
 * fields); bpc__bcast_model_time for bpc-bench.
 */
#include "engines/bcast/bcast_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decomp/decomp.h"

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

double bpc__bcast_alpha(void) { return bcast_const("BPC_BCAST_ALPHA", BC_ALPHA); }
double bpc__bcast_beta(void) { return bcast_const("BPC_BCAST_BETA", BC_BETA); }

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

/* Every block's rank, computed once per call and only when a schedule is
 * built (the model, or the executor without auto's cached plan): C->rk and
 * C->S.rk (the schedules drop transfers inside a process as they are
 * built, the plans read it). The caller frees C->rk. */
int bpc__bcast_ranks(bpc__bcast_call_t *C)
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

/* A call's state with the fields the model and the executor share. */
void bpc__bcast_call_init(bpc__bcast_call_t *C, bpc_ctx_t *ctx, const bpc_assign_t *assign,
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
  bpc__bcast_call_init(&C, ctx, assign, sources, nsources, rows, cols, reposition, partition,
                       bpc__bcast_alpha(), bpc__bcast_beta());
  if (bpc__bcast_ranks(&C) != BPC_OK)
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
    bpc__bcast_effective(&C, row, &r, &q);
    snprintf(pick, npick, "%s%s%s%s", row->info.name, r || q ? "+" : "", r ? "r" : "",
             q ? "p" : "");
  }
  return rc;
}
