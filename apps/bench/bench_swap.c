/*
 * apps/bench/bench_swap.c - `bpc-bench swap` (`bpc-bench tree` is
 * bench_tree.c): bpc_swap (radixk with several k-vectors, shift, ring,
 * bpc's own auto choice) against MPI on the same data in the same run:
 *  - baseline "rsb": MPI_Reduce_scatter_block on a duplicate of
 *    MPI_COMM_WORLD, count/P elements per rank. "sum" is MPI_SUM on
 *    MPI_FLOAT; "over" is premultiplied RGBA float over on a 4-float
 *    datatype through MPI_Op_create(commute = 0). With several blocks per
 *    process (contiguous assignment) the baseline first folds the rank's
 *    blocks in order, then calls MPI_Reduce_scatter_block.
 *  - baseline "binswap": a single-purpose binary swap written directly with
 *    MPI (MPI_Sendrecv of half the current range per round into one reused
 *    buffer, then the same operator; no library), against radixk with every
 *    k = 2. Needs a power-of-two P and one block per process.
 * Each variant works in place on its own copy of the input, restored before
 * every run (untimed, so both start from the same cache state). After every
 * repetition both results are checked against a serial reference (exact for
 * sum of small integers, relative 1e-4 for over). The model's bytes per
 * rank are n(p-1)/p of the buffer (lower_bound_bytes), next to bpc's
 * bytes_sent_max from the statistics API.
 */
#include "bench.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decomp/decomp.h"
#include "patterns/patterns.h"

enum { OP_SUM = 0, OP_OVER = 1 };
enum { BASE_RSB = 0, BASE_BINSWAP = 1 };

/* ------------------------------------------------------------ operators */

/* The operators: bpc's built-in "sum" (floats) and "over" (RGBA float4). */
static bpc_op_t sw_op(int op)
{
  bpc_op_t o;
  bpc_op_builtin(op == OP_SUM ? "sum" : "over", MPI_FLOAT, &o);
  return o;
}

/* MPI user op: inoutvec = invec over inoutvec (invec from lower ranks). */
static void mpi_over(void *invec, void *inoutvec, int *len, MPI_Datatype *dt)
{
  (void)dt;
  const double t0 = bench_op_enter();
  const bpc_op_t over = sw_op(OP_OVER);
  over.fn(invec, inoutvec, (size_t)*len, 1, NULL);
  bench_op_leave(t0);
}

/* ------------------------------------------------------------- the data */

static uint32_t hash3(uint32_t a, uint32_t b)
{
  uint32_t x = a * 0x9E3779B1u ^ (b + 0x7F4A7C15u);
  x ^= x >> 15;
  x *= 0x2C1B3C6Du;
  x ^= x >> 12;
  x *= 0x297A2D39u;
  x ^= x >> 15;
  return x;
}

/* Element e of block gid: sum: an integer 0..15 (sums stay exact); over:
 * alpha 0.1..0.9, colours premultiplied. */
static void gen(int op, int gid, size_t e, float *out)
{
  uint32_t h = hash3((uint32_t)gid, (uint32_t)e);
  if (op == OP_SUM) {
    out[0] = (float)(h & 15u);
    return;
  }
  const float a = 0.1f + 0.8f * (float)(h & 1023u) / 1023.0f;
  out[0] = a * (float)((h >> 10) & 255u) / 255.0f;
  out[1] = a * (float)((h >> 18) & 255u) / 255.0f;
  out[2] = a * (float)((h >> 26) & 63u) / 63.0f;
  out[3] = a;
}

static int close_enough(int op, const float *a, const float *ref)
{
  const int nc = op == OP_SUM ? 1 : 4;
  for (int c = 0; c < nc; c++) {
    const float d = a[c] > ref[c] ? a[c] - ref[c] : ref[c] - a[c];
    const float m = ref[c] > 0 ? ref[c] : -ref[c];
    if (op == OP_SUM ? d != 0.0f : !(d <= 1e-4f * (1.0f + m)))
      return 0;
  }
  return 1;
}

