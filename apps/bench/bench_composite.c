/*
 * apps/bench/bench_composite.c - `bpc-bench composite`: image compositing
 * (lib/composite) against MPI collectives in the same run.
 *
 * One block per process, one image per block (RGBA float premultiplied, 16
 * bytes per pixel; z-buffer adds a float depth), dense (every pixel
 * active) or sparse (a window of about 10% of the pixels, elsewhere
 * transparent). For every strategy of bpc_algorithms("composite") (radixk
 * with the automatic k-vector, also as radixk-k2 with every k = 2,
 * binary-swap, direct-send, shift, pipeline):
 *   reduce-scatter: bpc_composite (each block keeps its piece) vs
 *     MPI_Reduce_scatter_block with a user MPI_Op (over: commute = 0);
 *   gather: bpc_composite with gather to rank 0 vs MPI_Reduce to rank 0.
 * Results are checked every repetition against a reference computed from
 * the generator (pieces in full; gathered images on a sample of pixels).
 */
#include "bench.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { CB_DENSE = 0, CB_SPARSE = 1 };

typedef struct cb_state {
  bench_env_t *env;
  MPI_Comm comm;
  int p, rank, n, nl;
  const int *gids;
  bpc_assign_t *assign;
  int W, H, op, sparse, gather, stride;
  float *orig_rgba, *orig_depth; /* this rank's image (one block) */
  bpc_image_t im;
  bpc_composite_piece_t piece;
  bpc_composite_info_t info;
  bpc_composite_params_t P;
  int k[BPC_SWAP_MAX_K];
  float *send, *recv, *root, *groot; /* MPI send/recv, MPI root, bpc gather */
  MPI_Datatype pix;
  MPI_Op mop;
} cb_state_t;

static uint32_t cb_hash(uint32_t x)
{
  x ^= x >> 16;
  x *= 0x7feb352dU;
  x ^= x >> 15;
  x *= 0x846ca68bU;
  x ^= x >> 16;
  return x;
}

/* pixel p of block g: rgba premultiplied and depth */
static void cb_pixel(const cb_state_t *s, int g, size_t p, float *px)
{
  int active = 1;
  if (s->sparse) {
    const int x = (int)(p % (size_t)s->W), y = (int)(p / (size_t)s->W);
    const int ww = (int)(0.316 * s->W), wh = (int)(0.316 * s->H);
    const int x0 = (int)((uint32_t)(g * 37 + 11) % (uint32_t)(s->W - ww + 1));
    const int y0 = (int)((uint32_t)(g * 53 + 5) % (uint32_t)(s->H - wh + 1));
    active = x >= x0 && x < x0 + ww && y >= y0 && y < y0 + wh;
  }
  if (!active) {
    px[0] = px[1] = px[2] = px[3] = 0.0f;
    if (s->stride == 5)
      px[4] = INFINITY;
    return;
  }
  const uint32_t h = cb_hash((uint32_t)p * 2654435761u ^ (uint32_t)g * 40503u);
  const float a = 0.2f + 0.7f * (float)(h & 1023u) / 1023.0f;
  px[3] = a;
  px[0] = a * (float)((h >> 10) & 255u) / 255.0f;
  px[1] = a * (float)((h >> 18) & 255u) / 255.0f;
  px[2] = a * 0.5f;
  if (s->stride == 5)
    px[4] = (float)(cb_hash(h) % 1000u) * 0.01f;
}

/* z-buffer: b replaces a if nearer; ties go to the larger rgba bit pattern
 * (bpc's rule, which makes the operator exactly commutative) */
static int zb_takes(const float *b, const float *a)
{
  if (b[4] != a[4])
    return b[4] < a[4];
  uint32_t wb[4], wa[4];
  memcpy(wb, b, sizeof wb);
  memcpy(wa, a, sizeof wa);
  for (int c = 0; c < 4; c++)
    if (wb[c] != wa[c])
      return wb[c] > wa[c];
  return 0;
}

