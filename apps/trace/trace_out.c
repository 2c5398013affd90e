/*
 * apps/trace/trace_out.c - the tracer's outputs: streamlines as a legacy VTK
 * polydata file (one polyline per particle, ASCII, opens in ParaView), and a
 * PNG of the streamlines projected on an axis plane, drawn with additive
 * sub-pixel splats so that dense bundles of lines glow, coloured by depth
 * (the coordinate the projection drops, over the range the lines use),
 * written with libpng.
 */
#include "trace.h"

#include "common/png_out.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

int trace_write_vtk(const char *path, const trace_point_t *pts, int64_t n, char *err,
                    size_t errlen)
{
  FILE *f = fopen(path, "w");
  if (f == NULL) {
    snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
    return -1;
  }
  /* lines: runs of one id with at least two points */
  int64_t nlines = 0, nidx = 0;
  for (int64_t i = 0; i < n;) {
    int64_t j = i;
    while (j < n && pts[j].id == pts[i].id)
      j++;
    if (j - i >= 2) {
      nlines++;
      nidx += 1 + (j - i);
    }
    i = j;
  }
  fprintf(f, "# vtk DataFile Version 3.0\n");
  fprintf(f, "bpc-trace streamlines (%lld points, %lld lines)\n", (long long)n, (long long)nlines);
  fprintf(f, "ASCII\nDATASET POLYDATA\nPOINTS %lld double\n", (long long)n);
  for (int64_t i = 0; i < n; i++)
    fprintf(f, "%.17g %.17g %.17g\n", pts[i].p[0], pts[i].p[1], pts[i].p[2]);
  fprintf(f, "LINES %lld %lld\n", (long long)nlines, (long long)nidx);
  for (int64_t i = 0; i < n;) {
    int64_t j = i;
    while (j < n && pts[j].id == pts[i].id)
      j++;
    if (j - i >= 2) {
      fprintf(f, "%lld", (long long)(j - i));
      for (int64_t k = i; k < j; k++)
        fprintf(f, " %lld", (long long)k);
      fputc('\n', f);
    }
    i = j;
  }
  fprintf(f, "POINT_DATA %lld\nSCALARS step int 1\nLOOKUP_TABLE default\n", (long long)n);
  for (int64_t i = 0; i < n; i++)
    fprintf(f, "%lld\n", (long long)pts[i].step);
  fprintf(f, "SCALARS id int 1\nLOOKUP_TABLE default\n");
  for (int64_t i = 0; i < n; i++)
    fprintf(f, "%lld\n", (long long)pts[i].id);
  int bad = ferror(f);
  if (fclose(f) != 0 || bad) {
    snprintf(err, errlen, "writing %s failed", path);
    return -1;
  }
  return 0;
}

/* A colour ramp for depth in [0, 1]: deep blue, cyan, pale yellow, orange. */
static void ramp(double t, double c[3])
{
  static const double k[4][3] = {
      {0.15, 0.35, 1.00}, {0.10, 0.85, 0.90}, {0.95, 0.95, 0.55}, {1.00, 0.50, 0.15}};
  if (t < 0)
    t = 0;
  if (t > 1)
    t = 1;
  double x = t * 3.0;
  int i = (int)x;
  if (i > 2)
    i = 2;
  double f = x - i;
  for (int m = 0; m < 3; m++)
    c[m] = k[i][m] + f * (k[i + 1][m] - k[i][m]);
}

typedef struct canvas {
  int w, h;
  float *acc; /* rgb */
} canvas_t;

/* Add colour c with weight a at sub-pixel position (x, y), bilinearly. */
static void splat(canvas_t *cv, double x, double y, const double c[3], double a)
{
  int x0 = (int)floor(x), y0 = (int)floor(y);
  double fx = x - x0, fy = y - y0;
  for (int dy = 0; dy <= 1; dy++)
    for (int dx = 0; dx <= 1; dx++) {
      int px = x0 + dx, py = y0 + dy;
      if (px < 0 || py < 0 || px >= cv->w || py >= cv->h)
        continue;
      double wgt = a * (dx ? fx : 1 - fx) * (dy ? fy : 1 - fy);
      float *o = cv->acc + 3 * ((size_t)py * (size_t)cv->w + (size_t)px);
      for (int m = 0; m < 3; m++)
        o[m] += (float)(wgt * c[m]);
    }
}

