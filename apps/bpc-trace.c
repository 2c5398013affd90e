/*
 * apps/bpc-trace.c - bpc-trace: parallel particle tracing in a steady 3-D
 * vector field with bpc's neighbour exchange (DIY Algorithm 3).
 *
 * The field (a built-in tornado vortex or ABC flow sampled on a grid, or a
 * raw float32 file) is cut into blocks with a one-cell ghost layer; each
 * block holds only its own samples; particles are advected with RK4 and a
 * fixed step and move between blocks through bpc_neighbor_iterate, which
 * ends the run when every particle has left the domain or used its steps.
 * Rank 0 writes the streamlines as legacy VTK polydata and a PNG projection.
 * --bench times the tracing at synchrony 1.0, 0.5 and 0.25 on seeds packed
 * into a corner of the domain (a few blocks start with all the work).
 * --checkpoint-every N saves the run (particles in flight, recorded points)
 * every N rounds with bpc_io_write; --restart FILE continues it on any
 * process count, with the same output as an uninterrupted run.
 *
 * See doc/apps/trace.md, or run bpc-trace --help.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bpc.h"
#include "trace/trace.h"
#include "common/app_args.h"

typedef struct opts {
  trace_field_t field;
  int nblocks; /* 0: 4 per process */
  int64_t nseeds;
  uint64_t seed;
  const char *seed_file;
  double box[6]; /* seed box, fractions of the domain */
  double step;   /* 0: half the largest safe step */
  int max_steps, round_steps;
  double synchrony;
  int threads;
  const char *vtk, *png, *plane;
  int width, height;
  int quiet, bench, bench_reps;
  int ckpt_every, stop_after;     /* 0: none */
  const char *ckpt, *restart;     /* NULL: default name / no restart */
} opts_t;

static void usage(FILE *f)
{
  fprintf(f,
          "usage: mpirun -np P bpc-trace [options]\n"
          "\n"
          "Traces particles through a steady 3-D vector field with RK4, on blocks spread\n"
          "over the processes; particles move between blocks with bpc's neighbour exchange.\n"
          "Writes the streamlines as VTK polydata and a PNG picture (rank 0).\n"
          "\n"
          "field:\n"
          "  --field NAME|FILE    tornado (default), abc, or a raw float32 file of\n"
          "                       NX*NY*NZ vectors (x y z components, x fastest)\n"
          "  --dims NX,NY,NZ      grid vertices (default 64,64,64; required with a file)\n"
          "  --blocks N           blocks (default 4 per process)\n"
          "seeds:\n"
          "  --seeds N            uniform random seeds (default 256)\n"
          "  --seed S             random seed (default 1)\n"
          "  --seed-box X0,Y0,Z0,X1,Y1,Z1   seed region as fractions of the domain\n"
          "                       (default 0,0,0,1,1,1)\n"
          "  --seed-file FILE     seeds \"x y z\" per line, grid units (instead of random)\n"
          "integration:\n"
          "  --step H             RK4 step (default: half the largest step the ghost\n"
          "                       layer allows, 0.475 / max |v component|)\n"
          "  --max-steps N        steps per particle (default 1000)\n"
          "  --round-steps N      steps per particle per exchange round (default 0: until\n"
          "                       it leaves the block)\n"
          "  --synchrony F        fraction of expected messages a round waits for, (0, 1]\n"
          "                       (default 1; BPC_NEIGHBOR_SYNCHRONY)\n"
          "  --threads N          threads over local blocks (default 1; 0: OpenMP default)\n"
          "checkpoint and restart:\n"
          "  --checkpoint-every N write a checkpoint after every N-th exchange round (the\n"
          "                       rounds are then synchronous; counted from the start,\n"
          "                       restarts included)\n"
          "  --checkpoint FILE    where (default: the --vtk name + .ckpt, trace.ckpt\n"
          "                       with --vtk none); written atomically\n"
          "  --stop-after-checkpoint K   stop after writing K checkpoints (no output)\n"
          "  --restart FILE       continue from a checkpoint, on any process count; give\n"
          "                       the same field, seed, step and --max-steps options (the\n"
          "                       block count is the checkpoint's)\n"
          "output:\n"
          "  --vtk FILE           streamlines, legacy VTK (default trace.vtk; 'none': skip)\n"
          "  --png FILE           picture (default trace.png; 'none': skip)\n"
          "  --plane xy|xz|yz     projection plane of the picture (default xz)\n"
          "  --size WxH           picture size (default 512x512)\n"
          "  --quiet              no progress on stderr\n"
          "  --bench              time the tracing at synchrony 1.0, 0.5, 0.25 with seeds\n"
          "                       packed in a corner (imbalanced); no output files\n"
          "  --bench-reps N       repetitions per synchrony (default 3; median reported)\n"
          "  --help               this text\n");
}

