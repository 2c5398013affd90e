/*
 * apps/bench/bench_merge.c - `bpc-bench merge`: merge-reduce (bpc_merge)
 * against MPI_Reduce, one item of B bytes per block.
 *
 * Operators (--op):
 *  - sum:  floats added element-wise; baseline MPI_Reduce(MPI_FLOAT,
 *          MPI_SUM). bpc: op.elementwise and op.commutative,
 *          with params.count set (as a user who knows the size would).
 *  - over: RGBA float4 pixels composited front to back ("over", with
 *          premultiplied alpha: out = front + (1 - front.a) back), not
 *          commutative; baseline MPI_Reduce with a user MPI_Op created
 *          with commute = 0 on a float4 datatype. bpc:
 *          op.elementwise only (gid order is the compositing order).
 * Both callbacks make one pass over the root's item per group (blocked so
 * the root's chunk stays in L1 while the k-1 received items are added).
 *
 * Blocks: n = p * blocks-per-proc, contiguous assignment, so the baseline
 * (which reduces one buffer per rank) first merges its local blocks in gid
 * order into a scratch buffer, then calls MPI_Reduce to rank 0 (the owner
 * of gid 0, bpc's root). That local merge is part of the baseline's time.
 *
 * k-vectors: --k gives one exact k-vector; otherwise --radix LIST (default
 * 2,4,8,auto) runs one line per entry: a number r is the k-vector packing the
 * prime factors of n into rounds of at most r blocks (k = r where r divides
 * n, e.g. r = 4 at n = 8 is 4x2), "auto" is bpc_merge_kvec_auto (the
 * library's own choice for this size).
 *
 * Each repetition restores the bpc items (untimed: merges overwrite roots'
 * items); the check compares bpc's root item with MPI_Reduce's result
 * (exact for sums: every value is a small integer; relative 1e-5 for over).
 * Model lower bound per rank: every rank but the root's sends at least one
 * item (B bytes, one message).
 */
#include "bench.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "patterns/patterns.h"

#include "../common/app_mix.h"

enum { OP_SUM = 0, OP_OVER = 1 };

typedef struct merge_state {
  bench_env_t *env;
  bpc_assign_t *assign;
  MPI_Comm comm; /* the baseline's communicator */
  const int *gids;
  int nlocal, n;
  int op;
  size_t bytes, count; /* per item: bytes, and elements (floats or float4) */
  bpc_type_t type;
  bpc_merge_op_t mop; /* the bpc operator */
  bpc_merge_params_t params;
  int k[BENCH_MAX_K + BPC__MAX_ROUNDS];
  int nk;
  bpc_buf_t *items;     /* bpc's items (restored before every bpc run) */
  float *pristine;      /* nlocal items of input */
  float *work;          /* nlocal items: bpc's buffers */
  float *red;           /* baseline: local merge, then MPI_Reduce send buffer */
  float *result;        /* baseline: MPI_Reduce receive buffer (rank 0) */
  MPI_Datatype f4;      /* float4 */
  MPI_Op over_op;
  MPI_Op sum_op; /* MPI_SUM (under SMPI a charged equivalent, bench.h) */
  bpc_plan_t *plan; /* --plan: the case's persistent plan (bpc_merge_init) */
} merge_state_t;

/* ----------------------------------------------------------- operators */

#define CHUNK 2048 /* floats per block of the merge loops (8 KiB) */

static void add_into(float *restrict out, const float *restrict in, size_t n)
{
#pragma omp simd
  for (size_t i = 0; i < n; i++)
    out[i] += in[i];
}

/* One RGBA pixel as a 4-wide vector (GCC/Clang vector extension): a pixel
 * is one SSE register, so both operators below are straight vector loops
 * for bpc and for the MPI_Op alike. */
typedef float v4f __attribute__((vector_size(16)));

