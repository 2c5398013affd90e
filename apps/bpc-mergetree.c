/*
 * apps/bpc-mergetree.c - distributed merge trees and 0-dimensional
 * persistence of a 3-D scalar field (superlevel or sublevel sets).
 *
 * Every block sweeps its ghosted box with union-find in (value, gid) order;
 * merge-reduce glues the blocks' trees, pruned after every round to what the
 * remaining boundaries need (apps/mergetree/mt.h says how). Rank 0 prints
 * the persistence pairs sorted by birth (elder first), identical for every
 * block and process count, and the number of components at given
 * thresholds.
 *
 *   mpirun -np 4 bpc-mergetree [--dims X,Y,Z] [--field blobs|constant|noise]
 *       [--seed S] [--blobs N] [--noise A] [--levels L]
 *       [--input FILE.npy | --input FILE --dims X,Y,Z --type float32|float64]
 *       [--blocks N[,N...]] [--wrap] [--sublevel] [--persistence T]
 *       [--thresholds T1,T2,...] [--pairs FILE] [--json] [--progress]
 *   bpc-mergetree --dump FILE.npy [field options]   (write the field)
 *
 * Exit status: 0 on success (and --help), 2 for bad input (an option, a
 * file that is not a supported .npy, a truncated file, NaN in the field; the
 * message comes from rank 0 and every rank exits 2), 1 otherwise.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "bpc.h"
#include "mergetree/mt.h"
#include "common/app_args.h"

#define MAX_COUNTS 32
#define MAX_THRESH 64

static const char *usage_text =
    "usage: bpc-mergetree [options]\n"
    "Merge tree and persistence pairs of a 3-D scalar field (6-connected grid),\n"
    "computed over blocks with bpc's merge-reduce.\n"
    "\n"
    "Field (default: synthetic blobs, 32,32,32):\n"
    "  --dims X,Y,Z         size (synthetic and raw files)\n"
    "  --field KIND         blobs (seeded Gaussian blobs plus noise), constant, noise\n"
    "  --seed S             seed of the synthetic field (default 1)\n"
    "  --blobs N            number of blobs (default 8)\n"
    "  --noise A            noise amplitude (default 0.05; --bench: 0.001)\n"
    "  --levels L           quantise values to L levels per unit (plateaus: many ties)\n"
    "  --input FILE         a .npy file (float32/float64, little-endian, C order,\n"
    "                       shape (Z, Y, X)), or a raw file with --dims and --type\n"
    "  --type T             raw file element: float32 (default) or float64\n"
    "Run:\n"
    "  --blocks N[,N...]    block counts (default 8); several: one run each\n"
    "  --wrap               periodic boundary in every dimension\n"
    "  --sublevel           sublevel sets (minima merge); default superlevel\n"
    "  --threads N          OpenMP threads over local blocks (default: OpenMP's)\n"
    "  --tile E             sweep blocks wider than E in tiles of at most E^3\n"
    "                       vertices, so memory does not grow with the block\n"
    "                       (default 32; 0: whole blocks)\n"
    "Output (rank 0):\n"
    "  --persistence T      keep pairs with |death - birth| >= T (default 0: all);\n"
    "                       a segmentation's branches below T take the label\n"
    "                       of the branch they die into\n"
    "  --thresholds LIST    print the number of components at each threshold\n"
    "  --pairs FILE         write the pairs to FILE instead of stdout\n"
    "  --segment FILE       the segmentation as .npy (int64 label per vertex: the\n"
    "                       birth vertex of its branch; shape (Z, Y, X))\n"
    "  --vtk FILE           the segmentation as legacy VTK image data (ParaView)\n"
    "  --png FILE           slice z of the segmentation as PNG, a colour per label\n"
    "  --slice Z            the slice of --png (default: the middle)\n"
    "  --json               one JSON summary line per block count on stdout\n"
    "                       (pairs then go only to --pairs, if given)\n"
    "  --progress           progress lines on stderr\n"
    "  --dump FILE          write the field as .npy and exit\n"
    "Benchmark (one table line per block count; no pairs printed):\n"
    "  --bench              time the run (default field 256,256,256): median of\n"
    "                       --reps R runs (default 3) of the max over ranks, bytes\n"
    "                       sent per rank, peak memory per rank (maxrss, and the\n"
    "                       run's own heap peak above what was in use before)\n"
    "  --baseline gather    time the baseline instead: gather the field to rank 0\n"
    "                       and sweep it there with one serial union-find\n"
    "  --help               this text\n";

typedef struct opts {
  mt_field_t f;
  int counts[MAX_COUNTS], ncounts;
  int wrap, sub, nthreads, tile;
  double persistence;
  double thresh[MAX_THRESH];
  int nthresh;
  const char *pairs, *dump, *type;
  const char *seg_npy, *seg_vtk, *seg_png;
  long long slice; /* -1: the middle */
  int json, progress, help;
  int bench, gather, reps; /* --bench, --baseline gather, --reps */
} opts_t;