static void segment(canvas_t *cv, double x0, double y0, double x1, double y1, const double c0[3],
                    const double c1[3], double a)
{
  double len = hypot(x1 - x0, y1 - y0);
  int n = (int)ceil(len / 0.5);
  if (n < 1)
    n = 1;
  for (int i = 0; i < n; i++) {
    double t = (i + 0.5) / n, c[3];
    for (int m = 0; m < 3; m++)
      c[m] = c0[m] + t * (c1[m] - c0[m]);
    splat(cv, x0 + t * (x1 - x0), y0 + t * (y1 - y0), c, a * len / n);
  }
}

int trace_write_png(const char *path, const trace_point_t *pts, int64_t n,
                    const int64_t dims[3], const char *plane, int width, int height,
                    int max_steps, char *err, size_t errlen)
{
  (void)max_steps;
  int ax = 0, ay = 2, az = 1; /* xz: x right, z up, y is depth */
  if (plane != NULL && strcmp(plane, "xy") == 0) {
    ax = 0;
    ay = 1;
    az = 2;
  } else if (plane != NULL && strcmp(plane, "yz") == 0) {
    ax = 1;
    ay = 2;
    az = 0;
  } else if (plane != NULL && strcmp(plane, "xz") != 0) {
    snprintf(err, errlen, "unknown plane '%s' (want xy, xz or yz)", plane);
    return -1;
  }
  if (width < 16 || height < 16 || width > 16384 || height > 16384) {
    snprintf(err, errlen, "picture size %dx%d outside 16..16384", width, height);
    return -1;
  }
  canvas_t cv = {width, height, calloc((size_t)width * (size_t)height * 3, sizeof(float))};
  unsigned char *img = malloc((size_t)width * (size_t)height * 3);
  int rc = -1;
  if (cv.acc == NULL || img == NULL) {
    snprintf(err, errlen, "out of memory for a %dx%d picture", width, height);
    goto cleanup;
  }
  /* fit the projected domain into the picture with a margin, keep aspect */
  const double ex = (double)(dims[ax] - 1), ey = (double)(dims[ay] - 1);
  const double margin = 0.04;
  double sc = fmin(width * (1 - 2 * margin) / ex, height * (1 - 2 * margin) / ey);
  double ox = 0.5 * (width - sc * ex), oy = 0.5 * (height - sc * ey);
  /* depth colours span the depth range the lines actually use */
  double dmin = (double)(dims[az] - 1), dmax = 0;
  for (int64_t i = 0; i < n; i++) {
    dmin = fmin(dmin, pts[i].p[az]);
    dmax = fmax(dmax, pts[i].p[az]);
  }
  const double depth = dmax > dmin ? dmax - dmin : 1.0;
  /* line weight: fainter when there are many lines */
  int64_t nlines = 0;
  for (int64_t i = 0; i < n; i++)
    nlines += i == 0 || pts[i].id != pts[i - 1].id;
  double a = 0.35 / sqrt(fmax(1.0, (double)nlines / 64.0));
  for (int64_t i = 1; i < n; i++) {
    if (pts[i].id != pts[i - 1].id)
      continue;
    const double *p = pts[i - 1].p, *q = pts[i].p;
    double c0[3], c1[3];
    ramp((p[az] - dmin) / depth, c0);
    ramp((q[az] - dmin) / depth, c1);
    segment(&cv, ox + sc * p[ax], height - (oy + sc * p[ay]), ox + sc * q[ax],
            height - (oy + sc * q[ay]), c0, c1, a);
  }
  /* frame of the domain */
  const double grey[3] = {0.35, 0.35, 0.4};
  double fx0 = ox, fx1 = ox + sc * ex, fy0 = height - oy, fy1 = height - (oy + sc * ey);
  segment(&cv, fx0, fy0, fx1, fy0, grey, grey, 0.6);
  segment(&cv, fx1, fy0, fx1, fy1, grey, grey, 0.6);
  segment(&cv, fx1, fy1, fx0, fy1, grey, grey, 0.6);
  segment(&cv, fx0, fy1, fx0, fy0, grey, grey, 0.6);
  /* tone map: 1 - exp(-x), a little gamma, over a dark background */
  for (size_t i = 0; i < (size_t)width * (size_t)height; i++) {
    const double bg[3] = {0.015, 0.017, 0.03};
    for (int m = 0; m < 3; m++) {
      double v = bg[m] + (1.0 - exp(-1.6 * cv.acc[3 * i + m]));
      v = pow(fmin(v, 1.0), 1.0 / 1.3);
      img[3 * i + m] = (unsigned char)lrint(255.0 * v);
    }
  }
  rc = app_png_write_rgb8(path, img, width, height, err, errlen);
cleanup:
  free(cv.acc);
  free(img);
  return rc;
}