/* out = out over in (out in front), n float4 pixels */
static void over_into(float *restrict out, const float *restrict in, size_t n)
{
  for (size_t i = 0; i < n; i++) {
    v4f o, x;
    memcpy(&o, out + 4 * i, sizeof o);
    memcpy(&x, in + 4 * i, sizeof x);
    o += (1.0f - o[3]) * x;
    memcpy(out + 4 * i, &o, sizeof o);
  }
}

/* in over inout -> inout (MPI: invec is the left operand) */
static void over_under(const float *restrict in, float *restrict inout, size_t n)
{
  for (size_t i = 0; i < n; i++) {
    v4f f, b;
    memcpy(&f, in + 4 * i, sizeof f);
    memcpy(&b, inout + 4 * i, sizeof b);
    b = f + (1.0f - f[3]) * b;
    memcpy(inout + 4 * i, &b, sizeof b);
  }
}

static void mpi_over(void *in, void *inout, int *len, MPI_Datatype *dt)
{
  (void)dt;
  const double t0 = bench_op_enter();
  over_under(in, inout, (size_t)*len);
  bench_op_leave(t0);
}

/* bpc merge callbacks: root is items[0] (built-in algorithms); fold the
 * others in order, one chunk of the root at a time */
static int merge_sum(bpc_merge_group_t *g, void *user)
{
  (void)user;
  bpc_buf_t *root = g->items[g->root];
  float *out = root->data;
  const size_t n = root->count;
  for (size_t c = 0; c < n; c += CHUNK) {
    size_t len = n - c < CHUNK ? n - c : CHUNK;
    for (int j = 0; j < g->nitems; j++)
      if (j != g->root)
        add_into(out + c, (const float *)((bpc_buf_t *)g->items[j])->data + c, len);
  }
  return 0;
}

static int merge_over(bpc_merge_group_t *g, void *user)
{
  (void)user;
  if (g->root != 0)
    return 1; /* over needs the root in front; the built-in algorithms do that */
  bpc_buf_t *root = g->items[0];
  float *out = root->data;
  const size_t n = root->count; /* pixels */
  const size_t ch = CHUNK / 4;
  for (size_t c = 0; c < n; c += ch) {
    size_t len = n - c < ch ? n - c : ch;
    for (int j = 1; j < g->nitems; j++)
      over_into(out + 4 * c, (const float *)((bpc_buf_t *)g->items[j])->data + 4 * c, len);
  }
  return 0;
}

/* ------------------------------------------------------------- inputs */

static uint32_t hash2(uint32_t a, uint32_t b)
{
  return (uint32_t)(app_mix64(((uint64_t)a << 32) ^ b) >> 16);
}

static void fill_item(const merge_state_t *s, int gid, float *d)
{
  const size_t nf = s->bytes / sizeof(float);
  if (s->op == OP_SUM) {
    for (size_t i = 0; i < nf; i++)
      d[i] = (float)((hash2((uint32_t)gid, (uint32_t)(i & 4095)) + i) % 13u);
    return;
  }
  for (size_t p = 0; p < s->count; p++) {
    const float a = (float)(hash2((uint32_t)gid, (uint32_t)(p & 4095)) % 8u) / 16.0f; /* 0..0.44 */
    d[4 * p + 0] = a * 0.9f;
    d[4 * p + 1] = a * 0.5f;
    d[4 * p + 2] = a * 0.25f;
    d[4 * p + 3] = a;
  }
}

/* ---------------------------------------------------------- callbacks */

static int m_prepare(void *st, int rep, int is_bpc)
{
  merge_state_t *s = st;
  (void)rep;
  const size_t nf = s->bytes / sizeof(float);
  if (!is_bpc) {
    /* read the baseline's input as bpc's restore below does, so that both
     * start from the same cache state */
    volatile float sink = 0.0f;
    float acc = 0.0f;
    for (size_t i = 0; i < (size_t)s->nlocal * nf; i += 16)
      acc += s->pristine[i];
    sink = acc;
    (void)sink;
    return 0;
  }
  memcpy(s->work, s->pristine, (size_t)s->nlocal * nf * sizeof(float));
  for (int i = 0; i < s->nlocal; i++) {
    s->items[i].data = s->work + (size_t)i * nf;
    s->items[i].count = s->count;
  }
  return 0;
}

