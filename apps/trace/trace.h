/*
 * apps/trace/trace.h - the particle tracer behind bpc-trace, shared by the
 * app and its test (tests/mpi/test_trace.c).
 *
 * Field: a steady 3-D vector field sampled on a grid of nx x ny x nz vertices
 * (float32, 3 components per vertex, x fastest), either built in (the
 * "tornado" vortex or the ABC flow) or read from a raw file. Positions and
 * velocities are in grid units (vertex index space: the domain is
 * [0, nx-1] x [0, ny-1] x [0, nz-1]).
 *
 * Blocks: a regular decomposition of the vertex range with share_face and a
 * one-cell ghost layer; a block holds only the samples of its ghosted box. A
 * particle belongs to the block owning the cell it is in (floor of its
 * position, the top cell closed). Velocity: trilinear interpolation (double
 * arithmetic on the float samples). Integration: classic RK4 with a fixed
 * step h. The owner of a particle does whole steps with its own samples: that
 * needs every RK4 stage point within one cell of the particle, i.e.
 * h * max|v component| < 1 cell (trace_max_step gives the bound); then every
 * step reads exactly the samples a single-block run reads, in the same
 * order, and trajectories match a serial run bit for bit.
 *
 * A particle stops when an RK4 stage point leaves the domain (the step is not
 * taken) or after max_steps steps. Particles that step into another block are
 * sent to it with the neighbour exchange; bpc_neighbor_iterate ends the run
 * when every particle has stopped.
 */
#ifndef BPC_APPS_TRACE_H
#define BPC_APPS_TRACE_H

#include <stdint.h>
#include <stdio.h>

#include "bpc.h"

typedef enum trace_field_kind {
  TRACE_FIELD_TORNADO = 0,
  TRACE_FIELD_ABC = 1,
  TRACE_FIELD_FILE = 2
} trace_field_kind_t;

typedef struct trace_field {
  trace_field_kind_t kind;
  int64_t dims[3];  /* vertices per dimension (>= 2) */
  const char *path; /* TRACE_FIELD_FILE: raw float32 file, 3 components per vertex */
} trace_field_t;

/* A box of samples: vertices [lo, hi) per dimension, 3 floats per vertex. */
typedef struct trace_box {
  int64_t lo[3], hi[3];
  int64_t dims[3]; /* the whole grid's */
  float *v;
} trace_box_t;

/* Sample the field into box b (lo/hi/dims set; v allocated here, freed with
 * trace_box_free). Returns 0, or -1 with a message in err (file missing,
 * short or unreadable; out of memory). */
int trace_box_load(const trace_field_t *f, trace_box_t *b, char *err, size_t errlen);
void trace_box_free(trace_box_t *b);

/* The velocity of the built-in fields at vertex (i, j, k), grid units. */
void trace_field_sample(const trace_field_t *f, int64_t i, int64_t j, int64_t k, float out[3]);

/* Largest |component| of the field over box b. */
double trace_box_vmax(const trace_box_t *b);

/* Trilinear velocity at p (grid units) from box b. Returns 0, 1 when p is
 * outside the domain, 2 when it is inside but b lacks the samples. */
int trace_velocity(const trace_box_t *b, const double p[3], double v[3]);

/* One RK4 step of size h from p to q. Returns 0, 1 (a stage left the
 * domain: no step), 2 (b lacks samples: the step is too large for the
 * ghost layer). */
int trace_rk4(const trace_box_t *b, const double p[3], double h, double q[3]);

/* The largest step with h * vmax < 1 cell (with a margin): 0.95 / vmax. */
double trace_max_step(double vmax);

/* A particle in flight (the item type of the exchange: contiguous). */
typedef struct trace_particle {
  int64_t id;
  int32_t steps; /* steps done */
  int32_t pad;
  double p[3];
} trace_particle_t;

/* One recorded point of a trajectory. */
typedef struct trace_point {
  int64_t id;
  int64_t step;
  double p[3];
} trace_point_t;

/* Seeds: n points, uniform random in [lo, hi) (grid units) from `seed`.
 * Same on every rank. *out is malloc'ed. */
int trace_seeds_random(int64_t n, uint64_t seed, const double lo[3], const double hi[3],
                       double **out);
