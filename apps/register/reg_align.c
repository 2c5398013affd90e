/*
 * apps/register/reg_align.c - the two operators of bpc-register.
 *
 * Operator A (reg_align_pair): phase correlation of two neighbouring frames
 * (a small radix-2 FFT of the Hann-windowed, zero-padded frames) gives the
 * translation to the nearest pixel; Gauss-Newton iterations on the overlap
 * then estimate angle and translation to a fraction of a pixel.
 *
 * Operator B (reg_op_b): compose phi_{i,j} and phi_{j,k} into phi_{i,k},
 * then refine it with a few Gauss-Newton steps against frames i and k. The
 * refinement makes B only approximately associative: B(B(a,b),c) and
 * B(a,B(b,c)) start from the same composition but may stop at slightly
 * different points.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "register/register.h"

/* ------------------------------------------------------------------ FFT */

/* In-place radix-2 FFT of n (a power of two) complex values re/im with
 * stride `st`; sign -1 forward, +1 inverse (unscaled). */
static void fft1(double *re, double *im, int n, size_t st, int sign)
{
  for (int i = 1, j = 0; i < n; i++) { /* bit reversal */
    int bit = n >> 1;
    for (; j & bit; bit >>= 1)
      j ^= bit;
    j ^= bit;
    if (i < j) {
      double t = re[i * st];
      re[i * st] = re[j * st];
      re[j * st] = t;
      t = im[i * st];
      im[i * st] = im[j * st];
      im[j * st] = t;
    }
  }
  const double pi = 3.14159265358979323846;
  for (int len = 2; len <= n; len <<= 1) {
    double a = sign * 2.0 * pi / len;
    for (int k = 0; k < len / 2; k++) {
      double wr = cos(a * k), wi = sin(a * k);
      for (int s = 0; s < n; s += len) {
        size_t u = (size_t)(s + k) * st, v = (size_t)(s + k + len / 2) * st;
        double xr = re[v] * wr - im[v] * wi, xi = re[v] * wi + im[v] * wr;
        re[v] = re[u] - xr;
        im[v] = im[u] - xi;
        re[u] += xr;
        im[u] += xi;
      }
    }
  }
}

/* 2-D FFT of an ny x nx array (rows of nx). */
static void fft2(double *re, double *im, int nx, int ny, int sign)
{
  for (int y = 0; y < ny; y++)
    fft1(re + (size_t)y * nx, im + (size_t)y * nx, nx, 1, sign);
  for (int x = 0; x < nx; x++)
    fft1(re + x, im + x, ny, (size_t)nx, sign);
}

static int pow2_at_least(int n)
{
  int p = 1;
  while (p < n)
    p <<= 1;
  return p;
}

/* Windowed, mean-free copy of img into the padded nx x ny array. */
static void window_into(const float *img, int W, int H, double *re, int nx)
{
  const double pi = 3.14159265358979323846;
  double mean = 0.0;
  for (size_t p = 0; p < (size_t)W * H; p++)
    mean += img[p];
  mean /= (double)W * H;
  for (int y = 0; y < H; y++) {
    double wy = H > 1 ? 0.5 - 0.5 * cos(2.0 * pi * y / (H - 1)) : 1.0;
    for (int x = 0; x < W; x++) {
      double wx = W > 1 ? 0.5 - 0.5 * cos(2.0 * pi * x / (W - 1)) : 1.0;
      re[(size_t)y * nx + x] = (img[(size_t)y * W + x] - mean) * wx * wy;
    }
  }
}

#define NPEAKS 4

/* Candidate integer shifts s with cur(q) ~ prev(q + s): the NPEAKS highest
 * peaks (5x5 apart) of the inverse transform of the normalised cross-power
 * spectrum F_prev conj(F_cur), weighted by a Gaussian low-pass (noise
 * lives at high frequencies, where whitening would amplify it). */
