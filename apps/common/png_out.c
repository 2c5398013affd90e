/*
 * apps/common/png_out.c - write an 8-bit RGB picture (bpc-render,
 * bpc-trace) or an 8/16-bit grey one (bpc-register) with libpng.
 */
#include "common/png_out.h"

#include <errno.h>
#include <math.h>
#include <png.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* rows of `bpr` bytes; color a PNG_COLOR_TYPE_*, depth 8 or 16 */
static int write_png(const char *path, const unsigned char *px, size_t bpr, int width,
                     int height, int color, int depth, char *err, size_t errlen)
{
  FILE *volatile f = NULL;
  png_structp png = NULL;
  png_infop info = NULL;
  volatile int rc = -1;
  png_bytep *volatile rows = malloc(sizeof(png_bytep) * (size_t)(height > 0 ? height : 1));
  if (rows == NULL) {
    snprintf(err, errlen, "out of memory for a %dx%d picture", width, height);
    goto cleanup;
  }
  for (int y = 0; y < height; y++)
    rows[y] = (png_bytep)(px + (size_t)y * bpr);
  f = fopen(path, "wb");
  if (f == NULL) {
    snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
    goto cleanup;
  }
  png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
  info = png ? png_create_info_struct(png) : NULL;
  if (png == NULL || info == NULL) {
    snprintf(err, errlen, "libpng: cannot create the writer");
    goto cleanup;
  }
  if (setjmp(png_jmpbuf(png))) {
    snprintf(err, errlen, "libpng failed writing %s", path);
    goto cleanup;
  }
  png_init_io(png, f);
  png_set_IHDR(png, info, (png_uint_32)width, (png_uint_32)height, depth, color,
               PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  png_set_compression_level(png, 9);
  png_write_info(png, info);
  png_write_image(png, rows);
  png_write_end(png, NULL);
  rc = 0;
cleanup:
  if (png != NULL)
    png_destroy_write_struct(&png, info ? &info : NULL);
  if (f != NULL && fclose(f) != 0 && rc == 0) {
    snprintf(err, errlen, "writing %s failed", path);
    rc = -1;
  }
  free(rows);
  return rc;
}

int app_png_write_rgb8(const char *path, const unsigned char *rgb, int width, int height,
                       char *err, size_t errlen)
{
  return write_png(path, rgb, (size_t)width * 3, width, height, PNG_COLOR_TYPE_RGB, 8, err,
                   errlen);
}

int app_png_write_grey(const char *path, const float *grey, int width, int height, int bits,
                       char *err, size_t errlen)
{
  const size_t bps = bits == 16 ? 2 : 1, n = (size_t)width * (size_t)height;
  const double top = bits == 16 ? 65535.0 : 255.0;
  unsigned char *px = malloc(n * bps + 1);
  if (px == NULL) {
    snprintf(err, errlen, "out of memory for a %dx%d picture", width, height);
    return -1;
  }
  for (size_t p = 0; p < n; p++) {
    double v = grey[p] < 0.0f ? 0.0 : grey[p] > 1.0f ? 1.0 : grey[p];
    unsigned long q = (unsigned long)lrint(v * top);
    if (bps == 2) { /* PNG samples are big-endian */
      px[2 * p] = (unsigned char)(q >> 8);
      px[2 * p + 1] = (unsigned char)(q & 0xff);
    } else
      px[p] = (unsigned char)q;
  }
  int rc = write_png(path, px, (size_t)width * bps, width, height, PNG_COLOR_TYPE_GRAY,
                     (int)bps * 8, err, errlen);
  free(px);
  return rc;
}