static void op_px(int op, float *acc, const float *b)
{
  if (op == BPC_COMPOSITE_OVER) {
    const float t = 1.0f - acc[3];
    for (int c = 0; c < 4; c++)
      acc[c] = acc[c] + t * b[c];
  } else if (zb_takes(b, acc)) {
    memcpy(acc, b, 5 * sizeof(float));
  }
}

/* the reference pixel: blocks 0..n-1 front to back */
static void cb_ref(const cb_state_t *s, size_t p, float *acc)
{
  cb_pixel(s, 0, p, acc);
  for (int g = 1; g < s->n; g++) {
    float b[5];
    cb_pixel(s, g, p, b);
    op_px(s->op, acc, b);
  }
}

static int px_close(const float *a, const float *b)
{
  for (int c = 0; c < 4; c++)
    if (!(fabsf(a[c] - b[c]) <= 1e-4f * (1.0f + fabsf(b[c]))))
      return 0;
  return 1;
}

/* MPI ops: inout = in o inout (in is the lower rank: in front) */
static void mpi_over(void *in, void *inout, int *len, MPI_Datatype *dt)
{
  (void)dt;
  const float *a = in;
  float *o = inout;
  for (int i = 0; i < 4 * *len; i += 4) {
    const float t = 1.0f - a[i + 3];
    o[i] = a[i] + t * o[i];
    o[i + 1] = a[i + 1] + t * o[i + 1];
    o[i + 2] = a[i + 2] + t * o[i + 2];
    o[i + 3] = a[i + 3] + t * o[i + 3];
  }
}

static void mpi_zbuf(void *in, void *inout, int *len, MPI_Datatype *dt)
{
  (void)dt;
  const float *a = in;
  float *o = inout;
  for (int i = 0; i < 5 * *len; i += 5)
    if (zb_takes(a + i, o + i))
      memcpy(o + i, a + i, 5 * sizeof(float));
}

static int cb_prepare(void *st, int rep, int is_bpc)
{
  cb_state_t *s = st;
  (void)rep;
  if (is_bpc && s->nl > 0) {
    const size_t np = (size_t)s->W * (size_t)s->H;
    memcpy(s->im.rgba, s->orig_rgba, np * 4 * sizeof(float));
    if (s->im.depth != NULL)
      memcpy(s->im.depth, s->orig_depth, np * sizeof(float));
  }
  return 0;
}

static int cb_run_bpc(void *st)
{
  cb_state_t *s = st;
  return bpc_composite(s->env->ctx, s->assign, s->nl > 0 ? &s->im : NULL, &s->P, &s->piece,
                       &s->info);
}

static int cb_run_mpi(void *st)
{
  cb_state_t *s = st;
  const int per = (int)((size_t)s->W * (size_t)s->H / (size_t)s->p);
  int rc = s->gather ? MPI_Reduce(s->send, s->root, per * s->p, s->pix, s->mop, 0, s->comm)
                     : MPI_Reduce_scatter_block(s->send, s->recv, per, s->pix, s->mop, s->comm);
  return rc == MPI_SUCCESS ? 0 : BPC_EMPI;
}

static int cb_check(void *st, int *correct)
{
  cb_state_t *s = st;
  const size_t np = (size_t)s->W * (size_t)s->H, per = np / (size_t)s->p;
  const int sd = s->stride;
  int ok = 1;
  float r[5], got[5];
  if (s->nl > 0) {
    for (size_t p = s->piece.offset; p < s->piece.offset + s->piece.count && ok; p += 3) {
      cb_ref(s, p, r);
      if (!px_close(s->im.rgba + 4 * p, r)) {
        bench_error(s->env, "composite: bpc pixel %zu differs from the reference", p);
        ok = 0;
      }
    }
  }
  if (!s->gather) {
    for (size_t i = 0; i < per && ok; i += 3) {
      cb_ref(s, per * (size_t)s->rank + i, r);
      if (!px_close(s->recv + (size_t)sd * i, r)) {
        bench_error(s->env, "composite: MPI_Reduce_scatter_block pixel %zu differs", i);
        ok = 0;
      }
    }
  } else if (s->rank == 0) {
    for (size_t p = 0; p < np && ok; p += 13) {
      cb_ref(s, p, r);
      memcpy(got, s->groot + 4 * p, 4 * sizeof(float));
      if (!px_close(got, r) || !px_close(s->root + (size_t)sd * p, r)) {
        bench_error(s->env, "composite: gathered pixel %zu differs (bpc or MPI_Reduce)", p);
        ok = 0;
      }
    }
  }
  *correct = ok;
  return 0;
}