static int phase_correlate(const float *prev, const float *cur, int W, int H, int *sx, int *sy,
                           char *err, size_t errlen)
{
  const int nx = pow2_at_least(W), ny = pow2_at_least(H);
  const size_t n = (size_t)nx * ny;
  double *a = calloc(4 * n, sizeof(double));
  if (a == NULL) {
    snprintf(err, errlen, "out of memory for a %dx%d phase correlation", nx, ny);
    return -1;
  }
  double *ar = a, *ai = a + n, *br = a + 2 * n, *bi = a + 3 * n;
  window_into(prev, W, H, ar, nx);
  window_into(cur, W, H, br, nx);
  fft2(ar, ai, nx, ny, -1);
  fft2(br, bi, nx, ny, -1);
  for (size_t p = 0; p < n; p++) {
    double fx = (double)(p % (size_t)nx) / nx, fy = (double)(p / (size_t)nx) / ny;
    fx = fx > 0.5 ? 1.0 - fx : fx;
    fy = fy > 0.5 ? 1.0 - fy : fy;
    double lp = exp(-(fx * fx + fy * fy) / (2.0 * 0.08 * 0.08));
    double r = ar[p] * br[p] + ai[p] * bi[p], i = ai[p] * br[p] - ar[p] * bi[p];
    double m = sqrt(r * r + i * i);
    ar[p] = m > 1e-12 ? lp * r / m : 0.0;
    ai[p] = m > 1e-12 ? lp * i / m : 0.0;
  }
  fft2(ar, ai, nx, ny, +1);
  for (int k = 0; k < NPEAKS; k++) {
    size_t best = 0;
    for (size_t p = 1; p < n; p++)
      if (ar[p] > ar[best])
        best = p;
    int px = (int)(best % (size_t)nx), py = (int)(best / (size_t)nx);
    sx[k] = px > nx / 2 ? px - nx : px;
    sy[k] = py > ny / 2 ? py - ny : py;
    for (int dy = -2; dy <= 2; dy++) /* suppress the peak's neighbourhood */
      for (int dx = -2; dx <= 2; dx++)
        ar[(size_t)((py + dy + ny) % ny) * nx + (size_t)((px + dx + nx) % nx)] = -INFINITY;
  }
  free(a);
  return 0;
}

/* ----------------------------------------------------------- transforms */

void reg_compose(const reg_xf_t *l, const reg_xf_t *r, reg_xf_t *out)
{
  const double c = cos(l->angle), s = sin(l->angle);
  reg_xf_t o = {0};
  o.angle = l->angle + r->angle;
  o.tx = c * r->tx - s * r->ty + l->tx;
  o.ty = s * r->tx + c * r->ty + l->ty;
  o.to = l->to;
  o.from = r->from;
  *out = o;
}

void reg_invert(const reg_xf_t *x, reg_xf_t *out)
{
  const double c = cos(x->angle), s = sin(x->angle);
  reg_xf_t o = {0};
  o.angle = -x->angle;
  o.tx = -(c * x->tx + s * x->ty);
  o.ty = -(-s * x->tx + c * x->ty);
  o.to = x->from;
  o.from = x->to;
  *out = o;
}

/* Mean squared difference of to(x(q)) and from(q) over the overlap
 * (a 1-pixel margin inside `to` for the gradient); with g != NULL also the
 * Gauss-Newton system (J^T J in g[0..8], J^T r in g[9..11]) for
 * (angle, tx, ty). *count: the overlapping pixels. */
static double mismatch(const float *to, const float *from, int W, int H, const reg_xf_t *x,
                       double *g, long *count)
{
  const double c = cos(x->angle), s = sin(x->angle);
  const double cx = 0.5 * (W - 1), cy = 0.5 * (H - 1);
  double e = 0.0;
  long n = 0;
  if (g != NULL)
    memset(g, 0, 12 * sizeof(double));
  for (int y = 0; y < H; y++)
    for (int xx = 0; xx < W; xx++) {
      double qx = xx - cx, qy = y - cy;
      double px = c * qx - s * qy + x->tx, py = s * qx + c * qy + x->ty;
      if (!(fabs(px) <= cx - 1.0 && fabs(py) <= cy - 1.0))
        continue;
      int in;
      double r = reg_sample(to, W, H, px, py, &in) - from[(size_t)y * W + xx];
      e += r * r;
      n++;
      if (g == NULL)
        continue;
      double gx = 0.5 * (reg_sample(to, W, H, px + 1.0, py, &in) -
                         reg_sample(to, W, H, px - 1.0, py, &in));
      double gy = 0.5 * (reg_sample(to, W, H, px, py + 1.0, &in) -
                         reg_sample(to, W, H, px, py - 1.0, &in));
      double j[3] = {gx * (-s * qx - c * qy) + gy * (c * qx - s * qy), gx, gy};
      for (int a = 0; a < 3; a++) {
        for (int b = 0; b < 3; b++)
          g[3 * a + b] += j[a] * j[b];
        g[9 + a] += j[a] * r;
      }
    }
  *count = n;
  return n > 0 ? e / (double)n : INFINITY;
}

