/*
 * apps/mergetree/mt_field.c - the scalar fields of bpc-mergetree: the
 * synthetic ones (seeded Gaussian blobs plus noise, optionally quantised into
 * plateaus; constant; pure noise), .npy files (header dict parsed, float32 or
 * float64 little-endian, C order) and raw files, read box by box.
 */
#include "mergetree/mt.h"

#include "../common/app_mix.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ------------------------------------------------------------ synthetic */

/* uniform in [0, 1) from (seed, a, b, c) */
static double unit(unsigned seed, uint64_t a, uint64_t b, uint64_t c)
{
  uint64_t h = app_mix64((uint64_t)seed * 0x9e3779b97f4a7c15ull + 0x632be59bd9b4e019ull);
  h = app_mix64(h ^ a * 0xc2b2ae3d27d4eb4full);
  h = app_mix64(h ^ b * 0x165667b19e3779f9ull);
  h = app_mix64(h ^ c * 0xd6e8feb86659fd93ull);
  return app_unit(h);
}

double mt_synth_value(const mt_field_t *f, int64_t x, int64_t y, int64_t z)
{
  double v = 0.0;
  if (f->synth == MT_CONSTANT)
    return 1.0;
  if (f->synth == MT_BLOBS) {
    const double p[3] = {((double)x + 0.5) / (double)f->dims[0],
                         ((double)y + 0.5) / (double)f->dims[1],
                         ((double)z + 0.5) / (double)f->dims[2]};
    for (int b = 0; b < f->nblobs; b++) {
      double r2 = 0.0, w = 0.05 + 0.15 * unit(f->seed, (uint64_t)b, 7, 0);
      for (int d = 0; d < 3; d++) {
        double c = unit(f->seed, (uint64_t)b, (uint64_t)d, 1) - p[d];
        r2 += c * c;
      }
      double amp = 0.5 + 0.5 * unit(f->seed, (uint64_t)b, 9, 2);
      v += amp * exp(-r2 / (2.0 * w * w));
    }
  }
  v += f->noise * (unit(f->seed, (uint64_t)x, (uint64_t)y, (uint64_t)z + 3) - 0.5);
  if (f->levels > 0)
    v = floor(v * f->levels) / f->levels;
  return (double)(float)v;
}

/* ------------------------------------------------------------------ npy */

static const char *skip_ws(const char *s)
{
  while (*s && isspace((unsigned char)*s))
    s++;
  return s;
}

/* a quoted Python string into buf; NULL on error */
static const char *py_string(const char *s, char *buf, size_t len)
{
  char q = *s;
  if (q != '\'' && q != '"')
    return NULL;
  size_t n = 0;
  for (s++; *s && *s != q; s++)
    if (n + 1 < len)
      buf[n++] = *s;
  buf[n] = '\0';
  return *s == q ? s + 1 : NULL;
}

/* Parse the header dict: descr, fortran_order, shape. 0 or -1 with msg. */
static int npy_dict(const char *h, mt_field_t *f, char *msg, size_t len)
{
  char key[64], descr[64] = "";
  int have_descr = 0, have_order = 0, have_shape = 0, fortran = 0, nd = 0;
  long long shape[8];
  const char *s = skip_ws(h);
  if (*s++ != '{')
    goto bad;
  for (;;) {
    s = skip_ws(s);
    if (*s == '}')
      break;
    if ((s = py_string(s, key, sizeof key)) == NULL)
      goto bad;
    s = skip_ws(s);
    if (*s++ != ':')
      goto bad;
    s = skip_ws(s);
    if (strcmp(key, "descr") == 0) {
      if ((s = py_string(s, descr, sizeof descr)) == NULL)
        goto bad;
      have_descr = 1;
    } else if (strcmp(key, "fortran_order") == 0) {
      if (strncmp(s, "True", 4) == 0)
        fortran = 1, s += 4;
      else if (strncmp(s, "False", 5) == 0)
        s += 5;
      else
        goto bad;
      have_order = 1;
    } else if (strcmp(key, "shape") == 0) {
      if (*s++ != '(')
        goto bad;
      for (;;) {
        s = skip_ws(s);
        if (*s == ')')
          break;
        char *end;
        errno = 0;
        long long v = strtoll(s, &end, 10);
        if (end == s || errno || v < 0 || nd >= 8)
          goto bad;
        shape[nd++] = v;
        s = skip_ws(end);
        if (*s == ',')
          s++;
        else if (*s != ')')
          goto bad;
      }
      s++;
      have_shape = 1;
    } else {
      snprintf(msg, len, "unexpected key '%s' in the .npy header", key);
      return -1;
    }
    s = skip_ws(s);
    if (*s == ',')
      s++;
    else if (*s != '}')
      goto bad;
  }
  if (!have_descr || !have_order || !have_shape) {
    snprintf(msg, len, ".npy header lacks %s", !have_descr ? "'descr'"
                                               : !have_order ? "'fortran_order'"
                                                             : "'shape'");
    return -1;
  }
  if (strcmp(descr, "<f4") == 0)
    f->is_double = 0;
  else if (strcmp(descr, "<f8") == 0)
    f->is_double = 1;
  else {
    snprintf(msg, len, ".npy dtype '%s' is not supported (want little-endian float32 '<f4' "
                       "or float64 '<f8')", descr);
    return -1;
  }
  if (fortran) {
    snprintf(msg, len, ".npy array is in Fortran order; want C order");
    return -1;
  }
  if (nd < 1 || nd > 3) {
    snprintf(msg, len, ".npy array has %d dimensions; want 1 to 3", nd);
    return -1;
  }
  /* C order: the last index is fastest, so it is x */
  for (int d = 0; d < 3; d++)
    f->dims[d] = d < nd ? shape[nd - 1 - d] : 1;
  for (int d = 0; d < 3; d++)
    if (f->dims[d] < 1) {
      snprintf(msg, len, ".npy array has an empty dimension");
      return -1;
    }
  return 0;
bad:
  snprintf(msg, len, "cannot parse the .npy header dict near '%.20s'", s ? s : "");
  return -1;
}

