/*
 * apps/bpc-entropy.c - histograms and Shannon entropy of a 3-D scalar field
 * with merge-reduce, full or partial (DIY's analysis example).
 *
 * The field (a built-in synthetic one, or a raw float32 file, x fastest) is
 * decomposed into blocks (bpc_decomp_t) over the processes; every block
 * reads its own part (core bounds) and builds a histogram of its values
 * (uint64 counts over --bins bins of [lo, hi)). bpc_merge adds histograms:
 *  - full reduction (default): one histogram of the whole field, at gid 0;
 *  - --rounds r: a partial reduction; every remaining root holds the
 *    histogram of its region (its group of blocks).
 * Rank 0 prints one line per region: root gid, the gids it absorbed, the
 * bounding box of their blocks, the number of points and the entropy
 * H = -sum p log2 p (bits). Counts are integers and the entropy is computed
 * from them in bin order on the root's rank, so the table is identical for
 * any number of processes and any blocks per process (only the "# run"
 * comment line names the process count).
 *
 *   mpirun -np 4 bpc-entropy [--dims X,Y,Z] [--input FILE] [--blocks N]
 *       [--bins B] [--range LO,HI] [--rounds R] [--k LIST]
 *       [--algorithm NAME] [--assign contiguous|round-robin] [--histogram]
 *   bpc-entropy --dump FILE [--dims X,Y,Z]     (write the synthetic field)
 *
 * Exit status: 0 on success (and --help), 2 for a bad option (message from
 * rank 0, every rank exits 2), 1 if reading the input or the library fails.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "bpc.h"
#include "common/app_args.h"
#include "common/app_mix.h"

static const char *usage_text =
    "usage: bpc-entropy [options]\n"
    "Histogram and Shannon entropy of a 3-D scalar field, per region (partial\n"
    "merge-reduce) or for the whole field (full merge-reduce).\n"
    "\n"
    "  --dims X,Y,Z         field size (default 64,64,64)\n"
    "  --input FILE         raw float32 file of X*Y*Z values, x fastest\n"
    "                       (default: the built-in synthetic field)\n"
    "  --blocks N           number of blocks (default 64)\n"
    "  --bins B             histogram bins (default 64)\n"
    "  --range LO,HI        value range of the bins (default: [-1, 2) for the\n"
    "                       synthetic field, the data's min and max for a file);\n"
    "                       values outside go to the first or last bin\n"
    "  --rounds R           merge rounds; 0 = all (default); fewer give one\n"
    "                       histogram per region\n"
    "  --k LIST             k-vector, e.g. 4,4,4 (default: the blocks per\n"
    "                       dimension, x first: round 1 merges rows of blocks\n"
    "                       along x, round 2 those along y, ...)\n"
    "  --algorithm NAME     doubling (default: regions are runs of gids),\n"
    "                       halving (strided regions) or auto\n"
    "  --assign MODE        contiguous (default) or round-robin\n"
    "  --histogram          also print each region's histogram\n"
    "  --dump FILE          write the synthetic field (--dims) to FILE as raw\n"
    "                       float32, x fastest, and exit (rank 0 writes)\n"
    "  --help               this text\n"
    "\n"
    "Output (rank 0): one line per region: root gid, absorbed gids (a range\n"
    "a-b, or a-b/s for every s-th gid), bounding box [min,max) per dimension,\n"
    "points and entropy in bits.\n";

typedef struct opts {
  int64_t dims[3];
  const char *input;
  const char *dump;
  int nblocks;
  int bins;
  double lo, hi;
  int range_given;
  int rounds;
  int k[64];
  int nk;
  const char *algorithm;
  bpc_assign_mode_t assign;
  int histogram;
  int help;
} opts_t;

typedef struct app {
  opts_t o;
  bpc_ctx_t *ctx;
  bpc_decomp_t *d;
  int rank, size;
  const int *gids;
  int nl;
  float **field; /* per local block: its core values, x fastest */
  int64_t *npts; /* per local block */
  bpc_buf_t *items;
  uint64_t *hist; /* nl * bins */
} app_t;

/* ------------------------------------------------------------ options */

