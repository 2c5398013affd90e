/*
 * tests/mpi/test_trace.c - the particle tracer of bpc-trace (apps/trace)
 * against a serial single-block run: for several block counts (one block,
 * fewer blocks than processes, several per process, a prime count), both
 * built-in fields, synchrony 1.0, 0.5 and 0.1, with and without a per-round
 * step budget, every trajectory point (id, step, position) gathered on rank
 * 0 must equal the serial run's to 1e-12, with none missing or repeated; the
 * totals must match; a step too large for the ghost layer fails on every
 * rank with a message. Checkpoint and restart: a run stopped after its
 * first checkpoint (particles in flight), restarted on fewer processes (a
 * sub-communicator), and a chain of a checkpointing restart and a restart
 * at synchrony 0.5, each end with the serial run's points; a restart of
 * another problem or from a missing file fails on every rank.
 */
#include "mpi_check.h"

#include <math.h>
#include <unistd.h>

#include "bpc.h"
#include "trace/trace.h"

static bpc_ctx_t *ctx;

static void setup(void) { ck_assert_int_eq(bpc_init(MPI_COMM_WORLD, NULL, &ctx), BPC_OK); }
static void teardown(void) { bpc_finalize(&ctx); }

typedef struct ref {
  trace_point_t *pts;
  int64_t n, steps, left;
} ref_t;

/* The serial run over the whole grid (one box, no blocks, no exchange). */
static void serial_reference(const trace_field_t *f, const double *seeds, int64_t ns, double h,
                             int max_steps, ref_t *r)
{
  trace_box_t whole;
  char err[256];
  memset(&whole, 0, sizeof whole);
  for (int k = 0; k < 3; k++)
    whole.hi[k] = f->dims[k];
  ck_assert_int_eq(trace_box_load(f, &whole, err, sizeof err), 0);
  r->pts = malloc(sizeof *r->pts * (size_t)ns * (size_t)(max_steps + 1));
  r->n = r->steps = r->left = 0;
  for (int64_t s = 0; s < ns; s++) {
    int left = 0;
    int64_t k = trace_serial(&whole, seeds + 3 * s, s, h, max_steps, r->pts + r->n, &left);
    r->n += k;
    r->steps += k - 1;
    r->left += left;
  }
  trace_box_free(&whole);
}

/* All ranks' points on rank 0, sorted by (id, step). */
static trace_point_t *gather_all(const trace_result_t *res, int64_t *n)
{
  int mine = (int)(res->npoints * (int64_t)sizeof(trace_point_t));
  int *counts = calloc((size_t)t_size, sizeof(int)), *displ = calloc((size_t)t_size, sizeof(int));
  MPI_Gather(&mine, 1, MPI_INT, counts, 1, MPI_INT, 0, MPI_COMM_WORLD);
  int total = 0;
  for (int i = 0; i < t_size; i++) {
    displ[i] = total;
    total += counts[i];
  }
  trace_point_t *all = t_rank == 0 ? malloc((size_t)total + 1) : NULL;
  MPI_Gatherv(res->points, mine, MPI_BYTE, all, counts, displ, MPI_BYTE, 0, MPI_COMM_WORLD);
  free(counts);
  free(displ);
  *n = total / (int64_t)sizeof(trace_point_t);
  if (t_rank == 0)
    trace_sort_points(all, *n);
  return all;
}

/* Every rank's points of res (ranks outside the run pass an empty result)
 * equal the serial run's, in place and to 1e-12. Collective over WORLD. */
static void check_points(const trace_result_t *res, const ref_t *ref, const char *what)
{
  int64_t n = 0;
  trace_point_t *all = gather_all(res, &n);
  if (t_rank == 0) {
    T_CHECK(n == ref->n, "%s: %lld points, the serial run has %lld", what, (long long)n,
            (long long)ref->n);
    double worst = 0;
    int64_t bad = 0;
    for (int64_t i = 0; i < n && i < ref->n; i++) {
      if (all[i].id != ref->pts[i].id || all[i].step != ref->pts[i].step) {
        bad++;
        continue;
      }
      for (int k = 0; k < 3; k++)
        worst = fmax(worst, fabs(all[i].p[k] - ref->pts[i].p[k]));
    }
    T_CHECK(bad == 0, "%s: %lld points out of place (missing or repeated)", what,
            (long long)bad);
    T_CHECK(worst <= 1e-12, "%s: trajectories differ by %g", what, worst);
  }
  free(all);
}

