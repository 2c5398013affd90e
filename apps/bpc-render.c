/*
 * apps/bpc-render.c - bpc-render: sort-last parallel volume rendering with
 * bpc's compositing plug-in (the ./quickstart demo).
 *
 * A 3-D scalar volume (built-in Marschner-Lobb or Gaussian blobs, or a raw
 * file) is cut into blocks with bpc_decomp (one ghost layer for trilinear
 * interpolation); each block ray-casts its sub-volume (orthographic or
 * perspective camera, a transfer function of a few control points) into a
 * full-size premultiplied RGBA float image; the images are composited with
 * "over" in the view's visibility order by the chosen strategy and gathered
 * to rank 0, which writes a PNG with libpng.
 *
 * See doc/apps/render.md, or run bpc-render --help.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bpc.h"
#include "common/png_out.h"
#include "render/render.h"

static void usage(FILE *f)
{
  fprintf(f,
          "usage: mpirun -np P bpc-render [options]\n"
          "\n"
          "Sort-last parallel volume rendering: every block ray-casts its part of the\n"
          "volume into a full-size image, bpc composites the images, rank 0 writes a PNG.\n"
          "\n"
          "volume:\n"
          "  --volume NAME        ml (Marschner-Lobb, default) or blobs (Gaussian blobs)\n"
          "  --n N                grid points per axis of the synthetic volume (default 128)\n"
          "  --raw FILE           a raw volume instead (x fastest), with --dims and --type\n"
          "  --dims NX,NY,NZ      grid points of the raw file\n"
          "  --type T             uint8 (default), uint16 or float32 (values in [0,1])\n"
          "  --tf V:R,G,B,A/...   transfer function control points (values in [0,1];\n"
          "                       A is opacity per voxel of ray length)\n"
          "  --step S             sample step in voxels (default 0.5)\n"
          "view:\n"
          "  --size WxH           image size (default 512x512)\n"
          "  --view AZ,EL         azimuth and elevation in degrees (default 30,35)\n"
          "  --perspective        perspective camera (default orthographic)\n"
          "parallel:\n"
          "  --bpp N              blocks per process (default 1)\n"
          "  --strategy NAME      a compositing strategy (below) or auto\n"
          "                       (default auto; BPC_COMPOSITE_ALGORITHM also works)\n"
          "  --k K0,K1,...        radix-k k-vector (product = number of blocks)\n"
          "  --dense              no active-pixel encoding\n"
          "output:\n"
          "  --out FILE           PNG file (default render.png; 'none': skip)\n"
          "  --timing             print the time of each stage (max over ranks)\n"
          "  --quiet              print nothing but errors\n"
          "  --help               this text\n"
          "\n"
          "compositing strategies:\n");
  bpc_algo_info_t t[16];
  int n = 0;
  bpc_algorithms("composite", t, 16, &n);
  for (int i = 0; i < n && i < 16; i++)
    fprintf(f, "  %-20s %s\n", t[i].name, t[i].desc);
}

typedef struct opts {
  rd_par_t p;
  int k[BPC_SWAP_MAX_K];
  const char *out;
  int bpp, timing, quiet;
} opts_t;

static int parse(int argc, char **argv, opts_t *o, char *msg, size_t len)
{
  memset(o, 0, sizeof *o);
  o->p.src.kind = RD_ML;
  o->p.src.n[0] = o->p.src.n[1] = o->p.src.n[2] = 128;
  o->p.src.type = RD_U8;
  rd_tf_default(&o->p.tf);
  o->p.W = o->p.H = 512;
  o->p.az = 30.0;
  o->p.el = 35.0;
  o->p.dt = 0.5;
  o->p.active_pixels = 1;
  o->p.nthreads = 0;
  o->out = "render.png";
  o->bpp = 1;
  int have_dims = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
#define NEED()                                                           \
  do {                                                                   \
    if (v == NULL) {                                                     \
      snprintf(msg, len, "option %s needs a value", a);                  \
      return -1;                                                         \
    }                                                                    \
    i++;                                                                 \
  } while (0)
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      return 1;
    } else if (strcmp(a, "--volume") == 0) {
      NEED();
      if (strcmp(v, "ml") == 0)
        o->p.src.kind = RD_ML;
      else if (strcmp(v, "blobs") == 0)
        o->p.src.kind = RD_BLOBS;
      else {
        snprintf(msg, len, "unknown volume '%s' (ml or blobs; --raw FILE for a file)", v);
        return -1;
      }
    } else if (strcmp(a, "--n") == 0) {
      NEED();
      int n = atoi(v);
      if (n < 2 || n > 4096) {
        snprintf(msg, len, "--n %s: want 2..4096", v);
        return -1;
      }
      o->p.src.n[0] = o->p.src.n[1] = o->p.src.n[2] = n;
    } else if (strcmp(a, "--raw") == 0) {
      NEED();
      o->p.src.kind = RD_RAW;
      o->p.src.path = v;
    } else if (strcmp(a, "--dims") == 0) {
      NEED();
      if (sscanf(v, "%d,%d,%d", &o->p.src.n[0], &o->p.src.n[1], &o->p.src.n[2]) != 3 ||
          o->p.src.n[0] < 2 || o->p.src.n[1] < 2 || o->p.src.n[2] < 2) {
        snprintf(msg, len, "--dims %s: want NX,NY,NZ, each at least 2", v);
        return -1;
      }
      have_dims = 1;
    } else if (strcmp(a, "--type") == 0) {
      NEED();
      if (strcmp(v, "uint8") == 0)
        o->p.src.type = RD_U8;
      else if (strcmp(v, "uint16") == 0)
        o->p.src.type = RD_U16;
      else if (strcmp(v, "float32") == 0)
        o->p.src.type = RD_F32;
      else {
        snprintf(msg, len, "--type %s: uint8, uint16 or float32", v);
        return -1;
      }
    } else if (strcmp(a, "--tf") == 0) {
      NEED();
      if (rd_tf_parse(&o->p.tf, v) != 0) {
        snprintf(msg, len, "--tf %s: want V:R,G,B,A/V:R,G,B,A/... with increasing V", v);
        return -1;
      }
    } else if (strcmp(a, "--step") == 0) {
      NEED();
      o->p.dt = atof(v);
      if (!(o->p.dt > 0.0)) {
        snprintf(msg, len, "--step %s: want a positive number", v);
        return -1;
      }
    } else if (strcmp(a, "--size") == 0) {
      NEED();
      if (sscanf(v, "%dx%d", &o->p.W, &o->p.H) != 2 || o->p.W < 1 || o->p.H < 1 ||
          o->p.W > 16384 || o->p.H > 16384) {
        snprintf(msg, len, "--size %s: want WxH (1..16384)", v);
        return -1;
      }
    } else if (strcmp(a, "--view") == 0) {
      NEED();
      if (sscanf(v, "%lf,%lf", &o->p.az, &o->p.el) != 2) {
        snprintf(msg, len, "--view %s: want AZ,EL in degrees", v);
        return -1;
      }
    } else if (strcmp(a, "--perspective") == 0) {
      o->p.persp = 1;
    } else if (strcmp(a, "--bpp") == 0) {
      NEED();
      o->bpp = atoi(v);
      if (o->bpp < 1 || o->bpp > 64) {
        snprintf(msg, len, "--bpp %s: want 1..64", v);
        return -1;
      }
    } else if (strcmp(a, "--strategy") == 0) {
      NEED();
      o->p.algorithm = v;
    } else if (strcmp(a, "--k") == 0) {
      NEED();
      const char *s = v;
      o->p.nk = 0;
      while (*s != '\0' && o->p.nk < BPC_SWAP_MAX_K) {
        char *end = NULL;
        long x = strtol(s, &end, 10);
        if (end == s || x < 2 || x > 1 << 20) {
          snprintf(msg, len, "--k %s: want K0,K1,... each at least 2", v);
          return -1;
        }
        o->k[o->p.nk++] = (int)x;
        s = *end == ',' ? end + 1 : end;
        if (*end != ',' && *end != '\0') {
          snprintf(msg, len, "--k %s: want K0,K1,...", v);
          return -1;
        }
      }
      o->p.k = o->k;
    } else if (strcmp(a, "--dense") == 0) {
      o->p.active_pixels = 0;
    } else if (strcmp(a, "--out") == 0) {
      NEED();
      o->out = v;
    } else if (strcmp(a, "--timing") == 0) {
      o->timing = 1;
    } else if (strcmp(a, "--quiet") == 0) {
      o->quiet = 1;
    } else {
      snprintf(msg, len, "unknown option '%s' (try --help)", a);
      return -1;
    }
#undef NEED
  }
  if (o->p.src.kind == RD_RAW && !have_dims) {
    snprintf(msg, len, "--raw needs --dims NX,NY,NZ");
    return -1;
  }
  return 0;
}

/* Premultiplied RGBA over a dark background, 8-bit RGB, row 0 at the top. */
static int write_png(const char *path, const float *rgba, int W, int H, char *msg, size_t len)
{
  unsigned char *px = malloc((size_t)W * (size_t)H * 3);
  if (px == NULL) {
    snprintf(msg, len, "out of memory for the PNG");
    return -1;
  }
  const float bg[3] = {0.01f, 0.01f, 0.015f};
  for (size_t p = 0; p < (size_t)W * (size_t)H; p++)
    for (int c = 0; c < 3; c++) {
      float v = rgba[4 * p + c] + (1.0f - rgba[4 * p + 3]) * bg[c];
      v = v < 0.0f ? 0.0f : v > 1.0f ? 1.0f : v;
      px[3 * p + c] = (unsigned char)lrintf(255.0f * sqrtf(v)); /* ~gamma 2 */
    }
  int rc = app_png_write_rgb8(path, px, W, H, msg, len);
  free(px);
  return rc;
}

