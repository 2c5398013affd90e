/*
 * lib/threads/tree.c - the ordered local tree reduction (DIY paper, Figure 4)
 * with OpenMP: a fixed pairwise tree over m operands; the element range is
 * cut into chunks that run through the whole tree, spread over the threads.
 * See threads.h for the tree's shape and the guarantees.
 */
#include "threads/threads.h"

#include <limits.h>
#include <stdlib.h>

#define SMALL_M_PLAN 128
#define SMALL_JOBS 64
#ifdef _OPENMP
#include <omp.h>
#endif

int bpc__threads_resolve(int requested)
{
#ifdef _OPENMP
  if (requested <= 0)
    requested = omp_get_max_threads();
#else
  requested = 1;
#endif
  return requested < 1 ? 1 : requested;
}

/* Run-holder bookkeeping shared by the plan and the execution. */
int bpc__tree_plan(int m, int home, int *left, int *right, int *into, int cap)
{
  if (m < 1)
    return 0;
  int nm = 0;
  /* holder of the run starting at i: kept in `into` order; recomputed here
   * without memory: the holder of a run is home if the run contains home,
   * else its first operand. */
  for (int s = 1; s < m; s *= 2) {
    for (int i = 0; i + s < m; i += 2 * s) {
      const int rlo = i + s, rhi = (i + 2 * s < m) ? i + 2 * s : m;
      const int home_right = home >= rlo && home < rhi;
      const int home_left = home >= i && home < rlo;
      const int hl = home_left ? home : i, hr = home_right ? home : rlo;
      if (nm < cap) {
        if (left)
          left[nm] = i;
        if (right)
          right[nm] = rlo;
        if (into)
          into[nm] = home_right ? hr : hl;
      }
      nm++;
      if (s > INT_MAX / 2)
        break;
    }
    if (s > INT_MAX / 2)
      break;
  }
  return nm;
}

void bpc__tree_chunks(const bpc__tree_t *t, size_t work, size_t maxcount, int *nthreads,
                      size_t *chunk)
{
  const size_t minc = t->min_chunk > 0 ? t->min_chunk : 1;
  /* No more threads than chunks of work: small reductions stay serial
   * (starting a parallel region costs more than they do). */
  int T = t->nthreads > 1 ? t->nthreads : 1;
  if ((size_t)T > work / minc)
    T = work / minc > 0 ? (int)(work / minc) : 1;
  size_t ch = maxcount > 0 ? maxcount : 1;
  if (T > 1) {
    const size_t per = work / (16 * (size_t)T);
    ch = per > minc ? per : minc;
  }
  *nthreads = T;
  *chunk = ch;
}

int bpc__tree_unit_job(const size_t *first, int njobs, size_t u)
{
  int lo = 0, hi = njobs - 1; /* the last job whose first unit is <= u */
  while (lo < hi) {
    const int mid = lo + (hi - lo + 1) / 2;
    if (first[mid] <= u)
      lo = mid;
    else
      hi = mid - 1;
  }
  return lo;
}

/* One merge: the two buffers and the order flag. */
typedef struct merge {
  char *inout;
  const char *in;
  int in_first;
} merge_t;

#define SMALL_MERGES 256

/* The merges of one job (m - 1 of them) into mg, from its plan. */
static void job_merges(const bpc__tree_job_t *j, merge_t *mg, int *L, int *R, int *I)
{
  const int nm = j->m - 1;
  bpc__tree_plan(j->m, j->home, L, R, I, nm);
  /* `into` holds the merged run; the other run's holder is its first
   * operand (it cannot contain home, else it would be the one written into) */
  for (int x = 0; x < nm; x++) {
    const int right_gets = I[x] >= R[x];
    mg[x].inout = j->bufs[I[x]];
    mg[x].in = j->bufs[right_gets ? L[x] : R[x]];
    mg[x].in_first = right_gets; /* the left run comes first in the order */
  }
}

/* What the units of bpc__tree_reduce_many share. */
typedef struct tree_units {
  const bpc__tree_t *t;
  bpc__tree_job_t *jobs;
  const merge_t *mg;
  const size_t *first, *unit;
  int njobs;
  size_t chunk;
} tree_units_t;

/* Unit u: one chunk of its job's range through the job's whole tree; 0 or
 * the operator's first nonzero value. */
static int tree_unit(const tree_units_t *U, size_t u)
{
  const size_t es = U->t->elem_size;
  const int ji = bpc__tree_unit_job(U->unit, U->njobs, u);
  const size_t c = u - U->unit[ji];
  bpc__tree_job_t *j = &U->jobs[ji];
  const size_t lo = c * U->chunk, len = lo + U->chunk <= j->count ? U->chunk : j->count - lo;
  const merge_t *jm = U->mg + U->first[ji];
  for (int x = 0; x < j->m - 1; x++) {
    int rc = U->t->fn(jm[x].in + lo * es, jm[x].inout + lo * es, len, jm[x].in_first, U->t->arg);
    if (rc != 0)
      return rc;
    if (c == 0) {
#pragma omp atomic update
      j->nmerges++;
    }
  }
  return 0;
}

