/*
 * apps/bench/bench_composite.c - `bpc-bench composite`: image compositing
 * (lib/composite) against MPI collectives in the same run.
 *
 * B blocks per process (--blocks-per-proc, default 1; contiguous, so a
 * process's blocks are neighbours in the visibility order), one image per
 * block (RGBA float premultiplied, 16 bytes per pixel; z-buffer adds a
 * float depth). `--active LIST` sets the
 * percent of active (non-empty) pixels of every layer: 100 = dense (every
 * pixel active), 0 = every layer empty, in between a few filled ellipses
 * ("blobs", like a rendered volume's footprint) at positions drawn from
 * `--seed` and the block id, scaled together until they cover the
 * requested share of the image: anywhere in the image (`--footprint
 * spread`, the default), or clustered around one point per layer
 * (`--footprint compact`: one block's projection, whose bounding box, the
 * `--valid` rectangle, is then small). Inside a blob alpha falls smoothly from the
 * centre; its outer rim is emissive (alpha 0, colour > 0); outside every
 * pixel is empty (rgba 0, depth +inf). For every strategy of
 * bpc_algorithms("composite") (radixk with the automatic k-vector, also as
 * radixk-k2 with every k = 2, binary-swap, direct-send, shift, pipeline):
 *   reduce-scatter: bpc_composite (each block keeps its piece) vs
 *     MPI_Reduce_scatter_block with a user MPI_Op (over: commute = 0);
 *   gather: bpc_composite with gather to rank 0 vs MPI_Reduce to rank 0.
 * With B > 1 the MPI side first composites its process's B layers into its
 * send buffer, front to back in one pass (timed: that is its share of the
 * work), then calls the collective.
 * The dense case runs first, so every line also reports the same
 * strategy's dense time of this run (dense_s, vs_dense).
 * bpc_composite overwrites its input: the layers are restored from
 * pristine copies before every bpc repetition (untimed, in prepare); the
 * buffers live for one image size and operator.
 * Results are checked every repetition against a reference computed from
 * the generator (pieces on every third pixel; gathered images on a sample).
 */
#include "bench.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CB_MAX_ACTIVE 16 /* values in --active */
#define CB_MAX_BLOBS 6   /* ellipses per layer */
#define CB_RIM 0.9f      /* r^2 beyond which a blob pixel is emissive (alpha 0) */
#define CB_EMPTY_DEPTH INFINITY /* depth of an empty pixel (the library's) */

/* One ellipse of a layer: centre, rotation, inverse semi-axes (after the
 * layer's scale), peak alpha, colour, base depth. */
typedef struct cb_blob {
  double cx, cy, c, sn, w, asp; /* w, asp: size weight and aspect (scale 1) */
  double ax, ay, ox, oy;        /* cx = ax + scale * ox (ox = oy = 0 when spread) */
  double ia, ib;                /* 1 / semi-axes at the layer's scale */
  float amax, col[3], d0;
} cb_blob_t;

