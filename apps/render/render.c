/*
 * apps/render/render.c - volumes, camera, transfer function and the ray
 * caster of bpc-render (see render.h).
 */
#include "render/render.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------- volumes */

static float ml_value(const int *n, int i, int j, int k)
{
  /* Marschner-Lobb on [-1,1]^3: alpha 0.25, f_M 6 */
  const double x = 2.0 * i / (n[0] - 1) - 1.0, y = 2.0 * j / (n[1] - 1) - 1.0,
               z = 2.0 * k / (n[2] - 1) - 1.0;
  const double a = 0.25, fm = 6.0, r = sqrt(x * x + y * y);
  const double rho = cos(2.0 * M_PI * fm * cos(M_PI * r / 2.0));
  return (float)((1.0 - sin(M_PI * z / 2.0) + a * (1.0 + rho)) / (2.0 * (1.0 + a)));
}

static float blobs_value(const int *n, int i, int j, int k)
{
  static const double c[6][4] = {{0.3, 0.3, 0.3, 0.12}, {0.7, 0.35, 0.6, 0.15},
                                 {0.45, 0.7, 0.4, 0.1}, {0.65, 0.65, 0.75, 0.08},
                                 {0.25, 0.6, 0.7, 0.09}, {0.55, 0.45, 0.2, 0.07}};
  const double x = (double)i / (n[0] - 1), y = (double)j / (n[1] - 1), z = (double)k / (n[2] - 1);
  double s = 0.0;
  for (int b = 0; b < 6; b++) {
    const double dx = x - c[b][0], dy = y - c[b][1], dz = z - c[b][2];
    s += exp(-(dx * dx + dy * dy + dz * dz) / (2.0 * c[b][3] * c[b][3]));
  }
  return (float)(s > 1.0 ? 1.0 : s);
}

int rd_block_load(rd_block_t *b, const rd_source_t *src, char *err, size_t errlen)
{
  const int nx = b->hi[0] - b->lo[0] + 1, ny = b->hi[1] - b->lo[1] + 1,
            nz = b->hi[2] - b->lo[2] + 1;
  b->v = malloc(sizeof(float) * (size_t)nx * (size_t)ny * (size_t)nz);
  if (b->v == NULL) {
    snprintf(err, errlen, "out of memory for a %dx%dx%d block", nx, ny, nz);
    return -1;
  }
  if (src->kind != RD_RAW) {
    for (int k = 0; k < nz; k++)
      for (int j = 0; j < ny; j++)
        for (int i = 0; i < nx; i++)
          b->v[((size_t)k * ny + j) * nx + i] =
              src->kind == RD_ML ? ml_value(b->n, b->lo[0] + i, b->lo[1] + j, b->lo[2] + k)
                                 : blobs_value(b->n, b->lo[0] + i, b->lo[1] + j, b->lo[2] + k);
    return 0;
  }
  const size_t es = src->type == RD_U8 ? 1 : src->type == RD_U16 ? 2 : 4;
  FILE *f = fopen(src->path, "rb");
  if (f == NULL) {
    snprintf(err, errlen, "cannot open %s", src->path);
    return -1;
  }
  unsigned char *line = malloc(es * (size_t)nx);
  int rc = line == NULL ? -1 : 0;
  for (int k = 0; k < nz && rc == 0; k++)
    for (int j = 0; j < ny && rc == 0; j++) {
      const long long at =
          ((((long long)(b->lo[2] + k) * b->n[1]) + b->lo[1] + j) * b->n[0] + b->lo[0]) *
          (long long)es;
      if (fseek(f, (long)at, SEEK_SET) != 0 || fread(line, es, (size_t)nx, f) != (size_t)nx) {
        snprintf(err, errlen, "%s is too short for %dx%dx%d values of %zu bytes", src->path,
                 b->n[0], b->n[1], b->n[2], es);
        rc = -1;
        break;
      }
      float *out = b->v + ((size_t)k * ny + j) * nx;
      for (int i = 0; i < nx; i++) {
        if (src->type == RD_U8) {
          out[i] = line[i] / 255.0f;
        } else if (src->type == RD_U16) {
          unsigned short u;
          memcpy(&u, line + 2 * i, 2);
          out[i] = u / 65535.0f;
        } else {
          memcpy(&out[i], line + 4 * i, 4);
        }
      }
    }
  free(line);
  fclose(f);
  if (rc != 0) {
    free(b->v);
    b->v = NULL;
  }
  return rc;
}

/* ------------------------------------------------------ transfer function */