static void run_case(trace_field_kind_t kind, int nblocks, double f, int round_steps)
{
  trace_field_t fld;
  memset(&fld, 0, sizeof fld);
  fld.kind = kind;
  fld.dims[0] = 20;
  fld.dims[1] = 17;
  fld.dims[2] = 23;
  const int64_t ns = 30;
  const int max_steps = 120;
  double lo[3] = {1, 1, 1}, hi[3] = {18, 15, 21}, *seeds = NULL;
  ck_assert_int_eq(trace_seeds_random(ns, 7 + (uint64_t)kind, lo, hi, &seeds), 0);

  /* step: half of what the ghost layer allows (vmax of the whole grid) */
  trace_box_t whole;
  char err[256];
  memset(&whole, 0, sizeof whole);
  for (int k = 0; k < 3; k++)
    whole.hi[k] = fld.dims[k];
  ck_assert_int_eq(trace_box_load(&fld, &whole, err, sizeof err), 0);
  const double h = 0.5 * trace_max_step(trace_box_vmax(&whole));
  trace_box_free(&whole);

  ref_t ref;
  serial_reference(&fld, seeds, ns, h, max_steps, &ref);

  trace_params_t P;
  memset(&P, 0, sizeof P);
  P.field = fld;
  P.nblocks = nblocks;
  P.h = h;
  P.max_steps = max_steps;
  P.round_steps = round_steps;
  P.synchrony = f;
  P.record = 1;
  P.nthreads = 1;
  P.seeds = seeds;
  P.nseeds = ns;
  trace_result_t res;
  int rc = trace_run(ctx, &P, &res);
  T_CHECK(rc == BPC_OK, "trace_run (%d blocks, f=%g): %s", nblocks, f, res.err);
  T_CHECK(res.finished == ns, "%lld of %lld particles finished", (long long)res.finished,
          (long long)ns);
  T_CHECK(res.steps == ref.steps, "%lld steps, the serial run took %lld", (long long)res.steps,
          (long long)ref.steps);
  T_CHECK(res.left == ref.left, "%lld left the domain, serially %lld", (long long)res.left,
          (long long)ref.left);
  char what[64];
  snprintf(what, sizeof what, "%d blocks, f=%g", nblocks, f);
  check_points(&res, &ref, what);
  trace_result_free(&res);
  free(ref.pts);
  free(seeds);
}

START_TEST(test_trajectories)
{
  run_case(TRACE_FIELD_TORNADO, 1, 1.0, 0);
  run_case(TRACE_FIELD_TORNADO, t_size > 1 ? t_size - 1 : 1, 1.0, 0);
  run_case(TRACE_FIELD_TORNADO, 2 * t_size, 0.5, 0);
  run_case(TRACE_FIELD_ABC, 3 * t_size + 1 <= 23 ? 3 * t_size + 1 : 23, 0.1, 0);
  run_case(TRACE_FIELD_ABC, 13, 1.0, 7);
  run_case(TRACE_FIELD_TORNADO, 4 * t_size, 0.25, 5);
  T_SYNC();
}
END_TEST

START_TEST(test_step_too_large)
{
  trace_field_t fld;
  memset(&fld, 0, sizeof fld);
  fld.kind = TRACE_FIELD_ABC;
  fld.dims[0] = fld.dims[1] = fld.dims[2] = 16;
  double lo[3] = {2, 2, 2}, hi[3] = {13, 13, 13}, *seeds = NULL;
  trace_seeds_random(20, 3, lo, hi, &seeds);
  trace_params_t P;
  memset(&P, 0, sizeof P);
  P.field = fld;
  P.nblocks = 8;
  P.h = 2.0; /* ABC on 16^3 moves up to ~4 cells per unit time: 8 cells a step */
  P.max_steps = 50;
  P.synchrony = 1.0;
  P.nthreads = 1;
  P.seeds = seeds;
  P.nseeds = 20;
  trace_result_t res;
  int rc = trace_run(ctx, &P, &res);
  T_CHECK(rc == BPC_ECALLBACK, "a step past the ghost layer: rc %d", rc);
  T_CHECK(strlen(res.err) > 0, "no message");
  trace_result_free(&res);
  /* a seed outside the domain is refused before anything runs */
  seeds[0] = -1;
  rc = trace_run(ctx, &P, &res);
  T_CHECK(rc == BPC_ERANGE && strstr(res.err, "outside") != NULL, "seed outside: rc %d (%s)", rc,
          res.err);
  free(seeds);
  T_SYNC();
}
END_TEST