int bpc__tree_reduce_many(const bpc__tree_t *t, bpc__tree_job_t *jobs, int njobs)
{
  if (t == NULL || t->fn == NULL || t->elem_size == 0 || njobs < 0 || (njobs > 0 && jobs == NULL))
    return -1;
  size_t total_merges = 0, work = 0, maxcount = 0;
  for (int i = 0; i < njobs; i++) {
    bpc__tree_job_t *j = &jobs[i];
    if (j->bufs == NULL || j->m < 1 || j->home < -1 || j->home >= j->m)
      return -1;
    j->holder = j->home >= 0 ? j->home : 0;
    j->nmerges = 0;
    if (j->count > 0) {
      total_merges += (size_t)(j->m - 1);
      work += j->count;
      if (j->count > maxcount)
        maxcount = j->count;
    }
  }
  if (total_merges == 0)
    return 0;

  /* every merge of every job, job after job, level order within a job */
  int ismall[3 * SMALL_M_PLAN];
  merge_t msmall[SMALL_MERGES];
  size_t first_small[SMALL_JOBS], unit_small[SMALL_JOBS + 1];
  merge_t *mg = msmall;
  size_t *first = first_small; /* first merge of job i */
  size_t *unit = unit_small;   /* first unit of job i (bpc__tree_unit_job) */
  int *plan = ismall;
  int ret = 0, maxm = 1;
  for (int i = 0; i < njobs; i++)
    if (jobs[i].m > maxm)
      maxm = jobs[i].m;
  if (total_merges > SMALL_MERGES)
    mg = malloc(sizeof(merge_t) * total_merges);
  if (njobs > SMALL_JOBS) {
    first = malloc(sizeof(size_t) * (size_t)njobs);
    unit = malloc(sizeof(size_t) * ((size_t)njobs + 1));
  }
  if (maxm > SMALL_M_PLAN)
    plan = malloc(sizeof(int) * 3 * (size_t)maxm);
  if (mg == NULL || first == NULL || unit == NULL || plan == NULL) {
    ret = -1;
    goto cleanup;
  }
  {
    size_t at = 0;
    for (int i = 0; i < njobs; i++) {
      first[i] = at;
      if (jobs[i].count == 0 || jobs[i].m < 2)
        continue;
      job_merges(&jobs[i], mg + at, plan, plan + maxm, plan + 2 * maxm);
      at += (size_t)(jobs[i].m - 1);
    }
  }

  int T = 1;
  size_t chunk = maxcount;
  bpc__tree_chunks(t, work, maxcount, &T, &chunk);
  /* With threads the element range of every job is cut into chunks and each
   * chunk runs through its job's whole tree (every merge of every level) on
   * its own: the operator is element-wise, so levels need no barrier
   * between them, and one parallel region serves all jobs. Chunks of at
   * least min_chunk elements, about 16 per thread, taken dynamically (a
   * thread that loses its core delays the call by one chunk, not by its
   * share). Serially every job goes through its tree whole, level by level
   * (measured no faster in pieces). */
  size_t nunits = 0;
  for (int i = 0; i < njobs; i++) {
    unit[i] = nunits;
    if (jobs[i].count > 0 && jobs[i].m > 1)
      nunits += (jobs[i].count + chunk - 1) / chunk;
  }
  unit[njobs] = nunits;
  int err = 0;
  size_t err_unit = 0;

  const tree_units_t U = {t, jobs, mg, first, unit, njobs, chunk};
  if (T > 1) {
#pragma omp parallel for num_threads(T) schedule(dynamic, 1)
    for (size_t u = 0; u < nunits; u++) {
      int e;
#pragma omp atomic read
      e = err;
      if (e != 0)
        continue;
      const int rc = tree_unit(&U, u);
      if (rc != 0) {
#pragma omp critical(bpc_tree_err)
        {
          if (err == 0 || u < err_unit) {
            err = rc;
            err_unit = u;
          }
        }
      }
    }
  } else { /* no team: even a parallel region with if(0) costs ~0.3 us */
    for (size_t u = 0; u < nunits && err == 0; u++)
      err = tree_unit(&U, u);
  }
  ret = err;

cleanup:
  if (mg != msmall)
    free(mg);
  if (first != first_small)
    free(first);
  if (unit != unit_small)
    free(unit);
  if (plan != ismall)
    free(plan);
  return ret;
}

int bpc__tree_reduce(const bpc__tree_t *t, void *const *bufs, int m, int home, size_t count,
                     int *holder, int *nmerges)
{
  if (nmerges)
    *nmerges = 0;
  if (t == NULL || bufs == NULL || t->fn == NULL || m < 1 || home < -1 || home >= m ||
      t->elem_size == 0)
    return -1;
  bpc__tree_job_t j = {bufs, m, home, count, 0, 0};
  int rc = bpc__tree_reduce_many(t, &j, 1);
  if (holder)
    *holder = j.holder;
  if (nmerges)
    *nmerges = j.nmerges;
  return rc;
}
