/*
 * apps/trace/trace_field.c - the tracer's numerics: the built-in fields
 * (a tornado-like vortex and the ABC flow), sample boxes (built in or read
 * from a raw float32 file), trilinear interpolation, the RK4 step, seeds, and
 * the serial single-block reference tracer.
 */
#include "trace.h"

#include "../common/app_mix.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define TWO_PI 6.283185307179586

/* -------------------------------------------------------------- the fields */

/* A tornado-like vortex in the unit cube: a Lamb-Oseen swirl around a core
 * whose centre wanders with height and whose radius grows upwards, an
 * updraft strongest in the core, inflow near the ground and outflow aloft. */
static void tornado(double x, double y, double z, double u[3])
{
  const double xc = 0.5 + 0.10 * sin(4.0 * z + 0.5);
  const double yc = 0.5 + 0.10 * cos(3.0 * z);
  const double dx = x - xc, dy = y - yc;
  const double r2 = dx * dx + dy * dy;
  const double rc = 0.04 + 0.12 * z;
  /* tangential speed / r, so that (-dy, dx) * swirl is the swirl */
  const double swirl = 0.035 * (1.0 - exp(-r2 / (rc * rc))) / (r2 + 1e-12);
  /* radial speed / r: in near the ground, out aloft */
  const double radial = -0.25 * (1.0 - z) * (1.0 - z) + 0.35 * z * z * z;
  u[0] = -swirl * dy + radial * dx;
  u[1] = swirl * dx + radial * dy;
  u[2] = 0.18 * exp(-r2 / (4.0 * rc * rc)) + 0.03;
}

/* The ABC (Arnold-Beltrami-Childress) flow on [0, 2 pi]^3. */
static void abc(double x, double y, double z, double u[3])
{
  const double A = sqrt(3.0), B = sqrt(2.0), C = 1.0;
  u[0] = A * sin(z) + C * cos(y);
  u[1] = B * sin(x) + A * cos(z);
  u[2] = C * sin(y) + B * cos(x);
}

void trace_field_sample(const trace_field_t *f, int64_t i, int64_t j, int64_t k, float out[3])
{
  const double sx = (double)(f->dims[0] - 1), sy = (double)(f->dims[1] - 1),
               sz = (double)(f->dims[2] - 1);
  double u[3];
  if (f->kind == TRACE_FIELD_ABC) {
    abc(TWO_PI * (double)i / sx, TWO_PI * (double)j / sy, TWO_PI * (double)k / sz, u);
    /* radians per time -> grid cells per time */
    out[0] = (float)(u[0] * sx / TWO_PI);
    out[1] = (float)(u[1] * sy / TWO_PI);
    out[2] = (float)(u[2] * sz / TWO_PI);
  } else {
    tornado((double)i / sx, (double)j / sy, (double)k / sz, u);
    out[0] = (float)(u[0] * sx);
    out[1] = (float)(u[1] * sy);
    out[2] = (float)(u[2] * sz);
  }
}

/* ---------------------------------------------------------------- boxes */

void trace_box_free(trace_box_t *b)
{
  free(b->v);
  b->v = NULL;
}