static int m_run_bpc(void *st)
{
  merge_state_t *s = st;
  return bpc_merge(s->env->ctx, s->assign, &s->type, s->items, &s->mop, &s->params, NULL);
}

static int m_run_plan(void *st)
{
  merge_state_t *s = st;
  return bpc_plan_start(s->plan);
}

static int m_run_baseline(void *st)
{
  merge_state_t *s = st;
  const size_t nf = s->bytes / sizeof(float);
  const float *src = s->pristine;
  if (s->nlocal > 1) { /* local blocks first, in gid order */
    memcpy(s->red, s->pristine, nf * sizeof(float));
    for (int i = 1; i < s->nlocal; i++) {
      const float *in = s->pristine + (size_t)i * nf;
      for (size_t c = 0; c < nf; c += CHUNK) {
        size_t len = nf - c < CHUNK ? nf - c : CHUNK;
        if (s->op == OP_SUM)
          add_into(s->red + c, in + c, len);
        else
          over_into(s->red + c, in + c, len / 4);
      }
    }
    src = s->red;
  }
  int rc;
  if (s->op == OP_SUM)
    rc = MPI_Reduce(src, s->result, (int)nf, MPI_FLOAT, s->sum_op, 0, s->comm);
  else
    rc = MPI_Reduce(src, s->result, (int)s->count, s->f4, s->over_op, 0, s->comm);
  return rc == MPI_SUCCESS ? 0 : BPC_EMPI;
}

static int m_check(void *st, int *correct)
{
  merge_state_t *s = st;
  *correct = 1;
  if (s->env->rank != 0 || s->nlocal == 0 || s->gids[0] != 0)
    return 0;
  const float *b = s->items[0].data, *m = s->result;
  const size_t nf = s->bytes / sizeof(float);
  if (s->items[0].count != s->count) {
    *correct = 0;
    bench_error(s->env, "merge: root item has %zu elements, expected %zu", s->items[0].count,
                s->count);
    return 0;
  }
  for (size_t i = 0; i < nf; i++) {
    float d = b[i] - m[i], mag = m[i] < 0 ? -m[i] : m[i];
    if (d < 0)
      d = -d;
    if (s->op == OP_SUM ? d != 0.0f : d > 1e-5f * (mag > 1.0f ? mag : 1.0f)) {
      bench_error(s->env, "merge: element %zu: bpc %g, MPI_Reduce %g", i, (double)b[i],
                  (double)m[i]);
      *correct = 0;
      return 0;
    }
  }
  return 0;
}

/* ------------------------------------------------------------- setup */

static void free_buffers(merge_state_t *s)
{
  free(s->pristine);
  free(s->work);
  free(s->red);
  free(s->result);
  s->pristine = s->work = s->red = s->result = NULL;
}

static int alloc_buffers(merge_state_t *s, size_t bytes)
{
  const size_t nf = bytes / sizeof(float);
  const size_t tot = (size_t)s->nlocal * nf;
  s->bytes = bytes;
  s->count = s->op == OP_SUM ? nf : nf / 4;
  s->pristine = malloc(tot ? tot * sizeof(float) : 1);
  s->work = malloc(tot ? tot * sizeof(float) : 1);
  s->red = malloc(nf ? nf * sizeof(float) : 1);
  s->result = malloc(nf ? nf * sizeof(float) : 1);
  if (!s->pristine || !s->work || !s->red || !s->result) {
    free_buffers(s);
    return BPC_ENOMEM;
  }
  for (int i = 0; i < s->nlocal; i++)
    fill_item(s, s->gids[i], s->pristine + (size_t)i * nf);
  memcpy(s->work, s->pristine, tot * sizeof(float));
  memset(s->red, 0, nf * sizeof(float));
  memset(s->result, 0, nf * sizeof(float));
  return 0;
}