int main(int argc, char **argv)
{
  int provided = 0, rank = 0, nprocs = 1, status = 0;
  if (MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) {
    fprintf(stderr, "bpc-render: MPI_Init_thread failed\n");
    return 1;
  }
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
  opts_t o;
  char msg[512] = "";
  int pr = parse(argc, argv, &o, msg, sizeof msg);
  if (pr != 0) {
    if (rank == 0) {
      if (pr > 0)
        usage(stdout);
      else
        fprintf(stderr, "bpc-render: %s\n", msg);
    }
    MPI_Finalize();
    return pr > 0 ? 0 : 2;
  }
  bpc_ctx_t *ctx = NULL;
  if (bpc_init(MPI_COMM_WORLD, NULL, &ctx) != BPC_OK) {
    fprintf(stderr, "bpc-render: bpc_init failed\n");
    MPI_Finalize();
    return 1;
  }
  o.p.nblocks = o.bpp * nprocs;
  float *img = NULL;
  if (rank == 0) {
    img = malloc(sizeof(float) * 4 * (size_t)o.p.W * (size_t)o.p.H);
    if (img == NULL) {
      fprintf(stderr, "bpc-render: out of memory for a %dx%d image\n", o.p.W, o.p.H);
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
  }
  rd_times_t T;
  int rc = rd_parallel(ctx, &o.p, img, &T, msg, sizeof msg);
  if (rc != BPC_OK) {
    if (rank == 0 || msg[0] != '\0')
      fprintf(stderr, "bpc-render: rank %d: %s\n", rank, msg[0] ? msg : bpc_strerror(rc));
    status = 1;
  } else if (rank == 0) {
    double tw = MPI_Wtime();
    int wrc = 0;
    if (strcmp(o.out, "none") != 0)
      wrc = write_png(o.out, img, o.p.W, o.p.H, msg, sizeof msg);
    tw = MPI_Wtime() - tw;
    if (wrc != 0) {
      fprintf(stderr, "bpc-render: %s\n", msg);
      status = 1;
    } else if (!o.quiet) {
      printf("bpc-render: %s volume %dx%dx%d, %d blocks on %d processes, %dx%d image, "
             "%s view %g,%g, strategy %s\n",
             o.p.src.kind == RD_ML ? "Marschner-Lobb" : o.p.src.kind == RD_BLOBS ? "blobs" : "raw",
             o.p.src.n[0], o.p.src.n[1], o.p.src.n[2], o.p.nblocks, nprocs, o.p.W, o.p.H,
             o.p.persp ? "perspective" : "orthographic", o.p.az, o.p.el, T.algorithm);
      if (o.timing)
        printf("timing (s, max over ranks): load %.3f  render %.3f  composite %.3f  "
               "png %.3f  total %.3f\n"
               "samples %lld; composite sent %llu bytes, active pixels saved %llu bytes\n",
               T.load, T.render, T.composite, tw, T.total + tw, T.samples, T.bytes_sent,
               T.bytes_saved);
      if (strcmp(o.out, "none") != 0)
        printf("wrote %s\n", o.out);
    }
  }
  free(img);
  bpc_finalize(&ctx);
  MPI_Finalize();
  return status;
}
