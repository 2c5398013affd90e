/*
 * apps/trace/trace_run.c - distributed particle tracing with the neighbour
 * exchange: the decomposition (share_face, one ghost cell), blocks holding
 * their own samples and particles, the per-block round callback (take the
 * particles that arrived, advance each with RK4 until it stops or leaves the
 * block, send the leavers to their new blocks in one item per destination),
 * bpc_neighbor_iterate until no particle is left anywhere, progress on
 * stderr, and the totals.
 */
#include "trace.h"
#include "trace_block.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

typedef struct trun {
  const trace_params_t *prm;
  bpc_decomp_t *d;
  char err[256];
  int failed;
  /* progress */
  MPI_Comm acomm; /* the app's own duplicate of the context's communicator */
  MPI_Comm pcomm; /* == acomm when progress is reported */
  int rank, size;
  int64_t finished_local; /* atomic */
  int64_t steps_before;   /* steps of this rank's blocks restored from a checkpoint */
  int64_t sent_value;
  MPI_Request preq;
  int64_t *counts; /* rank 0: last count heard from each rank */
  double last_report, last_send;
} trun_t;

static void run_fail(trun_t *R, const char *msg)
{
#pragma omp critical(trace_err)
  {
    if (!R->failed) {
      R->failed = 1;
      snprintf(R->err, sizeof R->err, "%s", msg);
    }
  }
}

static int grow(void **p, int64_t *cap, int64_t need, size_t elem)
{
  if (need <= *cap)
    return 0;
  int64_t n = *cap ? *cap : 64;
  while (n < need)
    n *= 2;
  void *q = realloc(*p, elem * (size_t)n);
  if (q == NULL)
    return -1;
  *p = q;
  *cap = n;
  return 0;
}

static int record(tblock_t *b, int64_t id, int64_t step, const double p[3])
{
  if (grow((void **)&b->pts, &b->cappts, b->npts + 1, sizeof *b->pts) != 0)
    return -1;
  trace_point_t *t = &b->pts[b->npts++];
  t->id = id;
  t->step = step;
  memcpy(t->p, p, sizeof t->p);
  return 0;
}

/* The block owning the cell of p (inside the domain). */
static int owner_of(const bpc_decomp_t *d, const int64_t dims[3], const double p[3])
{
  int64_t c[BPC_MAX_DIM] = {0};
  for (int k = 0; k < 3; k++) {
    c[k] = (int64_t)floor(p[k]);
    if (c[k] > dims[k] - 2)
      c[k] = dims[k] - 2;
    if (c[k] < 0)
      c[k] = 0;
  }
  int gid = -1;
  if (bpc_decomp_point_to_gid(d, c, &gid) != BPC_OK)
    return -1;
  return gid;
}

/* ---------------------------------------------------------------- blocks */

static void *tblock_create(int gid, void *user)
{
  trun_t *R = user;
  tblock_t *b = calloc(1, sizeof *b);
  if (b == NULL)
    return NULL;
  b->gid = gid;
  bpc_bounds_t core, ghost;
  bpc_decomp_bounds(R->d, gid, &core, &ghost);
  for (int k = 0; k < 3; k++) {
    b->box.lo[k] = ghost.min[k];
    b->box.hi[k] = ghost.max[k];
  }
  char err[256];
  if (trace_box_load(&R->prm->field, &b->box, err, sizeof err) != 0) {
    run_fail(R, err);
    free(b);
    return NULL;
  }
  return b;
}

static void tblock_destroy(void *blk, int gid, void *user)
{
  (void)gid;
  (void)user;
  trace_block_free(blk);
}

/* ------------------------------------------------------------- progress */

static void progress_print(trun_t *R, int final)
{
  int64_t total = 0;
  for (int r = 0; r < R->size; r++)
    total += R->counts[r];
  const int64_t n = R->prm->nseeds;
  fprintf(R->prm->progress, "bpc-trace: %lld/%lld particles finished (%.0f%%)%s\n",
          (long long)total, (long long)n, n > 0 ? 100.0 * (double)total / (double)n : 100.0,
          final ? "" : "...");
  fflush(R->prm->progress);
}