/* ------------------------------------------------------------ options */

/* a list of integers in [lo, hi] */
static int parse_ints(const char *s, double lo, double hi, double *out, int cap, int *n)
{
  if (app_parse_double_list(s, out, cap, n) != 0)
    return -1;
  for (int i = 0; i < *n; i++)
    if (out[i] != floor(out[i]) || out[i] < lo || out[i] > hi)
      return -1;
  return 0;
}

static int parse_args(int argc, char **argv, opts_t *o, char *msg, size_t len)
{
  memset(o, 0, sizeof *o);
  o->f.dims[0] = o->f.dims[1] = o->f.dims[2] = 32;
  o->f.synth = MT_BLOBS;
  o->f.seed = 1;
  o->f.nblobs = 8;
  o->f.noise = 0.05;
  o->counts[0] = 8;
  o->ncounts = 1;
  o->slice = -1;
  o->tile = 32;
  int dims_given = 0, noise_given = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *val = NULL;
    if (strcmp(a, "--help") == 0) {
      o->help = 1;
      return 0;
    }
    if (strcmp(a, "--bench") == 0) {
      o->bench = 1;
      continue;
    }
    if (strcmp(a, "--wrap") == 0 || strcmp(a, "--sublevel") == 0 || strcmp(a, "--json") == 0 ||
        strcmp(a, "--progress") == 0 || strcmp(a, "--superlevel") == 0) {
      if (a[2] == 'w')
        o->wrap = 1;
      else if (a[4] == 'b')
        o->sub = 1;
      else if (a[4] == 'p')
        o->sub = 0;
      else if (a[2] == 'j')
        o->json = 1;
      else
        o->progress = 1;
      continue;
    }
    if (strncmp(a, "--", 2) != 0) {
      snprintf(msg, len, "unexpected argument '%s' (try --help)", a);
      return -1;
    }
    if (i + 1 >= argc) {
      snprintf(msg, len, "option '%s' needs a value", a);
      return -1;
    }
    val = argv[++i];
    double v[MAX_THRESH];
    int n = 0;
    if (strcmp(a, "--dims") == 0) {
      if (parse_ints(val, 1, 1e9, v, 3, &n) || n != 3) {
        snprintf(msg, len, "--dims '%s': want three positive sizes X,Y,Z", val);
        return -1;
      }
      if (v[0] * v[1] * v[2] > 4294967296.0) {
        snprintf(msg, len, "--dims '%s': the field is too large (at most 2^32 points)", val);
        return -1;
      }
      for (int d = 0; d < 3; d++)
        o->f.dims[d] = (int64_t)v[d];
      dims_given = 1;
    } else if (strcmp(a, "--field") == 0) {
      if (strcmp(val, "blobs") == 0)
        o->f.synth = MT_BLOBS;
      else if (strcmp(val, "constant") == 0)
        o->f.synth = MT_CONSTANT;
      else if (strcmp(val, "noise") == 0)
        o->f.synth = MT_NOISE;
      else {
        snprintf(msg, len, "--field '%s': want blobs, constant or noise", val);
        return -1;
      }
    } else if (strcmp(a, "--seed") == 0 || strcmp(a, "--blobs") == 0 ||
               strcmp(a, "--levels") == 0 || strcmp(a, "--threads") == 0) {
      const double lo = strcmp(a, "--threads") == 0 ? 1 : 0;
      if (parse_ints(val, lo, 1e6, v, 1, &n) || n != 1) {
        snprintf(msg, len, "%s '%s': want an integer in %g..1000000", a, val, lo);
        return -1;
      }
      if (a[2] == 's')
        o->f.seed = (unsigned)v[0];
      else if (a[2] == 'b')
        o->f.nblobs = (int)v[0];
      else if (a[2] == 'l')
        o->f.levels = (int)v[0];
      else
        o->nthreads = (int)v[0];
    } else if (strcmp(a, "--tile") == 0) {
      if (parse_ints(val, 0, 1e6, v, 1, &n) || n != 1) {
        snprintf(msg, len, "%s '%s': want an integer in 0..1000000", a, val);
        return -1;
      }
      o->tile = (int)v[0];
    } else if (strcmp(a, "--noise") == 0 || strcmp(a, "--persistence") == 0) {
      if (app_parse_double_list(val, v, 1, &n) || n != 1 || v[0] < 0) {
        snprintf(msg, len, "%s '%s': want a number >= 0", a, val);
        return -1;
      }
      if (a[2] == 'n') {
        o->f.noise = v[0];
        noise_given = 1;
      }
      else
        o->persistence = v[0];
    } else if (strcmp(a, "--input") == 0) {
      o->f.path = val;
    } else if (strcmp(a, "--type") == 0) {
      if (strcmp(val, "float32") != 0 && strcmp(val, "float64") != 0) {
        snprintf(msg, len, "--type '%s': want float32 or float64", val);
        return -1;
      }
      o->type = val;
    } else if (strcmp(a, "--blocks") == 0) {
      if (parse_ints(val, 1, 1 << 24, v, MAX_COUNTS, &n)) {
        snprintf(msg, len, "--blocks '%s': want block counts in 1..%d, e.g. 8,64", val, 1 << 24);
        return -1;
      }
      for (int q = 0; q < n; q++)
        o->counts[q] = (int)v[q];
      o->ncounts = n;
    } else if (strcmp(a, "--thresholds") == 0) {
      if (app_parse_double_list(val, o->thresh, MAX_THRESH, &o->nthresh)) {
        snprintf(msg, len, "--thresholds '%s': want finite numbers T1,T2,...", val);
        return -1;
      }
    } else if (strcmp(a, "--pairs") == 0) {
      o->pairs = val;
    } else if (strcmp(a, "--segment") == 0) {
      o->seg_npy = val;
    } else if (strcmp(a, "--vtk") == 0) {
      o->seg_vtk = val;
    } else if (strcmp(a, "--png") == 0) {
#ifndef MT_HAVE_PNG
      snprintf(msg, len, "--png: bpc-mergetree was built without libpng");
      return -1;
#endif
      o->seg_png = val;
    } else if (strcmp(a, "--slice") == 0) {
      if (parse_ints(val, 0, 1e9, v, 1, &n) || n != 1) {
        snprintf(msg, len, "--slice '%s': want a z index >= 0", val);
        return -1;
      }
      o->slice = (long long)v[0];
    } else if (strcmp(a, "--dump") == 0) {
      o->dump = val;
    } else if (strcmp(a, "--baseline") == 0) {
      if (strcmp(val, "gather") != 0) {
        snprintf(msg, len, "--baseline '%s': want gather", val);
        return -1;
      }
      o->gather = 1;
    } else if (strcmp(a, "--reps") == 0) {
      if (parse_ints(val, 1, 1000, v, 1, &n) || n != 1) {
        snprintf(msg, len, "--reps '%s': want an integer in 1..1000", val);
        return -1;
      }
      o->reps = (int)v[0];
    } else {
      snprintf(msg, len, "unknown option '%s' (try --help)", a);
      return -1;
    }
  }
  if (o->reps == 0)
    o->reps = 3;
  if (o->gather && !o->bench) {
    snprintf(msg, len, "--baseline needs --bench");
    return -1;
  }
  if (o->bench && !dims_given)
    o->f.dims[0] = o->f.dims[1] = o->f.dims[2] = 256;
  /* 0.05 swamps the blobs' tails: ~11% of the vertices are maxima, nearly
   * pure noise (1/7); the bench's field has features and some noise */
  if (o->bench && !noise_given)
    o->f.noise = 0.001;
  if (o->bench && (o->f.path || o->seg_npy || o->seg_vtk || o->seg_png || o->pairs)) {
    snprintf(msg, len, "--bench runs the synthetic field and writes no files");
    return -1;
  }
  if (o->f.path != NULL) {
    size_t pl = strlen(o->f.path);
    int npy = pl >= 4 && strcmp(o->f.path + pl - 4, ".npy") == 0;
    if (npy && (dims_given || o->type)) {
      snprintf(msg, len, "--input %s: a .npy file has its own shape and type; drop --dims "
                         "and --type", o->f.path);
      return -1;
    }
    if (!npy && !dims_given) {
      snprintf(msg, len, "--input %s: a raw file (not .npy) needs --dims X,Y,Z (and --type)",
               o->f.path);
      return -1;
    }
    o->f.source = npy ? MT_NPY : MT_RAW;
    o->f.is_double = o->type != NULL && strcmp(o->type, "float64") == 0;
  } else if (o->type != NULL) {
    snprintf(msg, len, "--type needs --input (a raw file)");
    return -1;
  }
  return 0;
}