static void cb_free(cb_state_t *s)
{
  free(s->orig_rgba);
  free(s->orig_depth);
  free(s->im.rgba);
  free(s->im.depth);
  free(s->send);
  free(s->recv);
  free(s->root);
  free(s->groot);
  s->orig_rgba = s->orig_depth = s->im.rgba = s->im.depth = NULL;
  s->send = s->recv = s->root = s->groot = NULL;
}

static int has_item(const char *list, const char *item)
{
  const size_t n = strlen(item);
  for (const char *p = list; p != NULL && *p != '\0';) {
    const char *c = strchr(p, ',');
    const size_t l = c ? (size_t)(c - p) : strlen(p);
    if (l == n && strncmp(p, item, n) == 0)
      return 1;
    p = c ? c + 1 : NULL;
  }
  return 0;
}

/* The variants: the strategy table (.registry = "composite"), then the
 * bench-only radixk-k2; "auto" runs them all. */
static const char *const cb_extra[] = {"radixk-k2", NULL};
static const size_t cb_default_bytes[] = {0};
static const bench_eopt_t cb_options[] = {
    {"image", "SIDES", "square image sides, e.g. 1024,2048 (default)"},
    {"density", "LIST", "dense,sparse (default both; sparse: about 10% active)"},
    {"op", "LIST", "over,zbuffer (default both)"},
    {"mode", "LIST", "rs,gather (default both): reduce-scatter only, or with gather to rank 0"},
    {"dense-path", NULL, "no active-pixel encoding in bpc"},
    {"threads", "T", "OpenMP threads for bpc's compositing (default 1)"},
    {NULL, NULL, NULL},
};