/* Solve the 3x3 system A d = b (Cramer); 0, or -1 if singular. */
static int solve3(const double *A, const double *b, double *d)
{
  double det = A[0] * (A[4] * A[8] - A[5] * A[7]) - A[1] * (A[3] * A[8] - A[5] * A[6]) +
               A[2] * (A[3] * A[7] - A[4] * A[6]);
  if (!(fabs(det) > 1e-300))
    return -1;
  for (int k = 0; k < 3; k++) {
    double M[9];
    memcpy(M, A, sizeof M);
    for (int r = 0; r < 3; r++)
      M[3 * r + k] = b[r];
    d[k] = (M[0] * (M[4] * M[8] - M[5] * M[7]) - M[1] * (M[3] * M[8] - M[5] * M[6]) +
            M[2] * (M[3] * M[7] - M[4] * M[6])) /
           det;
  }
  return 0;
}

int reg_refine(const float *to_img, const float *from_img, int W, int H, reg_xf_t *x,
               int steps, double min_overlap)
{
  double g[12];
  long n = 0;
  int done = 0;
  double e = mismatch(to_img, from_img, W, H, x, g, &n);
  while (done < steps && (double)n >= min_overlap * W * H && n >= 16) {
    double d[3], mb[3] = {-g[9], -g[10], -g[11]};
    if (solve3(g, mb, d) != 0)
      break;
    reg_xf_t t = *x;
    t.angle += d[0];
    t.tx += d[1];
    t.ty += d[2];
    long tn = 0;
    double te = mismatch(to_img, from_img, W, H, &t, g, &tn);
    if (!(te < e) || (double)tn < min_overlap * W * H)
      break;
    *x = t;
    e = te;
    n = tn;
    done++;
    if (fabs(d[0]) * 0.5 * (W + H) < 1e-4 && fabs(d[1]) < 1e-4 && fabs(d[2]) < 1e-4)
      break; /* converged */
  }
  return done;
}

int reg_align_pair(const reg_opts_t *o, const float *prev, const float *cur, int i,
                   reg_xf_t *out, char *err, size_t errlen)
{
  const int W = o->src->W, H = o->src->H;
  int sx[NPEAKS + 1] = {0}, sy[NPEAKS + 1] = {0};
  if (phase_correlate(prev, cur, W, H, sx, sy, err, errlen) != 0)
    return -1;
  /* the best candidate (the peaks and no shift) by mismatch on the overlap */
  reg_xf_t x = {0}, best = {0};
  double ebest = INFINITY;
  for (int k = 0; k <= NPEAKS; k++) {
    long n = 0;
    x.tx = sx[k];
    x.ty = sy[k];
    double e = mismatch(prev, cur, W, H, &x, NULL, &n);
    if ((double)n >= 0.25 * W * H && e < ebest) {
      ebest = e;
      best = x;
    }
  }
  best.to = i - 1;
  best.from = i;
  best.refined = reg_refine(prev, cur, W, H, &best, o->gn_pair, 0.1);
  *out = best;
  return 0;
}

int reg_op_b(const void *left, const void *right, void *result, void *user)
{
  const reg_opts_t *o = user;
  const reg_xf_t *l = left, *r = right;
  reg_xf_t x;
  if (l->from != r->to)
    return 1; /* phi_{i,j} then phi_{k,m} with j != k: not a chain */
  reg_compose(l, r, &x);
  x.refined = 0;
  if (o->gn_refine > 0 && x.to != x.from) {
    char err[256];
    const float *a = NULL, *b = NULL;
    if (o->cache != NULL) {
      a = reg_cache_get(o->cache, x.to, err, sizeof err);
      b = a ? reg_cache_get(o->cache, x.from, err, sizeof err) : NULL;
    } else {
      a = reg_frame_load(o->src, x.to, err, sizeof err);
      b = a ? reg_frame_load(o->src, x.from, err, sizeof err) : NULL;
    }
    if (b != NULL)
      x.refined = reg_refine(a, b, o->src->W, o->src->H, &x, o->gn_refine, o->min_overlap);
    if (o->cache != NULL) {
      reg_cache_put(o->cache, a);
      reg_cache_put(o->cache, b);
    } else {
      free((void *)a);
      free((void *)b);
    }
    if (b == NULL)
      return 2; /* a frame cannot be loaded */
  }
  *(reg_xf_t *)result = x;
  return 0;
}