static int check_size(const mt_field_t *f, const char *path, char *msg, size_t len)
{
  struct stat st;
  if (stat(path, &st) != 0) {
    snprintf(msg, len, "%s: %s", path, strerror(errno));
    return -1;
  }
  double want = (double)f->dims[0] * (double)f->dims[1] * (double)f->dims[2] *
                (f->is_double ? 8.0 : 4.0);
  if ((double)st.st_size - (double)f->offset < want) {
    snprintf(msg, len, "%s: truncated: %.0f bytes of data for %" PRId64 "x%" PRId64 "x%" PRId64
                       " %s values, but the file has %lld after the header",
             path, want, f->dims[0], f->dims[1], f->dims[2], f->is_double ? "float64" : "float32",
             (long long)st.st_size - (long long)f->offset);
    return -1;
  }
  return 0;
}

int mt_npy_open(mt_field_t *f, char *msg, size_t len)
{
  unsigned char pre[12];
  char *h = NULL;
  int rc = -1;
  FILE *fp = fopen(f->path, "rb");
  if (fp == NULL) {
    snprintf(msg, len, "%s: %s", f->path, strerror(errno));
    return -1;
  }
  if (fread(pre, 1, 10, fp) != 10 || memcmp(pre, "\x93NUMPY", 6) != 0) {
    snprintf(msg, len, "%s: not a .npy file (no \\x93NUMPY magic)", f->path);
    goto cleanup;
  }
  uint32_t hl;
  int64_t off;
  if (pre[6] == 1) {
    hl = (uint32_t)pre[8] | (uint32_t)pre[9] << 8;
    off = 10;
  } else if (pre[6] == 2 || pre[6] == 3) {
    if (fread(pre + 10, 1, 2, fp) != 2) {
      snprintf(msg, len, "%s: truncated .npy header", f->path);
      goto cleanup;
    }
    hl = (uint32_t)pre[8] | (uint32_t)pre[9] << 8 | (uint32_t)pre[10] << 16 |
         (uint32_t)pre[11] << 24;
    off = 12;
  } else {
    snprintf(msg, len, "%s: .npy format version %d is not supported", f->path, pre[6]);
    goto cleanup;
  }
  if (hl > (1u << 20) || (h = malloc((size_t)hl + 1)) == NULL) {
    snprintf(msg, len, "%s: .npy header of %u bytes is too large", f->path, hl);
    goto cleanup;
  }
  if (fread(h, 1, hl, fp) != hl) {
    snprintf(msg, len, "%s: truncated .npy header", f->path);
    goto cleanup;
  }
  h[hl] = '\0';
  char inner[400];
  if (npy_dict(h, f, inner, sizeof inner) != 0) {
    snprintf(msg, len, "%s: %s", f->path, inner);
    goto cleanup;
  }
  f->offset = off + hl;
  rc = check_size(f, f->path, msg, len);
cleanup:
  free(h);
  fclose(fp);
  return rc;
}

int mt_raw_open(mt_field_t *f, char *msg, size_t len)
{
  f->offset = 0;
  return check_size(f, f->path, msg, len);
}