typedef struct cb_state {
  bench_env_t *env;
  MPI_Comm comm;
  int p, rank, n, nl;
  const int *gids;
  bpc_assign_t *assign;
  int W, H, op, gather, stride; /* op: 0 over, 1 zbuffer */
  double active;      /* requested percent of active pixels (0..100) */
  int compact;        /* --footprint compact */
  unsigned long seed; /* --seed */
  cb_blob_t *blobs;   /* n * CB_MAX_BLOBS: every block's blobs */
  int *nblobs;        /* per block */
  float *orig_rgba, *orig_depth; /* this rank's nl images, pristine (one array) */
  float *im_rgba, *im_depth;     /* the nl images bpc composites (one array) */
  float *out_rgba, *out_depth;   /* --output: the nl output images (one array) */
  bpc_image_t *im, *om;          /* nl each */
  bpc_composite_rect_t *valid;   /* nl: each layer's non-empty pixels' bounding box */
  bpc_composite_piece_t *piece;  /* nl */
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

/* a uniform number in [0, 1) from (seed, block, blob, field) */
static double cb_unit(const cb_state_t *s, int g, int j, int f)
{
  uint32_t h = cb_hash((uint32_t)s->seed ^ 0x9e3779b9u);
  h = cb_hash(h ^ (uint32_t)g * 0x85ebca6bu);
  h = cb_hash(h ^ (uint32_t)(j * 16 + f) * 0xc2b2ae35u);
  return (double)(h >> 8) / 16777216.0;
}

/* The layout of block g's blobs (scale 1), from the seed: 3..6 ellipses
 * with centres anywhere in the image (compact: within +-0.8 of the scale
 * around one point of the image's middle half, so that the blobs overlap
 * in one clump), sizes 0.6..1.4, aspect 0.5..2, any rotation, peak
 * alpha 0.35..0.95, colour components 0.2..1, base depth 0..8 (so layers
 * interleave in depth). */
static void cb_blobs_layout(cb_state_t *s, int g)
{
  const double pi = 3.14159265358979323846;
  cb_blob_t *b = s->blobs + (size_t)g * CB_MAX_BLOBS;
  s->nblobs[g] = 3 + (int)(cb_unit(s, g, CB_MAX_BLOBS, 0) * 4.0);
  for (int j = 0; j < s->nblobs[g]; j++) {
    const double th = pi * cb_unit(s, g, j, 4);
    if (s->compact) {
      b[j].ax = s->W * (0.25 + 0.5 * cb_unit(s, g, CB_MAX_BLOBS, 1));
      b[j].ay = s->H * (0.25 + 0.5 * cb_unit(s, g, CB_MAX_BLOBS, 2));
      b[j].ox = 1.6 * (cb_unit(s, g, j, 0) - 0.5);
      b[j].oy = 1.6 * (cb_unit(s, g, j, 1) - 0.5);
    } else {
      b[j].ax = s->W * cb_unit(s, g, j, 0);
      b[j].ay = s->H * cb_unit(s, g, j, 1);
      b[j].ox = b[j].oy = 0.0;
    }
    b[j].cx = b[j].ax;
    b[j].cy = b[j].ay;
    b[j].w = 0.6 + 0.8 * cb_unit(s, g, j, 2);
    b[j].asp = 0.5 + 1.5 * cb_unit(s, g, j, 3);
    b[j].c = cos(th);
    b[j].sn = sin(th);
    b[j].amax = (float)(0.35 + 0.6 * cb_unit(s, g, j, 5));
    for (int c = 0; c < 3; c++)
      b[j].col[c] = (float)(0.2 + 0.8 * cb_unit(s, g, j, 6 + c));
    b[j].d0 = (float)(8.0 * cb_unit(s, g, j, 9));
  }
}

/* Semi-axes of block g's blobs at `scale` (pixels per unit weight). */
static void cb_blobs_scale(cb_state_t *s, int g, double scale)
{
  cb_blob_t *b = s->blobs + (size_t)g * CB_MAX_BLOBS;
  for (int j = 0; j < s->nblobs[g]; j++) {
    const double ra = scale * b[j].w * sqrt(b[j].asp), rb = scale * b[j].w / sqrt(b[j].asp);
    b[j].ia = ra > 0 ? 1.0 / ra : INFINITY;
    b[j].ib = rb > 0 ? 1.0 / rb : INFINITY;
    b[j].cx = b[j].ax + scale * b[j].ox;
    b[j].cy = b[j].ay + scale * b[j].oy;
  }
}

/* The first blob of block g holding the centre of pixel (x, y), or -1;
 * *r2 = its normalised squared radius (0 at the centre, < 1 inside). */
static int cb_blob_at(const cb_state_t *s, int g, int x, int y, double *r2)
{
  const cb_blob_t *b = s->blobs + (size_t)g * CB_MAX_BLOBS;
  for (int j = 0; j < s->nblobs[g]; j++) {
    const double dx = x + 0.5 - b[j].cx, dy = y + 0.5 - b[j].cy;
    const double u = (dx * b[j].c + dy * b[j].sn) * b[j].ia;
    const double v = (dy * b[j].c - dx * b[j].sn) * b[j].ib;
    const double q = u * u + v * v;
    if (q < 1.0) {
      *r2 = q;
      return j;
    }
  }
  return -1;
}

/* The scale at which block g's blobs cover at least `frac` of the image,
 * measured on a grid of at most about 256 x 256 pixel centres (bisection;
 * the smallest scale found, so frac > 0 always gives some pixels). */
static double cb_find_scale(cb_state_t *s, int g, double frac)
{
  const int sx = s->W > 256 ? s->W / 256 : 1, sy = s->H > 256 ? s->H / 256 : 1;
  size_t total = 0;
  for (int y = sy / 2; y < s->H; y += sy)
    for (int x = sx / 2; x < s->W; x += sx)
      total++;
  double lo = 0.0, hi = 4.0 * (s->W > s->H ? s->W : s->H); /* hi covers everything */
  for (int it = 0; it < 48; it++) {
    const double mid = 0.5 * (lo + hi);
    size_t in = 0;
    double r2;
    cb_blobs_scale(s, g, mid);
    for (int y = sy / 2; y < s->H; y += sy)
      for (int x = sx / 2; x < s->W; x += sx)
        in += cb_blob_at(s, g, x, y, &r2) >= 0;
    if ((double)in < frac * (double)total)
      lo = mid;
    else
      hi = mid;
  }
  return hi;
}

/* pixel p of block g: rgba premultiplied and depth */
static void cb_pixel(const cb_state_t *s, int g, size_t p, float *px)
{
  const int x = (int)(p % (size_t)s->W), y = (int)(p / (size_t)s->W);
  if (s->active >= 100.0) { /* dense: every pixel active, noisy alpha */
    const uint32_t h = cb_hash((uint32_t)p * 2654435761u ^ (uint32_t)g * 40503u);
    const float a = 0.2f + 0.7f * (float)(h & 1023u) / 1023.0f;
    px[3] = a;
    px[0] = a * (float)((h >> 10) & 255u) / 255.0f;
    px[1] = a * (float)((h >> 18) & 255u) / 255.0f;
    px[2] = a * 0.5f;
    if (s->stride == 5)
      px[4] = (float)(cb_hash(h) % 1000u) * 0.01f;
    return;
  }
  double r2 = 0.0;
  const int j = s->active > 0.0 ? cb_blob_at(s, g, x, y, &r2) : -1;
  if (j < 0) {
    px[0] = px[1] = px[2] = px[3] = 0.0f;
    if (s->stride == 5)
      px[4] = CB_EMPTY_DEPTH;
    return;
  }
  const cb_blob_t *b = s->blobs + (size_t)g * CB_MAX_BLOBS + j;
  const float q = (float)r2;
  if (q >= CB_RIM) { /* emissive rim: no opacity, some colour */
    px[3] = 0.0f;
    for (int c = 0; c < 3; c++)
      px[c] = 0.05f * b->col[c];
  } else { /* smooth: peak at the centre, towards 0 at the rim */
    const float a = b->amax * sqrtf((CB_RIM - q) / CB_RIM);
    px[3] = a;
    for (int c = 0; c < 3; c++)
      px[c] = a * b->col[c];
  }
  if (s->stride == 5)
    px[4] = b->d0 + 0.5f * q; /* a bowl: nearest at the centre */
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

/* out = front over back, one rgba pixel. Through local copies, so that
 * the compiler blends the four channels in one vector (as bpc does): the
 * MPI baseline's operator is as fast as bpc's. */
static inline void over_px(const float *front, const float *back, float *out)
{
  float f[4], b[4];
  memcpy(f, front, sizeof f);
  memcpy(b, back, sizeof b);
  const float t = 1.0f - f[3];
  for (int c = 0; c < 4; c++)
    f[c] = f[c] + t * b[c];
  memcpy(out, f, sizeof f);
}

static void op_px(int op, float *acc, const float *b)
{
  if (op == 0) { /* over */
    over_px(acc, b, acc);
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
  const double t0 = bench_op_enter();
  const float *a = in;
  float *o = inout;
  for (size_t i = 0; i < 4 * (size_t)*len; i += 4)
    over_px(a + i, o + i, o + i);
  bench_op_leave(t0);
}

static void mpi_zbuf(void *in, void *inout, int *len, MPI_Datatype *dt)
{
  (void)dt;
  const double t0 = bench_op_enter();
  const float *a = in;
  float *o = inout;
  for (int i = 0; i < 5 * *len; i += 5)
    if (zb_takes(a + i, o + i))
      memcpy(o + i, a + i, 5 * sizeof(float));
  bench_op_leave(t0);
}

static int cb_prepare(void *st, int rep, int is_bpc)
{
  cb_state_t *s = st;
  (void)rep;
  if (is_bpc && s->nl > 0) {
    const size_t np = (size_t)s->W * (size_t)s->H * (size_t)s->nl;
    memcpy(s->im_rgba, s->orig_rgba, np * 4 * sizeof(float));
    if (s->im_depth != NULL)
      memcpy(s->im_depth, s->orig_depth, np * sizeof(float));
  }
  return 0;
}

static int cb_run_bpc(void *st)
{
  cb_state_t *s = st;
  return bpc_composite(s->env->ctx, s->assign, s->nl > 0 ? s->im : NULL, &s->P, s->piece,
                       &s->info);
}

/* The MPI side's local work with several blocks a process: its layers
 * composited front to back into the send buffer (stride floats a pixel),
 * pixel by pixel in one pass. */
static void cb_local_composite(cb_state_t *s)
{
  const size_t np = (size_t)s->W * (size_t)s->H;
  const int sd = s->stride;
  for (size_t p = 0; p < np; p++) {
    float *acc = s->send + (size_t)sd * p;
    memcpy(acc, s->orig_rgba + 4 * p, 4 * sizeof(float));
    if (sd == 5)
      acc[4] = s->orig_depth[p];
    for (int i = 1; i < s->nl; i++) {
      float b[5];
      memcpy(b, s->orig_rgba + 4 * (np * (size_t)i + p), 4 * sizeof(float));
      if (sd == 5)
        b[4] = s->orig_depth[np * (size_t)i + p];
      op_px(s->op, acc, b);
    }
  }
}

static int cb_run_mpi(void *st)
{
  cb_state_t *s = st;
  if (s->nl > 1)
    cb_local_composite(s);
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
  for (int i = 0; i < s->nl && ok; i++) {
    const bpc_composite_piece_t *pc = &s->piece[i];
    for (size_t p = pc->offset; p < pc->offset + pc->count && ok; p += 3) {
      cb_ref(s, p, r);
      if (!px_close((s->P.output != NULL ? s->P.output : s->im)[i].rgba + 4 * p, r)) {
        bench_error(s->env, "composite: bpc pixel %zu of block %d differs from the reference", p,
                    s->gids[i]);
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
  free(s->im_rgba);
  free(s->im_depth);
  free(s->out_rgba);
  free(s->out_depth);
  free(s->send);
  free(s->recv);
  free(s->root);
  free(s->groot);
  s->orig_rgba = s->orig_depth = s->im_rgba = s->im_depth = s->out_rgba = s->out_depth = NULL;
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

/* The percentages to run, from --active (or its alias --density: dense =
 * 100, sparse = 10), the dense case first (added if not listed): it is every
 * line's reference. Returns the count, or 0 with msg set. */
static int cb_parse_active(const bench_env_t *env, double *acts, char *msg, size_t len)
{
  const char *act = bench_eopt(env, "active"), *dens = bench_eopt(env, "density");
  int n = 1, have100 = 0;
  acts[0] = 100.0;
  if (act != NULL && dens != NULL) {
    snprintf(msg, len, "give --active or --density (its old alias), not both");
    return 0;
  }
  if (act == NULL && dens == NULL)
    act = "100,47,10,1,0";
  for (const char *p = act != NULL ? act : dens; p != NULL;) {
    const char *c = strchr(p, ',');
    const size_t l = c ? (size_t)(c - p) : strlen(p);
    char item[32], *end;
    double v = -1.0;
    if (l > 0 && l < sizeof item) {
      memcpy(item, p, l);
      item[l] = '\0';
      if (act != NULL) { /* a plain decimal number: digits, at most one point */
        const size_t nd = strspn(item, "0123456789"), nall = strspn(item, "0123456789.");
        const char *dot = strchr(item, '.');
        errno = 0;
        v = strtod(item, &end);
        if (nall != l || (nd == 0 && (l < 2 || item[0] != '.')) ||
            (dot != NULL && strchr(dot + 1, '.') != NULL) || errno != 0 || *end != '\0' ||
            !(v >= 0.0 && v <= 100.0))
          v = -1.0;
      } else {
        v = strcmp(item, "dense") == 0 ? 100.0 : strcmp(item, "sparse") == 0 ? 10.0 : -1.0;
      }
    }
    if (v < 0.0 && act != NULL) {
      snprintf(msg, len,
               "--active '%s': bad value '%.*s' (want comma-separated percentages of active "
               "pixels in 0..100, e.g. 100,47,10,1,0)",
               act, (int)(l < 32 ? l : 32), p);
      return 0;
    }
    if (v < 0.0) {
      snprintf(msg, len, "--density '%s': bad value '%.*s' (want dense,sparse; see --active)",
               dens, (int)(l < 32 ? l : 32), p);
      return 0;
    }
    if (v == 100.0 && !have100) {
      have100 = 1; /* already first */
    } else if (n < CB_MAX_ACTIVE) {
      acts[n++] = v;
    } else {
      snprintf(msg, len, "--active '%s': at most %d values", act ? act : dens, CB_MAX_ACTIVE - 1);
      return 0;
    }
    p = c ? c + 1 : NULL;
  }
  return n;
}

/* Fill local block i's layer (pristine copy; with one block a process also
 * the MPI send buffer) for s->active; returns its count of active
 * (non-empty) pixels. */
static size_t cb_make_layer(cb_state_t *s, int i)
{
  const size_t np = (size_t)s->W * (size_t)s->H;
  float *orgba = s->orig_rgba + 4 * np * (size_t)i;
  size_t nact = 0;
  int x0 = s->W, x1 = 0, y0 = s->H, y1 = 0;
  for (size_t p = 0; p < np; p++) {
    float px[5];
    cb_pixel(s, s->gids[i], p, px);
    memcpy(orgba + 4 * p, px, 4 * sizeof(float));
    if (s->stride == 5)
      s->orig_depth[np * (size_t)i + p] = px[4];
    if (s->nl == 1)
      memcpy(s->send + (size_t)s->stride * p, px, (size_t)s->stride * sizeof(float));
    if (px[0] != 0.0f || px[1] != 0.0f || px[2] != 0.0f || px[3] != 0.0f) {
      const int x = (int)(p % (size_t)s->W), y = (int)(p / (size_t)s->W);
      nact++;
      x0 = x < x0 ? x : x0;
      x1 = x + 1 > x1 ? x + 1 : x1;
      y0 = y < y0 ? y : y0;
      y1 = y + 1 > y1 ? y + 1 : y1;
    }
  }
  /* what a renderer knows of its block: the screen bounds of its data */
  s->valid[i] = x1 > x0 ? (bpc_composite_rect_t){x0, y0, x1 - x0, y1 - y0}
                        : (bpc_composite_rect_t){0, 0, 0, 0};
  return nact;
}

/* The variants: the strategy table (.registry = "composite"), then the
 * bench-only radixk-k2; "auto" runs them all. */
static const char *const cb_extra[] = {"radixk-k2", NULL};
static const size_t cb_default_bytes[] = {0};
static const bench_eopt_t cb_options[] = {
    {"image", "SIDES", "square image sides, e.g. 1024,2048 (default)"},
    {"active", "LIST", "percent of active pixels per layer, in blobs (default 100,47,10,1,0)"},
    {"density", "LIST", "old alias: dense = --active 100, sparse = 10"},
    {"seed", "N", "seed of the blobs' layout (default 1)"},
    {"footprint", "F", "spread (default: blobs anywhere) or compact (one clump per layer)"},
    {"op", "LIST", "over,zbuffer (default both)"},
    {"mode", "LIST", "rs,gather (default both): reduce-scatter only, or with gather to rank 0"},
    {"dense-path", NULL, "no active-pixel encoding in bpc"},
    {"valid", NULL, "pass each layer's bounding box of non-empty pixels (params.valid)"},
    {"output", NULL, "composite into separate output images (params.output; input untouched)"},
    {"threads", "T", "OpenMP threads for bpc's compositing (default 1)"},
    {NULL, NULL, NULL},
};

static int cb_run(bench_env_t *env)
{
  cb_state_t s;
  const char *algos[BENCH_MAX_ALGOS];
  const int nalgos = bench_algorithms(env, algos, BENCH_MAX_ALGOS);
  const char *images = bench_eopt(env, "image") ? bench_eopt(env, "image") : "1024,2048";
  const char *ops = bench_eopt(env, "op") ? bench_eopt(env, "op") : "over,zbuffer";
  const char *modes = bench_eopt(env, "mode") ? bench_eopt(env, "mode") : "rs,gather";
  const char *thr = bench_eopt(env, "threads");
  const char *seed = bench_eopt(env, "seed");
  double acts[CB_MAX_ACTIVE];
  char msg[256];
  int ret = BENCH_EXIT_OK;
  memset(&s, 0, sizeof s);
  s.env = env;
  s.p = env->size;
  s.rank = env->rank;
  /* the engine's own values: the same on every rank, so each rank decides
   * alone and says why */
  const int nacts = cb_parse_active(env, acts, msg, sizeof msg);
  if (nacts == 0) {
    bench_error(env, "composite: %s", msg);
    return BENCH_EXIT_USAGE;
  }
  if (seed != NULL) {
    char *end;
    errno = 0;
    const long long v = strtoll(seed, &end, 10);
    if (errno != 0 || *end != '\0' || end == seed || v < 0 || v > 4294967295LL) {
      bench_error(env, "composite: --seed '%s': want an integer in 0..4294967295", seed);
      return BENCH_EXIT_USAGE;
    }
    s.seed = (unsigned long)v;
  } else {
    s.seed = 1;
  }
  const char *fp = bench_eopt(env, "footprint");
  if (fp != NULL && strcmp(fp, "spread") != 0 && strcmp(fp, "compact") != 0) {
    bench_error(env, "composite: --footprint '%s': want spread or compact", fp);
    return BENCH_EXIT_USAGE;
  }
  s.compact = fp != NULL && strcmp(fp, "compact") == 0;
  const int bpp = bench_blocks_per_proc(env);
  if (bpp > 1024) { /* the same on every rank: each says why */
    bench_error(env, "composite: --blocks-per-proc %d: want at most 1024", bpp);
    return BENCH_EXIT_USAGE;
  }
  s.n = env->size * bpp;
  MPI_Comm_dup(env->world, &s.comm);
  if (bpc_assign_create(env->ctx, s.n, BPC_ASSIGN_CONTIGUOUS, NULL, &s.assign) != BPC_OK) {
    bench_error(env, "composite: %s", bpc_last_error(env->ctx));
    MPI_Comm_free(&s.comm);
    return BENCH_EXIT_FAIL;
  }
  bpc_assign_local(s.assign, &s.gids, &s.nl);
  s.blobs = calloc((size_t)s.n * CB_MAX_BLOBS, sizeof *s.blobs);
  s.nblobs = calloc((size_t)s.n, sizeof *s.nblobs);
  double *scales = calloc((size_t)s.n, sizeof *scales);
  double *myscale = calloc((size_t)s.nl, sizeof *myscale);
  s.im = calloc((size_t)s.nl, sizeof *s.im);
  s.om = calloc((size_t)s.nl, sizeof *s.om);
  s.valid = calloc((size_t)s.nl, sizeof *s.valid);
  s.piece = calloc((size_t)s.nl, sizeof *s.piece);
  if (bench_agree(env, s.blobs == NULL || s.nblobs == NULL || scales == NULL || myscale == NULL ||
                           s.im == NULL || s.om == NULL || s.valid == NULL ||
                           s.piece == NULL) != 0) {
    bench_error(env, "composite: out of memory for %d blocks", s.n);
    ret = BENCH_EXIT_FAIL;
    images = NULL;
  }

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
      s.W = s.H = side;
      s.op = op;
      s.stride = op == 0 ? 4 : 5;
      const size_t np = (size_t)side * (size_t)side;
      int lrc = 0;
      /* one set of buffers for every density and repetition */
      const size_t nlp = np * (size_t)s.nl;
      s.orig_rgba = malloc(nlp * 4 * sizeof(float));
      s.im_rgba = malloc(nlp * 4 * sizeof(float));
      s.send = malloc(np * (size_t)s.stride * sizeof(float));
      s.recv = malloc(np / (size_t)s.p * (size_t)s.stride * sizeof(float));
      if (s.stride == 5) {
        s.orig_depth = malloc(nlp * sizeof(float));
        s.im_depth = malloc(nlp * sizeof(float));
      }
      const int outputs = bench_eopt(env, "output") != NULL;
      if (outputs) { /* touched once here: no first-touch faults in the timed calls */
        if ((s.out_rgba = malloc(nlp * 4 * sizeof(float))) != NULL)
          memset(s.out_rgba, 0xff, nlp * 4 * sizeof(float));
        if (s.stride == 5 && (s.out_depth = malloc(nlp * sizeof(float))) != NULL)
          memset(s.out_depth, 0xff, nlp * sizeof(float));
      }
      if (s.rank == 0) {
        s.root = malloc(np * (size_t)s.stride * sizeof(float));
        s.groot = malloc(np * 4 * sizeof(float));
      }
      if (s.orig_rgba == NULL || s.im_rgba == NULL || s.send == NULL || s.recv == NULL ||
          (s.stride == 5 && (s.orig_depth == NULL || s.im_depth == NULL)) ||
          (outputs && (s.out_rgba == NULL || (s.stride == 5 && s.out_depth == NULL))) ||
          (s.rank == 0 && (s.root == NULL || s.groot == NULL)))
        lrc = 1;
      if (bench_agree(env, lrc) != 0) {
        bench_error(env, "composite: out of memory for %d %dx%d images a process", s.nl, side,
                    side);
        cb_free(&s);
        ret = BENCH_EXIT_FAIL;
        break;
      }
      for (int i = 0; i < s.nl; i++) {
        s.im[i].width = s.im[i].height = side;
        s.im[i].rgba = s.im_rgba + 4 * np * (size_t)i;
        s.im[i].depth = s.stride == 5 ? s.im_depth + np * (size_t)i : NULL;
        s.om[i] = s.im[i];
        if (outputs) {
          s.om[i].rgba = s.out_rgba + 4 * np * (size_t)i;
          s.om[i].depth = s.stride == 5 ? s.out_depth + np * (size_t)i : NULL;
        }
      }
      MPI_Type_contiguous(s.stride, MPI_FLOAT, &s.pix);
      MPI_Type_commit(&s.pix);
      MPI_Op_create(op == 0 ? mpi_over : mpi_zbuf, op == 0 ? 0 : 1, &s.mop);
      const uint64_t img_bytes = (uint64_t)np * 16u + (s.stride == 5 ? (uint64_t)np * 4u : 0u);
      double dense_med[2][BENCH_MAX_ALGOS];
      for (int g = 0; g < 2; g++)
        for (int ai = 0; ai < BENCH_MAX_ALGOS; ai++)
          dense_med[g][ai] = -1.0;

      for (int di = 0; di < nacts && ret == BENCH_EXIT_OK; di++) {
        s.active = acts[di];
        if (s.active > 0.0 && s.active < 100.0) {
          /* every block's layout from the seed; each rank scales its own
           * block's blobs to the requested area, then all share scales */
          for (int g = 0; g < s.n; g++)
            cb_blobs_layout(&s, g);
          for (int i = 0; i < s.nl; i++)
            myscale[i] = cb_find_scale(&s, s.gids[i], s.active / 100.0);
          /* contiguous: rank r holds gids r B .. r B + B - 1 */
          MPI_Allgather(myscale, s.nl, MPI_DOUBLE, scales, s.nl, MPI_DOUBLE, s.comm);
          for (int g = 0; g < s.n; g++)
            cb_blobs_scale(&s, g, scales[g]);
        }
        unsigned long long mine[2] = {0, 0}, tot[2];
        for (int i = 0; i < s.nl; i++) {
          mine[0] += cb_make_layer(&s, i);
          mine[1] += (unsigned long long)s.valid[i].width * (unsigned long long)s.valid[i].height;
        }
        MPI_Allreduce(mine, tot, 2, MPI_UNSIGNED_LONG_LONG, MPI_SUM, s.comm);
        const double real = 100.0 * (double)tot[0] / ((double)np * (double)s.n);
        const double vpct = 100.0 * (double)tot[1] / ((double)np * (double)s.n);
        const char *dname = s.active >= 100.0 ? "dense" : s.active > 0.0 ? "sparse" : "empty";
        for (int g = 0; g < 2 && ret == BENCH_EXIT_OK; g++) {
          if (!has_item(modes, g == 0 ? "rs" : "gather"))
            continue;
          s.gather = g;
          for (int ai = 0; ai < nalgos && ret == BENCH_EXIT_OK; ai++) {
            char kname[64] = "", extra[320];
            bench_case_t c;
            memset(&c, 0, sizeof c);
            s.P = bpc_composite_params_default();
            bpc_op_builtin(s.op == 0 ? "over" : "zbuffer", MPI_FLOAT, &s.P.op);
            s.P.nthreads = thr ? atoi(thr) : 1;
            s.P.active_pixels = bench_eopt(env, "dense-path") == NULL;
            s.P.valid = bench_eopt(env, "valid") != NULL ? s.valid : NULL;
            s.P.output = outputs ? s.om : NULL;
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
                     "\"image\":\"%dx%d\",\"op\":\"%s\",\"active\":%g,\"active_pct\":%.4f,"
                     "\"density\":\"%s\",\"seed\":%lu,\"mode\":\"%s\",\"active_pixels\":%d,"
                     "\"valid\":%d,\"output\":%d,\"footprint\":\"%s\",\"bbox_pct\":%.4f",
                     side, side, op == 0 ? "over" : "zbuffer", s.active, real, dname, s.seed,
                     g ? "gather" : "rs", s.P.active_pixels, s.P.valid != NULL, outputs,
                     s.compact ? "compact" : "spread", vpct);
            if (!env->opts->json && env->rank == 0 && ai == 0) {
              printf("# image %dx%d, op %s, active %g%% (%.2f%% of the pixels of all layers, "
                     "bounding boxes %.2f%%), %s\n",
                     side, side, op == 0 ? "over" : "zbuffer", s.active, real, vpct,
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
            /* acts[0] is the dense case: the reference of the later lines */
            c.ref_self = di == 0;
            c.ref_s = dense_med[g][ai];
            c.median_out = di == 0 ? &dense_med[g][ai] : NULL;
            ret = bench_run_case(env, &c);
          }
        }
      }
      MPI_Op_free(&s.mop);
      MPI_Type_free(&s.pix);
      cb_free(&s);
    }
  }
  cb_free(&s);
  free(s.blobs);
  free(s.nblobs);
  free(scales);
  free(myscale);
  free(s.im);
  free(s.om);
  free(s.valid);
  free(s.piece);
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
    .ref_label = "dense",
    .notes =
        "  One RGBA float image per block (z-buffer: plus depth), --blocks-per-proc\n"
        "  blocks a process (default 1, contiguous), composited with\n"
        "  'over' (MPI_Op commute=0) or the z-buffer. --active: percent of each layer's\n"
        "  pixels that are active, in 3-6 filled ellipses per layer (positions from\n"
        "  --seed and the block: anywhere, or in one clump with --footprint compact;\n"
        "  alpha smooth inside, an emissive rim with alpha 0 and colour > 0; rgba 0\n"
        "  and depth +inf outside); 100 = every pixel active (noisy alpha), 0 =\n"
        "  every layer empty. The dense case runs first (added if not\n"
        "  listed): dense_us / vs_dense are the same strategy's dense median of this run\n"
        "  and the ratio to it. The input is restored from a pristine copy before each\n"
        "  bpc repetition, untimed (--output: bpc writes separate output images, which\n"
        "  keep the last call's result between repetitions). rs: bpc_composite (every\n"
        "  block keeps its piece) vs\n"
        "  MPI_Reduce_scatter_block; gather: bpc_composite gathering to rank 0 vs\n"
        "  MPI_Reduce to rank 0; with several blocks a process the MPI side first\n"
        "  composites its own layers in one pass on one thread (timed). radixk-k2 is\n"
        "  radix-k with every k = 2 (compare with binary-swap). The bytes column is\n"
        "  the image size; sent_bytes counts bpc's\n"
        "  swap (with active pixels: encoded bytes) and, with gather, the pieces sent\n"
        "  to rank 0; lb_bytes = image (p-1)/p.\n",
    .run = cb_run,
};
