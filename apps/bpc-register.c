/*
 * apps/bpc-register.c - register an image series with the prefix scan (the
 * parallel prefix thesis' electron-micrograph registration, rigid version).
 *
 * The frames 0..N-1 (PNG files, or the built-in synthetic series) are split
 * into B consecutive runs, one per block; blocks are spread over the
 * processes (contiguous assignment, many per process allowed).
 *  1. Operator A, local: every block estimates phi_{i-1,i} (frame i into
 *     frame i-1) for each of its frames i >= 1 (apps/register/reg_align.c).
 *     For its first frame it needs the last frame of the previous block:
 *     that frame is read (or generated) by both blocks, no message.
 *  2. bpc_scan, inclusive, with operator B (compose, then refine against
 *     the two end frames, which the operator loads itself): frame i gets
 *     phi_{0,i} = phi_{0,1} B phi_{1,2} B ... B phi_{i-1,i}.
 *  3. Rank 0 prints every frame's transform to frame 0 (text or --json) and,
 *     for the synthetic series, the error against the known drift; with
 *     --png the averages of the registered and of the raw frames are
 *     written (each rank adds its own frames; one reduction).
 * Memory per process: its own blocks' items, a few frames at a time and two
 * frame-sized sums. The transforms depend on the block count, never on the
 * process count (bpc_scan is bit-identical across process counts).
 *
 * Exit status: 0 success (and --help); 2 a bad argument or input (missing
 * directory, not a PNG, frames of different sizes, fewer than 2 frames...),
 * on every rank, with the argument named by one rank; 1 a failure while
 * running (a frame that cannot be read, the library).
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/types.h>

#include <mpi.h>

#include "bpc.h"
#include "register/register.h"
#include "common/app_args.h"
#ifdef REG_HAVE_PNG
#include "common/png_out.h"
#endif

static const char *usage_text =
    "usage: bpc-register [options] (--synthetic N[,W,H] | DIR | FRAME.png ...)\n"
    "Register a series of grey frames to frame 0 with a distributed prefix scan.\n"
    "\n"
    "  --synthetic N[,W,H]  the built-in series: N frames of W x H (default 128x128)\n"
    "                       of a textured scene drifting by known rigid motions\n"
    "  DIR | FILES          the *.png frames of DIR in name order, or the PNG files\n"
    "                       in the order given (8/16-bit grey, all the same size)\n"
    "  --blocks B           blocks (runs of consecutive frames; default: the\n"
    "                       process count, at most the frames)\n"
    "  --algorithm NAME     the scan's global algorithm: a name of\n"
    "                       bpc_algorithms(\"scan\") (listed below) or auto (default)\n"
    "  --strategy NAME      scan-then-propagate (default), reduce-then-scan or\n"
    "                       inclusive-global\n"
    "  --refine N           Gauss-Newton steps of operator B (default 3; 0 = compose only)\n"
    "  --pair-iters N       Gauss-Newton iterations of operator A (default 10)\n"
    "  --frame-cache N      frames operator B keeps loaded per process (default 16,\n"
    "                       least recently used out; 0 = load each anew)\n"
    "  --seed S             synthetic series seed (default 1)\n"
    "  --noise X            synthetic noise amplitude in grey [0,1] (default 0.04)\n"
    "  --png PREFIX         write PREFIX-registered.png and PREFIX-raw.png (averages)\n"
    "  --dump DIR           write the synthetic frames to DIR as 16-bit PNGs and exit\n"
    "  --json               print the result as one JSON object\n"
    "  --quiet              no progress on stderr\n"
    "  --help               this text\n";

/* The scan's algorithm names from its table, comma separated. */
static void scan_names(char *buf, size_t len)
{
  bpc_algo_info_t t[16];
  int n = 0;
  buf[0] = '\0';
  if (bpc_algorithms("scan", t, 16, &n) != BPC_OK)
    n = 0;
  for (int k = 0; k < n && k < 16; k++) {
    const size_t used = strlen(buf);
    snprintf(buf + used, len - used, "%s%s", k > 0 ? ", " : "", t[k].name);
  }
}

