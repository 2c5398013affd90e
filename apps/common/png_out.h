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

#endif /* BPC_APPS_PNG_OUT_H */