void rd_tf_default(rd_tf_t *tf)
{
  /* a thin bright shell at 0.5 (the Marschner-Lobb rings), blue just
   * below it, a faint red haze above */
  static const float p[][5] = {{0.00f, 0.0f, 0.0f, 0.0f, 0.0f},  {0.38f, 0.1f, 0.3f, 0.9f, 0.0f},
                               {0.46f, 0.2f, 0.5f, 1.0f, 0.6f},  {0.50f, 1.0f, 0.9f, 0.5f, 1.5f},
                               {0.56f, 1.0f, 0.3f, 0.1f, 0.3f},  {0.70f, 0.8f, 0.1f, 0.1f, 0.02f},
                               {1.00f, 0.5f, 0.0f, 0.0f, 0.02f}};
  tf->n = 7;
  for (int i = 0; i < 7; i++) {
    tf->v[i] = p[i][0];
    for (int c = 0; c < 4; c++)
      tf->rgba[i][c] = p[i][c + 1];
  }
}

int rd_tf_parse(rd_tf_t *tf, const char *s)
{
  int n = 0;
  const char *p = s;
  while (*p != '\0') {
    float v, r, g, b, a;
    int used = 0;
    if (n >= RD_TF_MAX || sscanf(p, "%f:%f,%f,%f,%f%n", &v, &r, &g, &b, &a, &used) != 5)
      return -1;
    if (n > 0 && v <= tf->v[n - 1])
      return -1;
    tf->v[n] = v;
    tf->rgba[n][0] = r;
    tf->rgba[n][1] = g;
    tf->rgba[n][2] = b;
    tf->rgba[n][3] = a;
    n++;
    p += used;
    if (*p == '/')
      p++;
    else if (*p != '\0')
      return -1;
  }
  tf->n = n;
  return n >= 1 ? 0 : -1;
}

static void tf_lookup(const rd_tf_t *tf, float s, float *out)
{
  if (s <= tf->v[0]) {
    memcpy(out, tf->rgba[0], 4 * sizeof(float));
    return;
  }
  for (int i = 1; i < tf->n; i++)
    if (s <= tf->v[i]) {
      const float w = (s - tf->v[i - 1]) / (tf->v[i] - tf->v[i - 1]);
      for (int c = 0; c < 4; c++)
        out[c] = tf->rgba[i - 1][c] + w * (tf->rgba[i][c] - tf->rgba[i - 1][c]);
      return;
    }
  memcpy(out, tf->rgba[tf->n - 1], 4 * sizeof(float));
}

/* ----------------------------------------------------------------- camera */

static void cross(const double *a, const double *b, double *c)
{
  c[0] = a[1] * b[2] - a[2] * b[1];
  c[1] = a[2] * b[0] - a[0] * b[2];
  c[2] = a[0] * b[1] - a[1] * b[0];
}

static void normalize(double *a)
{
  const double l = sqrt(a[0] * a[0] + a[1] * a[1] + a[2] * a[2]);
  for (int i = 0; i < 3; i++)
    a[i] /= l;
}

void rd_camera_init(rd_camera_t *cam, const int *n, int W, int H, double az, double el, int persp)
{
  memset(cam, 0, sizeof *cam);
  cam->persp = persp;
  cam->W = W;
  cam->H = H;
  double radius = 0.0;
  for (int i = 0; i < 3; i++) {
    cam->center[i] = 0.5 * (n[i] - 1);
    radius += cam->center[i] * cam->center[i];
  }
  radius = sqrt(radius);
  const double a = az * M_PI / 180.0, e = el * M_PI / 180.0;
  /* the eye sits at (cos e sin a, -cos e cos a, sin e) from the centre */
  cam->dir[0] = -cos(e) * sin(a);
  cam->dir[1] = cos(e) * cos(a);
  cam->dir[2] = -sin(e);
  normalize(cam->dir);
  double zup[3] = {0.0, 0.0, 1.0};
  if (fabs(cam->dir[2]) > 0.99) {
    zup[1] = 1.0;
    zup[2] = 0.0;
  }
  cross(cam->dir, zup, cam->right);
  normalize(cam->right);
  cross(cam->right, cam->dir, cam->up);
  normalize(cam->up);
  if (persp) {
    cam->dist = 2.6 * radius;
    cam->half = tan(0.5 * 50.0 * M_PI / 180.0) * 1.0;
  } else {
    cam->dist = 2.0 * radius;
    cam->half = 1.05 * radius;
  }
  for (int i = 0; i < 3; i++)
    cam->eye[i] = cam->center[i] - cam->dist * cam->dir[i];
}