/* ------------------------------------------------------------ output */

static void fmt_value(char *buf, size_t len, double v, int is_double)
{
  if (isinf(v))
    snprintf(buf, len, v > 0 ? "inf" : "-inf");
  else
    snprintf(buf, len, is_double ? "%.17g" : "%.9g", v);
}

/* Components of the superlevel set {f >= t} (sublevel: {f <= t}): the
 * pairs alive at t, i.e. born at or before t and dying after it. */
static int64_t components_at(const mt_pair_t *p, size_t n, double t, int sub)
{
  int64_t c = 0;
  for (size_t i = 0; i < n; i++)
    c += sub ? (p[i].birth <= t && p[i].death > t) : (p[i].birth >= t && p[i].death < t);
  return c;
}

static int write_pairs(const opts_t *o, FILE *out, const mt_pair_t *p, size_t n)
{
  const int dbl = o->f.is_double;
  size_t kept = 0;
  for (size_t i = 0; i < n; i++)
    kept += fabs(p[i].death - p[i].birth) >= o->persistence;
  fprintf(out, "# bpc-mergetree: %s merge tree, field %" PRId64 "x%" PRId64 "x%" PRId64 "%s, "
               "6-connected, order (value, vertex)\n",
          o->sub ? "sublevel" : "superlevel", o->f.dims[0], o->f.dims[1], o->f.dims[2],
          o->wrap ? " periodic" : "");
  for (int i = 0; i < o->nthresh; i++) {
    char tb[40];
    snprintf(tb, sizeof tb, "%.15g", o->thresh[i]);
    /* the filter applies: components of persistence below T are merged away */
    int64_t c = 0;
    for (size_t q = 0; q < n; q++)
      if (fabs(p[q].death - p[q].birth) >= o->persistence)
        c += components_at(p + q, 1, o->thresh[i], o->sub);
    fprintf(out, "# components %s %s: %" PRId64 "\n", o->sub ? "<=" : ">=", tb, c);
  }
  fprintf(out, "# pairs: %zu of %zu (persistence >= %.15g)\n", kept, n, o->persistence);
  fprintf(out, "# birth death birth_vertex death_vertex\n");
  for (size_t i = 0; i < n; i++) {
    if (!(fabs(p[i].death - p[i].birth) >= o->persistence))
      continue;
    char b[40], d[40];
    fmt_value(b, sizeof b, p[i].birth, dbl);
    fmt_value(d, sizeof d, p[i].death, dbl);
    fprintf(out, "%s %s %" PRId64 " %" PRId64 "\n", b, d, p[i].bgid, p[i].dgid);
  }
  return ferror(out) ? -1 : 0;
}