typedef struct opts {
  int synthetic, nframes, W, H;
  uint64_t seed;
  double noise;
  int nblocks;
  const char *algorithm;
  bpc_scan_strategy_t strategy;
  const char *strategy_name;
  int refine, pair_iters, cache_frames;
  const char *png, *dump;
  int json, quiet, help;
  char **inputs;
  int ninputs;
} opts_t;

/* ------------------------------------------------------------ options */

static int parse_args(int argc, char **argv, opts_t *o, char *msg, size_t len)
{
  memset(o, 0, sizeof *o);
  o->W = o->H = 128;
  o->seed = 1;
  o->noise = 0.04;
  o->algorithm = "auto";
  o->strategy = BPC_SCAN_SCAN_THEN_PROPAGATE;
  o->strategy_name = "scan-then-propagate";
  o->refine = 3;
  o->pair_iters = 10;
  o->cache_frames = 16;
  o->inputs = calloc((size_t)argc + 1, sizeof(char *));
  if (o->inputs == NULL) {
    snprintf(msg, len, "out of memory");
    return -1;
  }
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (strncmp(a, "--", 2) != 0) {
      o->inputs[o->ninputs++] = argv[i];
      continue;
    }
    static const char *const flags[] = {"--help", "--json", "--quiet"};
    int *const flagp[] = {&o->help, &o->json, &o->quiet};
    int isflag = 0;
    for (int f = 0; f < 3; f++)
      if (strcmp(a, flags[f]) == 0) {
        *flagp[f] = isflag = 1;
      }
    if (o->help)
      return 0;
    if (isflag)
      continue;
    static const char *const valued[] = {"--synthetic", "--blocks",     "--algorithm",
                                         "--strategy",  "--refine",     "--pair-iters",
                                         "--seed",      "--noise",      "--png",
                                         "--dump",      "--frame-cache"};
    int known = 0;
    for (size_t k = 0; k < sizeof valued / sizeof *valued; k++)
      known |= strcmp(a, valued[k]) == 0;
    if (!known) {
      snprintf(msg, len, "unknown option '%s' (try --help)", a);
      return -1;
    }
    if (i + 1 >= argc) {
      snprintf(msg, len, "%s needs a value", a);
      return -1;
    }
    const char *val = argv[++i];
    long long v[3];
    if (strcmp(a, "--synthetic") == 0) {
      char buf[64], *p = buf, *tok;
      int n = 0;
      snprintf(buf, sizeof buf, "%s", val);
      while (n < 4 && (tok = strsep(&p, ",")) != NULL) {
        long long lo = n == 0 ? 0 : 16, hi = n == 0 ? 1000000 : 4096;
        if (n == 3 || app_parse_ll(tok, lo, hi, &v[n]) != 0) {
          snprintf(msg, len, "--synthetic '%s': want N or N,W,H (frames 2..1000000, "
                   "sizes 16..4096)", val);
          return -1;
        }
        n++;
      }
      if (n != 1 && n != 3) {
        snprintf(msg, len, "--synthetic '%s': want N or N,W,H", val);
        return -1;
      }
      if (v[0] < 2) {
        snprintf(msg, len, "--synthetic '%s': %lld frame%s, a series needs at least 2", val,
                 v[0], v[0] == 1 ? "" : "s");
        return -1;
      }
      o->synthetic = 1;
      o->nframes = (int)v[0];
      if (n == 3) {
        o->W = (int)v[1];
        o->H = (int)v[2];
      }
    } else if (strcmp(a, "--frame-cache") == 0) {
      if (app_parse_ll(val, 0, 100000, &v[0]) != 0) {
        snprintf(msg, len, "--frame-cache '%s': want an integer in 0..100000", val);
        return -1;
      }
      o->cache_frames = (int)v[0];
    } else if (strcmp(a, "--blocks") == 0 || strcmp(a, "--refine") == 0 ||
               strcmp(a, "--pair-iters") == 0) {
      int isb = a[2] == 'b';
      if (app_parse_ll(val, isb ? 1 : 0, isb ? 1000000 : 100, &v[0]) != 0) {
        snprintf(msg, len, "%s '%s': want an integer in %d..%d", a, val, isb ? 1 : 0,
                 isb ? 1000000 : 100);
        return -1;
      }
      *(isb ? &o->nblocks : a[2] == 'r' ? &o->refine : &o->pair_iters) = (int)v[0];
    } else if (strcmp(a, "--seed") == 0) {
      char *end;
      errno = 0;
      unsigned long long s = strtoull(val, &end, 10);
      if (end == val || *end != '\0' || errno || val[0] == '-') {
        snprintf(msg, len, "--seed '%s': want a non-negative integer", val);
        return -1;
      }
      o->seed = s;
    } else if (strcmp(a, "--noise") == 0) {
      char *end;
      o->noise = strtod(val, &end);
      if (end == val || *end != '\0' || !(o->noise >= 0.0 && o->noise <= 1.0)) {
        snprintf(msg, len, "--noise '%s': want a number in [0, 1]", val);
        return -1;
      }
    } else if (strcmp(a, "--algorithm") == 0) {
      int n = 0, ok = strcmp(val, "auto") == 0;
      bpc_algo_info_t t[16];
      bpc_algorithms("scan", t, 16, &n);
      for (int k = 0; k < n && k < 16; k++)
        ok |= strcasecmp(val, t[k].name) == 0;
      if (!ok) {
        char names[256];
        scan_names(names, sizeof names);
        snprintf(msg, len, "--algorithm '%s': want auto or a scan algorithm (%s)", val, names);
        return -1;
      }
      o->algorithm = val;
    } else if (strcmp(a, "--strategy") == 0) {
      static const char *const names[] = {"scan-then-propagate", "reduce-then-scan",
                                          "inclusive-global"};
      static const bpc_scan_strategy_t ids[] = {
          BPC_SCAN_SCAN_THEN_PROPAGATE, BPC_SCAN_REDUCE_THEN_SCAN, BPC_SCAN_INCLUSIVE_GLOBAL};
      int k = 0;
      while (k < 3 && strcmp(val, names[k]) != 0)
        k++;
      if (k == 3) {
        snprintf(msg, len, "--strategy '%s': want scan-then-propagate, reduce-then-scan or "
                 "inclusive-global", val);
        return -1;
      }
      o->strategy = ids[k];
      o->strategy_name = names[k];
    } else if (strcmp(a, "--png") == 0) {
      o->png = val;
    } else {
      o->dump = val;
    }
  }
  if (o->synthetic && o->ninputs > 0) {
    snprintf(msg, len, "'%s': give --synthetic or input frames, not both", o->inputs[0]);
    return -1;
  }
  if (!o->synthetic && o->ninputs == 0) {
    snprintf(msg, len, "no input: give a directory, PNG files or --synthetic N (try --help)");
    return -1;
  }
  if (o->dump != NULL && !o->synthetic) {
    snprintf(msg, len, "--dump '%s': only the synthetic series can be dumped", o->dump);
    return -1;
  }
  if ((o->png != NULL || o->dump != NULL || o->ninputs > 0) && !reg_have_png()) {
    snprintf(msg, len, "%s: this bpc-register was built without libpng: only --synthetic, "
             "no PNG output", o->png ? "--png" : o->dump ? "--dump" : o->inputs[0]);
    return -1;
  }
  return 0;
}