int trace_box_load(const trace_field_t *f, trace_box_t *b, char *err, size_t errlen)
{
  int64_t ex[3];
  for (int d = 0; d < 3; d++) {
    b->dims[d] = f->dims[d];
    ex[d] = b->hi[d] - b->lo[d];
    if (ex[d] < 1 || b->lo[d] < 0 || b->hi[d] > f->dims[d]) {
      snprintf(err, errlen, "bad sample box [%lld, %lld) in dimension %d", (long long)b->lo[d],
               (long long)b->hi[d], d);
      return -1;
    }
  }
  size_t n = (size_t)ex[0] * (size_t)ex[1] * (size_t)ex[2];
  b->v = malloc(sizeof(float) * 3 * n);
  if (b->v == NULL) {
    snprintf(err, errlen, "out of memory for %zu samples", n);
    return -1;
  }
  if (f->kind != TRACE_FIELD_FILE) {
    float *o = b->v;
    for (int64_t k = b->lo[2]; k < b->hi[2]; k++)
      for (int64_t j = b->lo[1]; j < b->hi[1]; j++)
        for (int64_t i = b->lo[0]; i < b->hi[0]; i++, o += 3)
          trace_field_sample(f, i, j, k, o);
    return 0;
  }
  FILE *fp = fopen(f->path, "rb");
  if (fp == NULL) {
    snprintf(err, errlen, "cannot open %s: %s", f->path, strerror(errno));
    trace_box_free(b);
    return -1;
  }
  int rc = 0;
  const size_t row = (size_t)ex[0] * 3;
  float *o = b->v;
  for (int64_t k = b->lo[2]; k < b->hi[2] && rc == 0; k++)
    for (int64_t j = b->lo[1]; j < b->hi[1] && rc == 0; j++, o += row) {
      long long off = ((k * f->dims[1] + j) * f->dims[0] + b->lo[0]) * 3 * (long long)sizeof(float);
      if (fseeko(fp, (off_t)off, SEEK_SET) != 0 || fread(o, sizeof(float), row, fp) != row) {
        snprintf(err, errlen, "%s is too short for %lld x %lld x %lld vectors of 3 float32 "
                              "(reading row y=%lld z=%lld)",
                 f->path, (long long)f->dims[0], (long long)f->dims[1], (long long)f->dims[2],
                 (long long)j, (long long)k);
        rc = -1;
      }
    }
  fclose(fp);
  if (rc != 0)
    trace_box_free(b);
  return rc;
}

double trace_box_vmax(const trace_box_t *b)
{
  size_t n = (size_t)(b->hi[0] - b->lo[0]) * (size_t)(b->hi[1] - b->lo[1]) *
             (size_t)(b->hi[2] - b->lo[2]) * 3;
  double m = 0;
  for (size_t i = 0; i < n; i++) {
    double a = fabs((double)b->v[i]);
    if (a > m)
      m = a;
  }
  return m;
}

double trace_max_step(double vmax) { return vmax > 0 ? 0.95 / vmax : 1.0; }

/* ----------------------------------------------------------- interpolation */

int trace_velocity(const trace_box_t *b, const double p[3], double v[3])
{
  int64_t i[3];
  double t[3];
  for (int d = 0; d < 3; d++) {
    if (!(p[d] >= 0.0 && p[d] <= (double)(b->dims[d] - 1)))
      return 1;
    i[d] = (int64_t)floor(p[d]);
    if (i[d] > b->dims[d] - 2)
      i[d] = b->dims[d] - 2;
    t[d] = p[d] - (double)i[d];
    if (i[d] < b->lo[d] || i[d] + 1 >= b->hi[d])
      return 2;
  }
  const int64_t ex = b->hi[0] - b->lo[0], ey = b->hi[1] - b->lo[1];
  const float *c = b->v + 3 * (((i[2] - b->lo[2]) * ey + (i[1] - b->lo[1])) * ex + (i[0] - b->lo[0]));
  const int64_t sx = 3, sy = 3 * ex, sz = 3 * ex * ey;
  for (int m = 0; m < 3; m++) {
    double c00 = c[m] + t[0] * ((double)c[m + sx] - c[m]);
    double c10 = c[m + sy] + t[0] * ((double)c[m + sy + sx] - c[m + sy]);
    double c01 = c[m + sz] + t[0] * ((double)c[m + sz + sx] - c[m + sz]);
    double c11 = c[m + sz + sy] + t[0] * ((double)c[m + sz + sy + sx] - c[m + sz + sy]);
    double c0 = c00 + t[1] * (c10 - c00);
    double c1 = c01 + t[1] * (c11 - c01);
    v[m] = c0 + t[2] * (c1 - c0);
  }
  return 0;
}