/* Called from callbacks on the master thread: send this rank's count to
 * rank 0 now and then; rank 0 collects and prints. */
static void progress_tick(trun_t *R)
{
  if (R->prm->progress == NULL || R->pcomm == MPI_COMM_NULL)
    return;
#ifdef _OPENMP
  if (omp_get_thread_num() != 0)
    return;
#endif
  const double now = MPI_Wtime();
  int64_t mine;
#pragma omp atomic read
  mine = R->finished_local;
  if (R->rank == 0) {
    R->counts[0] = mine;
    for (;;) {
      int flag = 0;
      MPI_Status st;
      MPI_Iprobe(MPI_ANY_SOURCE, 1, R->pcomm, &flag, &st);
      if (!flag)
        break;
      int64_t v;
      MPI_Recv(&v, 1, MPI_INT64_T, st.MPI_SOURCE, 1, R->pcomm, MPI_STATUS_IGNORE);
      R->counts[st.MPI_SOURCE] = v;
    }
    if (now - R->last_report >= R->prm->progress_every) {
      R->last_report = now;
      progress_print(R, 0);
    }
    return;
  }
  if (now - R->last_send < 0.5 * R->prm->progress_every || mine == R->sent_value)
    return;
  int done = 1;
  if (R->preq != MPI_REQUEST_NULL)
    MPI_Test(&R->preq, &done, MPI_STATUS_IGNORE);
  if (!done)
    return;
  R->sent_value = mine;
  R->last_send = now;
  MPI_Isend(&R->sent_value, 1, MPI_INT64_T, 0, 1, R->pcomm, &R->preq);
}

/* After the iteration: every rank's final count reaches rank 0 (tag 2),
 * which drains the interim ones (tag 1) on the way. */
static void progress_finish(trun_t *R)
{
  if (R->pcomm == MPI_COMM_NULL)
    return;
  if (R->preq != MPI_REQUEST_NULL)
    MPI_Wait(&R->preq, MPI_STATUS_IGNORE);
  int64_t mine = R->finished_local;
  if (R->rank != 0) {
    MPI_Send(&mine, 1, MPI_INT64_T, 0, 2, R->pcomm);
    return;
  }
  R->counts[0] = mine;
  int pending = R->size - 1;
  while (pending > 0) {
    MPI_Status st;
    int64_t v;
    MPI_Recv(&v, 1, MPI_INT64_T, MPI_ANY_SOURCE, MPI_ANY_TAG, R->pcomm, &st);
    R->counts[st.MPI_SOURCE] = v;
    if (st.MPI_TAG == 2)
      pending--;
  }
  if (R->prm->progress != NULL)
    progress_print(R, 1);
}

/* ---------------------------------------------------------- the callback */

/* Move the particles delivered to block gid into its active list. Returns
 * 0, 2 (out of memory) or a bpc code of the dequeue. */
static int take_incoming(tblock_t *b, bpc_neighbor_t *nb, int gid)
{
  const int *srcs;
  int ns;
  int rc = bpc_neighbor_incoming(nb, gid, &srcs, &ns);
  for (int k = 0; k < ns && rc == 0; k++) {
    for (;;) {
      void *it;
      int got = 0;
      rc = bpc_neighbor_dequeue(nb, gid, srcs[k], &it, &got);
      if (rc != 0 || !got)
        break;
      const bpc_buf_t *in = it;
      if (grow((void **)&b->act, &b->capact, b->nact + (int64_t)in->count, sizeof *b->act) != 0)
        return 2;
      if (in->count > 0)
        memcpy(b->act + b->nact, in->data, in->count * sizeof *b->act);
      b->nact += (int64_t)in->count;
    }
  }
  return rc;
}

static int cmp_leaver(const void *a, const void *b)
{
  const struct leaver *x = a, *y = b;
  if (x->dst != y->dst)
    return x->dst < y->dst ? -1 : 1;
  return (x->order > y->order) - (x->order < y->order);
}