/* k-vector for one --radix entry ("auto" or a number); text in kv */
static int radix_kvec(merge_state_t *s, const char *r, size_t len, char *kv, size_t kvlen)
{
  char tok[32];
  if (len == 0 || len >= sizeof tok)
    return -1;
  memcpy(tok, r, len);
  tok[len] = '\0';
  if (strcmp(tok, "auto") == 0) {
    int rc = bpc_merge_kvec_auto(s->assign, s->bytes, s->k, BPC__MAX_ROUNDS, &s->nk);
    if (rc != BPC_OK)
      return -1;
  } else {
    char *end;
    long t = strtol(tok, &end, 10);
    if (*end != '\0' || t < 2 || t > INT_MAX)
      return -1;
    if (bpc__kvec_auto(s->n, (int)t, s->k, BPC__MAX_ROUNDS, &s->nk) != BPC_OK)
      return -1;
  }
  bpc__kvec_format(s->k, s->nk, kv, kvlen);
  if (strcmp(tok, "auto") == 0) {
    char tmp[96];
    snprintf(tmp, sizeof tmp, "auto=%s", kv);
    snprintf(kv, kvlen, "%s", tmp);
  }
  return 0;
}

/* The variants are the merge table (.registry = "merge"); "auto" runs
 * doubling. */
static const char *const merge_auto[] = {"doubling", NULL};
static const size_t merge_default_bytes[] = {1 << 20, 4 << 20, 16 << 20};
static const bench_eopt_t merge_options[] = {
    {"op", "OP", "sum (floats, MPI_SUM; default) or over (RGBA float4, non-commutative)"},
    {"radix", "LIST", "group sizes to run when --k is not given (default 2,4,8,auto)"},
    {"segment", "BYTES", "segment size of element-wise merges (default: library's; 0 = none)"},
    {"whole", NULL, "merge whole items (not element-wise: no segments)"},
    {"plan", NULL, "also run each variant as a persistent plan (bpc_merge_init once, "
                   "bpc_plan_start per repetition): a second line, NAME+plan"},
    {NULL, NULL, NULL},
};