/* Exactly n finite numbers separated by commas: 0, else -1. */
static int parse_n(const char *s, double *v, int n)
{
  int got = 0;
  return app_parse_double_list(s, v, n, &got) == 0 && got == n ? 0 : -1;
}

/* Parse argv; returns 0 run, 1 help, 2 error (message in msg). */

/* The options that take a value (the others are --help, --quiet, --bench). */
static int takes_value(const char *a)
{
  static const char *const names[] = {
      "--bench-reps", "--blocks", "--checkpoint", "--checkpoint-every", "--dims", "--field",
      "--max-steps", "--plane", "--png", "--restart", "--round-steps", "--seed", "--seed-box",
      "--seed-file", "--seeds", "--size", "--step", "--stop-after-checkpoint", "--synchrony",
      "--threads", "--vtk"};
  for (size_t k = 0; k < sizeof names / sizeof names[0]; k++)
    if (strcmp(a, names[k]) == 0)
      return 1;
  return 0;
}
static int parse(int argc, char **argv, opts_t *o, char *msg, size_t len)
{
  memset(o, 0, sizeof *o);
  o->field.kind = TRACE_FIELD_TORNADO;
  o->field.dims[0] = o->field.dims[1] = o->field.dims[2] = 64;
  o->nseeds = 256;
  o->seed = 1;
  o->box[3] = o->box[4] = o->box[5] = 1.0;
  o->max_steps = 1000;
  o->synchrony = -1;
  o->threads = 1;
  o->vtk = "trace.vtk";
  o->png = "trace.png";
  o->plane = "xz";
  o->width = o->height = 512;
  o->bench_reps = 3;
  int dims_given = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0)
      return 1;
    if (strcmp(a, "--quiet") == 0) {
      o->quiet = 1;
      continue;
    }
    if (strcmp(a, "--bench") == 0) {
      o->bench = 1;
      continue;
    }
    if (strncmp(a, "--", 2) == 0 && !takes_value(a)) {
      snprintf(msg, len, "unknown option '%s' (try --help)", a);
      return 2;
    }
    if (strncmp(a, "--", 2) != 0 || i + 1 >= argc) {
      snprintf(msg, len, strncmp(a, "--", 2) != 0 ? "unexpected argument '%s'"
                                                  : "option '%s' needs a value",
               a);
      return 2;
    }
    const char *v = argv[++i];
    long long x;
    double d[6];
    if (strcmp(a, "--field") == 0) {
      if (strcmp(v, "tornado") == 0) {
        o->field.kind = TRACE_FIELD_TORNADO;
      } else if (strcmp(v, "abc") == 0) {
        o->field.kind = TRACE_FIELD_ABC;
      } else if (access(v, R_OK) != 0) {
        snprintf(msg, len, "--field '%s': not a known field (tornado, abc) nor a readable file (%s)",
                 v, strerror(errno));
        return 2;
      } else {
        o->field.kind = TRACE_FIELD_FILE;
        o->field.path = v;
      }
    } else if (strcmp(a, "--dims") == 0) {
      if (parse_n(v, d, 3) != 0 || d[0] < 2 || d[1] < 2 || d[2] < 2 || d[0] > 1e6 ||
          d[1] > 1e6 || d[2] > 1e6 || d[0] != floor(d[0]) || d[1] != floor(d[1]) ||
          d[2] != floor(d[2])) {
        snprintf(msg, len, "--dims '%s': want NX,NY,NZ, integers >= 2", v);
        return 2;
      }
      if (d[0] * d[1] * d[2] > (double)(1LL << 30)) {
        snprintf(msg, len, "--dims '%s': the field is too large (at most %lld vertices)", v,
                 1LL << 30);
        return 2;
      }
      for (int k = 0; k < 3; k++)
        o->field.dims[k] = (int64_t)d[k];
      dims_given = 1;
    } else if (strcmp(a, "--blocks") == 0) {
      if (app_parse_ll(v, 1, INT_MAX / 2, &x) != 0) {
        snprintf(msg, len, "--blocks '%s': want a positive integer", v);
        return 2;
      }
      o->nblocks = (int)x;
    } else if (strcmp(a, "--seeds") == 0) {
      if (app_parse_ll(v, 0, 1LL << 40, &x) != 0) {
        snprintf(msg, len, "--seeds '%s': want a count >= 0", v);
        return 2;
      }
      o->nseeds = x;
    } else if (strcmp(a, "--seed") == 0) {
      if (app_parse_ll(v, 0, LLONG_MAX, &x) != 0) {
        snprintf(msg, len, "--seed '%s': want an integer >= 0", v);
        return 2;
      }
      o->seed = (uint64_t)x;
    } else if (strcmp(a, "--seed-box") == 0) {
      if (parse_n(v, o->box, 6) != 0) {
        snprintf(msg, len, "--seed-box '%s': want six fractions X0,Y0,Z0,X1,Y1,Z1", v);
        return 2;
      }
      for (int k = 0; k < 3; k++)
        if (!(o->box[k] >= 0 && o->box[k] <= o->box[k + 3] && o->box[k + 3] <= 1)) {
          snprintf(msg, len, "--seed-box '%s': want 0 <= lo <= hi <= 1 per dimension", v);
          return 2;
        }
    } else if (strcmp(a, "--seed-file") == 0) {
      o->seed_file = v;
    } else if (strcmp(a, "--step") == 0) {
      if (parse_n(v, &o->step, 1) != 0 || !(o->step > 0)) {
        snprintf(msg, len, "--step '%s': want a positive number", v);
        return 2;
      }
    } else if (strcmp(a, "--max-steps") == 0) {
      if (app_parse_ll(v, 0, INT_MAX, &x) != 0) {
        snprintf(msg, len, "--max-steps '%s': want an integer >= 0", v);
        return 2;
      }
      o->max_steps = (int)x;
    } else if (strcmp(a, "--round-steps") == 0) {
      if (app_parse_ll(v, 0, INT_MAX, &x) != 0) {
        snprintf(msg, len, "--round-steps '%s': want an integer >= 0", v);
        return 2;
      }
      o->round_steps = (int)x;
    } else if (strcmp(a, "--synchrony") == 0) {
      if (parse_n(v, &o->synchrony, 1) != 0 || !(o->synchrony > 0 && o->synchrony <= 1)) {
        snprintf(msg, len, "--synchrony '%s': want a fraction in (0, 1]", v);
        return 2;
      }
    } else if (strcmp(a, "--threads") == 0) {
      if (app_parse_ll(v, 0, 1024, &x) != 0) {
        snprintf(msg, len, "--threads '%s': want 0 (OpenMP default) or a count", v);
        return 2;
      }
      o->threads = (int)x;
    } else if (strcmp(a, "--vtk") == 0) {
      o->vtk = v;
    } else if (strcmp(a, "--png") == 0) {
      o->png = v;
    } else if (strcmp(a, "--plane") == 0) {
      if (strcmp(v, "xy") != 0 && strcmp(v, "xz") != 0 && strcmp(v, "yz") != 0) {
        snprintf(msg, len, "--plane '%s': want xy, xz or yz", v);
        return 2;
      }
      o->plane = v;
    } else if (strcmp(a, "--size") == 0) {
      int w, h;
      char c;
      if (sscanf(v, "%dx%d%c", &w, &h, &c) != 2 || w < 16 || h < 16 || w > 16384 || h > 16384) {
        snprintf(msg, len, "--size '%s': want WxH, 16..16384 each", v);
        return 2;
      }
      o->width = w;
      o->height = h;
    } else if (strcmp(a, "--checkpoint-every") == 0) {
      if (app_parse_ll(v, 1, INT_MAX, &x) != 0) {
        snprintf(msg, len, "--checkpoint-every '%s': want a positive number of rounds", v);
        return 2;
      }
      o->ckpt_every = (int)x;
    } else if (strcmp(a, "--stop-after-checkpoint") == 0) {
      if (app_parse_ll(v, 1, INT_MAX, &x) != 0) {
        snprintf(msg, len, "--stop-after-checkpoint '%s': want a positive count", v);
        return 2;
      }
      o->stop_after = (int)x;
    } else if (strcmp(a, "--checkpoint") == 0) {
      if (v[0] == '\0') {
        snprintf(msg, len, "--checkpoint: want a file name");
        return 2;
      }
      o->ckpt = v;
    } else if (strcmp(a, "--restart") == 0) {
      o->restart = v;
    } else if (strcmp(a, "--bench-reps") == 0) {
      if (app_parse_ll(v, 1, 1000, &x) != 0) {
        snprintf(msg, len, "--bench-reps '%s': want 1..1000", v);
        return 2;
      }
      o->bench_reps = (int)x;
    } else {
      snprintf(msg, len, "unknown option '%s' (try --help)", a);
      return 2;
    }
  }
  if (o->field.kind == TRACE_FIELD_FILE && !dims_given) {
    snprintf(msg, len, "a field file needs --dims NX,NY,NZ");
    return 2;
  }
  if (o->ckpt_every == 0 && (o->ckpt != NULL || o->stop_after > 0)) {
    snprintf(msg, len, "%s needs --checkpoint-every N",
             o->ckpt != NULL ? "--checkpoint" : "--stop-after-checkpoint");
    return 2;
  }
  if (o->ckpt_every > 0 && o->synchrony > 0 && o->synchrony < 1) {
    snprintf(msg, len, "--checkpoint-every: checkpoints are taken between synchronous rounds; "
                       "--synchrony must be 1 with it");
    return 2;
  }
  if (o->bench && (o->ckpt_every > 0 || o->restart != NULL)) {
    snprintf(msg, len, "--bench takes no checkpoint or restart options");
    return 2;
  }
  return 0;
}

