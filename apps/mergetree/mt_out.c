/*
 * apps/mergetree/mt_out.c - the segmentation of bpc-mergetree as files:
 * .npy (int64 labels, shape (Z, Y, X)), legacy VTK image data
 * (STRUCTURED_POINTS, binary, int labels, ParaView opens it) and a PNG of
 * one z slice (a colour per label). Rank 0 writes the header and sizes the
 * file; then every rank writes the rows of its blocks' cores in place.
 */
#include "mergetree/mt.h"

#include "../common/app_mix.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <mpi.h>

#ifdef MT_HAVE_PNG
#include "common/png_out.h"
#endif

int mt_gather0(const void *mine, size_t bytes, int rank, int size, void **all, size_t *total)
{
  int cnt = (int)bytes, *counts = NULL, *displs = NULL, rc = 0;
  *all = NULL;
  *total = 0;
  if (rank == 0) {
    counts = calloc((size_t)size, sizeof *counts);
    displs = calloc((size_t)size, sizeof *displs);
    rc = counts == NULL || displs == NULL ? -1 : 0;
  }
  MPI_Gather(&cnt, 1, MPI_INT, counts, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (rank == 0 && rc == 0) {
    size_t tot = 0;
    for (int r = 0; r < size; r++) {
      displs[r] = (int)tot;
      tot += (size_t)counts[r];
    }
    *total = tot;
    *all = malloc(tot > 0 ? tot : 1);
    rc = *all == NULL ? -1 : 0;
  }
  MPI_Gatherv(mine, cnt, MPI_BYTE, *all, counts, displs, MPI_BYTE, 0, MPI_COMM_WORLD);
  free(counts);
  free(displs);
  return rc;
}

typedef void (*encode_fn)(int64_t label, unsigned char *out);

static void enc_npy(int64_t v, unsigned char *o) /* little-endian int64 */
{
  for (int i = 0; i < 8; i++)
    o[i] = (unsigned char)((uint64_t)v >> (8 * i));
}

static void enc_vtk(int64_t v, unsigned char *o) /* big-endian int32 */
{
  uint32_t u = (uint32_t)(int32_t)v;
  for (int i = 0; i < 4; i++)
    o[i] = (unsigned char)(u >> (24 - 8 * i));
}

/* Collective: rank 0 writes header (hlen bytes) and sizes the file; every
 * rank writes its rows. 0, or -1 with a message (on every rank). */
static int write_blocks(const char *path, const char *header, size_t hlen, const char *trailer,
                        size_t es, encode_fn enc, const mt_field_t *f, const mt_seg_t *s,
                        int rank, char *msg, size_t len)
{
  const int64_t npts = f->dims[0] * f->dims[1] * f->dims[2];
  int err = 0, any = 0;
  if (rank == 0) {
    FILE *fp = fopen(path, "wb");
    if (fp == NULL || fwrite(header, 1, hlen, fp) != hlen ||
        fseeko(fp, (off_t)(hlen + (size_t)npts * es), SEEK_SET) != 0 ||
        fwrite(trailer, 1, strlen(trailer), fp) != strlen(trailer))
      err = 1;
    if (fp != NULL && fclose(fp) != 0)
      err = 1;
  }
  MPI_Allreduce(&err, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (any) {
    snprintf(msg, len, "%s: cannot write (%s)", path, rank == 0 ? strerror(errno) : "on rank 0");
    return -1;
  }
  FILE *fp = s->nl > 0 ? fopen(path, "r+b") : NULL;
  unsigned char *row = NULL;
  err = s->nl > 0 && fp == NULL;
  for (int i = 0; i < s->nl && !err; i++) {
    const bpc_bounds_t *b = &s->core[i];
    const int64_t nx = b->max[0] - b->min[0];
    free(row);
    row = malloc(es * (size_t)nx);
    const int64_t *l = s->label[i];
    for (int64_t z = b->min[2]; z < b->max[2] && row && !err; z++)
      for (int64_t y = b->min[1]; y < b->max[1] && !err; y++, l += nx) {
        for (int64_t x = 0; x < nx; x++)
          enc(l[x], row + es * (size_t)x);
        int64_t off = (int64_t)hlen + (int64_t)es * ((z * f->dims[1] + y) * f->dims[0] + b->min[0]);
        err = fseeko(fp, (off_t)off, SEEK_SET) != 0 || fwrite(row, es, (size_t)nx, fp) != (size_t)nx;
      }
    err |= row == NULL;
  }
  if (fp != NULL && fclose(fp) != 0)
    err = 1;
  free(row);
  MPI_Allreduce(&err, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (any) {
    snprintf(msg, len, "%s: writing the segmentation failed", path);
    return -1;
  }
  return 0;
}

int mt_write_seg_npy(const char *path, const mt_field_t *f, const mt_seg_t *s, int rank,
                     char *msg, size_t len)
{
  char h[256];
  int n = snprintf(h + 10, sizeof h - 10,
                   "{'descr': '<i8', 'fortran_order': False, 'shape': (%" PRId64 ", %" PRId64
                   ", %" PRId64 "), }",
                   f->dims[2], f->dims[1], f->dims[0]);
  int total = 10 + n + 1, pad = (64 - total % 64) % 64;
  memset(h + 10 + n, ' ', (size_t)pad);
  h[10 + n + pad] = '\n';
  unsigned hl = (unsigned)(n + pad + 1);
  memcpy(h, "\x93NUMPY\x01\x00", 8);
  h[8] = (char)(hl & 255);
  h[9] = (char)(hl >> 8);
  return write_blocks(path, h, (size_t)(10 + hl), "", 8, enc_npy, f, s, rank, msg, len);
}

int mt_write_seg_vtk(const char *path, const mt_field_t *f, const mt_seg_t *s, int rank,
                     char *msg, size_t len)
{
  char h[512];
  const int64_t npts = f->dims[0] * f->dims[1] * f->dims[2];
  if (npts - 1 > INT32_MAX) {
    snprintf(msg, len, "%s: VTK labels are 32-bit ints; the field has too many points", path);
    return -1;
  }
  int n = snprintf(h, sizeof h,
                   "# vtk DataFile Version 3.0\n"
                   "bpc-mergetree segmentation (label = birth vertex of the branch)\n"
                   "BINARY\nDATASET STRUCTURED_POINTS\nDIMENSIONS %" PRId64 " %" PRId64
                   " %" PRId64 "\nORIGIN 0 0 0\nSPACING 1 1 1\nPOINT_DATA %" PRId64
                   "\nSCALARS label int 1\nLOOKUP_TABLE default\n",
                   f->dims[0], f->dims[1], f->dims[2], npts);
  return write_blocks(path, h, (size_t)n, "\n", 4, enc_vtk, f, s, rank, msg, len);
}

#ifdef MT_HAVE_PNG
/* A colour per label (hashed), the same on every run. */
static void colour(int64_t label, unsigned char rgb[3])
{
  const uint64_t h = app_mix64((uint64_t)label);
  for (int i = 0; i < 3; i++)
    rgb[i] = (unsigned char)(60 + (h >> (8 * i)) % 190);
}
#endif

int mt_write_seg_png(const char *path, const mt_field_t *f, const mt_seg_t *s, int64_t z,
                     int rank, int size, char *msg, size_t len)
{
#ifdef MT_HAVE_PNG
  /* every rank sends (gid in the slice, label, value bits) of its slice points */
  int64_t cnt = 0;
  for (int i = 0; i < s->nl; i++)
    if (z >= s->core[i].min[2] && z < s->core[i].max[2])
      cnt += (s->core[i].max[0] - s->core[i].min[0]) * (s->core[i].max[1] - s->core[i].min[1]);
  int64_t *mine = malloc(sizeof *mine * (size_t)(3 * cnt + 1)), *w = mine;
  for (int i = 0; mine && i < s->nl; i++) {
    const bpc_bounds_t *b = &s->core[i];
    if (z < b->min[2] || z >= b->max[2])
      continue;
    const int64_t nx = b->max[0] - b->min[0], ny = b->max[1] - b->min[1];
    const int64_t *l = s->label[i] + (z - b->min[2]) * nx * ny;
    const float *fv = s->value[i] + (z - b->min[2]) * nx * ny;
    for (int64_t y = 0; y < ny; y++)
      for (int64_t x = 0; x < nx; x++) {
        double dv = fv[x + nx * y];
        *w++ = (b->min[0] + x) + f->dims[0] * (b->min[1] + y);
        *w++ = l[x + nx * y];
        memcpy(w++, &dv, sizeof dv);
      }
  }
  int err = 0;
  void *gathered = NULL;
  size_t gbytes = 0;
  mt_gather0(mine, mine ? sizeof *mine * (size_t)(3 * cnt) : 0, rank, size, &gathered, &gbytes);
  int64_t *all = gathered;
  if (rank == 0) {
    const int W = (int)f->dims[0], H = (int)f->dims[1];
    unsigned char *rgb = calloc((size_t)W * (size_t)H, 3);
    const size_t t = gbytes / sizeof *all;
    double lo = 0.0, hi = 0.0, v;
    for (size_t q = 0; all && q < t; q += 3) {
      memcpy(&v, &all[q + 2], sizeof v);
      if (q == 0 || v < lo)
        lo = v;
      if (q == 0 || v > hi)
        hi = v;
    }
    /* a colour per label, darker where the field is lower */
    for (size_t q = 0; rgb && all && q < t; q += 3) {
      int64_t g = all[q];
      int x = (int)(g % W), y = (int)(g / W);
      unsigned char *px = rgb + 3 * ((size_t)(H - 1 - y) * (size_t)W + (size_t)x);
      memcpy(&v, &all[q + 2], sizeof v);
      double shade = 0.25 + 0.75 * (hi > lo ? (v - lo) / (hi - lo) : 1.0);
      colour(all[q + 1], px);
      for (int k = 0; k < 3; k++)
        px[k] = (unsigned char)(px[k] * shade);
    }
    err = rgb == NULL || all == NULL ||
          app_png_write_rgb8(path, rgb, W, H, msg, len) != 0;
    if (rgb == NULL || all == NULL)
      snprintf(msg, len, "out of memory for the PNG");
    free(rgb);
  }
  free(mine);
  free(all);
  MPI_Bcast(&err, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (err && rank != 0)
    snprintf(msg, len, "%s: writing the PNG failed on rank 0", path);
  return err ? -1 : 0;
#else
  (void)f, (void)s, (void)z, (void)rank, (void)size;
  snprintf(msg, len, "%s: bpc-mergetree was built without libpng", path);
  return -1;
#endif
}