/* ---------------------------------------------------------------- input */

static int by_name(const void *a, const void *b)
{
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static int ends_png(const char *s)
{
  size_t n = strlen(s);
  return n > 4 && s[n - 4] == '.' && tolower((unsigned char)s[n - 3]) == 'p' &&
         tolower((unsigned char)s[n - 2]) == 'n' && tolower((unsigned char)s[n - 1]) == 'g';
}

/* The frame paths: the *.png of a directory in name order, or the files as
 * given. 0, or -1 with a message naming the input. The caller frees
 * paths[i] and paths. */
static int list_frames(const opts_t *o, char ***paths, int *n, char *msg, size_t len)
{
  struct stat st;
  *paths = NULL;
  *n = 0;
  for (int i = 0; i < o->ninputs; i++)
    if (stat(o->inputs[i], &st) != 0) {
      snprintf(msg, len, "input '%s': %s", o->inputs[i], strerror(errno));
      return -1;
    } else if (S_ISDIR(st.st_mode) && o->ninputs > 1) {
      snprintf(msg, len, "input '%s' is a directory: give one directory or a list of files",
               o->inputs[i]);
      return -1;
    }
  stat(o->inputs[0], &st);
  if (!S_ISDIR(st.st_mode)) {
    *paths = calloc((size_t)o->ninputs, sizeof(char *));
    for (int i = 0; *paths && i < o->ninputs; i++)
      (*paths)[(*n)++] = strdup(o->inputs[i]);
    return *paths ? 0 : -1;
  }
  DIR *d = opendir(o->inputs[0]);
  if (d == NULL) {
    snprintf(msg, len, "input '%s': %s", o->inputs[0], strerror(errno));
    return -1;
  }
  int cap = 0, rc = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL && rc == 0) {
    if (!ends_png(e->d_name))
      continue;
    if (*n == cap) {
      cap = cap ? 2 * cap : 64;
      char **p = realloc(*paths, sizeof(char *) * (size_t)cap);
      if (p == NULL) {
        rc = -1;
        break;
      }
      *paths = p;
    }
    size_t l = strlen(o->inputs[0]) + strlen(e->d_name) + 2;
    char *s = malloc(l);
    if (s == NULL) {
      rc = -1;
      break;
    }
    snprintf(s, l, "%s/%s", o->inputs[0], e->d_name);
    (*paths)[(*n)++] = s;
  }
  closedir(d);
  if (rc != 0)
    snprintf(msg, len, "out of memory listing '%s'", o->inputs[0]);
  else if (*n > 1)
    qsort(*paths, (size_t)*n, sizeof(char *), by_name);
  return rc;
}