static int trace_cb(void *blk, int gid, bpc_neighbor_t *nb, void *user, int *more)
{
  tblock_t *b = blk;
  trun_t *R = user;
  const trace_params_t *P = R->prm;
  const int64_t *dims = P->field.dims;
  int rc = 0;
  char msg[256];

  progress_tick(R);
  if (R->failed)
    return 1;

  /* 1. seeds this block owns (first round) */
  if (!b->seeded) {
    b->seeded = 1;
    for (int64_t s = 0; s < P->nseeds && rc == 0; s++) {
      const double *p = P->seeds + 3 * s;
      if (owner_of(R->d, dims, p) != gid)
        continue;
      if (grow((void **)&b->act, &b->capact, b->nact + 1, sizeof *b->act) != 0)
        return 2;
      trace_particle_t *t = &b->act[b->nact++];
      memset(t, 0, sizeof *t);
      t->id = s;
      memcpy(t->p, p, sizeof t->p);
      if (P->record && record(b, s, 0, p) != 0)
        return 2;
    }
  }

  /* 2. particles that arrived */
  rc = take_incoming(b, nb, gid);
  if (rc != 0)
    return rc;

  /* 3. advance every particle until it stops, leaves, or used its round */
  int64_t keep = 0;
  b->nout = 0;
  for (int64_t i = 0; i < b->nact; i++) {
    trace_particle_t t = b->act[i];
    int dst = gid, stopped = 0, left = 0;
    int done = 0;
    while (dst == gid && !stopped) {
      if (t.steps >= P->max_steps) {
        stopped = 1;
        break;
      }
      if (P->round_steps > 0 && done >= P->round_steps)
        break;
      double q[3];
      int s = trace_rk4(&b->box, t.p, P->h, q);
      if (s == 1) {
        stopped = left = 1;
        break;
      }
      if (s == 2) {
        snprintf(msg, sizeof msg,
                 "particle %lld at (%g, %g, %g) in block %d: an RK4 stage leaves the block's "
                 "ghost layer; use a smaller --step (at most %g for this field)",
                 (long long)t.id, t.p[0], t.p[1], t.p[2], gid,
                 trace_max_step(trace_box_vmax(&b->box)));
        run_fail(R, msg);
        return 3;
      }
      memcpy(t.p, q, sizeof q);
      t.steps++;
      done++;
      b->steps++;
      if (P->record && record(b, t.id, t.steps, t.p) != 0)
        return 2;
      dst = owner_of(R->d, dims, t.p);
    }
    if (stopped) {
      b->finished++;
      b->left += left;
#pragma omp atomic
      R->finished_local++;
    } else if (dst == gid) {
      b->act[keep++] = t; /* round budget used: more next round */
    } else {
      if (grow((void **)&b->out, &b->capout, b->nout + 1, sizeof *b->out) != 0)
        return 2;
      b->out[b->nout].dst = dst;
      b->out[b->nout].order = b->nout;
      b->out[b->nout].t = t;
      b->nout++;
    }
  }
  b->nact = keep;
  *more = keep > 0;

  /* 4. leavers: one item (an array of particles) per destination, in order */
  if (b->nout > 0) {
    trace_particle_t *tmp = malloc(sizeof *tmp * (size_t)b->nout);
    if (tmp == NULL)
      return 2;
    qsort(b->out, (size_t)b->nout, sizeof *b->out, cmp_leaver);
    for (int64_t i = 0; i < b->nout; i++)
      tmp[i] = b->out[i].t;
    for (int64_t i = 0; i < b->nout && rc == 0;) {
      int64_t j = i;
      while (j < b->nout && b->out[j].dst == b->out[i].dst)
        j++;
      bpc_buf_t item = {tmp + i, (size_t)(j - i)};
      rc = bpc_neighbor_enqueue(nb, gid, (int)b->out[i].dst, &item);
      if (rc != 0) {
        snprintf(msg, sizeof msg, "block %d cannot send %lld particle(s) to block %lld: %s", gid,
                 (long long)(j - i), (long long)b->out[i].dst, bpc_err_name(rc));
        run_fail(R, msg);
      }
      i = j;
    }
    free(tmp);
    b->nout = 0;
  }
  return rc;
}