static int parse_args(int argc, char **argv, opts_t *o, char *msg, size_t len)
{
  memset(o, 0, sizeof *o);
  o->dims[0] = o->dims[1] = o->dims[2] = 64;
  o->nblocks = 64;
  o->bins = 64;
  o->lo = -1.0;
  o->hi = 2.0;
  o->algorithm = "doubling";
  o->assign = BPC_ASSIGN_CONTIGUOUS;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    char name[32];
    const char *val = NULL, *eq = strchr(a, '=');
    size_t nlen = eq ? (size_t)(eq - a) : strlen(a);
    if (strncmp(a, "--", 2) != 0 || nlen >= sizeof name) {
      snprintf(msg, len, "unexpected argument '%s' (try --help)", a);
      return -1;
    }
    memcpy(name, a, nlen);
    name[nlen] = '\0';
    if (strcmp(name, "--help") == 0) {
      o->help = 1;
      return 0;
    }
    if (strcmp(name, "--histogram") == 0) {
      o->histogram = 1;
      continue;
    }
    if (eq)
      val = eq + 1;
    else if (i + 1 < argc)
      val = argv[++i];
    else {
      snprintf(msg, len, "option '%s' needs a value", name);
      return -1;
    }
    long long v[64];
    int n = 0;
    if (strcmp(name, "--dims") == 0) {
      if (app_parse_ll_list(val, ",x", 1, (long long)1 << 40, v, 3, &n) || n != 3) {
        snprintf(msg, len, "--dims '%s': want three positive sizes X,Y,Z", val);
        return -1;
      }
      const long long most = 1LL << 32; /* points (float32): 16 GiB */
      if ((double)v[0] * (double)v[1] * (double)v[2] > (double)most) {
        snprintf(msg, len, "--dims '%s': the field is too large (at most %lld points)", val,
                 most);
        return -1;
      }
      for (int d = 0; d < 3; d++)
        o->dims[d] = v[d];
    } else if (strcmp(name, "--input") == 0) {
      o->input = val;
    } else if (strcmp(name, "--dump") == 0) {
      o->dump = val;
    } else if (strcmp(name, "--blocks") == 0 || strcmp(name, "--bins") == 0 ||
               strcmp(name, "--rounds") == 0) {
      long long lo = strcmp(name, "--rounds") == 0 ? 0 : 1;
      if (app_parse_ll_list(val, ",x", lo, 1 << 24, v, 1, &n) || n != 1) {
        snprintf(msg, len, "%s '%s': want an integer in %lld..%d", name, val, lo, 1 << 24);
        return -1;
      }
      if (name[2] == 'b' && name[3] == 'l')
        o->nblocks = (int)v[0];
      else if (name[2] == 'b')
        o->bins = (int)v[0];
      else
        o->rounds = (int)v[0];
    } else if (strcmp(name, "--range") == 0) {
      char *end;
      o->lo = strtod(val, &end);
      if (*end != ',') {
        snprintf(msg, len, "--range '%s': want LO,HI", val);
        return -1;
      }
      o->hi = strtod(end + 1, &end);
      if (*end != '\0' || !(o->hi > o->lo)) {
        snprintf(msg, len, "--range '%s': want LO,HI with LO < HI", val);
        return -1;
      }
      o->range_given = 1;
    } else if (strcmp(name, "--k") == 0) {
      if (app_parse_ll_list(val, ",x", 1, INT_MAX, v, 64, &n)) {
        snprintf(msg, len, "--k '%s': want a list like 4,4,4", val);
        return -1;
      }
      for (int r = 0; r < n; r++)
        o->k[r] = (int)v[r];
      o->nk = n;
    } else if (strcmp(name, "--algorithm") == 0) {
      o->algorithm = val;
    } else if (strcmp(name, "--assign") == 0) {
      if (strcmp(val, "contiguous") == 0)
        o->assign = BPC_ASSIGN_CONTIGUOUS;
      else if (strcmp(val, "round-robin") == 0)
        o->assign = BPC_ASSIGN_ROUND_ROBIN;
      else {
        snprintf(msg, len, "--assign '%s': want contiguous or round-robin", val);
        return -1;
      }
    } else {
      snprintf(msg, len, "unknown option '%s' (try --help)", name);
      return -1;
    }
  }
  return 0;
}

/* -------------------------------------------------------------- field */

static uint32_t hash3(uint64_t x, uint64_t y, uint64_t z)
{
  return (uint32_t)(app_mix64(x * 0x9e3779b97f4a7c15ull ^ y * 0xc2b2ae3d27d4eb4full ^
                              z * 0x165667b19e3779f9ull) >> 32);
}