START_TEST(test_checkpoint)
{
  trace_field_t fld;
  memset(&fld, 0, sizeof fld);
  fld.kind = TRACE_FIELD_TORNADO;
  fld.dims[0] = 18;
  fld.dims[1] = 16;
  fld.dims[2] = 21;
  const int64_t ns = 25;
  const int max_steps = 150;
  double lo[3] = {1, 1, 1}, hi[3] = {16, 14, 19}, *seeds = NULL;
  ck_assert_int_eq(trace_seeds_random(ns, 11, lo, hi, &seeds), 0);
  trace_box_t whole;
  char err[256];
  memset(&whole, 0, sizeof whole);
  for (int k = 0; k < 3; k++)
    whole.hi[k] = fld.dims[k];
  ck_assert_int_eq(trace_box_load(&fld, &whole, err, sizeof err), 0);
  const double vmax = trace_box_vmax(&whole);
  const double h = 0.5 * trace_max_step(vmax);
  trace_box_free(&whole);
  ref_t ref;
  serial_reference(&fld, seeds, ns, h, max_steps, &ref);

  /* one path for every rank: rank 0's */
  char path[256], path2[300];
  int pid = (int)getpid();
  MPI_Bcast(&pid, 1, MPI_INT, 0, MPI_COMM_WORLD);
  const char *td = getenv("TMPDIR");
  snprintf(path, sizeof path, "%s/bpc-test-trace-%d.ckpt", td && td[0] ? td : "/tmp", pid);
  snprintf(path2, sizeof path2, "%s.2", path);

  trace_params_t P;
  memset(&P, 0, sizeof P);
  P.field = fld;
  P.nblocks = 2 * t_size + 1;
  P.h = h;
  P.vmax = vmax;
  P.max_steps = max_steps;
  P.round_steps = 4;
  P.synchrony = -1;
  P.record = 1;
  P.nthreads = 1;
  P.seeds = seeds;
  P.nseeds = ns;
  P.ckpt_every = 3;
  P.ckpt_path = path;
  P.stop_after = 1;
  trace_result_t res;

  /* stopped after the first checkpoint, with particles in flight */
  int rc = trace_run(ctx, &P, &res);
  T_CHECK(rc == BPC_OK, "checkpointing run: %s", res.err);
  T_CHECK(res.stopped == 1 && res.checkpoints == 1 && res.round == 3,
          "stopped %d after %d checkpoint(s) at round %lld: want 1, 1, 3", res.stopped,
          res.checkpoints, res.round);
  T_CHECK(res.finished < ns, "all %lld particles finished by round 3: nothing in flight",
          (long long)res.finished);
  T_CHECK(res.npoints == 0 && res.points == NULL, "a stopped run returned points");
  trace_result_free(&res);

  /* restarted on fewer processes (the others pass an empty result) */
  MPI_Comm sub;
  const int nsub = t_size > 1 ? t_size - 1 : 1;
  MPI_Comm_split(MPI_COMM_WORLD, t_rank < nsub ? 0 : MPI_UNDEFINED, t_rank, &sub);
  memset(&res, 0, sizeof res);
  if (sub != MPI_COMM_NULL) {
    bpc_ctx_t *sctx = NULL;
    ck_assert_int_eq(bpc_init(sub, NULL, &sctx), BPC_OK);
    trace_params_t Q = P;
    Q.ckpt_every = 0;
    Q.stop_after = 0;
    Q.ckpt_path = NULL;
    Q.nblocks = 0;
    Q.restart = path;
    rc = trace_run(sctx, &Q, &res);
    T_CHECK(rc == BPC_OK, "restart on %d processes: %s", nsub, res.err);
    T_CHECK(res.finished == ns && res.steps == ref.steps && res.left == ref.left,
            "restart: %lld finished, %lld steps, %lld left; serially %lld, %lld, %lld",
            (long long)res.finished, (long long)res.steps, (long long)res.left, (long long)ns,
            (long long)ref.steps, (long long)ref.left);
    bpc_finalize(&sctx);
    MPI_Comm_free(&sub);
  }
  check_points(&res, &ref, "restarted on fewer processes");
  trace_result_free(&res);

  /* a chain: restart that checkpoints (round 6) and stops, then a restart
   * at synchrony 0.5 */
  trace_params_t Q = P;
  Q.nblocks = 0;
  Q.restart = path;
  Q.ckpt_path = path2;
  rc = trace_run(ctx, &Q, &res);
  T_CHECK(rc == BPC_OK && res.stopped && res.round == 6, "chain, first: rc %d round %lld: %s", rc,
          res.round, res.err);
  trace_result_free(&res);
  Q.restart = path2;
  Q.ckpt_every = Q.stop_after = 0;
  Q.synchrony = 0.5;
  rc = trace_run(ctx, &Q, &res);
  T_CHECK(rc == BPC_OK, "chain, second: %s", res.err);
  check_points(&res, &ref, "a chain of restarts");
  trace_result_free(&res);

  /* another problem, a missing file: refused on every rank */
  Q.restart = path;
  Q.max_steps = max_steps + 1;
  rc = trace_run(ctx, &Q, &res);
  T_CHECK(rc == BPC_EMISMATCH && res.bad_restart && strstr(res.err, "--max-steps") != NULL,
          "restart of another problem: rc %d bad %d (%s)", rc, res.bad_restart, res.err);
  trace_result_free(&res);
  Q.max_steps = max_steps;
  Q.restart = "/nonexistent/bpc-test-trace.ckpt";
  rc = trace_run(ctx, &Q, &res);
  T_CHECK(rc == BPC_EIO && res.bad_restart, "restart from a missing file: rc %d bad %d (%s)", rc,
          res.bad_restart, res.err);
  trace_result_free(&res);

  MPI_Barrier(MPI_COMM_WORLD);
  if (t_rank == 0) {
    remove(path);
    remove(path2);
  }
  free(ref.pts);
  free(seeds);
  T_SYNC();
}
END_TEST

static Suite *trace_suite(void)
{
  Suite *s = suite_create("trace");
  TCase *tc = tcase_create("mpi");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 0);
  tcase_add_test(tc, test_trajectories);
  tcase_add_test(tc, test_step_too_large);
  tcase_add_test(tc, test_checkpoint);
  suite_add_tcase(s, tc);
  return s;
}

BPC_T_MPI_MAIN(trace_suite)
