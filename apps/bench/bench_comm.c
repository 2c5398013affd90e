/*
 * apps/bench/bench_comm.c - `bpc-bench comm`: bpc's block messaging layer
 * (lib/comm) against raw MPI_Isend/MPI_Irecv.
 *
 * Pattern: nblocks = p * blocks-per-proc blocks (contiguous assignment by
 * default). Every block sends one message of B bytes to block (gid+1) mod n
 * and receives one from block (gid-1) mod n.
 *  - bpc ("exch"): bpc__exch_open on the assignment, bpc__exch_send for each
 *    local block, bpc__exch_wait for each local block's message, then
 *    bpc__exch_flush (all sends complete) - this part is timed. Checking the
 *    payloads, bpc__msg_release and bpc__exch_close come after the timer.
 *    "exch-borrow" passes BPC__SEND_BORROW (same-process messages are not
 *    copied; identical to "exch" when every message crosses processes).
 *  - baseline: MPI_Irecv of the known size straight into a user buffer for
 *    every local block, MPI_Isend of every local block's payload, then
 *    MPI_Waitall, on a plain duplicate of MPI_COMM_WORLD (tag = destination
 *    gid).
 * Payloads: word j of the message from block s is a hash of (s, j); the
 * first and last word also carry a stamp of the repetition, so a message left
 * over from an earlier repetition is caught. After every repetition each
 * rank checks the baseline's buffers against the pattern and bpc's messages
 * (source, size, bytes) against the baseline's buffers.
 * Model lower bound per rank: the bytes (and messages) of its blocks whose
 * destination lives on another process: blocks-per-proc * B when every
 * message crosses (blocks-per-proc 1, or --assign round-robin), B with
 * contiguous assignment and several blocks per process, 0 on one process.
 */
#include "bench.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/comm.h"
#include "decomp/decomp.h"

typedef struct comm_state {
  bench_env_t *env;
  bpc_assign_t *assign;
  MPI_Comm comm; /* the baseline's communicator */
  const int *gids;
  int nlocal, n;
  int *src_gid, *dst_gid, *src_rank, *dst_rank; /* per local block */
  size_t bytes;
  int flags;               /* bpc__exch_send flags of the variant */
  unsigned char *sbuf;     /* nlocal payloads of `bytes` (send side, both variants) */
  unsigned char *rbuf;     /* nlocal baseline receive buffers */
  MPI_Request *req;        /* 2 * nlocal */
  int stamped_rep;         /* repetition the send buffers are stamped for */
  bpc__exch_t *ex;         /* the bpc run's exchange, open until bpc_done */
  bpc__msg_t **msgs;       /* the bpc run's received messages */
} comm_state_t;

/* -------------------------------------------------------------- callbacks */

static int comm_prepare(void *st, int rep, int is_bpc)
{
  comm_state_t *s = st;
  (void)is_bpc;
  if (rep == s->stamped_rep)
    return 0;
  const size_t nwords = (s->bytes + 7) / 8;
  for (int i = 0; i < s->nlocal && nwords > 0; i++) {
    unsigned char *b = s->sbuf + (size_t)i * s->bytes;
    bench_pattern_fill(b, s->bytes, (uint64_t)s->gids[i], rep, 0, 1);
    bench_pattern_fill(b, s->bytes, (uint64_t)s->gids[i], rep, nwords - 1, nwords);
  }
  s->stamped_rep = rep;
  return 0;
}

static int comm_run_bpc(void *st)
{
  comm_state_t *s = st;
  int rc = bpc__exch_open(s->env->ctx, "comm", bpc__assign_rank_cb, s->assign, &s->ex);
  for (int i = 0; i < s->nlocal && rc == BPC_OK; i++)
    rc = bpc__exch_send(s->ex, s->gids[i], s->dst_gid[i], 0, s->sbuf + (size_t)i * s->bytes,
                        s->bytes, s->flags);
  for (int i = 0; i < s->nlocal && rc == BPC_OK; i++)
    rc = bpc__exch_wait(s->ex, s->gids[i], s->src_gid[i], 0, &s->msgs[i]);
  if (rc == BPC_OK)
    rc = bpc__exch_flush(s->ex);
  return rc;
}