int mt_npy_write(const mt_field_t *f, const char *path, char *msg, size_t len)
{
  char dict[256];
  int n = snprintf(dict, sizeof dict,
                   "{'descr': '%s', 'fortran_order': False, 'shape': (%" PRId64 ", %" PRId64
                   ", %" PRId64 "), }",
                   f->is_double ? "<f8" : "<f4", f->dims[2], f->dims[1], f->dims[0]);
  int total = 10 + n + 1, pad = (64 - total % 64) % 64;
  FILE *fp = fopen(path, "wb");
  double *row = malloc(sizeof(double) * (size_t)f->dims[0]);
  float *rowf = malloc(sizeof(float) * (size_t)f->dims[0]);
  int rc = 0;
  if (fp == NULL || row == NULL || rowf == NULL) {
    snprintf(msg, len, "%s: %s", path, fp == NULL ? strerror(errno) : "out of memory");
    rc = -1;
    goto cleanup;
  }
  unsigned hl = (unsigned)(n + pad + 1);
  unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)(hl & 255),
                           (unsigned char)(hl >> 8)};
  fwrite(pre, 1, 10, fp);
  fwrite(dict, 1, (size_t)n, fp);
  for (int i = 0; i < pad; i++)
    fputc(' ', fp);
  fputc('\n', fp);
  for (int64_t z = 0; z < f->dims[2] && rc == 0; z++)
    for (int64_t y = 0; y < f->dims[1] && rc == 0; y++) {
      int64_t ys[1] = {y}, zs[1] = {z};
      int64_t *xs = malloc(sizeof *xs * (size_t)f->dims[0]);
      if (xs == NULL) {
        snprintf(msg, len, "out of memory");
        rc = -1;
        break;
      }
      for (int64_t x = 0; x < f->dims[0]; x++)
        xs[x] = x;
      rc = mt_field_read(f, xs, f->dims[0], ys, 1, zs, 1, row, msg, len);
      free(xs);
      if (rc != 0)
        break;
      size_t w;
      if (f->is_double)
        w = fwrite(row, sizeof(double), (size_t)f->dims[0], fp);
      else {
        for (int64_t x = 0; x < f->dims[0]; x++)
          rowf[x] = (float)row[x];
        w = fwrite(rowf, sizeof(float), (size_t)f->dims[0], fp);
      }
      if (w != (size_t)f->dims[0]) {
        snprintf(msg, len, "%s: write failed", path);
        rc = -1;
      }
    }
cleanup:
  if (fp != NULL && fclose(fp) != 0 && rc == 0) {
    snprintf(msg, len, "%s: write failed", path);
    rc = -1;
  }
  free(row);
  free(rowf);
  return rc;
}

/* --------------------------------------------------------------- boxes */

int mt_field_read(const mt_field_t *f, const int64_t *xs, int64_t nx, const int64_t *ys,
                  int64_t ny, const int64_t *zs, int64_t nz, double *out, char *msg,
                  size_t len)
{
  if (f->source == MT_SYNTHETIC) {
    for (int64_t k = 0; k < nz; k++)
      for (int64_t j = 0; j < ny; j++)
        for (int64_t i = 0; i < nx; i++)
          *out++ = mt_synth_value(f, xs[i], ys[j], zs[k]);
    return 0;
  }
  const size_t es = f->is_double ? 8 : 4;
  unsigned char *buf = malloc(es * (size_t)(nx > 0 ? nx : 1));
  FILE *fp = fopen(f->path, "rb");
  int rc = 0;
  if (fp == NULL || buf == NULL) {
    snprintf(msg, len, "%s: %s", f->path, fp == NULL ? strerror(errno) : "out of memory");
    rc = -1;
  }
  for (int64_t k = 0; k < nz && rc == 0; k++)
    for (int64_t j = 0; j < ny && rc == 0; j++) {
      /* runs of consecutive x */
      for (int64_t i = 0; i < nx && rc == 0;) {
        int64_t r = i + 1;
        while (r < nx && xs[r] == xs[r - 1] + 1)
          r++;
        int64_t off = f->offset +
                      (int64_t)es * ((zs[k] * f->dims[1] + ys[j]) * f->dims[0] + xs[i]);
        if (fseeko(fp, (off_t)off, SEEK_SET) != 0 ||
            fread(buf, es, (size_t)(r - i), fp) != (size_t)(r - i)) {
          snprintf(msg, len, "%s: cannot read row y=%" PRId64 " z=%" PRId64 " (file too short?)",
                   f->path, ys[j], zs[k]);
          rc = -1;
          break;
        }
        for (int64_t q = 0; q < r - i; q++) {
          if (f->is_double) {
            double v;
            memcpy(&v, buf + 8 * q, 8);
            out[q] = v;
          } else {
            float v;
            memcpy(&v, buf + 4 * q, 4);
            out[q] = v;
          }
        }
        out += r - i;
        i = r;
      }
    }
  if (fp != NULL)
    fclose(fp);
  free(buf);
  return rc;
}
