/*
 * apps/common/png_out.c - write an 8-bit RGB picture with libpng (used by
 * bpc-render and bpc-trace).
 */
#include "common/png_out.h"

#include <errno.h>
#include <png.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int app_png_write_rgb8(const char *path, const unsigned char *rgb, int width, int height,
                       char *err, size_t errlen)
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
    rows[y] = (png_bytep)(rgb + (size_t)y * (size_t)width * 3);
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
  png_set_IHDR(png, info, (png_uint_32)width, (png_uint_32)height, 8, PNG_COLOR_TYPE_RGB,
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
