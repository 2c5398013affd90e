/*
 * apps/register/reg_png.c - reading 8/16-bit grey PNG frames (libpng).
 * Without libpng (REG_HAVE_PNG undefined) every call fails with a sentence
 * saying so, and bpc-register accepts only the synthetic series.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "register/register.h"

#ifdef REG_HAVE_PNG
#include <png.h>

int reg_have_png(void) { return 1; }

/* Open `path`, check the signature and read the header. Depth 1/2/4 grey
 * is expanded to 8; grey+alpha loses its alpha; colour is refused. On
 * success the caller owns *f, *png, *info. */
static int open_png(const char *path, FILE **fp, png_structp *pp, png_infop *ip, int *W, int *H,
                    int *depth, char *err, size_t errlen)
{
  FILE *f = fopen(path, "rb");
  png_structp png = NULL;
  png_infop info = NULL;
  unsigned char sig[8];
  if (f == NULL) {
    snprintf(err, errlen, "%s: %s", path, strerror(errno));
    return -1;
  }
  if (fread(sig, 1, 8, f) != 8 || png_sig_cmp(sig, 0, 8) != 0) {
    snprintf(err, errlen, "%s: not a PNG file", path);
    fclose(f);
    return -1;
  }
  png = png_create_read_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
  info = png ? png_create_info_struct(png) : NULL;
  if (info == NULL) {
    snprintf(err, errlen, "libpng: cannot create the reader");
    goto fail;
  }
  if (setjmp(png_jmpbuf(png))) {
    snprintf(err, errlen, "%s: a broken PNG file", path);
    goto fail;
  }
  png_init_io(png, f);
  png_set_sig_bytes(png, 8);
  png_read_info(png, info);
  int color = png_get_color_type(png, info);
  if (color != PNG_COLOR_TYPE_GRAY && color != PNG_COLOR_TYPE_GRAY_ALPHA) {
    snprintf(err, errlen, "%s: a colour PNG (want 8- or 16-bit grey)", path);
    goto fail;
  }
  *W = (int)png_get_image_width(png, info);
  *H = (int)png_get_image_height(png, info);
  *depth = png_get_bit_depth(png, info);
  *fp = f;
  *pp = png;
  *ip = info;
  return 0;
fail:
  png_destroy_read_struct(&png, info ? &info : NULL, NULL);
  fclose(f);
  return -1;
}

int reg_png_info(const char *path, int *W, int *H, char *err, size_t errlen)
{
  FILE *f;
  png_structp png;
  png_infop info;
  int depth;
  if (open_png(path, &f, &png, &info, W, H, &depth, err, errlen) != 0)
    return -1;
  png_destroy_read_struct(&png, &info, NULL);
  fclose(f);
  return 0;
}

int reg_png_read(const char *path, float *img, int W, int H, char *err, size_t errlen)
{
  FILE *f;
  png_structp png;
  png_infop info;
  int w, h, depth;
  unsigned char *volatile row = NULL;
  volatile int rc = -1;
  if (open_png(path, &f, &png, &info, &w, &h, &depth, err, errlen) != 0)
    return -1;
  if (setjmp(png_jmpbuf(png))) {
    snprintf(err, errlen, "%s: a broken PNG file", path);
    goto cleanup;
  }
  if (w != W || h != H) {
    snprintf(err, errlen, "%s is %dx%d, the series is %dx%d", path, w, h, W, H);
    goto cleanup;
  }
  if (depth < 8)
    png_set_expand_gray_1_2_4_to_8(png);
  png_set_strip_alpha(png);
  png_read_update_info(png, info);
  size_t bpr = png_get_rowbytes(png, info);
  int bps = depth == 16 ? 2 : 1;
  if (bpr < (size_t)W * bps) {
    snprintf(err, errlen, "%s: unexpected row size", path);
    goto cleanup;
  }
  if (png_get_interlace_type(png, info) != PNG_INTERLACE_NONE) {
    snprintf(err, errlen, "%s: interlaced PNGs are not supported", path);
    goto cleanup;
  }
  row = malloc(bpr);
  if (row == NULL) {
    snprintf(err, errlen, "out of memory reading %s", path);
    goto cleanup;
  }
  const float scale = bps == 2 ? 1.0f / 65535.0f : 1.0f / 255.0f;
  for (int y = 0; y < H; y++) {
    png_read_row(png, row, NULL);
    for (int x = 0; x < W; x++)
      img[(size_t)y * W + x] =
          scale * (float)(bps == 2 ? (row[2 * x] << 8 | row[2 * x + 1]) : row[x]);
  }
  rc = 0;
cleanup:
  free(row);
  png_destroy_read_struct(&png, &info, NULL);
  fclose(f);
  return rc;
}

#else /* no libpng */

int reg_have_png(void) { return 0; }

int reg_png_info(const char *path, int *W, int *H, char *err, size_t errlen)
{
  *W = *H = 0;
  snprintf(err, errlen, "%s: this bpc-register was built without libpng (only --synthetic)",
           path);
  return -1;
}

int reg_png_read(const char *path, float *img, int W, int H, char *err, size_t errlen)
{
  (void)img;
  return reg_png_info(path, &W, &H, err, errlen);
}

#endif