static int comm_bpc_done(void *st)
{
  comm_state_t *s = st;
  int rc = BPC_OK;
  if (s->ex != NULL) {
    for (int i = 0; i < s->nlocal; i++) {
      bpc__msg_release(s->ex, s->msgs[i]);
      s->msgs[i] = NULL;
    }
    rc = bpc__exch_close(&s->ex);
  }
  s->ex = NULL;
  return rc;
}

static int comm_run_baseline(void *st)
{
  comm_state_t *s = st;
  const int count = (int)s->bytes; /* <= INT_MAX, checked in comm_run */
  int rc = MPI_SUCCESS;
  for (int i = 0; i < s->nlocal && rc == MPI_SUCCESS; i++)
    rc = MPI_Irecv(s->rbuf + (size_t)i * s->bytes, count, MPI_BYTE, s->src_rank[i], s->gids[i],
                   s->comm, &s->req[i]);
  for (int i = 0; i < s->nlocal && rc == MPI_SUCCESS; i++)
    rc = MPI_Isend(s->sbuf + (size_t)i * s->bytes, count, MPI_BYTE, s->dst_rank[i],
                   s->dst_gid[i], s->comm, &s->req[s->nlocal + i]);
  if (rc == MPI_SUCCESS)
    rc = MPI_Waitall(2 * s->nlocal, s->req, MPI_STATUSES_IGNORE);
  return rc == MPI_SUCCESS ? 0 : BPC_EMPI;
}

static int comm_check(void *st, int *correct)
{
  comm_state_t *s = st;
  int ok = 1;
  for (int i = 0; i < s->nlocal; i++) {
    const unsigned char *ref = s->rbuf + (size_t)i * s->bytes;
    const bpc__msg_t *m = s->msgs[i];
    if (!bench_pattern_ok(ref, s->bytes, (uint64_t)s->src_gid[i], s->stamped_rep)) {
      bench_error(s->env, "comm: baseline message %d -> %d holds wrong data", s->src_gid[i],
                  s->gids[i]);
      ok = 0;
    }
    if (m == NULL || m->src_gid != s->src_gid[i] || m->dst_gid != s->gids[i] || m->seq != 0 ||
        m->bytes != s->bytes || (s->bytes > 0 && m->data == NULL)) {
      bench_error(s->env, "comm: bpc message %d -> %d: missing or wrong header (%s)",
                  s->src_gid[i], s->gids[i], m == NULL ? "none" : "src/dst/seq/bytes");
      ok = 0;
    } else if (s->bytes > 0 && memcmp(m->data, ref, s->bytes) != 0) {
      bench_error(s->env, "comm: bpc message %d -> %d: payload differs from the baseline's",
                  s->src_gid[i], s->gids[i]);
      ok = 0;
    }
  }
  *correct = ok;
  return 0;
}

/* ------------------------------------------------------------------ setup */

static void comm_free_buffers(comm_state_t *s)
{
  free(s->sbuf);
  free(s->rbuf);
  s->sbuf = s->rbuf = NULL;
}

/* Allocate and fill the payloads for `bytes`; 0 or BPC_ENOMEM. */
static int comm_alloc_buffers(comm_state_t *s, size_t bytes)
{
  const size_t total = (size_t)s->nlocal * bytes;
  s->bytes = bytes;
  s->stamped_rep = -1;
  s->sbuf = malloc(total > 0 ? total : 1);
  s->rbuf = malloc(total > 0 ? total : 1);
  if (s->sbuf == NULL || s->rbuf == NULL) {
    comm_free_buffers(s);
    return BPC_ENOMEM;
  }
  for (int i = 0; i < s->nlocal; i++)
    bench_pattern_fill(s->sbuf + (size_t)i * bytes, bytes, (uint64_t)s->gids[i], -1, 0,
                       (bytes + 7) / 8);
  memset(s->rbuf, 0, total);
  return 0;
}