/* Gather every rank's pairs at rank 0 (sorted there). */
static int gather_pairs(const mt_pairs_t *mine, int rank, int size, mt_pair_t **all, size_t *n)
{
  void *p = NULL;
  size_t bytes = 0;
  int rc = mt_gather0(mine->p, mine->n * sizeof(mt_pair_t), rank, size, &p, &bytes);
  *all = p;
  *n = bytes / sizeof(mt_pair_t);
  return rc;
}

static int64_t max_rss_kib(void);

static int cmp_i64x2(const void *a, const void *b)
{
  const int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* Index of birth gid g in the (birth, death) rows sorted by birth, or -1. */
static int64_t find_birth(const int64_t *rows, int64_t n, int64_t g)
{
  int64_t lo = 0, hi = n;
  while (lo < hi) {
    int64_t m = lo + (hi - lo) / 2;
    if (rows[2 * m] < g)
      lo = m + 1;
    else
      hi = m;
  }
  return lo < n && rows[2 * lo] == g ? lo : -1;
}

/*
 * --persistence T with a segmentation: a branch whose persistence is below T
 * (a printed pair's filter: |death - birth| < T, finite death) is merged into
 * the branch it dies into, the label of its death vertex (the elder birth of
 * the component the death vertex joins), and so on up while that one is
 * below T too. Every rank gets the pairs below T (allgather: memory in
 * their number, on every rank), finds the labels of the death vertices in
 * its blocks (max-reduce: each vertex is in one block's core) and relabels
 * its blocks. Collective; 0, or 1 (out of memory) on every rank.
 */
static int simplify_seg(const opts_t *o, const mt_pairs_t *pairs, mt_seg_t *seg, int size,
                        char *msg, size_t len)
{
  int64_t nmine = 0;
  for (size_t i = 0; i < pairs->n; i++)
    nmine += pairs->p[i].dgid >= 0 &&
             !(fabs(pairs->p[i].death - pairs->p[i].birth) >= o->persistence);
  int64_t *mine = malloc(sizeof *mine * (size_t)(2 * nmine + 1));
  int *counts = malloc(sizeof *counts * (size_t)size), *displs = malloc(sizeof *displs * (size_t)size);
  int64_t *rows = NULL, *into = NULL, *fin = NULL, *stack = NULL;
  int err = mine == NULL || counts == NULL || displs == NULL || 2 * nmine > INT_MAX, any = 0;
  int64_t w = 0;
  for (size_t i = 0; !err && i < pairs->n; i++)
    if (pairs->p[i].dgid >= 0 &&
        !(fabs(pairs->p[i].death - pairs->p[i].birth) >= o->persistence)) {
      mine[w++] = pairs->p[i].bgid;
      mine[w++] = pairs->p[i].dgid;
    }
  int cnt = err ? 0 : (int)(2 * nmine);
  MPI_Allgather(&cnt, 1, MPI_INT, counts, 1, MPI_INT, MPI_COMM_WORLD); /* counts: all ranks */
  int64_t total = 0;
  for (int r = 0; r < size; r++) {
    displs[r] = (int)total;
    total += counts[r];
  }
  const int64_t ns = total / 2;
  if (!err && total <= INT_MAX) {
    rows = malloc(sizeof *rows * (size_t)(total + 1));
    into = malloc(sizeof *into * (size_t)(ns + 1));
    fin = malloc(sizeof *fin * (size_t)(ns + 1));
    stack = malloc(sizeof *stack * (size_t)(ns + 1));
  }
  err |= rows == NULL || into == NULL || fin == NULL || stack == NULL;
  MPI_Allreduce(&err, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (any) {
    snprintf(msg, len, "out of memory simplifying the segmentation");
    goto done;
  }
  MPI_Allgatherv(mine, cnt, MPI_INT64_T, rows, counts, displs, MPI_INT64_T, MPI_COMM_WORLD);
  qsort(rows, (size_t)ns, 2 * sizeof *rows, cmp_i64x2);
  /* the label of each death vertex, from the block whose core holds it */
  const int64_t X = o->f.dims[0], Y = o->f.dims[1];
  for (int64_t i = 0; i < ns; i++) {
    const int64_t d = rows[2 * i + 1], c[3] = {d % X, d / X % Y, d / X / Y};
    into[i] = -1;
    for (int li = 0; li < seg->nl; li++) {
      const bpc_bounds_t *b = &seg->core[li];
      if (seg->label[li] == NULL || c[0] < b->min[0] || c[0] >= b->max[0] ||
          c[1] < b->min[1] || c[1] >= b->max[1] || c[2] < b->min[2] || c[2] >= b->max[2])
        continue;
      const int64_t ex = b->max[0] - b->min[0], ey = b->max[1] - b->min[1];
      into[i] = seg->label[li][(c[0] - b->min[0]) + ex * ((c[1] - b->min[1]) + ey * (c[2] - b->min[2]))];
      break;
    }
  }
  if (ns > 0)
    MPI_Allreduce(MPI_IN_PLACE, into, (int)ns, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD);
  /* follow each branch up to the first one kept: the label it dies into is
   * an elder birth, so the chain ends (at most ns steps) */
  for (int64_t i = 0; i < ns; i++)
    fin[i] = -1;
  for (int64_t i = 0; i < ns; i++) {
    int64_t top = 0, j = i, lab = -1;
    while (fin[j] < 0 && top < ns) {
      stack[top++] = j;
      const int64_t k = into[j] >= 0 ? find_birth(rows, ns, into[j]) : -1;
      if (k < 0) {
        lab = into[j] >= 0 ? into[j] : rows[2 * j];
        break;
      }
      j = k;
    }
    if (lab < 0)
      lab = fin[j] >= 0 ? fin[j] : rows[2 * j];
    while (top > 0)
      fin[stack[--top]] = lab;
  }
  for (int li = 0; li < seg->nl; li++) {
    if (seg->label[li] == NULL)
      continue;
    const bpc_bounds_t *b = &seg->core[li];
    const int64_t nv = (b->max[0] - b->min[0]) * (b->max[1] - b->min[1]) * (b->max[2] - b->min[2]);
    for (int64_t v = 0; v < nv; v++) {
      const int64_t k = find_birth(rows, ns, seg->label[li][v]);
      if (k >= 0)
        seg->label[li][v] = fin[k];
    }
  }
done:
  free(mine);
  free(counts);
  free(displs);
  free(rows);
  free(into);
  free(fin);
  free(stack);
  return any;
}

/* One block count: run, gather, print. 0, 1 or 2 (the same on every rank). */
static int run_count(bpc_ctx_t *ctx, const opts_t *o, int nblocks, int rank, int size,
                     FILE *pf)
{
  mt_run_params_t rp = {nblocks, o->sub, {o->wrap, o->wrap, o->wrap}, o->nthreads,
                        o->seg_npy || o->seg_vtk || o->seg_png, o->tile};
  mt_pairs_t pairs = {0};
  mt_seg_t seg = {0};
  mt_run_stats_t st;
  char msg[512] = "";
  if (o->progress && rank == 0)
    fprintf(stderr, "bpc-mergetree: %d blocks on %d processes: running\n", nblocks, size);
  int rc = mt_run(ctx, &o->f, &rp, &pairs, &seg, &st, msg, sizeof msg);
  if (rc != 0) {
    if (rank == 0)
      fprintf(stderr, "bpc-mergetree: %s\n", msg);
    mt_pairs_free(&pairs);
    return rc;
  }
  /* the segmentation files (collective) */
  if (rp.labels && o->persistence > 0)
    rc = simplify_seg(o, &pairs, &seg, size, msg, sizeof msg);
  int64_t z = o->slice >= 0 ? o->slice : o->f.dims[2] / 2;
  if (rc == 0 && o->seg_npy)
    rc = mt_write_seg_npy(o->seg_npy, &o->f, &seg, rank, msg, sizeof msg) != 0;
  if (rc == 0 && o->seg_vtk)
    rc = mt_write_seg_vtk(o->seg_vtk, &o->f, &seg, rank, msg, sizeof msg) != 0;
  if (rc == 0 && o->seg_png && z >= o->f.dims[2]) {
    snprintf(msg, sizeof msg, "--slice %lld: the field has %" PRId64 " slices", (long long)z,
             o->f.dims[2]);
    rc = 2;
  }
  if (rc == 0 && o->seg_png)
    rc = mt_write_seg_png(o->seg_png, &o->f, &seg, z, rank, size, msg, sizeof msg) != 0;
  mt_seg_free(&seg);
  if (rc != 0) {
    if (rank == 0)
      fprintf(stderr, "bpc-mergetree: %s\n", msg);
    mt_pairs_free(&pairs);
    return rc;
  }
  if (o->progress && rank == 0 && rp.labels)
    fprintf(stderr, "bpc-mergetree: %d blocks: segmentation written\n", nblocks);
  mt_pair_t *all = NULL;
  size_t n = 0;
  int lrc = gather_pairs(&pairs, rank, size, &all, &n);
  uint64_t bytes[2] = {st.bytes_sent, 0}, bmax[2];
  double tm[2] = {st.t_local, st.t_merge}, tmax[2];
  int64_t rss = max_rss_kib(), rmax;
  bytes[1] = (uint64_t)st.local_nodes;
  MPI_Reduce(bytes, bmax, 2, MPI_UINT64_T, MPI_MAX, 0, MPI_COMM_WORLD);
  MPI_Reduce(tm, tmax, 2, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  MPI_Reduce(&rss, &rmax, 1, MPI_INT64_T, MPI_MAX, 0, MPI_COMM_WORLD);
  if (rank == 0 && lrc == 0) {
    mt_pairs_sort(all, n, o->sub);
    if (o->progress)
      fprintf(stderr, "bpc-mergetree: %d blocks: %zu pairs (local %.3f s, merge %.3f s)\n",
              nblocks, n, tmax[0], tmax[1]);
    if (pf != NULL) {
      if (o->ncounts > 1)
        fprintf(pf, "# blocks %d\n", nblocks);
      lrc = write_pairs(o, pf, all, n);
    }
    if (o->json) {
      double field_bytes = (double)o->f.dims[0] * (double)o->f.dims[1] * (double)o->f.dims[2] *
                           (o->f.is_double ? 8.0 : 4.0);
      printf("{\"app\": \"bpc-mergetree\", \"processes\": %d, \"blocks\": %d, \"dims\": [%" PRId64
             ", %" PRId64 ", %" PRId64 "], \"sublevel\": %d, \"wrap\": %d, \"pairs\": %zu, "
             "\"t_local\": %.6f, \"t_merge\": %.6f, \"bytes_sent_max\": %" PRIu64
             ", \"field_bytes\": %.0f, \"local_nodes_max\": %" PRIu64
             ", \"maxrss_kib_max\": %" PRId64 "}\n",
             size, nblocks, o->f.dims[0], o->f.dims[1], o->f.dims[2], o->sub, o->wrap, n, tmax[0],
             tmax[1], bmax[0], field_bytes, bmax[1], rmax);
    }
    if (lrc != 0)
      fprintf(stderr, "bpc-mergetree: cannot write the pairs\n");
  }
  free(all);
  mt_pairs_free(&pairs);
  MPI_Bcast(&lrc, 1, MPI_INT, 0, MPI_COMM_WORLD);
  return lrc != 0;
}

#include <sys/resource.h>
static int64_t max_rss_kib(void)
{
  struct rusage ru;
  return getrusage(RUSAGE_SELF, &ru) == 0 ? (int64_t)ru.ru_maxrss : -1;
}

/* ------------------------------------------------------------ benchmark */

static int cmp_double(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* An order-free digest of the pairs, without gathering them: the sum over
 * ranks and pairs of each pair's FNV-1a hash (mod 2^64). Equal digests:
 * equal pairs (but for a collision). Collective. */
static uint64_t digest(const mt_pairs_t *v, size_t *npairs)
{
  uint64_t h = 0, all = 0, n = v->n, nall = 0;
  for (size_t i = 0; i < v->n; i++) {
    const unsigned char *b = (const unsigned char *)&v->p[i];
    uint64_t x = 1469598103934665603ull;
    for (size_t q = 0; q < sizeof *v->p; q++)
      x = (x ^ b[q]) * 1099511628211ull;
    h += x;
  }
  MPI_Allreduce(&h, &all, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
  MPI_Allreduce(&n, &nall, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
  *npairs = (size_t)nall;
  return all;
}

/* The baseline: every rank makes its z slab, rank 0 gathers the field and
 * sweeps it. Returns 0 or 1; *bytes: what this rank sent. */
static int gather_baseline(const opts_t *o, int rank, int size, mt_pairs_t *pairs,
                           uint64_t *bytes)
{
  const int64_t X = o->f.dims[0], Y = o->f.dims[1], Z = o->f.dims[2];
  const int64_t z0 = Z * rank / size, z1 = Z * (rank + 1) / size, plane = X * Y;
  float *slab = malloc(sizeof(float) * (size_t)((z1 - z0) * plane + 1)), *all = NULL;
  int *counts = NULL, *displs = NULL, err = slab == NULL, any = 0;
  for (int64_t z = z0; z < z1 && slab; z++)
    for (int64_t y = 0; y < Y; y++)
      for (int64_t x = 0; x < X; x++)
        slab[(z - z0) * plane + y * X + x] = (float)mt_synth_value(&o->f, x, y, z);
  if (rank == 0) {
    all = malloc(sizeof(float) * (size_t)(Z * plane));
    counts = malloc(sizeof(int) * (size_t)size);
    displs = malloc(sizeof(int) * (size_t)size);
    err |= !all || !counts || !displs;
    for (int r = 0; r < size && !err; r++) {
      displs[r] = (int)(Z * r / size * plane);
      counts[r] = (int)((Z * (r + 1) / size - Z * r / size) * plane);
    }
  }
  MPI_Allreduce(&err, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (!any) {
    MPI_Gatherv(slab, (int)((z1 - z0) * plane), MPI_FLOAT, all, counts, displs, MPI_FLOAT, 0,
                MPI_COMM_WORLD);
    *bytes = rank == 0 ? 0 : (uint64_t)((z1 - z0) * plane) * sizeof(float);
    int wrap[3] = {o->wrap, o->wrap, o->wrap};
    if (rank == 0)
      err = mt_serial_pairs(o->f.dims, wrap, all, o->sub, pairs) != 0;
    MPI_Allreduce(&err, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  }
  free(slab);
  free(all);
  free(counts);
  free(displs);
  return any != 0;
}

/* One benchmark line: the bpc run with nblocks (or the gather baseline). */
static int bench_line(bpc_ctx_t *ctx, const opts_t *o, int nblocks, int rank, int size)
{
  double *t = calloc((size_t)o->reps, sizeof *t);
  uint64_t bytes = 0, h = 0;
  size_t npairs = 0;
  int rc = t == NULL;
  char msg[512] = "";
  mt_heap_peak(1);
  for (int r = 0; r < o->reps && rc == 0; r++) {
    mt_pairs_t pairs = {0};
    mt_run_stats_t st;
    memset(&st, 0, sizeof st);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    if (o->gather)
      rc = gather_baseline(o, rank, size, &pairs, &st.bytes_sent);
    else {
      mt_run_params_t rp = {nblocks, o->sub, {o->wrap, o->wrap, o->wrap}, o->nthreads, 0,
                            o->tile};
      rc = mt_run(ctx, &o->f, &rp, &pairs, NULL, &st, msg, sizeof msg);
    }
    double dt = MPI_Wtime() - t0;
    MPI_Allreduce(&dt, &t[r], 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    int any = rc;
    MPI_Allreduce(&rc, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (any == 0 && r == 0) { /* the pairs' digest (no gather: rank 0 stays a rank) */
      h = digest(&pairs, &npairs);
      bytes = st.bytes_sent;
    }
    mt_pairs_free(&pairs);
  }
  if (rc != 0) {
    if (rank == 0)
      fprintf(stderr, "bpc-mergetree: %s\n", msg[0] ? msg : "the baseline failed");
    free(t);
    return 1;
  }
  qsort(t, (size_t)o->reps, sizeof *t, cmp_double);
  uint64_t bmax = 0;
  int64_t mem[2] = {max_rss_kib(), mt_heap_peak(0) / 1024}, mmax[2] = {0, 0};
  MPI_Reduce(&bytes, &bmax, 1, MPI_UINT64_T, MPI_MAX, 0, MPI_COMM_WORLD);
  MPI_Reduce(mem, mmax, 2, MPI_INT64_T, MPI_MAX, 0, MPI_COMM_WORLD);
  const int64_t rmax = mmax[0], hmax = mmax[1];
  if (rank == 0) {
    const double fb = (double)o->f.dims[0] * (double)o->f.dims[1] * (double)o->f.dims[2] * 4.0;
    const char *mode = o->gather ? "gather" : "bpc";
    if (o->json)
      printf("{\"bench\": \"mergetree\", \"mode\": \"%s\", \"processes\": %d, \"blocks\": %d, "
             "\"dims\": [%" PRId64 ", %" PRId64 ", %" PRId64 "], \"time_s\": %.6f, "
             "\"bytes_per_rank_max\": %" PRIu64 ", \"field_bytes\": %.0f, "
             "\"share_bytes\": %.0f, \"maxrss_kib_max\": %" PRId64 ", "
             "\"heap_peak_kib_max\": %" PRId64 ", \"pairs\": %zu, "
             "\"digest\": \"%016" PRIx64 "\"}\n",
             mode, size, o->gather ? 0 : nblocks, o->f.dims[0], o->f.dims[1], o->f.dims[2],
             t[o->reps / 2], bmax, fb, fb / size, rmax, hmax, npairs, h);
    else
      printf("%-7s %4d %7d %10.4f %14" PRIu64 " %8.4f %10.1f %8.2f %10.1f %8.2f %9zu %016" PRIx64
             "\n",
             mode, size, o->gather ? 0 : nblocks, t[o->reps / 2], bmax, (double)bmax / fb,
             (double)rmax / 1024.0, (double)rmax * 1024.0 / (fb / size), (double)hmax / 1024.0,
             (double)hmax * 1024.0 / (fb / size), npairs, h);
    fflush(stdout);
  }
  free(t);
  return 0;
}

/* Rank 0 opens the input (header, size); all ranks agree. 0 or 2. */
static int open_input(opts_t *o, int rank)
{
  char msg[512] = "";
  int rc = 0;
  if (rank == 0 && o->f.source != MT_SYNTHETIC) {
    if (o->f.source == MT_NPY)
      rc = mt_npy_open(&o->f, msg, sizeof msg);
    else
      rc = mt_raw_open(&o->f, msg, sizeof msg);
    if (rc != 0)
      fprintf(stderr, "bpc-mergetree: %s\n", msg);
  }
  int64_t hdr[6] = {rc, o->f.dims[0], o->f.dims[1], o->f.dims[2], o->f.is_double, o->f.offset};
  MPI_Bcast(hdr, 6, MPI_INT64_T, 0, MPI_COMM_WORLD);
  for (int d = 0; d < 3; d++)
    o->f.dims[d] = hdr[1 + d];
  o->f.is_double = (int)hdr[4];
  o->f.offset = hdr[5];
  return hdr[0] != 0 ? 2 : 0;
}

int main(int argc, char **argv)
{
  opts_t o;
  bpc_ctx_t *ctx = NULL;
  char msg[512] = "";
  int provided, rank = 0, size = 1, ret = 1;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (parse_args(argc, argv, &o, msg, sizeof msg) != 0) {
    if (rank == 0)
      fprintf(stderr, "bpc-mergetree: %s\n", msg);
    ret = 2;
    goto finish;
  }
  if (o.help) {
    if (rank == 0)
      fputs(usage_text, stdout);
    ret = 0;
    goto finish;
  }
  if ((ret = open_input(&o, rank)) != 0)
    goto finish;
  if (o.dump != NULL) {
    ret = 0;
    if (rank == 0 && mt_npy_write(&o.f, o.dump, msg, sizeof msg) != 0) {
      fprintf(stderr, "bpc-mergetree: %s\n", msg);
      ret = 1;
    }
    MPI_Bcast(&ret, 1, MPI_INT, 0, MPI_COMM_WORLD);
    goto finish;
  }
  if (bpc_init(MPI_COMM_WORLD, NULL, &ctx) != BPC_OK) {
    if (rank == 0)
      fprintf(stderr, "bpc-mergetree: bpc_init failed\n");
    ret = 1;
    goto finish;
  }
  FILE *pf = NULL;
  int perr = 0;
  if (rank == 0) {
    if (o.pairs != NULL) {
      pf = fopen(o.pairs, "w");
      perr = pf == NULL;
      if (perr)
        fprintf(stderr, "bpc-mergetree: %s: %s\n", o.pairs, strerror(errno));
    } else if (!o.json && !o.bench)
      pf = stdout;
  }
  MPI_Bcast(&perr, 1, MPI_INT, 0, MPI_COMM_WORLD);
  ret = perr ? 1 : 0;
  if (o.bench && rank == 0 && !o.json)
    printf("# bpc-mergetree --bench: field %" PRId64 "x%" PRId64 "x%" PRId64 " float32, %s, "
           "noise %g, median of %d, time = max over ranks\n"
           "%-7s %4s %7s %10s %14s %8s %10s %8s %10s %8s %9s %s\n",
           o.f.dims[0], o.f.dims[1], o.f.dims[2], o.sub ? "sublevel" : "superlevel", o.f.noise,
           o.reps,
           "# mode", "P", "blocks", "time_s", "bytes/rank", "/field", "rss_MiB", "/share",
           "heap_MiB", "/share", "pairs", "digest");
  for (int i = 0; i < o.ncounts && ret == 0 && o.bench; i++) {
    ret = bench_line(ctx, &o, o.counts[i], rank, size);
    if (o.gather)
      break; /* the baseline has no blocks */
  }
  for (int i = 0; i < o.ncounts && ret == 0 && !o.bench; i++)
    ret = run_count(ctx, &o, o.counts[i], rank, size, pf);
  if (pf != NULL && pf != stdout && fclose(pf) != 0 && ret == 0) {
    fprintf(stderr, "bpc-mergetree: %s: write failed\n", o.pairs);
    ret = 1;
  }
  int worst = ret;
  MPI_Allreduce(&ret, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  ret = worst;
finish:
  bpc_finalize(&ctx);
  MPI_Finalize();
  return ret;
}
