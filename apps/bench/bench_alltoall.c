/*
 * apps/bench/bench_alltoall.c - `bpc-bench alltoall`: the all-to-all engine
 * (bpc_alltoall) against MPI_Alltoall.
 *
 * n = p * blocks-per-proc blocks (contiguous assignment); every block
 * gives every block (itself included) an item of B bytes (--bytes) whose
 * words depend on source, destination and repetition, and checks what it
 * receives. bpc: bpc_alltoall with the rows of the table ("rounds"), the
 * automatic k-vector or --k (one round, k = n: a direct exchange).
 * Baseline: the same items through one MPI_Alltoall on a duplicate of the
 * world: the items of the blocks of this process for the blocks of
 * process q, packed in (source, destination) order, as q's block of the
 * send buffer (b*b*B bytes per pair of processes for b blocks per
 * process), then unpacked and checked alike. The model's lower bound:
 * every item bound for another process crosses once, (p-1) b^2 B bytes in
 * p-1 messages from each process.
 */
#include "bench.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "patterns/patterns.h"

typedef struct a2a_state {
  bench_env_t *env;
  bpc_assign_t *assign;
  MPI_Comm comm;
  const int *gids;
  int nlocal, n, bpp;
  size_t bytes;
  int rep;
  unsigned char *items; /* nlocal * n items: the send data (src l, dst g) */
  bpc_buf_t *bufs;      /* their views */
  unsigned char *got;   /* nlocal * n items received by bpc */
  unsigned char *sbuf, *rbuf; /* baseline: packed by destination process */
  bpc_type_t type;
  bpc_alltoall_params_t params;
  int bad; /* wrong deliveries seen by bpc's recv callback */
} a2a_state_t;

static uint64_t a2a_key(int src, int dst)
{
  return ((uint64_t)(uint32_t)src << 32) | (uint32_t)dst;
}

static int a2a_prepare(void *st, int rep, int is_bpc)
{
  a2a_state_t *s = st;
  s->rep = rep;
  /* restamp this repetition's items (bench_pattern: only the ends change) */
  for (int l = 0; l < s->nlocal; l++)
    for (int g = 0; g < s->n; g++) {
      unsigned char *it = s->items + ((size_t)l * (size_t)s->n + (size_t)g) * s->bytes;
      const size_t words = s->bytes / 8;
      bench_pattern_fill(it, s->bytes, a2a_key(s->gids[l], g), rep, 0, words < 1 ? 0 : 1);
      if (words > 1)
        bench_pattern_fill(it, s->bytes, a2a_key(s->gids[l], g), rep, words - 1, words);
    }
  if (is_bpc) { /* (before the baseline: bpc's result must stay for the check) */
    memset(s->got, 0, (size_t)s->nlocal * (size_t)s->n * s->bytes);
    s->bad = 0;
  }
  return 0;
}

static int a2a_send(int src_gid, int dst_gid, const void **item, void *user)
{
  a2a_state_t *s = user;
  const int l = src_gid - s->gids[0]; /* contiguous: local gids are consecutive */
  *item = &s->bufs[(size_t)l * (size_t)s->n + (size_t)dst_gid];
  return 0;
}

static int a2a_recv(int dst_gid, int src_gid, void *item, void *user)
{
  a2a_state_t *s = user;
  const bpc_buf_t *b = item;
  const int l = dst_gid - s->gids[0];
  if (b->count != s->bytes) {
    s->bad++;
    return 0;
  }
  memcpy(s->got + ((size_t)l * (size_t)s->n + (size_t)src_gid) * s->bytes, b->data, s->bytes);
  return 0;
}

static int a2a_run_bpc(void *st)
{
  a2a_state_t *s = st;
  return bpc_alltoall(s->env->ctx, s->assign, &s->type, a2a_send, a2a_recv, s, &s->params, NULL);
}