/* --------------------------------------------------------------- swap */

typedef struct sw_state {
  bench_env_t *env;
  bpc_assign_t *assign;
  const int *gids;
  int nl, n, p, rank;
  int op;
  size_t es, count; /* bytes per element, elements per block */
  float **orig, **wb, **wm; /* input; bpc's and the baseline's working copies */
  float *rbuf, *fold, *tmp, *ref;
  MPI_Comm comm;
  MPI_Datatype pix;
  MPI_Op mop;
  int baseline;
  bpc_op_t bop;
  bpc_type_t type;
  bpc_swap_params_t params;
  int k[BPC_SWAP_MAX_K];
  bpc_swap_piece_t *pieces;
  bpc_swap_info_t info;
  int nthreads;
} sw_state_t;

static int sw_prepare(void *st, int rep, int is_bpc)
{
  sw_state_t *s = st;
  (void)rep;
  for (int i = 0; i < s->nl; i++)
    memcpy(is_bpc ? s->wb[i] : s->wm[i], s->orig[i], s->count * s->es);
  return 0;
}

static int sw_run_bpc(void *st)
{
  sw_state_t *s = st;
  return bpc_swap(s->env->ctx, s->assign, &s->type, (void *const *)s->wb, s->count, &s->bop,
                  &s->params, s->pieces, &s->info);
}

static int sw_run_rsb(void *st)
{
  sw_state_t *s = st;
  const float *send = s->wm[0];
  if (s->nl > 1) {
    /* fold the rank's consecutive blocks in order first */
    memcpy(s->fold, s->wm[0], s->count * s->es);
    for (int i = 1; i < s->nl; i++)
      s->bop.fn(s->wm[i], s->fold, s->count, 0, NULL);
    send = s->fold;
  }
  const int per = (int)(s->count / (size_t)s->p);
  int rc = MPI_Reduce_scatter_block(send, s->rbuf, per, s->pix, s->mop, s->comm);
  return rc == MPI_SUCCESS ? 0 : BPC_EMPI;
}

/* The hand-written binary swap: one block per rank, P a power of two. */
static int sw_run_binswap(void *st)
{
  sw_state_t *s = st;
  char *w = (char *)s->wm[0];
  size_t lo = 0, len = s->count;
  for (int bit = 1; bit < s->p; bit <<= 1) {
    const int partner = s->rank ^ bit;
    const size_t h = len / 2;
    const int upper = (s->rank & bit) != 0; /* keep [lo+h, lo+len) */
    const size_t keep_off = upper ? lo + h : lo, keep_len = upper ? len - h : h;
    const size_t give_off = upper ? lo : lo + h, give_len = upper ? h : len - h;
    int rc = MPI_Sendrecv(w + give_off * s->es, (int)(give_len * s->es), MPI_BYTE, partner, bit,
                          s->tmp, (int)(keep_len * s->es), MPI_BYTE, partner, bit, s->comm,
                          MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS)
      return BPC_EMPI;
    s->bop.fn(s->tmp, w + keep_off * s->es, keep_len, partner < s->rank, NULL);
    lo = keep_off;
    len = keep_len;
  }
  return 0;
}