static const char *const comm_algorithms[] = {"exch", "exch-borrow", NULL};
static const char *const comm_auto[] = {"exch", NULL};
static const size_t comm_default_bytes[] = {8, 1 << 10, 64 << 10, 1 << 20, 16 << 20};
static const bench_eopt_t comm_options[] = {
    {"assign", "MODE", "contiguous (default) or round-robin block assignment"},
    {NULL, NULL, NULL},
};

static int comm_run(bench_env_t *env)
{
  comm_state_t s;
  const size_t *sizes;
  const char *algos[BENCH_MAX_ALGOS];
  const int nsizes = bench_sizes(env, &sizes);
  const int nalgos = bench_algorithms(env, algos, BENCH_MAX_ALGOS);
  const int bpp = bench_blocks_per_proc(env);
  bpc_assign_mode_t mode = BPC_ASSIGN_CONTIGUOUS;
  int ret = BENCH_EXIT_FAIL, rc = 0;

  memset(&s, 0, sizeof s);
  s.env = env;
  s.comm = MPI_COMM_NULL;

  /* Argument checks: the same outcome on every rank. */
  const char *am = bench_eopt(env, "assign");
  if (am != NULL && strcmp(am, "contiguous") != 0) {
    if (strcmp(am, "round-robin") == 0) {
      mode = BPC_ASSIGN_ROUND_ROBIN;
    } else {
      if (env->rank == 0)
        bench_error(env, "comm: --assign '%s': want contiguous or round-robin", am);
      return BENCH_EXIT_USAGE;
    }
  }
  if ((long long)bpp * env->size > INT_MAX / 2) {
    if (env->rank == 0)
      bench_error(env, "comm: %d blocks per process on %d processes is too many", bpp,
                  env->size);
    return BENCH_EXIT_USAGE;
  }
  for (int i = 0; i < nsizes; i++)
    if (sizes[i] > INT_MAX) {
      if (env->rank == 0)
        bench_error(env, "comm: the baseline sends at most %d bytes per message", INT_MAX);
      return BENCH_EXIT_USAGE;
    }
  s.n = bpp * env->size;

  void *tag_ub_attr = NULL;
  int flag = 0;
  MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &tag_ub_attr, &flag);
  if (flag && *(int *)tag_ub_attr < s.n - 1) {
    if (env->rank == 0)
      bench_error(env, "comm: %d blocks exceed MPI_TAG_UB %d (the baseline tags by gid)", s.n,
                  *(int *)tag_ub_attr);
    return BENCH_EXIT_USAGE;
  }

  /* Assignment, rank maps, baseline communicator. */
  rc = bpc_assign_create(env->ctx, s.n, mode, NULL, &s.assign);
  if (rc == BPC_OK)
    rc = bpc_assign_local(s.assign, &s.gids, &s.nlocal);
  if (rc == BPC_OK) {
    size_t m = s.nlocal > 0 ? (size_t)s.nlocal : 1;
    s.src_gid = calloc(m, sizeof(int));
    s.dst_gid = calloc(m, sizeof(int));
    s.src_rank = calloc(m, sizeof(int));
    s.dst_rank = calloc(m, sizeof(int));
    s.req = calloc(2 * m, sizeof(MPI_Request));
    s.msgs = calloc(m, sizeof(bpc__msg_t *));
    if (!s.src_gid || !s.dst_gid || !s.src_rank || !s.dst_rank || !s.req || !s.msgs)
      rc = BPC_ENOMEM;
  }
  uint64_t cross = 0; /* local blocks whose message leaves the process */
  for (int i = 0; i < s.nlocal && rc == BPC_OK; i++) {
    const int g = s.gids[i];
    s.dst_gid[i] = (g + 1) % s.n;
    s.src_gid[i] = (g - 1 + s.n) % s.n;
    rc = bpc_assign_rank(s.assign, s.dst_gid[i], &s.dst_rank[i]);
    if (rc == BPC_OK)
      rc = bpc_assign_rank(s.assign, s.src_gid[i], &s.src_rank[i]);
    if (rc == BPC_OK && s.dst_rank[i] != env->rank)
      cross++;
  }
  if (rc == BPC_OK && MPI_Comm_dup(MPI_COMM_WORLD, &s.comm) != MPI_SUCCESS)
    rc = BPC_EMPI;
  if (rc == BPC_OK)
    MPI_Comm_set_errhandler(s.comm, MPI_ERRORS_RETURN);
  if (bench_agree(env, rc) != 0) {
    bench_error(env, "comm: setup failed: %s (%s)", bpc_err_name(rc), bpc_last_error(env->ctx));
    goto cleanup;
  }
  uint64_t cross_max = 0;
  MPI_Allreduce(&cross, &cross_max, 1, MPI_UINT64_T, MPI_MAX, env->world);

  ret = BENCH_EXIT_OK;
  for (int si = 0; si < nsizes && ret == BENCH_EXIT_OK; si++) {
    rc = comm_alloc_buffers(&s, sizes[si]);
    if (bench_agree(env, rc) != 0) {
      if (rc != 0)
        bench_error(env, "comm: out of memory for 2 x %d x %zu bytes", s.nlocal, sizes[si]);
      comm_free_buffers(&s);
      ret = BENCH_EXIT_FAIL;
      break;
    }
    for (int ai = 0; ai < nalgos && ret == BENCH_EXIT_OK; ai++) {
      bench_case_t c;
      memset(&c, 0, sizeof c);
      c.algorithm = algos[ai];
      c.baseline = "MPI_Isend/MPI_Irecv";
      c.kvec = NULL;
      c.nblocks = s.n;
      c.bytes = sizes[si];
      c.lower_bound_bytes = cross_max * sizes[si];
      c.lower_bound_msgs = cross_max;
      c.extra_json = mode == BPC_ASSIGN_ROUND_ROBIN ? "\"assign\":\"round-robin\""
                                                    : "\"assign\":\"contiguous\"";
      c.state = &s;
      c.prepare = comm_prepare;
      c.run_bpc = comm_run_bpc;
      c.run_baseline = comm_run_baseline;
      c.check = comm_check;
      c.bpc_done = comm_bpc_done;
      s.flags = strcmp(algos[ai], "exch-borrow") == 0 ? BPC__SEND_BORROW : 0;
      s.stamped_rep = -1;
      ret = bench_run_case(env, &c);
    }
    comm_free_buffers(&s);
  }