static int cb_run(bench_env_t *env)
{
  cb_state_t s;
  const char *algos[BENCH_MAX_ALGOS];
  const int nalgos = bench_algorithms(env, algos, BENCH_MAX_ALGOS);
  const char *images = bench_eopt(env, "image") ? bench_eopt(env, "image") : "1024,2048";
  const char *dens = bench_eopt(env, "density") ? bench_eopt(env, "density") : "dense,sparse";
  const char *ops = bench_eopt(env, "op") ? bench_eopt(env, "op") : "over,zbuffer";
  const char *modes = bench_eopt(env, "mode") ? bench_eopt(env, "mode") : "rs,gather";
  const char *thr = bench_eopt(env, "threads");
  int ret = BENCH_EXIT_OK;
  memset(&s, 0, sizeof s);
  s.env = env;
  s.p = env->size;
  s.rank = env->rank;
  s.n = env->size;
  if (bench_blocks_per_proc(env) != 1) {
    if (env->rank == 0)
      bench_error(env, "composite: only one block per process is benchmarked");
    return BENCH_EXIT_USAGE;
  }
  MPI_Comm_dup(env->world, &s.comm);
  if (bpc_assign_create(env->ctx, s.n, BPC_ASSIGN_CONTIGUOUS, NULL, &s.assign) != BPC_OK) {
    bench_error(env, "composite: %s", bpc_last_error(env->ctx));
    MPI_Comm_free(&s.comm);
    return BENCH_EXIT_FAIL;
  }
  bpc_assign_local(s.assign, &s.gids, &s.nl);

  for (const char *ip = images; ip != NULL && ret == BENCH_EXIT_OK;) {
    const int side = atoi(ip);
    ip = strchr(ip, ',');
    ip = ip ? ip + 1 : NULL;
    if (side < 1 || ((size_t)side * (size_t)side) % (size_t)s.p != 0) {
      if (env->rank == 0)
        bench_error(env, "composite: image side %d must give a pixel count divisible by P", side);
      ret = BENCH_EXIT_USAGE;
      break;
    }
    for (int op = 0; op < 2 && ret == BENCH_EXIT_OK; op++) {
      if (!has_item(ops, op == 0 ? "over" : "zbuffer"))
        continue;
      for (int dn = 0; dn < 2 && ret == BENCH_EXIT_OK; dn++) {
        if (!has_item(dens, dn == 0 ? "dense" : "sparse"))
          continue;
        s.W = s.H = side;
        s.op = op == 0 ? BPC_COMPOSITE_OVER : BPC_COMPOSITE_ZBUFFER;
        s.stride = op == 0 ? 4 : 5;
        s.sparse = dn;
        const size_t np = (size_t)side * (size_t)side;
        int lrc = 0;
        s.orig_rgba = malloc(np * 4 * sizeof(float));
        s.im.rgba = malloc(np * 4 * sizeof(float));
        s.send = malloc(np * (size_t)s.stride * sizeof(float));
        s.recv = malloc(np / (size_t)s.p * (size_t)s.stride * sizeof(float));
        if (s.stride == 5) {
          s.orig_depth = malloc(np * sizeof(float));
          s.im.depth = malloc(np * sizeof(float));
        }
        if (s.rank == 0) {
          s.root = malloc(np * (size_t)s.stride * sizeof(float));
          s.groot = malloc(np * 4 * sizeof(float));
        }
        if (s.orig_rgba == NULL || s.im.rgba == NULL || s.send == NULL || s.recv == NULL ||
            (s.stride == 5 && (s.orig_depth == NULL || s.im.depth == NULL)) ||
            (s.rank == 0 && (s.root == NULL || s.groot == NULL)))
          lrc = 1;
        if (bench_agree(env, lrc) != 0) {
          bench_error(env, "composite: out of memory for %dx%d images", side, side);
          cb_free(&s);
          ret = BENCH_EXIT_FAIL;
          break;
        }
        s.im.width = s.im.height = side;
        for (size_t p = 0; p < np; p++) {
          float px[5];
          cb_pixel(&s, s.rank, p, px);
          memcpy(s.orig_rgba + 4 * p, px, 4 * sizeof(float));
          if (s.stride == 5)
            s.orig_depth[p] = px[4];
          memcpy(s.send + (size_t)s.stride * p, px, (size_t)s.stride * sizeof(float));
        }
        MPI_Type_contiguous(s.stride, MPI_FLOAT, &s.pix);
        MPI_Type_commit(&s.pix);
        MPI_Op_create(op == 0 ? mpi_over : mpi_zbuf, op == 0 ? 0 : 1, &s.mop);
        const uint64_t img_bytes = (uint64_t)np * 16u + (s.stride == 5 ? (uint64_t)np * 4u : 0u);
        for (int g = 0; g < 2 && ret == BENCH_EXIT_OK; g++) {
          if (!has_item(modes, g == 0 ? "rs" : "gather"))
            continue;
          s.gather = g;
          for (int ai = 0; ai < nalgos && ret == BENCH_EXIT_OK; ai++) {
            char kname[64] = "", extra[200];
            bench_case_t c;
            memset(&c, 0, sizeof c);
            s.P = bpc_composite_params_default();
            s.P.op = s.op;
            s.P.nthreads = thr ? atoi(thr) : 1;
            s.P.active_pixels = bench_eopt(env, "dense-path") == NULL;
            s.P.algorithm = algos[ai];
            if (strcmp(algos[ai], "radixk-k2") == 0) {
              int nk = 0, m = s.n;
              while (m > 1 && m % 2 == 0) {
                s.k[nk++] = 2;
                m /= 2;
              }
              if (m != 1)
                continue; /* all k = 2 needs a power of two */
              s.P.algorithm = "radixk";
              s.P.k = s.k;
              s.P.nk = nk;
            } else if (strcmp(algos[ai], "radixk") == 0 && !env->opts->k_auto &&
                       env->opts->nk > 0) {
              memcpy(s.k, env->opts->k, sizeof(int) * (size_t)env->opts->nk);
              s.P.k = s.k;
              s.P.nk = env->opts->nk;
            }
            if (s.P.k != NULL) {
              size_t at = 0;
              for (int r = 0; r < s.P.nk && at + 8 < sizeof kname; r++)
                at += (size_t)snprintf(kname + at, sizeof kname - at, r ? "x%d" : "%d", s.P.k[r]);
            }
            if (g) {
              s.P.gather_rank = 0;
              s.P.gather_rgba = s.groot;
            }
            snprintf(extra, sizeof extra,
                     "\"image\":\"%dx%d\",\"op\":\"%s\",\"density\":\"%s\",\"mode\":\"%s\","
                     "\"active_pixels\":%d",
                     side, side, op == 0 ? "over" : "zbuffer", dn ? "sparse" : "dense",
                     g ? "gather" : "rs", s.P.active_pixels);
            if (!env->opts->json && env->rank == 0 && ai == 0) {
              printf("# image %dx%d, op %s, %s, %s\n", side, side, op == 0 ? "over" : "zbuffer",
                     dn ? "sparse (~10%% active)" : "dense",
                     g ? "with gather to rank 0 (baseline MPI_Reduce)"
                       : "reduce-scatter (baseline MPI_Reduce_scatter_block)");
              fflush(stdout);
            }
            c.algorithm = algos[ai];
            c.baseline = g ? "MPI_Reduce" : "MPI_Reduce_scatter_block";
            c.kvec = s.P.k != NULL ? kname : NULL;
            c.nblocks = s.n;
            c.bytes = (size_t)img_bytes;
            c.lower_bound_bytes = img_bytes * (uint64_t)(s.p - 1) / (uint64_t)s.p;
            c.extra_json = extra;
            c.state = &s;
            c.prepare = cb_prepare;
            c.run_bpc = cb_run_bpc;
            c.run_baseline = cb_run_mpi;
            c.check = cb_check;
            ret = bench_run_case(env, &c);
          }
        }
        MPI_Op_free(&s.mop);
        MPI_Type_free(&s.pix);
        cb_free(&s);
      }
    }
  }
  cb_free(&s);
  bpc_assign_destroy(&s.assign);
  MPI_Comm_free(&s.comm);
  return ret;
}

const bench_engine_t bench_engine_composite = {
    .name = "composite",
    .desc = "image compositing (every strategy) vs MPI_Reduce_scatter_block / MPI_Reduce",
    .registry = "composite",
    .algorithms = cb_extra,
    .auto_algorithms = BENCH_AUTO_ALL,
    .uses_k = 1,
    .default_bytes = cb_default_bytes,
    .n_default_bytes = 1,
    .default_blocks_per_proc = 1,
    .options = cb_options,
    .notes =
        "  One RGBA float image per process (z-buffer: plus depth), dense or sparse (~10%\n"
        "  active), composited with 'over' (MPI_Op commute=0) or the z-buffer. rs:\n"
        "  bpc_composite (every block keeps its piece) vs MPI_Reduce_scatter_block;\n"
        "  gather: bpc_composite gathering to rank 0 vs MPI_Reduce to rank 0.\n"
        "  radixk-k2 is radix-k with every k = 2 (compare with binary-swap). The bytes\n"
        "  column is the image size; sent_bytes counts bpc's swap (with active pixels:\n"
        "  encoded bytes) and, with gather, the pieces sent to rank 0; lb_bytes = image\n"
        "  (p-1)/p.\n",
    .run = cb_run,
};