/* ------------------------------------------------------------------ run */

static void *gather_points(bpc_blocks_t *blocks, int64_t *n)
{
  int nl = 0;
  bpc_blocks_count(blocks, &nl);
  int64_t total = 0;
  for (int i = 0; i < nl; i++) {
    void *data;
    int gid;
    bpc_blocks_at(blocks, i, &data, &gid);
    total += ((tblock_t *)data)->npts;
  }
  trace_point_t *all = malloc(sizeof *all * (size_t)(total > 0 ? total : 1));
  if (all == NULL)
    return NULL;
  int64_t k = 0;
  for (int i = 0; i < nl; i++) {
    void *data;
    int gid;
    bpc_blocks_at(blocks, i, &data, &gid);
    tblock_t *b = data;
    if (b->npts > 0)
      memcpy(all + k, b->pts, sizeof *all * (size_t)b->npts);
    k += b->npts;
  }
  *n = total;
  return all;
}

/* --------------------------------------------------- checkpoint, restart */

/* Restart, first part: read the checkpoint's header and metadata, check
 * that it is of this problem, and take its decomposition (the block count
 * is the checkpoint's; P->nblocks must be 0 or the same). The header is the
 * same on every rank, so is the outcome. */
static int restart_header(bpc_ctx_t *ctx, const trace_params_t *P, bpc_decomp_params_t *dp,
                          long long *round0, trace_result_t *res)
{
  bpc_io_info_t info;
  void *meta = NULL;
  char msg[sizeof res->err - 64];
  int rc = bpc_io_info(ctx, P->restart, &info, &meta);
  res->bad_restart = 1;
  if (rc != BPC_OK) {
    snprintf(res->err, sizeof res->err, "--restart %s: %s", P->restart, bpc_last_error(ctx));
    return rc;
  }
  if (trace_ckpt_check(P, meta, (size_t)info.meta_bytes, round0, msg, sizeof msg) != 0) {
    snprintf(res->err, sizeof res->err, "--restart %s: %s", P->restart, msg);
    free(meta);
    return BPC_EMISMATCH;
  }
  free(meta);
  int same = info.has_decomp && info.params.dim == 3;
  for (int k = 0; k < 3 && same; k++)
    same = info.params.domain_min[k] == 0 && info.params.domain_max[k] == P->field.dims[k] &&
           info.params.share_face[k] == 1 && info.params.ghost[k] == 1 && !info.params.wrap[k];
  if (!same) {
    snprintf(res->err, sizeof res->err,
             "--restart %s: not a bpc-trace checkpoint (its decomposition is not of the "
             "field's grid with shared faces and one ghost cell)",
             P->restart);
    return BPC_EFORMAT;
  }
  if (P->nblocks != 0 && P->nblocks != info.nblocks) {
    snprintf(res->err, sizeof res->err,
             "--restart %s: the checkpoint has %d blocks, not %d (a restart keeps the block "
             "count; any process count works)",
             P->restart, info.nblocks, P->nblocks);
    return BPC_ENBLOCKS;
  }
  *dp = info.params;
  dp->assign = BPC_ASSIGN_CONTIGUOUS;
  dp->map = NULL;
  res->bad_restart = 0;
  return BPC_OK;
}

/* Restart, second part: every block read from the checkpoint must be the
 * block of its gid; load its samples. */
static int restart_blocks(trun_t *R, bpc_blocks_t *blocks, trace_result_t *res, int *bad)
{
  int nl = 0;
  bpc_blocks_count(blocks, &nl);
  for (int i = 0; i < nl; i++) {
    void *data;
    int gid;
    bpc_blocks_at(blocks, i, &data, &gid);
    tblock_t *b = data;
    if (b->gid != gid) {
      snprintf(res->err, sizeof res->err,
               "--restart %s: not a bpc-trace checkpoint (block %d holds the data of block %d)",
               R->prm->restart, gid, b->gid);
      *bad = 1;
      return BPC_EFORMAT;
    }
    bpc_bounds_t core, ghost;
    bpc_decomp_bounds(R->d, gid, &core, &ghost);
    for (int k = 0; k < 3; k++) {
      b->box.lo[k] = ghost.min[k];
      b->box.hi[k] = ghost.max[k];
    }
    if (trace_box_load(&R->prm->field, &b->box, res->err, sizeof res->err) != 0)
      return BPC_EIO;
    R->finished_local += b->finished;
    R->steps_before += b->steps;
  }
  return BPC_OK;
}