/* The synthetic field: smooth waves whose amplitude grows with z, a ramp
 * in y, and noise that grows with x, so regions have different entropy.
 * Values stay within [-1, 2). Computed in float from integer coordinates:
 * the same value for a point whichever block holds it. */
static float synthetic(const int64_t dims[3], int64_t x, int64_t y, int64_t z)
{
  const double fx = (double)x / (double)dims[0], fy = (double)y / (double)dims[1],
               fz = (double)z / (double)dims[2];
  const double pi = 3.14159265358979323846;
  double v = 0.6 * fz * sin(2.0 * pi * 3.0 * fx) * cos(2.0 * pi * 2.0 * fy) + 0.5 * fy;
  double noise = (double)(hash3((uint64_t)x, (uint64_t)y, (uint64_t)z) % 10000u) / 10000.0;
  v += 0.8 * fx * (noise - 0.5);
  return (float)v;
}

/* Read the core of a block: from the file, or the synthetic field. */
static int read_block(app_t *A, int li, FILE *f, char *msg, size_t len)
{
  bpc_bounds_t b;
  bpc_decomp_bounds(A->d, A->gids[li], &b, NULL);
  int64_t ext[3];
  for (int d = 0; d < 3; d++)
    ext[d] = b.max[d] - b.min[d];
  int64_t n = ext[0] * ext[1] * ext[2];
  A->npts[li] = n;
  A->field[li] = malloc((size_t)(n > 0 ? n : 1) * sizeof(float));
  if (A->field[li] == NULL) {
    snprintf(msg, len, "out of memory for a block of %" PRId64 " points", n);
    return -1;
  }
  float *p = A->field[li];
  for (int64_t z = b.min[2]; z < b.max[2]; z++)
    for (int64_t y = b.min[1]; y < b.max[1]; y++) {
      if (f != NULL) {
        int64_t off = ((z * A->o.dims[1] + y) * A->o.dims[0] + b.min[0]) * (int64_t)sizeof(float);
        if (fseeko(f, (off_t)off, SEEK_SET) != 0 ||
            fread(p, sizeof(float), (size_t)ext[0], f) != (size_t)ext[0]) {
          snprintf(msg, len, "%s: cannot read row y=%" PRId64 " z=%" PRId64 " (file too short?)",
                   A->o.input, y, z);
          return -1;
        }
        p += ext[0];
      } else {
        for (int64_t x = b.min[0]; x < b.max[0]; x++)
          *p++ = synthetic(A->o.dims, x, y, z);
      }
    }
  return 0;
}

/* Write the synthetic field as raw float32 (x fastest). 0 or -1. */
static int dump_field(const opts_t *o, char *msg, size_t len)
{
  FILE *f = fopen(o->dump, "wb");
  float *row = malloc(sizeof(float) * (size_t)o->dims[0]);
  int rc = 0;
  if (f == NULL || row == NULL) {
    snprintf(msg, len, "%s: %s", o->dump, f == NULL ? strerror(errno) : "out of memory");
    rc = -1;
  }
  for (int64_t z = 0; z < o->dims[2] && rc == 0; z++)
    for (int64_t y = 0; y < o->dims[1] && rc == 0; y++) {
      for (int64_t x = 0; x < o->dims[0]; x++)
        row[x] = synthetic(o->dims, x, y, z);
      if (fwrite(row, sizeof(float), (size_t)o->dims[0], f) != (size_t)o->dims[0]) {
        snprintf(msg, len, "%s: write failed", o->dump);
        rc = -1;
      }
    }
  if (f != NULL && fclose(f) != 0 && rc == 0) {
    snprintf(msg, len, "%s: write failed", o->dump);
    rc = -1;
  }
  free(row);
  return rc;
}

/* ----------------------------------------------------------- histograms */

static int bin_of(double v, double lo, double hi, int bins)
{
  double t = (v - lo) / (hi - lo) * bins;
  if (!(t >= 0.0)) /* also NaN */
    return 0;
  if (t >= bins)
    return bins - 1;
  return (int)t;
}