static int merge_run(bench_env_t *env)
{
  merge_state_t s;
  const size_t *sizes;
  const char *algos[BENCH_MAX_ALGOS];
  const int nsizes = bench_sizes(env, &sizes);
  const int nalgos = bench_algorithms(env, algos, BENCH_MAX_ALGOS);
  const int bpp = bench_blocks_per_proc(env);
  const bench_opts_t *o = env->opts;
  int ret = BENCH_EXIT_FAIL, rc = 0;

  memset(&s, 0, sizeof s);
  s.env = env;
  s.comm = MPI_COMM_NULL;
  s.f4 = MPI_DATATYPE_NULL;
  s.over_op = MPI_OP_NULL;
  s.sum_op = MPI_OP_NULL;

  /* options (same outcome on every rank) */
  const char *op = bench_eopt(env, "op");
  if (op == NULL || strcmp(op, "sum") == 0) {
    s.op = OP_SUM;
  } else if (strcmp(op, "over") == 0) {
    s.op = OP_OVER;
  } else {
    if (env->rank == 0)
      bench_error(env, "merge: --op '%s': want sum or over", op);
    return BENCH_EXIT_USAGE;
  }
  size_t segment = 0;
  const char *sg = bench_eopt(env, "segment");
  if (sg != NULL) {
    char *end;
    unsigned long long v = strtoull(sg, &end, 10);
    if (*end == 'K' || *end == 'k')
      v <<= 10, end++;
    else if (*end == 'M' || *end == 'm')
      v <<= 20, end++;
    if (*end != '\0') {
      if (env->rank == 0)
        bench_error(env, "merge: --segment '%s': want a byte count (K, M suffixes)", sg);
      return BENCH_EXIT_USAGE;
    }
    segment = v == 0 ? SIZE_MAX : (size_t)v;
  }
  const int whole = bench_eopt(env, "whole") != NULL;
  const int with_plan = bench_eopt(env, "plan") != NULL;
  for (int i = 0; i < nsizes; i++)
    if (sizes[i] % 16 != 0 || sizes[i] / 4 > (size_t)INT_MAX) {
      if (env->rank == 0)
        bench_error(env, "merge: --bytes %zu: want a multiple of 16 bytes, at most 8 GiB",
                    sizes[i]);
      return BENCH_EXIT_USAGE;
    }
  for (int a = 0; a < nalgos; a++)
    if (bench_variant_id(&bench_engine_merge, algos[a]) == BPC_MERGE_HALVING && s.op == OP_OVER) {
      if (env->rank == 0)
        bench_error(env, "merge: %s needs a commutative merge; --op over is not", algos[a]);
      return BENCH_EXIT_USAGE;
    }
  if ((long long)bpp * env->size > INT_MAX / 2) {
    if (env->rank == 0)
      bench_error(env, "merge: too many blocks");
    return BENCH_EXIT_USAGE;
  }
  s.n = bpp * env->size;
  const char *radix = bench_eopt(env, "radix");
  if (radix == NULL)
    radix = "2,4,8,auto";

  rc = bpc_assign_create(env->ctx, s.n, BPC_ASSIGN_CONTIGUOUS, NULL, &s.assign);
  if (rc == BPC_OK)
    rc = bpc_assign_local(s.assign, &s.gids, &s.nlocal);
  if (rc == BPC_OK) {
    s.items = calloc(s.nlocal ? (size_t)s.nlocal : 1, sizeof *s.items);
    if (s.items == NULL)
      rc = BPC_ENOMEM;
  }
  if (rc == BPC_OK && MPI_Comm_dup(MPI_COMM_WORLD, &s.comm) != MPI_SUCCESS)
    rc = BPC_EMPI;
  if (rc == BPC_OK && (MPI_Type_contiguous(4, MPI_FLOAT, &s.f4) != MPI_SUCCESS ||
                       MPI_Type_commit(&s.f4) != MPI_SUCCESS ||
                       MPI_Op_create(mpi_over, 0, &s.over_op) != MPI_SUCCESS ||
                       bench_mpi_sum_float(&s.sum_op) != MPI_SUCCESS))
    rc = BPC_EMPI;
  if (bench_agree(env, rc) != 0) {
    bench_error(env, "merge: setup failed: %s (%s)", bpc_err_name(rc), bpc_last_error(env->ctx));
    goto cleanup;
  }

  s.type = s.op == OP_SUM ? bpc_type_contiguous(sizeof(float), MPI_FLOAT)
                          : bpc_type_contiguous(4 * sizeof(float), MPI_BYTE);
  s.mop.fn = s.op == OP_SUM ? merge_sum : merge_over;
  s.mop.commutative = s.op == OP_SUM;
  s.mop.elementwise = !whole;
  s.params = bpc_merge_params_default();
  s.params.segment_bytes = segment;

  ret = BENCH_EXIT_OK;
  for (int si = 0; si < nsizes && ret == BENCH_EXIT_OK; si++) {
    rc = alloc_buffers(&s, sizes[si]);
    if (bench_agree(env, rc) != 0) {
      if (rc != 0)
        bench_error(env, "merge: out of memory for %d items of %zu bytes", s.nlocal, sizes[si]);
      ret = BENCH_EXIT_FAIL;
      break;
    }
    /* the k-vectors of this size */
    const char *p = radix;
    for (;;) {
      char kv[96];
      const char *comma = strchr(p, ',');
      size_t len = comma ? (size_t)(comma - p) : strlen(p);
      if (o->k_given && !o->k_auto) {
        long prod = 1;
        for (int i = 0; i < o->nk; i++)
          prod *= o->k[i];
        if (prod != s.n) {
          if (env->rank == 0)
            bench_error(env, "merge: --k multiplies to %ld, but there are %d blocks", prod, s.n);
          ret = BENCH_EXIT_USAGE;
          break;
        }
        memcpy(s.k, o->k, sizeof(int) * (size_t)o->nk);
        s.nk = o->nk;
        bpc__kvec_format(s.k, s.nk, kv, sizeof kv);
      } else if (o->k_given && o->k_auto) {
        radix_kvec(&s, "auto", 4, kv, sizeof kv);
      } else if (radix_kvec(&s, p, len, kv, sizeof kv) != 0) {
        if (env->rank == 0)
          bench_error(env, "merge: --radix entry '%.*s': want a number >= 2 or auto", (int)len, p);
        ret = BENCH_EXIT_USAGE;
        break;
      }
      s.params.k = s.k;
      s.params.nk = s.nk;
      /* every item has this count: no collective before the schedule */
      s.params.count = whole ? 0 : s.count;
      for (int ai = 0; ai < nalgos && ret == BENCH_EXIT_OK; ai++) {
        bench_case_t c;
        memset(&c, 0, sizeof c);
        s.params.algorithm = algos[ai];
        c.algorithm = algos[ai];
        c.baseline = s.op == OP_SUM ? "MPI_Reduce(SUM)" : "MPI_Reduce(over)";
        c.kvec = kv;
        c.nblocks = s.n;
        c.bytes = sizes[si];
        c.lower_bound_bytes = env->size > 1 ? sizes[si] : 0;
        c.lower_bound_msgs = env->size > 1 ? 1 : 0;
        c.state = &s;
        c.prepare = m_prepare;
        c.run_bpc = m_run_bpc;
        c.run_baseline = m_run_baseline;
        c.check = m_check;
        c.bpc_done = NULL;
        m_prepare(&s, 0, 1);
        ret = bench_run_case(env, &c);
        if (ret == BENCH_EXIT_OK && with_plan) {
          char pname[64];
          snprintf(pname, sizeof pname, "%s+plan", algos[ai]);
          rc = bpc_merge_init(env->ctx, s.assign, &s.type, s.items, &s.mop, &s.params, &s.plan);
          if (bench_agree(env, rc) != 0) {
            bench_error(env, "merge: bpc_merge_init failed: %s (%s)", bpc_err_name(rc),
                        bpc_last_error(env->ctx));
            ret = BENCH_EXIT_FAIL;
          } else {
            c.algorithm = pname;
            c.run_bpc = m_run_plan;
            ret = bench_run_case(env, &c);
          }
          bpc_plan_free(&s.plan);
        }
      }
      if (o->k_given || comma == NULL || ret != BENCH_EXIT_OK)
        break;
      p = comma + 1;
    }
    free_buffers(&s);
  }

cleanup:
  free_buffers(&s);
  free(s.items);
  if (s.over_op != MPI_OP_NULL)
    MPI_Op_free(&s.over_op);
  bench_mpi_op_free(&s.sum_op);
  if (s.f4 != MPI_DATATYPE_NULL)
    MPI_Type_free(&s.f4);
  if (s.comm != MPI_COMM_NULL)
    MPI_Comm_free(&s.comm);
  bpc_assign_destroy(&s.assign);
  return ret;
}

const bench_engine_t bench_engine_merge = {
    .name = "merge",
    .desc = "merge-reduce (bpc_merge) vs MPI_Reduce, one item per block, sum or over",
    .registry = "merge",
    .auto_algorithms = merge_auto,
    .uses_k = 1,
    .default_bytes = merge_default_bytes,
    .n_default_bytes = (int)(sizeof merge_default_bytes / sizeof merge_default_bytes[0]),
    .default_blocks_per_proc = 1,
    .options = merge_options,
    .notes = "  n = p * blocks-per-proc blocks (contiguous), one item of B bytes each, reduced\n"
             "  to gid 0. bpc: bpc_merge (element-wise: segments pipelined up the tree).\n"
             "  Baseline: local blocks merged in gid order, then MPI_Reduce to rank 0 (op sum:\n"
             "  MPI_SUM on floats; op over: a non-commutative MPI_Op on float4). One line per\n"
             "  k-vector: --k, or each --radix entry (a group size, or auto).\n",
    .run = merge_run,
};