cleanup:
  comm_free_buffers(&s);
  if (s.comm != MPI_COMM_NULL)
    MPI_Comm_free(&s.comm);
  bpc_assign_destroy(&s.assign);
  free(s.src_gid);
  free(s.dst_gid);
  free(s.src_rank);
  free(s.dst_rank);
  free(s.req);
  free(s.msgs);
  return ret;
}

const bench_engine_t bench_engine_comm = {
    .name = "comm",
    .desc = "block messaging (lib/comm) vs MPI_Isend/MPI_Irecv, ring of blocks",
    .algorithms = comm_algorithms,
    .auto_algorithms = comm_auto,
    .uses_k = 0,
    .default_bytes = comm_default_bytes,
    .n_default_bytes = (int)(sizeof comm_default_bytes / sizeof comm_default_bytes[0]),
    .default_blocks_per_proc = 1,
    .options = comm_options,
    .notes = "  Every block sends B bytes to block (gid+1) mod n and receives from (gid-1)\n"
             "  mod n; n = p * blocks-per-proc. bpc: bpc__exch_open/send/wait/flush (timed),\n"
             "  then check, release and close (untimed). Baseline: MPI_Irecv into a user\n"
             "  buffer, MPI_Isend, MPI_Waitall on a duplicate of MPI_COMM_WORLD.\n",
    .run = comm_run,
};