static int sw_check(void *st, int *correct)
{
  sw_state_t *s = st;
  const size_t fe = s->es / sizeof(float);
  int ok = 1;
  for (int i = 0; i < s->nl && ok; i++) {
    const bpc_swap_piece_t *pc = &s->pieces[i];
    for (size_t e = pc->offset; e < pc->offset + pc->count; e++)
      if (!close_enough(s->op, s->wb[i] + e * fe, s->ref + e * fe)) {
        bench_error(s->env, "swap: bpc block %d element %zu differs from the reference",
                    s->gids[i], e);
        ok = 0;
        break;
      }
  }
  if (s->nl > 0 && ok) {
    if (s->baseline == BASE_RSB) {
      const size_t per = s->count / (size_t)s->p, off = per * (size_t)s->rank;
      for (size_t e = 0; e < per; e++)
        if (!close_enough(s->op, s->rbuf + e * fe, s->ref + (off + e) * fe)) {
          bench_error(s->env, "swap: MPI_Reduce_scatter_block element %zu differs", off + e);
          ok = 0;
          break;
        }
    } else {
      size_t lo = 0, len = s->count;
      for (int bit = 1; bit < s->p; bit <<= 1) {
        const size_t h = len / 2;
        if (s->rank & bit) {
          lo += h;
          len -= h;
        } else {
          len = h;
        }
      }
      for (size_t e = lo; e < lo + len; e++)
        if (!close_enough(s->op, s->wm[0] + e * fe, s->ref + e * fe)) {
          bench_error(s->env, "swap: binary swap element %zu differs", e);
          ok = 0;
          break;
        }
    }
  }
  *correct = ok;
  return 0;
}

/* Free n buffers of each of the three sets (input, bpc's and the
 * baseline's working copies) and the sets themselves (NULL allowed). */
static void free_copies(float **orig, float **wb, float **wm, int n)
{
  for (int i = 0; i < n; i++) {
    if (orig)
      free(orig[i]);
    if (wb)
      free(wb[i]);
    if (wm)
      free(wm[i]);
  }
  free(orig);
  free(wb);
  free(wm);
}

static void sw_free(sw_state_t *s)
{
  free_copies(s->orig, s->wb, s->wm, s->nl);
  free(s->rbuf);
  free(s->fold);
  free(s->tmp);
  free(s->ref);
  s->orig = s->wb = s->wm = NULL;
  s->rbuf = s->fold = s->tmp = s->ref = NULL;
}

/* Buffers and the reference for one size and operator. */
static int sw_alloc(sw_state_t *s, size_t bytes, int op)
{
  s->op = op;
  s->es = op == OP_SUM ? sizeof(float) : 4 * sizeof(float);
  s->count = bytes / s->es;
  const size_t fe = s->es / sizeof(float), b = s->count * s->es + 64;
  const size_t nl1 = (size_t)(s->nl > 0 ? s->nl : 1);
  s->orig = calloc(nl1, sizeof(float *));
  s->wb = calloc(nl1, sizeof(float *));
  s->wm = calloc(nl1, sizeof(float *));
  if (!s->orig || !s->wb || !s->wm)
    return BPC_ENOMEM;
  for (int i = 0; i < s->nl; i++) {
    s->orig[i] = malloc(b);
    s->wb[i] = malloc(b);
    s->wm[i] = malloc(b);
    if (!s->orig[i] || !s->wb[i] || !s->wm[i])
      return BPC_ENOMEM;
    for (size_t e = 0; e < s->count; e++)
      gen(op, s->gids[i], e, s->orig[i] + e * fe);
    memcpy(s->wb[i], s->orig[i], s->count * s->es);
    memcpy(s->wm[i], s->orig[i], s->count * s->es);
  }
  s->rbuf = malloc(s->count / (size_t)s->p * s->es + 64);
  s->fold = malloc(b);
  s->tmp = malloc(b / 2 + 64);
  s->ref = malloc(b);
  if (!s->rbuf || !s->fold || !s->tmp || !s->ref)
    return BPC_ENOMEM;
  /* the full reference, serially in position (= gid) order */
  if (s->nl > 0) {
    const bpc_op_t o = sw_op(op);
    float x[4];
    for (size_t e = 0; e < s->count; e++) {
      float *r = s->ref + e * fe;
      gen(op, 0, e, r);
      for (int g = 1; g < s->n; g++) {
        gen(op, g, e, x);
        o.fn(x, r, 1, 0, NULL);
      }
    }
  }
  return 0;
}

/* k-vector candidates: --k, else smallest factors (all 2 for powers of
 * two), automatic with rounds of at most 4, at most 8, and direct send. */