static double entropy_bits(const uint64_t *h, int bins, uint64_t *total)
{
  uint64_t n = 0;
  for (int i = 0; i < bins; i++)
    n += h[i];
  *total = n;
  double e = 0.0;
  for (int i = 0; i < bins; i++)
    if (h[i] > 0) {
      double p = (double)h[i] / (double)n;
      e -= p * log2(p);
    }
  return e;
}

/* "a-b", "a-b/s" or "a,b,c,..." for an ascending list */
static void format_gids(const int *g, int n, char *buf, size_t len)
{
  if (n == 1) {
    snprintf(buf, len, "%d", g[0]);
    return;
  }
  int step = g[1] - g[0], arith = 1;
  for (int i = 2; i < n; i++)
    arith &= g[i] - g[i - 1] == step;
  if (arith && step == 1)
    snprintf(buf, len, "%d-%d", g[0], g[n - 1]);
  else if (arith)
    snprintf(buf, len, "%d-%d/%d", g[0], g[n - 1], step);
  else {
    size_t w = 0;
    for (int i = 0; i < n && w + 12 < len; i++)
      w += (size_t)snprintf(buf + w, len - w, i ? ",%d" : "%d", g[i]);
  }
}

/* ----------------------------------------------------------------- main */

static int run(app_t *A)
{
  opts_t *o = &A->o;
  char msg[512] = "";
  int lrc = 0, rc;
  bpc_merge_result_t *res = NULL;
  FILE *f = NULL;
  int *absorbed = NULL;
  double *ent_local = NULL;
  int ret = 1;

  bpc_decomp_params_t p = bpc_decomp_params_default();
  p.dim = 3;
  for (int d = 0; d < 3; d++)
    p.domain_max[d] = o->dims[d];
  p.nblocks = o->nblocks;
  p.assign = o->assign;
  rc = bpc_decomp_create(A->ctx, &p, &A->d);
  if (rc != BPC_OK) {
    if (A->rank == 0)
      fprintf(stderr, "bpc-entropy: %s\n", bpc_last_error(A->ctx));
    return 1;
  }
  bpc_assign_local(bpc_decomp_assign(A->d), &A->gids, &A->nl);
  size_t nb = A->nl > 0 ? (size_t)A->nl : 1;
  A->field = calloc(nb, sizeof *A->field);
  A->npts = calloc(nb, sizeof *A->npts);
  A->items = calloc(nb, sizeof *A->items);
  A->hist = calloc(nb * (size_t)o->bins, sizeof *A->hist);
  if (!A->field || !A->npts || !A->items || !A->hist) {
    snprintf(msg, sizeof msg, "out of memory");
    lrc = 1;
  }

  /* read */
  if (lrc == 0 && o->input != NULL && A->nl > 0) {
    f = fopen(o->input, "rb");
    if (f == NULL) {
      snprintf(msg, sizeof msg, "%s: %s", o->input, strerror(errno));
      lrc = 1;
    }
  }
  for (int i = 0; i < A->nl && lrc == 0; i++)
    lrc = read_block(A, i, f, msg, sizeof msg) != 0;
  if (f)
    fclose(f);
  int any = 0;
  MPI_Allreduce(&lrc, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (any) {
    if (lrc)
      fprintf(stderr, "bpc-entropy: rank %d: %s\n", A->rank, msg);
    goto cleanup;
  }

  /* value range of a file: the data's min and max (exact, any order) */
  if (o->input != NULL && !o->range_given) {
    double mm[2] = {INFINITY, INFINITY}, g[2]; /* min and -max */
    for (int i = 0; i < A->nl; i++)
      for (int64_t j = 0; j < A->npts[i]; j++) {
        double v = A->field[i][j];
        if (v < mm[0])
          mm[0] = v;
        if (-v < mm[1])
          mm[1] = -v;
      }
    MPI_Allreduce(mm, g, 2, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
    o->lo = g[0];
    o->hi = -g[1];
    if (!(o->hi > o->lo)) /* a constant field: one bin holds everything */
      o->hi = o->lo + 1.0;
    else /* include the maximum in the last bin */
      o->hi = nextafter(o->hi, INFINITY);
  }

  /* histograms */
  for (int i = 0; i < A->nl; i++) {
    uint64_t *h = A->hist + (size_t)i * (size_t)o->bins;
    for (int64_t j = 0; j < A->npts[i]; j++)
      h[bin_of(A->field[i][j], o->lo, o->hi, o->bins)]++;
    A->items[i].data = h;
    A->items[i].count = (size_t)o->bins;
  }

  /* merge */
  bpc_type_t t = bpc_type_contiguous(sizeof(uint64_t), MPI_UINT64_T);
  /* histogram sums: bpc's built-in sum (commutative, bin by bin) */
  bpc_merge_op_t op = {.fn = NULL};
  bpc_op_builtin("sum", MPI_UINT64_T, &op.binary);
  bpc_merge_params_t mp = bpc_merge_params_default();
  /* default k-vector: the divisions, x first (merge along x, then y, then
   * z), the same for any process count, and every region is a box */
  if (o->nk == 0) {
    int divs[BPC_MAX_DIM];
    bpc_decomp_divs(A->d, divs);
    for (int d = 0; d < 3; d++)
      if (divs[d] > 1)
        o->k[o->nk++] = divs[d];
  }
  mp.k = o->nk ? o->k : NULL;
  mp.nk = o->nk;
  mp.rounds = o->rounds;
  mp.algorithm = o->algorithm;
  mp.count = (size_t)o->bins; /* every histogram has this many bins */
  rc = bpc_merge(A->ctx, bpc_decomp_assign(A->d), &t, A->items, &op, &mp, &res);
  if (rc != BPC_OK) {
    if (A->rank == 0)
      fprintf(stderr, "bpc-entropy: merge failed: %s: %s\n", bpc_err_name(rc),
              bpc_last_error(A->ctx));
    goto cleanup;
  }

  /* local roots: entropy here; gather (gid, points, entropy, histogram) */
  int nroot = 0;
  for (int i = 0; i < A->nl; i++) {
    int isr = 0;
    bpc_merge_is_root(res, A->gids[i], &isr);
    nroot += isr;
  }
  const int rec = 3 + o->bins; /* doubles per root: gid, points, entropy, bins */
  ent_local = calloc((size_t)(nroot > 0 ? nroot : 1) * (size_t)rec, sizeof(double));
  for (int i = 0, w = 0; i < A->nl; i++) {
    int isr = 0;
    bpc_merge_is_root(res, A->gids[i], &isr);
    if (!isr)
      continue;
    uint64_t tot = 0;
    const uint64_t *h = A->items[i].data;
    double *r = ent_local + (size_t)w * (size_t)rec;
    r[2] = entropy_bits(h, o->bins, &tot);
    r[0] = A->gids[i];
    r[1] = (double)tot;
    for (int b = 0; b < o->bins; b++)
      r[3 + b] = (double)h[b];
    w++;
  }
  int cnt = nroot * rec, *counts = NULL, *displs = NULL;
  double *all = NULL;
  if (A->rank == 0) {
    counts = calloc((size_t)A->size, sizeof(int));
    displs = calloc((size_t)A->size, sizeof(int));
  }
  MPI_Gather(&cnt, 1, MPI_INT, counts, 1, MPI_INT, 0, MPI_COMM_WORLD);
  int total = 0;
  if (A->rank == 0) {
    for (int r = 0; r < A->size; r++) {
      displs[r] = total;
      total += counts[r];
    }
    all = malloc(sizeof(double) * (size_t)(total > 0 ? total : 1));
  }
  MPI_Gatherv(ent_local, cnt, MPI_DOUBLE, all, counts, displs, MPI_DOUBLE, 0, MPI_COMM_WORLD);

  if (A->rank == 0) {
    bpc_merge_info_t info;
    int divs[BPC_MAX_DIM];
    char kv[256] = "1";
    bpc_merge_info(res, &info);
    const char *an = info.name;
    const int nk = info.nk, rounds = info.rounds;
    for (int r = 0, w = 0; r < nk && w < (int)sizeof kv - 12; r++)
      w += snprintf(kv + w, sizeof kv - (size_t)w, r ? "x%d" : "%d", info.k[r]);
    bpc_decomp_divs(A->d, divs);
    const int nreg = total / rec;
    printf("# bpc-entropy: field %" PRId64 "x%" PRId64 "x%" PRId64 " (%s), %d blocks (%dx%dx%d), "
           "%d bins in [%.9g, %.9g)\n",
           o->dims[0], o->dims[1], o->dims[2], o->input ? o->input : "synthetic", o->nblocks,
           divs[0], divs[1], divs[2], o->bins, o->lo, o->hi);
    printf("# merge: %s, k-vector %s, %d of %d rounds: %d region%s\n", an, kv, rounds, nk, nreg,
           nreg == 1 ? "" : "s");
    printf("# run: %d process%s\n", A->size, A->size == 1 ? "" : "es");
    printf("%6s %-16s %-34s %12s %10s\n", "root", "gids", "bounds", "points", "entropy");
    /* sort the regions by root gid (the gather is in rank order) */
    int *idx = malloc(sizeof(int) * (size_t)(nreg > 0 ? nreg : 1));
    for (int i = 0; i < nreg; i++)
      idx[i] = i;
    for (int i = 1; i < nreg; i++)
      for (int j = i; j > 0 && all[(size_t)idx[j - 1] * rec] > all[(size_t)idx[j] * rec]; j--) {
        int tmp = idx[j];
        idx[j] = idx[j - 1];
        idx[j - 1] = tmp;
      }
    absorbed = malloc(sizeof(int) * (size_t)o->nblocks);
    for (int i = 0; i < nreg; i++) {
      const double *r = all + (size_t)idx[i] * rec;
      int root = (int)r[0], na = 0;
      bpc_merge_absorbed(res, root, absorbed, o->nblocks, &na);
      char gl[64], bb[96];
      format_gids(absorbed, na, gl, sizeof gl);
      bpc_bounds_t box, b;
      bpc_decomp_bounds(A->d, absorbed[0], &box, NULL);
      for (int q = 1; q < na; q++) {
        bpc_decomp_bounds(A->d, absorbed[q], &b, NULL);
        for (int d = 0; d < 3; d++) {
          if (b.min[d] < box.min[d])
            box.min[d] = b.min[d];
          if (b.max[d] > box.max[d])
            box.max[d] = b.max[d];
        }
      }
      snprintf(bb, sizeof bb, "[%" PRId64 ",%" PRId64 ")x[%" PRId64 ",%" PRId64 ")x[%" PRId64
                              ",%" PRId64 ")",
               box.min[0], box.max[0], box.min[1], box.max[1], box.min[2], box.max[2]);
      printf("%6d %-16s %-34s %12.0f %10.6f\n", root, gl, bb, r[1], r[2]);
      if (o->histogram) {
        printf("       histogram:");
        for (int q = 0; q < o->bins; q++)
          printf(" %.0f", r[3 + q]);
        printf("\n");
      }
    }
    free(idx);
  }
  free(counts);
  free(displs);
  free(all);
  ret = 0;

cleanup:
  bpc_merge_result_destroy(&res);
  for (int i = 0; A->field && i < A->nl; i++)
    free(A->field[i]);
  free(A->field);
  free(A->npts);
  free(A->items);
  free(A->hist);
  free(absorbed);
  free(ent_local);
  bpc_decomp_destroy(&A->d);
  return ret;
}

int main(int argc, char **argv)
{
  app_t A;
  char msg[512] = "";
  int provided, ret = 1;
  memset(&A, 0, sizeof A);
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &A.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &A.size);
  if (parse_args(argc, argv, &A.o, msg, sizeof msg) != 0) {
    if (A.rank == 0)
      fprintf(stderr, "bpc-entropy: %s\n", msg);
    ret = 2;
    goto finish;
  }
  if (A.o.help) {
    if (A.rank == 0)
      fputs(usage_text, stdout);
    ret = 0;
    goto finish;
  }
  if (A.o.dump != NULL) {
    ret = 0;
    if (A.rank == 0 && dump_field(&A.o, msg, sizeof msg) != 0) {
      fprintf(stderr, "bpc-entropy: %s\n", msg);
      ret = 1;
    }
    MPI_Bcast(&ret, 1, MPI_INT, 0, MPI_COMM_WORLD);
    goto finish;
  }
  if (bpc_init(MPI_COMM_WORLD, NULL, &A.ctx) != BPC_OK) {
    if (A.rank == 0)
      fprintf(stderr, "bpc-entropy: bpc_init failed\n");
    goto finish;
  }
  ret = run(&A);
  int worst = ret;
  MPI_Allreduce(&ret, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  ret = worst;
finish:
  bpc_finalize(&A.ctx);
  MPI_Finalize();
  return ret;
}