/* --------------------------------------------------------------- helpers */

/* Collective: nonzero if any rank failed; the lowest failing rank prints
 * its message. */
static int any_failed(int failed, const char *msg, int rank, int size)
{
  int who = failed ? rank : size, first = size;
  MPI_Allreduce(&who, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (first < size && rank == first)
    fprintf(stderr, "bpc-register: %s\n", msg);
  return first < size;
}

static int block_first(int b, int nframes, int nblocks)
{
  return (int)((long long)b * nframes / nblocks);
}

static double wrap_angle(double a)
{
  const double pi = 3.14159265358979323846;
  return remainder(a, 2.0 * pi);
}

/* Add frame `img` seen through x (frame i into frame 0) to the registered
 * sums, and the raw frame to the raw sums. */
static void accumulate(const float *img, int W, int H, const reg_xf_t *x, double *reg,
                       double *regn, double *raw)
{
  reg_xf_t inv;
  reg_invert(x, &inv);
  const double c = cos(inv.angle), s = sin(inv.angle);
  const double cx = 0.5 * (W - 1), cy = 0.5 * (H - 1);
  for (int y = 0; y < H; y++)
    for (int xx = 0; xx < W; xx++) {
      size_t p = (size_t)y * W + xx;
      double qx = xx - cx, qy = y - cy;
      int in;
      float v = reg_sample(img, W, H, c * qx - s * qy + inv.tx, s * qx + c * qy + inv.ty, &in);
      if (in) {
        reg[p] += v;
        regn[p] += 1.0;
      }
      raw[p] += img[p];
    }
}

/* ----------------------------------------------------------------- main */

typedef struct result {
  reg_xf_t *all; /* rank 0: phi_{0,i} of every frame */
  double terr_max, terr_mean, rerr_max, rerr_mean;
} result_t;

static void print_result(const opts_t *o, const reg_source_t *src, const result_t *r,
                         const bpc_scan_info_t *info, int size)
{
  const int N = src->nframes;
  if (o->json) {
    printf("{\"frames\": %d, \"width\": %d, \"height\": %d, \"input\": \"%s\", "
           "\"blocks\": %d, \"algorithm\": \"%s\", \"strategy\": \"%s\", \"refine\": %d,\n",
           N, src->W, src->H, o->synthetic ? "synthetic" : "png", o->nblocks, info->name,
           o->strategy_name, o->refine);
    if (o->synthetic)
      printf(" \"error\": {\"translation_max\": %.6g, \"translation_mean\": %.6g, "
             "\"rotation_max\": %.6g, \"rotation_mean\": %.6g},\n",
             r->terr_max, r->terr_mean, r->rerr_max, r->rerr_mean);
    printf(" \"transforms\": [\n");
    for (int i = 0; i < N; i++)
      printf("  {\"frame\": %d, \"angle\": %.17g, \"tx\": %.17g, \"ty\": %.17g}%s\n", i,
             r->all[i].angle, r->all[i].tx, r->all[i].ty, i + 1 < N ? "," : "");
    printf(" ]}\n");
    return;
  }
  printf("# bpc-register: %d frames %dx%d (%s), %d blocks, scan %s / %s, refine %d\n", N,
         src->W, src->H, o->synthetic ? "synthetic" : "png", o->nblocks, info->name,
         o->strategy_name, o->refine);
  printf("# run: %d process%s, %lld operator B calls, depth %lld\n", size,
         size == 1 ? "" : "es", info->ops_total, info->depth);
  if (o->synthetic)
    printf("# error vs known drift: translation max %.4f mean %.4f px, rotation max %.6f mean "
           "%.6f rad\n",
           r->terr_max, r->terr_mean, r->rerr_max, r->rerr_mean);
  printf("# frame  angle(rad)  tx(px)  ty(px): q0 = R(angle) qi + t, centred coordinates\n");
  for (int i = 0; i < N; i++)
    printf("%6d %+.8f %+11.5f %+11.5f\n", i, r->all[i].angle, r->all[i].tx, r->all[i].ty);
}

static int run(opts_t *o, int rank, int size)
{
  char msg[1024] = "";
  int ret = 1, fail = 0;
  reg_source_t src = {0};
  char **paths = NULL;
  int npaths = 0;
  bpc_ctx_t *ctx = NULL;
  bpc_assign_t *assign = NULL;
  bpc_buf_t *items = NULL;
  result_t res = {0};
  double *sums = NULL;
  double *all_sums = NULL;
  float *pic = NULL;
  const int *gids = NULL;
  int nl = 0;

  /* ---- the input: the same list on every rank, headers checked where
   * the frames are used */
  src.seed = o->seed;
  src.noise = o->noise;
  if (o->synthetic) {
    src.nframes = o->nframes;
    src.W = o->W;
    src.H = o->H;
  } else {
    fail = list_frames(o, &paths, &npaths, msg, sizeof msg) != 0;
    if (!fail && npaths < 2)
      snprintf(msg, sizeof msg, "input '%s': %d PNG frame%s, a series needs at least 2",
               o->inputs[0], npaths, npaths == 1 ? "" : "s"),
          fail = 1;
    if (!fail)
      fail = reg_png_info(paths[0], &src.W, &src.H, msg, sizeof msg) != 0;
    if (!fail && (src.W < 16 || src.H < 16 || src.W > 16384 || src.H > 16384))
      snprintf(msg, sizeof msg, "%s is %dx%d: frames must be 16x16 to 16384x16384", paths[0],
               src.W, src.H),
          fail = 1;
    src.nframes = npaths;
    src.paths = paths;
  }
  if (!fail && o->nblocks > src.nframes) {
    snprintf(msg, sizeof msg, "--blocks %d: more blocks than the %d frames", o->nblocks,
             src.nframes);
    fail = 1;
  }
  if (any_failed(fail, msg, rank, size)) {
    ret = 2;
    goto cleanup;
  }
  const int N = src.nframes, W = src.W, H = src.H;
  if (o->nblocks == 0)
    o->nblocks = size < N ? size : N;

  if (o->dump != NULL) { /* write the synthetic frames, round-robin over ranks */
    if (rank == 0 && mkdir(o->dump, 0777) != 0 && errno != EEXIST) {
      snprintf(msg, sizeof msg, "--dump '%s': %s", o->dump, strerror(errno));
      fail = 1;
    }
    if (any_failed(fail, msg, rank, size)) {
      ret = 2;
      goto cleanup;
    }
    for (int i = rank; i < N && !fail; i += size) {
      char path[4096];
      float *img = reg_frame_load(&src, i, msg, sizeof msg);
      snprintf(path, sizeof path, "%s/frame-%06d.png", o->dump, i);
      fail = img == NULL;
#ifdef REG_HAVE_PNG
      if (!fail)
        fail = app_png_write_grey(path, img, W, H, 16, msg, sizeof msg) != 0;
#endif
      free(img);
    }
    if (!any_failed(fail, msg, rank, size))
      ret = 0;
    if (ret == 0 && rank == 0 && !o->quiet)
      fprintf(stderr, "bpc-register: wrote %d frames to %s\n", N, o->dump);
    goto cleanup;
  }

  if (bpc_init(MPI_COMM_WORLD, NULL, &ctx) != BPC_OK ||
      bpc_assign_create(ctx, o->nblocks, BPC_ASSIGN_CONTIGUOUS, NULL, &assign) != BPC_OK) {
    if (rank == 0)
      fprintf(stderr, "bpc-register: cannot set up bpc: %s\n",
              ctx ? bpc_last_error(ctx) : "bpc_init failed");
    goto cleanup;
  }
  bpc_assign_local(assign, &gids, &nl);

  /* ---- check the local frames' headers (a frame and the one before) */
  for (int l = 0; l < nl && !fail && paths; l++) {
    int f0 = block_first(gids[l], N, o->nblocks), f1 = block_first(gids[l] + 1, N, o->nblocks);
    for (int i = f0 > 0 ? f0 - 1 : 0; i < f1 && !fail; i++) {
      int w, h;
      if (reg_png_info(paths[i], &w, &h, msg, sizeof msg) != 0)
        fail = 1;
      else if (w != W || h != H) {
        snprintf(msg, sizeof msg, "frames differ in size: %s is %dx%d, %s (frame 0) is %dx%d",
                 paths[i], w, h, paths[0], W, H);
        fail = 1;
      }
    }
  }
  if (any_failed(fail, msg, rank, size)) {
    ret = 2;
    goto cleanup;
  }
  if (rank == 0 && !o->quiet)
    fprintf(stderr, "bpc-register: %d frames %dx%d (%s), %d blocks on %d process%s\n", N, W, H,
            o->synthetic ? "synthetic" : o->inputs[0], o->nblocks, size, size == 1 ? "" : "es");

  /* ---- operator A on every local pair (blocks in parallel) */
  reg_opts_t ro = {&src, NULL, o->pair_iters, o->refine, 0.25};
  items = calloc((size_t)(nl > 0 ? nl : 1), sizeof *items);
  fail = items == NULL;
  if (fail)
    snprintf(msg, sizeof msg, "out of memory");
  int done_blocks = 0;
#pragma omp parallel for schedule(dynamic) reduction(| : fail)
  for (int l = 0; l < (items != NULL ? nl : 0); l++) {
    if (fail)
      continue;
    char err[512] = "";
    int f0 = block_first(gids[l], N, o->nblocks), f1 = block_first(gids[l] + 1, N, o->nblocks);
    int first = f0 > 0 ? f0 : 1, bf = 0;
    reg_xf_t *x = malloc(sizeof(reg_xf_t) * (size_t)(f1 - f0 + 1));
    float *prev = x ? reg_frame_load(&src, first - 1, err, sizeof err) : NULL;
    bf = prev == NULL;
    int n = 0;
    for (int i = first; i < f1 && !bf; i++) {
      float *cur = reg_frame_load(&src, i, err, sizeof err);
      bf = cur == NULL || reg_align_pair(&ro, prev, cur, i, &x[n++], err, sizeof err) != 0;
      free(prev);
      prev = cur;
    }
    free(prev);
    items[l].data = x;
    items[l].count = (size_t)n;
    if (bf) {
#pragma omp critical(reg_msg)
      snprintf(msg, sizeof msg, "operator A, block %d: %s", gids[l],
               err[0] ? err : "out of memory");
      fail = 1;
    }
#pragma omp critical(reg_msg)
    {
      done_blocks++;
      if (rank == 0 && !o->quiet)
        fprintf(stderr, "bpc-register: operator A: %d of %d local blocks aligned\n", done_blocks,
                nl);
    }
  }
  if (any_failed(fail, msg, rank, size))
    goto cleanup;

  /* ---- the scan: phi_{0,i} for every frame i >= 1 (in place) */
  bpc_type_t type = bpc_type_contiguous(sizeof(reg_xf_t), MPI_BYTE);
  bpc_scan_op_t op = {.fn = reg_op_b, .user = &ro};
  /* operator B's end frames: frame 0 and the blocks' first frames come back
   * on most calls (without a cache B loads them itself) */
  if (o->cache_frames > 0 && o->refine > 0 &&
      (ro.cache = reg_cache_new(&src, o->cache_frames)) == NULL)
    fprintf(stderr, "bpc-register: rank %d: no memory for the frame cache; frames are loaded "
            "on every call\n", rank);
  bpc_scan_params_t sp = bpc_scan_params_default();
  sp.algorithm = o->algorithm;
  sp.strategy = o->strategy;
  bpc_scan_info_t info;
  if (rank == 0 && !o->quiet)
    fprintf(stderr, "bpc-register: scan with operator B (compose + %d refinement steps)\n",
            o->refine);
  int rc = bpc_scan(ctx, assign, &type, BPC_SCAN_INCLUSIVE, items, items, &op, &sp, &info);
  long long loads = 0, hits = 0;
  if (ro.cache != NULL)
    reg_cache_counts(ro.cache, &loads, &hits);
  reg_cache_free(ro.cache);
  ro.cache = NULL;
  if (rc != BPC_OK) {
    if (rank == 0)
      fprintf(stderr, "bpc-register: the scan failed: %s: %s\n", bpc_err_name(rc),
              bpc_last_error(ctx));
    goto cleanup;
  }
  if (rank == 0 && !o->quiet && loads + hits > 0)
    fprintf(stderr, "bpc-register: scan %s: %lld operator B calls, depth %lld; rank 0 loaded "
            "%lld frames for them and took %lld from its cache of %d\n", info.name,
            info.ops_total, info.depth, loads, hits, o->cache_frames);
  else if (rank == 0 && !o->quiet)
    fprintf(stderr, "bpc-register: scan %s: %lld operator B calls, depth %lld\n", info.name,
            info.ops_total, info.depth);

  /* ---- gather the transforms on rank 0 (contiguous assignment: rank
   * order is frame order) */
  int mine = 0;
  for (int l = 0; l < nl; l++)
    mine += (int)items[l].count;
  reg_xf_t *loc = malloc(sizeof(reg_xf_t) * (size_t)(mine > 0 ? mine : 1));
  int *counts = rank == 0 ? calloc((size_t)size, sizeof(int)) : NULL;
  int *displs = rank == 0 ? calloc((size_t)size, sizeof(int)) : NULL;
  if (rank == 0)
    res.all = calloc((size_t)N, sizeof(reg_xf_t));
  fail = loc == NULL || (rank == 0 && (!counts || !displs || !res.all));
  if (!any_failed(fail, "out of memory gathering the transforms", rank, size)) {
    int bytes = mine * (int)sizeof(reg_xf_t);
    for (int l = 0, w = 0; l < nl; l++)
      for (size_t k = 0; k < items[l].count; k++)
        loc[w++] = ((reg_xf_t *)items[l].data)[k];
    MPI_Gather(&bytes, 1, MPI_INT, counts, 1, MPI_INT, 0, MPI_COMM_WORLD);
    for (int r = 0, t = (int)sizeof(reg_xf_t); rank == 0 && r < size; r++) {
      displs[r] = t; /* frame 0 (the identity) first */
      t += counts[r];
    }
    MPI_Gatherv(loc, bytes, MPI_BYTE, res.all, counts, displs, MPI_BYTE, 0, MPI_COMM_WORLD);
  } else
    fail = 1;
  free(loc);
  free(counts);
  free(displs);
  if (fail)
    goto cleanup;

  if (rank == 0) {
    res.all[0] = (reg_xf_t){0};
    for (int i = 1; o->synthetic && i < N; i++) {
      reg_xf_t t;
      reg_synthetic_truth(&src, i, &t);
      double te = hypot(res.all[i].tx - t.tx, res.all[i].ty - t.ty);
      double re = fabs(wrap_angle(res.all[i].angle - t.angle));
      res.terr_max = te > res.terr_max ? te : res.terr_max;
      res.rerr_max = re > res.rerr_max ? re : res.rerr_max;
      res.terr_mean += te / (N - 1);
      res.rerr_mean += re / (N - 1);
    }
    print_result(o, &src, &res, &info, size);
    fflush(stdout);
  }

  /* ---- averages: every rank adds its own frames, one reduction */
  if (o->png != NULL) {
    const size_t np = (size_t)W * H;
    sums = calloc(3 * np, sizeof(double));
    all_sums = rank == 0 ? calloc(3 * np, sizeof(double)) : NULL;
    fail = sums == NULL || (rank == 0 && all_sums == NULL);
    if (fail)
      snprintf(msg, sizeof msg, "out of memory for the averages");
    for (int l = 0; l < nl && !fail; l++) {
      int f0 = block_first(gids[l], N, o->nblocks), f1 = block_first(gids[l] + 1, N, o->nblocks);
      for (int i = f0; i < f1 && !fail; i++) {
        float *img = reg_frame_load(&src, i, msg, sizeof msg);
        reg_xf_t id = {0};
        const reg_xf_t *x = i == 0 ? &id : (const reg_xf_t *)items[l].data + (i - (f0 ? f0 : 1));
        fail = img == NULL;
        if (!fail)
          accumulate(img, W, H, x, sums, sums + np, sums + 2 * np);
        free(img);
      }
    }
    if (any_failed(fail, msg, rank, size))
      goto cleanup;
    MPI_Reduce(sums, all_sums, (int)(3 * np), MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) {
      pic = malloc(sizeof(float) * np);
      fail = pic == NULL;
      for (int k = 0; k < 2 && !fail; k++) {
        char path[4096];
        for (size_t p = 0; p < np; p++)
          pic[p] = k == 0 ? (all_sums[np + p] > 0 ? (float)(all_sums[p] / all_sums[np + p]) : 0)
                          : (float)(all_sums[2 * np + p] / N);
        snprintf(path, sizeof path, "%s-%s.png", o->png, k == 0 ? "registered" : "raw");
#ifdef REG_HAVE_PNG
        fail = app_png_write_grey(path, pic, W, H, 8, msg, sizeof msg) != 0;
#endif
        if (!fail && !o->quiet)
          fprintf(stderr, "bpc-register: wrote %s\n", path);
      }
      if (fail)
        fprintf(stderr, "bpc-register: %s\n", pic ? msg : "out of memory");
    }
    MPI_Bcast(&fail, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (fail)
      goto cleanup;
  }
  ret = 0;

cleanup:
  for (int l = 0; items && l < nl; l++)
    free(items[l].data);
  free(items);
  free(res.all);
  free(sums);
  free(all_sums);
  free(pic);
  for (int i = 0; i < npaths; i++)
    free(paths[i]);
  free(paths);
  bpc_assign_destroy(&assign);
  bpc_finalize(&ctx);
  return ret;
}

int main(int argc, char **argv)
{
  int provided = 0, rank = 0, size = 1;
  if (MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) {
    fprintf(stderr, "bpc-register: MPI_Init_thread failed\n");
    return 1;
  }
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  opts_t o;
  char msg[1024] = "";
  int ret;
  if (parse_args(argc, argv, &o, msg, sizeof msg) != 0) {
    if (rank == 0)
      fprintf(stderr, "bpc-register: %s\n", msg);
    ret = 2;
  } else if (o.help) {
    if (rank == 0) {
      char names[256];
      scan_names(names, sizeof names);
      printf("%s\nScan algorithms: %s\nThis build: %s\n", usage_text, names,
             reg_have_png() ? "with libpng (PNG input and output)"
                            : "without libpng (only --synthetic, no PNG output)");
    }
    ret = 0;
  } else
    ret = run(&o, rank, size);
  free(o.inputs);
  MPI_Finalize();
  return ret;
}