static int sw_kvecs(const bench_env_t *env, int n, int kv[][BPC_SWAP_MAX_K], int *nk, int cap)
{
  int m = 0;
  if (!env->opts->k_auto) {
    nk[0] = env->opts->nk;
    memcpy(kv[0], env->opts->k, sizeof(int) * (size_t)env->opts->nk);
    return 1;
  }
  if (n == 1) {
    nk[0] = 0;
    return 1;
  }
  int tmp[BPC_SWAP_MAX_K], nt = 0, r = n;
  for (int f = 2; r > 1 && f <= r; f++)
    while (r % f == 0 && nt < BPC_SWAP_MAX_K) {
      tmp[nt++] = f;
      r /= f;
    }
  const int targets[2] = {4, 8};
  for (int c = 0; c < 4 && m < cap; c++) {
    int k[BPC_SWAP_MAX_K], nkc = 0;
    if (c == 0) {
      memcpy(k, tmp, sizeof(int) * (size_t)nt);
      nkc = nt;
    } else if (c < 3) {
      if (bpc__kvec_auto(n, targets[c - 1], k, BPC_SWAP_MAX_K, &nkc) != BPC_OK)
        continue;
    } else {
      k[0] = n;
      nkc = 1;
    }
    int dup = 0;
    for (int j = 0; j < m && !dup; j++)
      dup = nk[j] == nkc && memcmp(kv[j], k, sizeof(int) * (size_t)nkc) == 0;
    if (!dup) {
      memcpy(kv[m], k, sizeof(int) * (size_t)nkc);
      nk[m++] = nkc;
    }
  }
  return m;
}

/* The schedules come from the registry (.registry = "swap"): a new
 * schedule is benchmarked by adding its table row. One bench-only variant,
 * "auto-bpc" (bpc's own choice); "auto" runs every schedule. */
static const char *const sw_extra[] = {"auto-bpc", NULL};
static const size_t sw_default_bytes[] = {1 << 20, 4 << 20, 16 << 20};
static const bench_eopt_t sw_options[] = {
    {"op", "LIST", "sum, over or sum,over (default both)"},
    {"baseline", "LIST", "rsb (MPI_Reduce_scatter_block), binswap (hand-written binary swap "
                         "vs radixk all 2), or rsb,binswap (default)"},
    {"threads", "N", "OpenMP threads for bpc's local reductions (default 0: OMP_NUM_THREADS)"},
    {"deterministic", NULL, "radixk: reduce each round in one fixed tree"},
    {NULL, NULL, NULL},
};

static int has_item(const char *list, const char *item)
{
  const size_t len = strlen(item);
  for (const char *p = list; p != NULL && *p;) {
    const char *c = strchr(p, ',');
    const size_t l = c ? (size_t)(c - p) : strlen(p);
    if (l == len && strncmp(p, item, len) == 0)
      return 1;
    p = c ? c + 1 : NULL;
  }
  return 0;
}