/* Synchronous rounds (bpc_neighbor_round at synchrony 1): after each, the
 * particles delivered are taken into their blocks, so that between rounds
 * every particle in flight sits in some block's active list; the run ends
 * when no block anywhere has one. Every ckpt_every-th round of the problem
 * (round0 were done before this call) is followed by a checkpoint. */
static int run_rounds(bpc_ctx_t *ctx, trun_t *R, bpc_neighbor_t *nb, bpc_blocks_t *blocks,
                      long long round0, trace_result_t *res, long long *nrounds)
{
  const trace_params_t *P = R->prm;
  const bpc_type_t ct = trace_ckpt_type();
  long long round = round0;
  *nrounds = 0;
  for (;;) {
    int rc = bpc_neighbor_round(nb, blocks, trace_cb, R);
    if (rc != BPC_OK) {
      snprintf(res->err, sizeof res->err, "%s", R->failed ? R->err : bpc_last_error(ctx));
      return rc;
    }
    round++;
    (*nrounds)++;
    int64_t v[2] = {0, 0}, g[2];
    int nl = 0;
    bpc_blocks_count(blocks, &nl);
    for (int i = 0; i < nl; i++) {
      void *data;
      int gid;
      bpc_blocks_at(blocks, i, &data, &gid);
      tblock_t *b = data;
      if (take_incoming(b, nb, gid) != 0)
        v[1] = 1;
      v[0] += b->nact;
    }
    memcpy(g, v, sizeof g);
    if (R->acomm != MPI_COMM_NULL)
      MPI_Allreduce(v, g, 2, MPI_INT64_T, MPI_SUM, R->acomm);
    if (g[1] != 0) {
      snprintf(res->err, sizeof res->err, "%s taking in the particles of round %lld",
               v[1] ? "out of memory" : "another rank failed", round);
      return BPC_ENOMEM;
    }
    if (g[0] == 0)
      return BPC_OK;
    if (round % P->ckpt_every != 0)
      continue;
    char *meta = NULL;
    size_t ml = 0;
    const int mfail = trace_ckpt_meta(P, round, &meta, &ml) != 0;
    rc = bpc_io_write(ctx, P->ckpt_path, blocks, &ct, R->d, meta, ml);
    free(meta);
    if (rc == BPC_OK && mfail)
      rc = BPC_ENOMEM;
    if (rc != BPC_OK) {
      snprintf(res->err, sizeof res->err, "writing the checkpoint %s after round %lld: %s",
               P->ckpt_path, round, mfail ? "out of memory" : bpc_last_error(ctx));
      return rc;
    }
    res->checkpoints++;
    if (P->stop_after > 0 && res->checkpoints >= P->stop_after) {
      res->stopped = 1;
      return BPC_OK;
    }
  }
}