static int a2a_run_baseline(void *st)
{
  a2a_state_t *s = st;
  const int P = s->env->size, b = s->bpp;
  const size_t blk = (size_t)b * (size_t)b * s->bytes; /* per pair of processes */
  for (int q = 0; q < P; q++)
    for (int l = 0; l < b; l++)
      for (int j = 0; j < b; j++) {
        const int g = q * b + j;
        memcpy(s->sbuf + (size_t)q * blk + ((size_t)l * (size_t)b + (size_t)j) * s->bytes,
               s->items + ((size_t)l * (size_t)s->n + (size_t)g) * s->bytes, s->bytes);
      }
  int mrc = MPI_Alltoall(s->sbuf, (int)blk, MPI_BYTE, s->rbuf, (int)blk, MPI_BYTE, s->comm);
  return mrc == MPI_SUCCESS ? 0 : BPC_EMPI;
}

static int a2a_check(void *st, int *correct)
{
  a2a_state_t *s = st;
  const int P = s->env->size, b = s->bpp;
  const size_t blk = (size_t)b * (size_t)b * s->bytes;
  int ok = s->bad == 0;
  for (int l = 0; l < s->nlocal && ok; l++)
    for (int g = 0; g < s->n && ok; g++) {
      const uint64_t key = a2a_key(g, s->gids[l]);
      ok = bench_pattern_ok(s->got + ((size_t)l * (size_t)s->n + (size_t)g) * s->bytes, s->bytes,
                            key, s->rep);
      /* the baseline's copy: source g = q b + j of process q, to our l */
      const int q = g / b, j = g % b;
      ok = ok && bench_pattern_ok(s->rbuf + (size_t)q * blk +
                                      ((size_t)j * (size_t)b + (size_t)l) * s->bytes,
                                  s->bytes, key, s->rep);
    }
  (void)P;
  *correct = ok;
  return 0;
}

static void a2a_free(a2a_state_t *s)
{
  free(s->items);
  free(s->bufs);
  free(s->got);
  free(s->sbuf);
  free(s->rbuf);
  s->items = s->got = s->sbuf = s->rbuf = NULL;
  s->bufs = NULL;
}

static int a2a_alloc(a2a_state_t *s, size_t bytes)
{
  a2a_free(s);
  s->bytes = bytes;
  const size_t nitems = (size_t)s->nlocal * (size_t)s->n;
  s->items = malloc(nitems * bytes + 1);
  s->bufs = calloc(nitems + 1, sizeof *s->bufs);
  s->got = malloc(nitems * bytes + 1);
  s->sbuf = malloc(nitems * bytes + 1);
  s->rbuf = malloc(nitems * bytes + 1);
  if (!s->items || !s->bufs || !s->got || !s->sbuf || !s->rbuf)
    return BPC_ENOMEM;
  for (size_t i = 0; i < nitems; i++) {
    s->bufs[i].data = s->items + i * bytes;
    s->bufs[i].count = bytes;
    bench_pattern_fill(s->items + i * bytes, bytes, a2a_key(s->gids[i / (size_t)s->n],
                                                            (int)(i % (size_t)s->n)),
                       0, 0, bytes / 8);
  }
  return 0;
}

static const char *const a2a_auto[] = {"rounds", NULL};
static const size_t a2a_default_bytes[] = {16, 1024, 64 << 10};

