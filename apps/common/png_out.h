/*
 * apps/common/png_out.h - the one PNG writer of the apps (libpng).
 */
#ifndef BPC_APPS_PNG_OUT_H
#define BPC_APPS_PNG_OUT_H

#include <stddef.h>

/* Write width x height 8-bit RGB pixels (row 0 at the top, 3 bytes per
 * pixel, rows contiguous) to `path`. Returns 0, or -1 with a sentence in
 * err. */
int app_png_write_rgb8(const char *path, const unsigned char *rgb, int width, int height,
                       char *err, size_t errlen);

/* Write width x height grey values (row 0 at the top; 0 black, 1 white,
 * clamped to [0, 1]) as a grey PNG of `bits` 8 or 16 per sample. Returns
 * 0, or -1 with a sentence in err. */
int app_png_write_grey(const char *path, const float *grey, int width, int height, int bits,
                       char *err, size_t errlen);

#endif /* BPC_APPS_PNG_OUT_H */