/* Largest |component| of the whole field, computed block-wise over ranks
 * (each rank samples its share of z-slabs; files are read the same way). */
static int field_vmax(const trace_field_t *f, int rank, int size, double *vmax, char *err,
                      size_t len)
{
  double local = 0;
  int rc = 0;
  int64_t nz = f->dims[2];
  int64_t z0 = nz * rank / size, z1 = nz * (rank + 1) / size;
  if (z1 > z0) {
    trace_box_t b;
    memset(&b, 0, sizeof b);
    b.lo[0] = b.lo[1] = 0;
    b.hi[0] = f->dims[0];
    b.hi[1] = f->dims[1];
    b.lo[2] = z0;
    b.hi[2] = z1;
    rc = trace_box_load(f, &b, err, len);
    if (rc == 0)
      local = trace_box_vmax(&b);
    trace_box_free(&b);
  }
  int g = 0;
  MPI_Allreduce(&rc, &g, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(&local, vmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  if (g != 0 && rc == 0)
    snprintf(err, len, "reading the field failed on another rank");
  return g;
}

static int cmp_double(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Gather every rank's points on rank 0 (sorted there). */
static int gather(const trace_result_t *r, int rank, int size, trace_point_t **all, int64_t *n)
{
  long long mine = (long long)r->npoints * (long long)sizeof(trace_point_t);
  long long *counts = rank == 0 ? calloc((size_t)size, sizeof *counts) : NULL;
  MPI_Gather(&mine, 1, MPI_LONG_LONG, counts, 1, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
  int ok = 1;
  int *rc = NULL, *displ = NULL;
  long long total = 0;
  if (rank == 0) {
    rc = malloc(sizeof(int) * (size_t)size);
    displ = malloc(sizeof(int) * (size_t)size);
    for (int i = 0; i < size; i++) {
      if (total + counts[i] > INT_MAX)
        ok = 0;
      displ[i] = (int)total;
      rc[i] = (int)counts[i];
      total += counts[i];
    }
    *all = ok ? malloc((size_t)total + 1) : NULL;
    if (*all == NULL)
      ok = 0;
  }
  MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (ok)
    MPI_Gatherv(r->points, (int)mine, MPI_BYTE, rank == 0 ? (void *)*all : NULL, rc, displ,
                MPI_BYTE, 0, MPI_COMM_WORLD);
  if (rank == 0 && ok) {
    *n = total / (long long)sizeof(trace_point_t);
    trace_sort_points(*all, *n);
  }
  free(counts);
  free(rc);
  free(displ);
  return ok ? 0 : -1;
}

int main(int argc, char **argv)
{
  int provided, rank = 0, size = 1, ret = 1;
  opts_t o;
  char msg[512] = "";
  bpc_ctx_t *ctx = NULL;
  double *seeds = NULL;
  trace_point_t *all = NULL;
  trace_result_t res;
  memset(&res, 0, sizeof res);

  if (MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) {
    fprintf(stderr, "bpc-trace: MPI_Init_thread failed\n");
    return 1;
  }
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int st = parse(argc, argv, &o, msg, sizeof msg);
  if (st == 1) {
    if (rank == 0)
      usage(stdout);
    ret = 0;
    goto finish;
  }
  if (st == 2) {
    if (rank == 0)
      fprintf(stderr, "bpc-trace: %s\n", msg);
    ret = 2;
    goto finish;
  }
  if (bpc_init(MPI_COMM_WORLD, NULL, &ctx) != BPC_OK) {
    fprintf(stderr, "bpc-trace: bpc_init failed\n");
    goto finish;
  }
  /* a restart takes the checkpoint's block count unless --blocks names one */
  const int nblocks = o.nblocks > 0 ? o.nblocks : (o.restart != NULL ? 0 : 4 * size);
  char ckpt_name[4096];
  if (o.ckpt_every > 0 && o.ckpt == NULL)
    snprintf(ckpt_name, sizeof ckpt_name, "%s.ckpt",
             strcmp(o.vtk, "none") != 0 ? o.vtk : "trace");

  /* the step: from the field's largest velocity component */
  double vmax = 0;
  if (field_vmax(&o.field, rank, size, &vmax, msg, sizeof msg) != 0) {
    if (rank == 0 || msg[0] != '\0')
      fprintf(stderr, "bpc-trace: %s\n", msg);
    goto finish;
  }
  const double hmax = trace_max_step(vmax);
  const double h = o.step > 0 ? o.step : 0.5 * hmax;
  if (h > hmax && rank == 0)
    fprintf(stderr, "bpc-trace: warning: --step %g exceeds %g (0.95 / max |v| = %g): particles "
                    "may step past the one-cell ghost layer\n",
            h, hmax, vmax);

  trace_params_t P;
  memset(&P, 0, sizeof P);
  P.field = o.field;
  P.nblocks = nblocks;
  P.h = h;
  P.max_steps = o.max_steps;
  P.round_steps = o.round_steps;
  P.synchrony = o.synchrony;
  P.nthreads = o.threads;
  P.vmax = vmax;

  if (o.bench) {
    /* imbalanced: all seeds in the lowest corner eighth of the domain */
    double lo[3], hi[3];
    for (int k = 0; k < 3; k++) {
      lo[k] = 0.05 * (double)(o.field.dims[k] - 1);
      hi[k] = 0.30 * (double)(o.field.dims[k] - 1);
    }
    if (trace_seeds_random(o.nseeds, o.seed, lo, hi, &seeds) != 0) {
      fprintf(stderr, "bpc-trace: out of memory for seeds\n");
      goto finish;
    }
    P.seeds = seeds;
    P.nseeds = o.nseeds;
    P.record = 0;
    const double fr[3] = {1.0, 0.5, 0.25};
    double base = 0;
    if (rank == 0) {
      printf("# bpc-trace --bench: p=%d, %d blocks, %lld seeds in [0.05,0.30]^3 of a "
             "%lldx%lldx%lld %s field, h=%g, max %d steps, round-steps %d, %d rep(s)\n",
             size, nblocks, (long long)o.nseeds, (long long)o.field.dims[0],
             (long long)o.field.dims[1], (long long)o.field.dims[2],
             o.field.kind == TRACE_FIELD_ABC ? "abc"
                                             : (o.field.kind == TRACE_FIELD_FILE ? "file" : "tornado"),
             h, o.max_steps, o.round_steps, o.bench_reps);
      printf("%-9s %12s %10s %10s %10s %14s %8s %8s %8s\n", "synchrony", "steps", "median_s",
             "min_s", "max_s", "steps_per_s", "gain", "rounds", "late");
    }
    /* repetitions outside, fractions inside (rotated), so that drifts of
     * the machine hit every fraction alike */
    static double t[3][1000];
    long long rounds[3] = {0, 0, 0}, late[3] = {0, 0, 0};
    int64_t steps[3] = {0, 0, 0};
    for (int r = 0; r < o.bench_reps; r++) {
      for (int k = 0; k < 3; k++) {
        const int fi = (k + r) % 3;
        P.synchrony = fr[fi];
        int rc = trace_run(ctx, &P, &res);
        if (rc != BPC_OK) {
          if (rank == 0)
            fprintf(stderr, "bpc-trace: %s\n", res.err);
          goto finish;
        }
        t[fi][r] = res.seconds;
        rounds[fi] = res.rounds;
        late[fi] = res.late;
        steps[fi] = res.steps;
        trace_result_free(&res);
      }
    }
    for (int fi = 0; fi < 3; fi++) {
      qsort(t[fi], (size_t)o.bench_reps, sizeof t[fi][0], cmp_double);
      const int n = o.bench_reps;
      double med = (n % 2) ? t[fi][n / 2] : 0.5 * (t[fi][n / 2 - 1] + t[fi][n / 2]);
      double rate = med > 0 ? (double)steps[fi] / med : 0;
      if (fi == 0)
        base = rate;
      if (rank == 0)
        printf("%-9.2f %12lld %10.4f %10.4f %10.4f %14.0f %7.2fx %8lld %8lld\n", fr[fi],
               (long long)steps[fi], med, t[fi][0], t[fi][n - 1], rate,
               base > 0 ? rate / base : 0.0, rounds[fi], late[fi]);
    }
    if (rank == 0)
      fflush(stdout);
    ret = 0;
    goto finish;
  }

  /* seeds */
  int64_t nseeds = o.nseeds;
  if (o.seed_file != NULL) {
    if (trace_seeds_file(o.seed_file, &seeds, &nseeds, msg, sizeof msg) != 0) {
      if (rank == 0)
        fprintf(stderr, "bpc-trace: %s\n", msg);
      ret = 2;
      goto finish;
    }
  } else {
    double lo[3], hi[3];
    for (int k = 0; k < 3; k++) {
      lo[k] = o.box[k] * (double)(o.field.dims[k] - 1);
      hi[k] = o.box[k + 3] * (double)(o.field.dims[k] - 1);
    }
    if (trace_seeds_random(nseeds, o.seed, lo, hi, &seeds) != 0) {
      fprintf(stderr, "bpc-trace: out of memory for seeds\n");
      goto finish;
    }
  }
  P.seeds = seeds;
  P.nseeds = nseeds;
  P.record = 1;
  P.progress = o.quiet ? NULL : stderr;
  P.progress_every = 1.0;
  P.ckpt_every = o.ckpt_every;
  P.ckpt_path = o.ckpt != NULL ? o.ckpt : ckpt_name;
  P.stop_after = o.stop_after;
  P.restart = o.restart;
  if (rank == 0 && !o.quiet) {
    if (o.restart != NULL)
      fprintf(stderr, "bpc-trace: %lld particles, restarting from %s on %d processes, h=%g, up "
                      "to %d steps\n",
              (long long)nseeds, o.restart, size, h, o.max_steps);
    else
      fprintf(stderr, "bpc-trace: %lld particles, %d blocks on %d processes, h=%g, up to %d "
                      "steps\n",
              (long long)nseeds, nblocks, size, h, o.max_steps);
  }
  int rc = trace_run(ctx, &P, &res);
  if (rc != BPC_OK) {
    /* a bad restart file (missing, corrupt, of another problem) is bad
     * input: every rank says so, exit status 2 */
    if (res.bad_restart) {
      fprintf(stderr, "bpc-trace: rank %d: %s\n", rank, res.err);
      ret = 2;
    } else if (rank == 0) {
      fprintf(stderr, "bpc-trace: %s\n", res.err);
    }
    goto finish;
  }
  if (res.stopped) {
    if (rank == 0 && !o.quiet)
      fprintf(stderr, "bpc-trace: stopped after %d checkpoint(s), round %lld: %lld of %lld "
                      "particles finished; continue with --restart %s\n",
              res.checkpoints, res.round, (long long)res.finished, (long long)nseeds,
              P.ckpt_path);
    ret = 0;
    goto finish;
  }
  int64_t n = 0;
  if (gather(&res, rank, size, &all, &n) != 0) {
    if (rank == 0)
      fprintf(stderr, "bpc-trace: too many trajectory points to collect on rank 0\n");
    goto finish;
  }
  int wrc = 0;
  if (rank == 0) {
    if (strcmp(o.vtk, "none") != 0 && trace_write_vtk(o.vtk, all, n, msg, sizeof msg) != 0)
      wrc = -1;
    if (wrc == 0 && strcmp(o.png, "none") != 0 &&
        trace_write_png(o.png, all, n, o.field.dims, o.plane, o.width, o.height, o.max_steps, msg,
                        sizeof msg) != 0)
      wrc = -1;
    if (wrc != 0)
      fprintf(stderr, "bpc-trace: %s\n", msg);
    else if (!o.quiet) {
      const int wv = strcmp(o.vtk, "none") != 0, wp = strcmp(o.png, "none") != 0;
      fprintf(stderr,
              "bpc-trace: %lld steps in %.3f s (%.0f steps/s), %lld rounds; %lld particles left "
              "the domain, %lld used their steps%s%s%s%s%s\n",
              (long long)(res.steps - res.steps_before), res.seconds,
              res.seconds > 0 ? (double)(res.steps - res.steps_before) / res.seconds : 0.0,
              res.rounds,
              (long long)res.left, (long long)(res.finished - res.left),
              wv || wp ? "; wrote " : "", wv ? o.vtk : "", wv && wp ? " and " : "",
              wp ? o.png : "", "");
    }
  }
  MPI_Bcast(&wrc, 1, MPI_INT, 0, MPI_COMM_WORLD);
  ret = wrc == 0 && res.finished == nseeds ? 0 : 1;
  if (rank == 0 && res.finished != nseeds)
    fprintf(stderr, "bpc-trace: %lld of %lld particles finished\n", (long long)res.finished,
            (long long)nseeds);

finish:
  trace_result_free(&res);
  free(all);
  free(seeds);
  bpc_finalize(&ctx);
  MPI_Finalize();
  return ret;
}