int trace_rk4(const trace_box_t *b, const double p[3], double h, double q[3])
{
  double k1[3], k2[3], k3[3], k4[3], s[3];
  int rc = trace_velocity(b, p, k1);
  if (rc != 0)
    return rc;
  for (int d = 0; d < 3; d++)
    s[d] = p[d] + 0.5 * h * k1[d];
  if ((rc = trace_velocity(b, s, k2)) != 0)
    return rc;
  for (int d = 0; d < 3; d++)
    s[d] = p[d] + 0.5 * h * k2[d];
  if ((rc = trace_velocity(b, s, k3)) != 0)
    return rc;
  for (int d = 0; d < 3; d++)
    s[d] = p[d] + h * k3[d];
  if ((rc = trace_velocity(b, s, k4)) != 0)
    return rc;
  for (int d = 0; d < 3; d++)
    s[d] = p[d] + (h / 6.0) * (k1[d] + 2.0 * k2[d] + 2.0 * k3[d] + k4[d]);
  for (int d = 0; d < 3; d++)
    if (!(s[d] >= 0.0 && s[d] <= (double)(b->dims[d] - 1)))
      return 1; /* the step would leave the domain */
  memcpy(q, s, sizeof s);
  return 0;
}

/* ------------------------------------------------------------------ seeds */

int trace_seeds_random(int64_t n, uint64_t seed, const double lo[3], const double hi[3],
                       double **out)
{
  *out = malloc(sizeof(double) * 3 * (size_t)(n > 0 ? n : 1));
  if (*out == NULL)
    return -1;
  uint64_t s = seed;
  for (int64_t i = 0; i < n; i++)
    for (int d = 0; d < 3; d++) {
      double u = app_unit(app_splitmix(&s));
      (*out)[3 * i + d] = lo[d] + u * (hi[d] - lo[d]);
    }
  return 0;
}

int trace_seeds_file(const char *path, double **out, int64_t *n, char *err, size_t errlen)
{
  FILE *fp = fopen(path, "r");
  *out = NULL;
  *n = 0;
  if (fp == NULL) {
    snprintf(err, errlen, "cannot open seed file %s: %s", path, strerror(errno));
    return -1;
  }
  char line[512];
  int64_t cap = 0, lineno = 0;
  int rc = 0;
  while (rc == 0 && fgets(line, sizeof line, fp) != NULL) {
    lineno++;
    char *s = line;
    while (*s == ' ' || *s == '\t')
      s++;
    if (*s == '#' || *s == '\n' || *s == '\r' || *s == '\0')
      continue;
    double x, y, z;
    if (sscanf(s, "%lf %lf %lf", &x, &y, &z) != 3) {
      snprintf(err, errlen, "%s:%lld: want three numbers \"x y z\"", path, (long long)lineno);
      rc = -1;
      break;
    }
    if (*n == cap) {
      cap = cap ? 2 * cap : 256;
      double *nv = realloc(*out, sizeof(double) * 3 * (size_t)cap);
      if (nv == NULL) {
        snprintf(err, errlen, "out of memory reading %s", path);
        rc = -1;
        break;
      }
      *out = nv;
    }
    (*out)[3 * *n] = x;
    (*out)[3 * *n + 1] = y;
    (*out)[3 * *n + 2] = z;
    (*n)++;
  }
  fclose(fp);
  if (rc == 0 && *n == 0) {
    snprintf(err, errlen, "%s holds no seed", path);
    rc = -1;
  }
  if (rc != 0) {
    free(*out);
    *out = NULL;
    *n = 0;
  }
  return rc;
}

/* ------------------------------------------------------ serial reference */

int64_t trace_serial(const trace_box_t *whole, const double seed[3], int64_t id, double h,
                     int max_steps, trace_point_t *pts, int *left)
{
  double p[3] = {seed[0], seed[1], seed[2]};
  int64_t n = 0;
  *left = 0;
  pts[n].id = id;
  pts[n].step = 0;
  memcpy(pts[n].p, p, sizeof p);
  n++;
  for (int s = 0; s < max_steps; s++) {
    double q[3];
    int rc = trace_rk4(whole, p, h, q);
    if (rc != 0) {
      *left = 1;
      break;
    }
    memcpy(p, q, sizeof p);
    pts[n].id = id;
    pts[n].step = s + 1;
    memcpy(pts[n].p, p, sizeof p);
    n++;
  }
  return n;
}

static int cmp_point(const void *a, const void *b)
{
  const trace_point_t *x = a, *y = b;
  if (x->id != y->id)
    return x->id < y->id ? -1 : 1;
  return (x->step > y->step) - (x->step < y->step);
}

void trace_sort_points(trace_point_t *pts, int64_t n)
{
  if (n > 1)
    qsort(pts, (size_t)n, sizeof *pts, cmp_point);
}