static int sw_run(bench_env_t *env)
{
  sw_state_t s;
  const size_t *sizes;
  const char *algos[BENCH_MAX_ALGOS];
  const int nsizes = bench_sizes(env, &sizes);
  const int nalgos = bench_algorithms(env, algos, BENCH_MAX_ALGOS);
  const int bpp = bench_blocks_per_proc(env);
  int ret = BENCH_EXIT_FAIL, rc = 0;
  const char *ops = bench_eopt(env, "op") ? bench_eopt(env, "op") : "sum,over";
  const char *bases = bench_eopt(env, "baseline") ? bench_eopt(env, "baseline") : "rsb,binswap";
  const char *thr = bench_eopt(env, "threads");

  memset(&s, 0, sizeof s);
  s.env = env;
  s.comm = MPI_COMM_NULL;
  s.pix = MPI_DATATYPE_NULL;
  s.mop = MPI_OP_NULL;
  s.p = env->size;
  s.rank = env->rank;
  s.n = bpp * env->size;
  s.nthreads = thr ? atoi(thr) : 0;
  for (const char *o = ops; o != NULL;) {
    const char *c = strchr(o, ',');
    size_t l = c ? (size_t)(c - o) : strlen(o);
    if (!((l == 3 && strncmp(o, "sum", 3) == 0) || (l == 4 && strncmp(o, "over", 4) == 0))) {
      if (env->rank == 0)
        bench_error(env, "swap: --op '%s': want sum, over or sum,over", ops);
      return BENCH_EXIT_USAGE;
    }
    o = c ? c + 1 : NULL;
  }
  if (!has_item(bases, "rsb") && !has_item(bases, "binswap")) {
    if (env->rank == 0)
      bench_error(env, "swap: --baseline '%s': want rsb, binswap or rsb,binswap", bases);
    return BENCH_EXIT_USAGE;
  }
  for (int i = 0; i < nsizes; i++)
    if (sizes[i] % (16 * (size_t)env->size) != 0 || sizes[i] / 4 > INT_MAX) {
      if (env->rank == 0)
        bench_error(env, "swap: --bytes %zu: MPI_Reduce_scatter_block needs a multiple of 16*P "
                         "bytes (and at most 8 GiB)", sizes[i]);
      return BENCH_EXIT_USAGE;
    }

  rc = bpc_assign_create(env->ctx, s.n, BPC_ASSIGN_CONTIGUOUS, NULL, &s.assign);
  if (rc == BPC_OK)
    rc = bpc_assign_local(s.assign, &s.gids, &s.nl);
  if (rc == BPC_OK) {
    s.pieces = calloc((size_t)(s.nl > 0 ? s.nl : 1), sizeof *s.pieces);
    if (s.pieces == NULL)
      rc = BPC_ENOMEM;
  }
  if (rc == BPC_OK && MPI_Comm_dup(MPI_COMM_WORLD, &s.comm) != MPI_SUCCESS)
    rc = BPC_EMPI;
  if (bench_agree(env, rc) != 0) {
    bench_error(env, "swap: setup failed: %s", bpc_err_name(rc));
    goto cleanup;
  }

  int kv[8][BPC_SWAP_MAX_K], nkv[8];
  const int nk = sw_kvecs(env, s.n, kv, nkv, 8);
  const int binswap_ok = bpp == 1 && (env->size & (env->size - 1)) == 0;

  ret = BENCH_EXIT_OK;
  for (int si = 0; si < nsizes && ret == BENCH_EXIT_OK; si++)
    for (int op = 0; op < 2 && ret == BENCH_EXIT_OK; op++) {
      if (!has_item(ops, op == OP_SUM ? "sum" : "over"))
        continue;
      rc = sw_alloc(&s, sizes[si], op);
      if (bench_agree(env, rc) != 0) {
        bench_error(env, "swap: out of memory for %zu-byte blocks", sizes[si]);
        ret = BENCH_EXIT_FAIL;
        sw_free(&s);
        break;
      }
      if (op == OP_SUM) {
        s.pix = MPI_FLOAT;
        bench_mpi_sum_float(&s.mop);
      } else {
        MPI_Type_contiguous(4, MPI_FLOAT, &s.pix);
        MPI_Type_commit(&s.pix);
        MPI_Op_create(mpi_over, 0, &s.mop);
      }
      s.type = bpc_type_contiguous(s.es, s.pix);
      s.bop = sw_op(op);
      if (!env->opts->json && env->rank == 0) {
        printf("# op %s (%s)\n", op == OP_SUM ? "sum" : "over",
               op == OP_SUM ? "float, MPI_SUM" : "RGBA float4, MPI_Op_create commute=0");
        fflush(stdout);
      }
      char extra[96];
      snprintf(extra, sizeof extra, "\"op\":\"%s\",\"threads\":%d", op == OP_SUM ? "sum" : "over",
               s.nthreads);

      for (int ai = 0; ai < nalgos && ret == BENCH_EXIT_OK; ai++) {
        const int is_rk = bench_variant_id(&bench_engine_swap, algos[ai]) == BPC_SWAP_RADIXK;
        for (int kvi = 0; kvi < (is_rk ? nk : 1) && ret == BENCH_EXIT_OK; kvi++)
          for (int b = 0; b < 2 && ret == BENCH_EXIT_OK; b++) {
            int all2 = is_rk && nkv[kvi] > 0;
            for (int r = 0; r < nkv[kvi] && all2; r++)
              all2 = kv[kvi][r] == 2;
            if (b == BASE_RSB && !has_item(bases, "rsb"))
              continue;
            if (b == BASE_BINSWAP && (!has_item(bases, "binswap") || !binswap_ok || !all2))
              continue;
            char kname[128] = "";
            bench_case_t c;
            memset(&c, 0, sizeof c);
            s.baseline = b;
            s.params = bpc_swap_params_default();
            s.params.algorithm = strcmp(algos[ai], "auto-bpc") == 0 ? "auto" : algos[ai];
            s.params.nthreads = s.nthreads;
            s.params.deterministic = bench_eopt(env, "deterministic") != NULL;
            if (is_rk) {
              memcpy(s.k, kv[kvi], sizeof(int) * (size_t)nkv[kvi]);
              s.params.k = nkv[kvi] ? s.k : NULL;
              s.params.nk = nkv[kvi];
              bpc__kvec_format(s.k, nkv[kvi], kname, sizeof kname);
            }
            c.algorithm = algos[ai];
            c.baseline = b == BASE_RSB ? "MPI_Reduce_scatter_block" : "binswap (MPI_Sendrecv)";
            c.kvec = is_rk ? kname : NULL;
            c.nblocks = s.n;
            c.bytes = sizes[si];
            c.lower_bound_bytes = (uint64_t)sizes[si] * (uint64_t)(env->size - 1) /
                                  (uint64_t)env->size;
            c.lower_bound_msgs = 0;
            c.extra_json = extra;
            c.state = &s;
            c.prepare = sw_prepare;
            c.run_bpc = sw_run_bpc;
            c.run_baseline = b == BASE_RSB ? sw_run_rsb : sw_run_binswap;
            c.check = sw_check;
            ret = bench_run_case(env, &c);
          }
      }
      if (op == OP_OVER) {
        MPI_Op_free(&s.mop);
        MPI_Type_free(&s.pix);
      } else {
        bench_mpi_op_free(&s.mop);
      }
      s.mop = MPI_OP_NULL;
      s.pix = MPI_DATATYPE_NULL;
      sw_free(&s);
    }

cleanup:
  sw_free(&s);
  if (s.comm != MPI_COMM_NULL)
    MPI_Comm_free(&s.comm);
  free(s.pieces);
  bpc_assign_destroy(&s.assign);
  return ret;
}

const bench_engine_t bench_engine_swap = {
    .name = "swap",
    .desc = "swap-reduce (every schedule) vs MPI_Reduce_scatter_block and binary swap",
    .registry = "swap",
    .algorithms = sw_extra,
    .auto_algorithms = BENCH_AUTO_ROWS,
    .uses_k = 1,
    .default_bytes = sw_default_bytes,
    .n_default_bytes = (int)(sizeof sw_default_bytes / sizeof sw_default_bytes[0]),
    .default_blocks_per_proc = 1,
    .options = sw_options,
    .notes = "  Reduce-scatter of one buffer per block (bytes per block) with a float sum or\n"
             "  the non-commutative RGBA float 'over' (MPI_Op_create with commute=0).\n"
             "  radixk runs several k-vectors (smallest factors, automatic with rounds of at\n"
             "  most 4 and 8, direct send) unless --k is given; auto-bpc is bpc's own choice.\n"
             "  binswap: radixk with every k = 2 against a binary swap written with\n"
             "  MPI_Sendrecv (P a power of two, one block per process). Both variants work\n"
             "  in place on copies restored before every run; results checked every rep.\n",
    .run = sw_run,
};