static int a2a_run(bench_env_t *env)
{
  a2a_state_t s;
  const size_t *sizes;
  const char *algos[BENCH_MAX_ALGOS];
  const int nsizes = bench_sizes(env, &sizes);
  const int nalgos = bench_algorithms(env, algos, BENCH_MAX_ALGOS);
  const bench_opts_t *o = env->opts;
  int ret = BENCH_EXIT_FAIL;

  memset(&s, 0, sizeof s);
  s.env = env;
  s.comm = MPI_COMM_NULL;
  s.bpp = bench_blocks_per_proc(env);
  for (int i = 0; i < nsizes; i++)
    if (sizes[i] % 8 != 0 || sizes[i] == 0 ||
        (double)sizes[i] * s.bpp * s.bpp > (double)INT_MAX) {
      if (env->rank == 0)
        bench_error(env, "alltoall: --bytes %zu: want a positive multiple of 8, and at most "
                         "2 GiB per pair of processes", sizes[i]);
      return BENCH_EXIT_USAGE;
    }
  if ((long long)s.bpp * env->size > 4096) {
    if (env->rank == 0)
      bench_error(env, "alltoall: at most 4096 blocks (n^2 items)");
    return BENCH_EXIT_USAGE;
  }
  s.n = s.bpp * env->size;
  if (o->k_given && !o->k_auto) {
    long prod = 1;
    for (int i = 0; i < o->nk; i++)
      prod *= o->k[i];
    if (prod != s.n) {
      if (env->rank == 0)
        bench_error(env, "alltoall: --k multiplies to %ld, but there are %d blocks", prod, s.n);
      return BENCH_EXIT_USAGE;
    }
  }
  int rc = bpc_assign_create(env->ctx, s.n, BPC_ASSIGN_CONTIGUOUS, NULL, &s.assign);
  if (rc == BPC_OK)
    rc = bpc_assign_local(s.assign, &s.gids, &s.nlocal);
  if (rc == BPC_OK && MPI_Comm_dup(MPI_COMM_WORLD, &s.comm) != MPI_SUCCESS)
    rc = BPC_EMPI;
  if (bench_agree(env, rc) != 0) {
    bench_error(env, "alltoall: setup failed: %s", bpc_err_name(rc));
    goto cleanup;
  }
  s.type = bpc_type_contiguous(1, MPI_BYTE);
  s.params = bpc_alltoall_params_default();
  if (o->k_given && !o->k_auto) {
    s.params.k = o->k;
    s.params.nk = o->nk;
  }
  char kv[96] = "auto";
  if (s.params.k != NULL)
    bpc__kvec_format(s.params.k, s.params.nk, kv, sizeof kv);

  ret = BENCH_EXIT_OK;
  for (int si = 0; si < nsizes && ret == BENCH_EXIT_OK; si++) {
    rc = a2a_alloc(&s, sizes[si]);
    if (bench_agree(env, rc) != 0) {
      if (rc != 0)
        bench_error(env, "alltoall: out of memory for items of %zu bytes", sizes[si]);
      ret = BENCH_EXIT_FAIL;
      break;
    }
    for (int ai = 0; ai < nalgos && ret == BENCH_EXIT_OK; ai++) {
      bench_case_t c;
      memset(&c, 0, sizeof c);
      s.params.algorithm = algos[ai];
      c.algorithm = algos[ai];
      c.baseline = "MPI_Alltoall";
      c.kvec = kv;
      c.nblocks = s.n;
      c.bytes = sizes[si];
      c.lower_bound_bytes =
          (uint64_t)(env->size - 1) * (uint64_t)s.bpp * (uint64_t)s.bpp * sizes[si];
      c.lower_bound_msgs = (uint64_t)(env->size - 1);
      c.state = &s;
      c.prepare = a2a_prepare;
      c.run_bpc = a2a_run_bpc;
      c.run_baseline = a2a_run_baseline;
      c.check = a2a_check;
      ret = bench_run_case(env, &c);
    }
  }

cleanup:
  a2a_free(&s);
  if (s.comm != MPI_COMM_NULL)
    MPI_Comm_free(&s.comm);
  bpc_assign_destroy(&s.assign);
  return ret;
}

const bench_engine_t bench_engine_alltoall = {
    .name = "alltoall",
    .desc = "all-to-all (bpc_alltoall) vs MPI_Alltoall, one item per pair of blocks",
    .registry = "alltoall",
    .auto_algorithms = a2a_auto,
    .uses_k = 1,
    .default_bytes = a2a_default_bytes,
    .n_default_bytes = (int)(sizeof a2a_default_bytes / sizeof a2a_default_bytes[0]),
    .default_blocks_per_proc = 1,
    .options = NULL,
    .notes = "  n = p * blocks-per-proc blocks (contiguous); every block gives every block an\n"
             "  item of B bytes. bpc: bpc_alltoall (k-vector automatic, or --k; one round\n"
             "  with k = n is a direct exchange). Baseline: one MPI_Alltoall of the items\n"
             "  packed per destination process (b*b*B bytes per pair of processes).\n",
    .run = a2a_run,
};