int trace_run(bpc_ctx_t *ctx, const trace_params_t *P, trace_result_t *res)
{
  trun_t R;
  bpc_blocks_t *blocks = NULL;
  bpc_neighbor_t *nb = NULL;
  int rc = BPC_OK;
  memset(res, 0, sizeof *res);
  memset(&R, 0, sizeof R);
  R.prm = P;
  R.pcomm = MPI_COMM_NULL;
  R.acomm = MPI_COMM_NULL;
  R.preq = MPI_REQUEST_NULL;
  bpc_ctx_rank(ctx, &R.rank);
  bpc_ctx_size(ctx, &R.size);

  /* arguments: the same on every rank */
  for (int k = 0; k < 3; k++)
    if (P->field.dims[k] < 2)
      rc = BPC_EINVAL;
  if (rc == BPC_OK && !(P->h > 0))
    rc = BPC_EINVAL;
  for (int64_t s = 0; s < P->nseeds && rc == BPC_OK; s++)
    for (int k = 0; k < 3; k++)
      if (!(P->seeds[3 * s + k] >= 0 && P->seeds[3 * s + k] <= (double)(P->field.dims[k] - 1))) {
        snprintf(res->err, sizeof res->err, "seed %lld (%g, %g, %g) lies outside the domain",
                 (long long)s, P->seeds[3 * s], P->seeds[3 * s + 1], P->seeds[3 * s + 2]);
        rc = BPC_ERANGE;
        break;
      }
  if (rc == BPC_OK && (P->ckpt_every < 0 || P->stop_after < 0 ||
                       (P->ckpt_every > 0 && (P->ckpt_path == NULL || P->ckpt_path[0] == '\0')) ||
                       (P->stop_after > 0 && P->ckpt_every == 0))) {
    snprintf(res->err, sizeof res->err, "bad checkpoint parameters (a checkpoint interval >= 0 "
                                        "with a path; stopping after checkpoints needs them)");
    rc = BPC_EINVAL;
  }
  if (rc == BPC_OK && P->ckpt_every > 0 && P->synchrony >= 0 && P->synchrony < 1) {
    snprintf(res->err, sizeof res->err, "checkpoints are taken between synchronous rounds: "
                                        "synchrony must be 1 with them");
    rc = BPC_EINVAL;
  }
  if (rc != BPC_OK) {
    if (res->err[0] == '\0')
      snprintf(res->err, sizeof res->err, "bad parameters (grid of at least 2 points per "
                                          "dimension and a positive step)");
    return rc;
  }

  bpc_decomp_params_t dp = bpc_decomp_params_default();
  dp.dim = 3;
  dp.nblocks = P->nblocks;
  for (int k = 0; k < 3; k++) {
    dp.domain_max[k] = P->field.dims[k];
    dp.share_face[k] = 1;
    dp.ghost[k] = 1;
  }
  long long round0 = 0;
  if (P->restart != NULL) {
    /* the header and metadata are the same on every rank: so is the verdict */
    rc = restart_header(ctx, P, &dp, &round0, res);
    if (rc != BPC_OK)
      return rc;
  }
  rc = bpc_decomp_create(ctx, &dp, &R.d);
  if (rc != BPC_OK)
    snprintf(res->err, sizeof res->err, "%s", bpc_last_error(ctx));
  bpc_type_t ctype = trace_ckpt_type();
  int bad_restart = 0;
  if (rc == BPC_OK && P->restart == NULL) {
    rc = bpc_blocks_create(bpc_decomp_assign(R.d), tblock_create, tblock_destroy, &R, &blocks);
    if (rc != BPC_OK && R.failed)
      snprintf(res->err, sizeof res->err, "%s", R.err);
  } else if (rc == BPC_OK) {
    rc = bpc_io_read(ctx, P->restart, bpc_decomp_assign(R.d), &ctype, &blocks);
    if (rc != BPC_OK) {
      snprintf(res->err, sizeof res->err, "--restart %s: %s", P->restart, bpc_last_error(ctx));
      bad_restart = 1;
    } else {
      rc = restart_blocks(&R, blocks, res, &bad_restart);
    }
  }
  /* agree: a block that could not load its samples fails everywhere */
  int lrc[2] = {rc, -bad_restart}, grc[2] = {rc, -bad_restart};
  MPI_Comm comm, ccomm;
  bpc_ctx_comm(ctx, &ccomm);
  if (ccomm != MPI_COMM_NULL)
    MPI_Comm_dup(ccomm, &R.acomm);
  comm = R.acomm;
  if (comm != MPI_COMM_NULL)
    MPI_Allreduce(lrc, grc, 2, MPI_INT, MPI_MIN, comm);
  rc = grc[0];
  res->bad_restart = -grc[1];
  if (rc != BPC_OK) {
    if (res->err[0] == '\0')
      snprintf(res->err, sizeof res->err, "%s %d blocks failed on another rank: %s",
               res->bad_restart ? "restarting" : "setting up", dp.nblocks, bpc_err_name(rc));
    goto cleanup;
  }
  /* trace_cb keeps to its own block (counters are atomic), so any thread
   * count works */
  bpc_neighbor_params_t o = bpc_neighbor_params_default();
  o.synchrony = P->ckpt_every > 0 ? 1.0 : P->synchrony;
  o.nthreads = P->nthreads;
  bpc_type_t type = bpc_type_contiguous(sizeof(trace_particle_t), MPI_BYTE);
  rc = bpc_neighbor_create_decomp(ctx, R.d, &type, &o, &nb);
  if (rc != BPC_OK) {
    snprintf(res->err, sizeof res->err, "%s", bpc_last_error(ctx));
    goto cleanup;
  }
  if (P->progress != NULL && comm != MPI_COMM_NULL) {
    R.pcomm = comm;
    R.counts = calloc((size_t)R.size, sizeof *R.counts);
    R.last_report = R.last_send = MPI_Wtime();
  }

  if (comm != MPI_COMM_NULL)
    MPI_Barrier(comm);
  double t0 = bpc_wtime(ctx);
  long long rounds = 0;
  if (P->ckpt_every > 0) {
    rc = run_rounds(ctx, &R, nb, blocks, round0, res, &rounds);
  } else {
    rc = bpc_neighbor_iterate(nb, blocks, trace_cb, &R, &rounds);
    if (rc != BPC_OK)
      snprintf(res->err, sizeof res->err, "%s", R.failed ? R.err : bpc_last_error(ctx));
  }
  double t1 = bpc_wtime(ctx);
  progress_finish(&R);

  /* totals */
  int nl = 0;
  bpc_blocks_count(blocks, &nl);
  int64_t v[5] = {0, 0, 0, 0, R.steps_before}, g[5];
  for (int i = 0; i < nl; i++) {
    void *data;
    int gid;
    bpc_blocks_at(blocks, i, &data, &gid);
    tblock_t *b = data;
    v[0] += b->steps;
    v[1] += b->finished;
    v[2] += b->left;
  }
  bpc_neighbor_stats_t st;
  bpc_neighbor_stats(nb, &st);
  v[3] = st.bundles_late;
  double sec = t1 - t0, gsec = sec;
  long long grounds = rounds;
  memcpy(g, v, sizeof g);
  if (comm != MPI_COMM_NULL) {
    MPI_Allreduce(v, g, 5, MPI_INT64_T, MPI_SUM, comm);
    MPI_Allreduce(&sec, &gsec, 1, MPI_DOUBLE, MPI_MAX, comm);
    MPI_Allreduce(&rounds, &grounds, 1, MPI_LONG_LONG, MPI_MAX, comm);
  }
  res->steps = g[0];
  res->finished = g[1];
  res->left = g[2];
  res->late = g[3];
  res->steps_before = g[4];
  res->rounds = grounds;
  res->round = round0 + grounds;
  res->seconds = gsec;
  if (rc == BPC_OK && P->record && !res->stopped) {
    res->points = gather_points(blocks, &res->npoints);
    if (res->points == NULL) {
      snprintf(res->err, sizeof res->err, "out of memory collecting trajectories");
      rc = BPC_ENOMEM;
    }
  }

cleanup:
  if (nb != NULL) {
    int drc = bpc_neighbor_destroy(&nb);
    if (rc == BPC_OK && drc != BPC_OK) {
      rc = drc;
      snprintf(res->err, sizeof res->err, "%s", bpc_last_error(ctx));
    }
  }
  if (R.acomm != MPI_COMM_NULL)
    MPI_Comm_free(&R.acomm);
  free(R.counts);
  bpc_blocks_destroy(&blocks);
  bpc_decomp_destroy(&R.d);
  return rc;
}

void trace_result_free(trace_result_t *r)
{
  free(r->points);
  r->points = NULL;
  r->npoints = 0;
}