/* Ray of pixel (i, j) (row 0 at the top): origin o, unit direction d. */
static void ray_of(const rd_camera_t *c, int i, int j, double *o, double *d)
{
  const double aspect = (double)c->W / (double)c->H;
  const double u = ((i + 0.5) / c->W * 2.0 - 1.0) * c->half * aspect;
  const double v = (1.0 - (j + 0.5) / c->H * 2.0) * c->half;
  for (int a = 0; a < 3; a++) {
    if (c->persp) {
      o[a] = c->eye[a];
      d[a] = c->dir[a] + u * c->right[a] + v * c->up[a];
    } else {
      o[a] = c->eye[a] + u * c->right[a] + v * c->up[a];
      d[a] = c->dir[a];
    }
  }
  if (c->persp)
    normalize(d);
}

/* Slab intersection of the ray with box [lo, hi]: [t0, t1]; 0 if missed. */
static int box_hit(const double *o, const double *d, const double *lo, const double *hi,
                   double *t0, double *t1)
{
  double a = 0.0, b = 1e300;
  for (int i = 0; i < 3; i++) {
    if (fabs(d[i]) < 1e-300) {
      if (o[i] < lo[i] || o[i] > hi[i])
        return 0;
      continue;
    }
    double ta = (lo[i] - o[i]) / d[i], tb = (hi[i] - o[i]) / d[i];
    if (ta > tb) {
      double t = ta;
      ta = tb;
      tb = t;
    }
    a = ta > a ? ta : a;
    b = tb < b ? tb : b;
  }
  *t0 = a;
  *t1 = b;
  return a <= b;
}

long long rd_render(const rd_block_t *b, const rd_camera_t *cam, const rd_tf_t *tf, double dt,
                    float *rgba)
{
  const int W = cam->W, H = cam->H;
  const int sx = b->hi[0] - b->lo[0] + 1, sy = b->hi[1] - b->lo[1] + 1;
  double blo[3], bhi[3];
  for (int a = 0; a < 3; a++) {
    blo[a] = b->clo[a] - 1e-3; /* a little slack: the exact test is per sample */
    bhi[a] = b->chi[a] + 1e-3;
  }
  long long samples = 0;
  memset(rgba, 0, sizeof(float) * 4 * (size_t)W * (size_t)H);
#pragma omp parallel for schedule(dynamic, 4) reduction(+ : samples)
  for (int j = 0; j < H; j++)
    for (int i = 0; i < W; i++) {
      double o[3], d[3], t0, t1;
      ray_of(cam, i, j, o, d);
      if (!box_hit(o, d, blo, bhi, &t0, &t1))
        continue;
      /* the global sample grid t = k dt; a margin of one step each side,
       * then the exact ownership test per sample */
      const long long k0 = (long long)floor(t0 / dt) - 1, k1 = (long long)ceil(t1 / dt) + 1;
      float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
      for (long long k = k0 < 0 ? 0 : k0; k <= k1; k++) {
        const double t = (double)k * dt;
        double x[3];
        int c[3], own = 1;
        for (int a = 0; a < 3 && own; a++) {
          x[a] = o[a] + t * d[a];
          if (!(x[a] >= 0.0 && x[a] <= b->n[a] - 1)) {
            own = 0;
            break;
          }
          c[a] = (int)floor(x[a]);
          if (c[a] > b->n[a] - 2)
            c[a] = b->n[a] - 2;
          if (c[a] < b->clo[a] || c[a] >= b->chi[a])
            own = 0;
        }
        if (!own)
          continue;
        const float fx = (float)(x[0] - c[0]), fy = (float)(x[1] - c[1]),
                    fz = (float)(x[2] - c[2]);
        const float *p = b->v + ((size_t)(c[2] - b->lo[2]) * (size_t)sy + (size_t)(c[1] - b->lo[1])) *
                                    (size_t)sx + (size_t)(c[0] - b->lo[0]);
        const size_t dy = (size_t)sx, dz = (size_t)sx * (size_t)sy;
        const float v00 = p[0] + fx * (p[1] - p[0]), v10 = p[dy] + fx * (p[dy + 1] - p[dy]);
        const float v01 = p[dz] + fx * (p[dz + 1] - p[dz]),
                    v11 = p[dz + dy] + fx * (p[dz + dy + 1] - p[dz + dy]);
        const float v0 = v00 + fy * (v10 - v00), v1 = v01 + fy * (v11 - v01);
        const float s = v0 + fz * (v1 - v0);
        float col[4];
        tf_lookup(tf, s, col);
        float al = col[3] * (float)dt;
        al = al > 1.0f ? 1.0f : al;
        if (al <= 0.0f)
          continue;
        const float w = (1.0f - acc[3]) * al;
        acc[0] += w * col[0];
        acc[1] += w * col[1];
        acc[2] += w * col[2];
        acc[3] += w;
        samples++;
      }
      memcpy(rgba + 4 * ((size_t)j * W + i), acc, sizeof acc);
    }
  return samples;
}