/* Seeds from a text file: "x y z" per line (grid units; # comments). *out is
 * malloc'ed, *n set. Returns 0, or -1 with a message. */
int trace_seeds_file(const char *path, double **out, int64_t *n, char *err, size_t errlen);

/* The tracing run. */
typedef struct trace_params {
  trace_field_t field;
  int nblocks;
  double h;          /* RK4 step (grid units of time) */
  int max_steps;     /* per particle */
  int round_steps;   /* steps per particle per round before yielding (0: no limit) */
  double synchrony;  /* of the neighbour exchange */
  int record;        /* record trajectories */
  int nthreads;      /* callback threads: bpc_neighbor_params_t.nthreads (0: OpenMP default) */
  const double *seeds; /* nseeds points */
  int64_t nseeds;
  /* progress on stderr from rank 0 (0: none), every this many seconds */
  double progress_every;
  FILE *progress;
  /* Checkpoint and restart (doc/apps/trace.md). With ckpt_every > 0 the
   * run goes in synchronous rounds (bpc_neighbor_round; synchrony must be
   * 1) and after every ckpt_every-th round (counted from the start of the
   * problem, restarts included) writes every block's particles in flight,
   * recorded points and counters to ckpt_path with bpc_io_write, the
   * problem (trace_ckpt_meta) in the metadata; stop_after > 0 ends the run
   * after that many checkpoints (result->stopped). restart: continue from
   * that checkpoint (bpc_io_read, any process count) instead of the seeds;
   * the problem must be the same (field, dims, vmax, h, max_steps, seeds,
   * record) and nblocks 0 or the checkpoint's. */
  int ckpt_every;
  const char *ckpt_path;
  int stop_after;
  const char *restart;
  double vmax; /* the field's largest |component|: part of the problem's identity */
} trace_params_t;

typedef struct trace_result {
  /* this rank's recorded points (when record), in no particular order */
  trace_point_t *points;
  int64_t npoints;
  /* totals over all ranks */
  int64_t steps;     /* RK4 steps taken (restarts: since the problem's start) */
  int64_t steps_before; /* ... of them restored from the checkpoint (restarts) */
  int64_t finished;  /* particles stopped */
  int64_t left;      /* ... of them by leaving the domain */
  long long rounds;  /* max over ranks */
  long long late;    /* late messages, summed */
  double seconds;    /* wall time of the iteration (max over ranks) */
  char err[512];     /* what went wrong, when trace_run fails */
  int bad_restart;   /* the failure is the restart file's (missing, corrupt, another problem) */
  int stopped;       /* stop_after reached: the trace is not complete, no points */
  int checkpoints;   /* checkpoints written by this call */
  long long round;   /* rounds of the problem done (checkpointed runs: restarts included) */
} trace_result_t;

/*
 * Trace every seed on the blocks of a decomposition of the field's grid
 * into params->nblocks blocks over ctx's processes. Collective. Returns a
 * bpc code (BPC_ECALLBACK with a message when the step is too large for the
 * ghost layer, or a seed lies outside the domain...). result->points is
 * malloc'ed (free with trace_result_free).
 */
int trace_run(bpc_ctx_t *ctx, const trace_params_t *params, trace_result_t *result);
void trace_result_free(trace_result_t *r);

/* Serial reference: trace one seed over the whole grid box. Appends up to
 * max_steps + 1 points to pts (capacity max_steps + 1); returns the count.
 * *left is set to 1 when the particle left the domain. */
int64_t trace_serial(const trace_box_t *whole, const double seed[3], int64_t id, double h,
                     int max_steps, trace_point_t *pts, int *left);

/* Sort points by (id, step). */
void trace_sort_points(trace_point_t *pts, int64_t n);

/* Outputs (rank 0): legacy VTK polydata (one polyline per particle, point
 * data "step" and "id"), and a PNG of the lines projected on a plane
 * ("xy", "xz" or "yz"), width x height pixels. pts sorted. 0 or -1 with a
 * message. */
int trace_write_vtk(const char *path, const trace_point_t *pts, int64_t n, char *err,
                    size_t errlen);
int trace_write_png(const char *path, const trace_point_t *pts, int64_t n,
                    const int64_t dims[3], const char *plane, int width, int height,
                    int max_steps, char *err, size_t errlen);

#endif /* BPC_APPS_TRACE_H */
