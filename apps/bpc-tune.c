/*
 * apps/bpc-tune.c - bpc-tune: k-vector and schedule tuning for swap-reduce.
 *
 * For the process count it runs on, a number of blocks per process and one
 * or more buffer sizes, it times bpc_swap with candidate schedules - radixk
 * with every factorisation of the block count into rounds (factors listed
 * largest first and smallest first; at most --max-candidates) and every
 * other schedule of the registry (bpc_algorithms("swap"): shift, ring) -
 * and writes the fastest per (size, operator class) to a tuning file.
 * With BPC_TUNING_FILE pointing at that file, bpc_swap's "auto" uses it
 * (lib/engines/swap/swap_tuning.c; doc/swap.md). Existing lines for other
 * configurations are kept; lines for the same configuration are replaced.
 *
 * Usage: mpirun -np P bpc-tune [--blocks-per-proc N] [--bytes LIST]
 *          [--op sum|over|sum,over] [--reps N] [--max-candidates N]
 *          [--out FILE] [--verbose]
 * Timing: per candidate, --reps runs (after one warm-up), each preceded by a
 * restore of the input and a barrier; a run's time is the maximum over
 * ranks; the candidate's score is the median.
 */
#include <bpc.h>

#include "common/app_args.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXC 128
#define MAXK 64

typedef struct cand {
  const char *algo;
  int k[MAXK], nk;
  double t;
} cand_t;

/* All factorisations of n into factors >= 2 in non-increasing order. */
static void factorise(int n, int maxf, int *cur, int depth, cand_t *out, int *nout, int cap)
{
  if (n == 1) {
    if (*nout < cap && depth > 0) {
      out[*nout].algo = "radixk";
      memcpy(out[*nout].k, cur, sizeof(int) * (size_t)depth);
      out[*nout].nk = depth;
      (*nout)++;
    }
    return;
  }
  for (int f = maxf < n ? maxf : n; f >= 2; f--)
    if (n % f == 0 && depth < MAXK) {
      cur[depth] = f;
      factorise(n / f, f, cur, depth + 1, out, nout, cap);
    }
}

/* A byte size with an optional binary suffix (K, M, G): at least 1 byte,
 * at most 64 GiB; -1 for anything else (signs, garbage, overflow). */
static int parse_size(const char *s, size_t *out)
{
  char *end;
  if (*s < '0' || *s > '9')
    return -1;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  int shift = 0;
  if (*end == 'K' || *end == 'k')
    shift = 10, end++;
  else if (*end == 'M' || *end == 'm')
    shift = 20, end++;
  else if (*end == 'G' || *end == 'g')
    shift = 30, end++;
  if (errno != 0 || *end != '\0' || v == 0 || v > (64ull << 30) >> shift)
    return -1;
  *out = (size_t)(v << shift);
  return 0;
}

/* A whole number in [lo, hi] (app_parse_ll); -1 for anything else. */
static int parse_int(const char *s, int lo, int hi, int *out)
{
  long long v = 0;
  if (app_parse_ll(s, lo, hi, &v) != 0)
    return -1;
  *out = (int)v;
  return 0;
}

static int cmpd(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static void usage(void)
{
  printf("usage: mpirun -np P bpc-tune [--blocks-per-proc N] [--bytes LIST] [--op sum|over|sum,over]\n"
         "         [--reps N] [--max-candidates N] [--out FILE] [--verbose]\n"
         "Times swap-reduce schedules and k-vectors for P processes and writes the fastest\n"
         "per size and operator class to FILE (default bpc-tuning.txt); set\n"
         "BPC_TUNING_FILE=FILE so that bpc_swap's 'auto' uses it.\n");
}

int main(int argc, char **argv)
{
  int rank = 0, size = 1, provided;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int bpp = 1, reps = 5, maxc = 24, verbose = 0, ret = 1;
  char bad[256] = ""; /* what was wrong with the arguments, or "" */
  size_t sizes[16];
  int nsizes = 0;
  const char *ops = "sum,over", *out = "bpc-tuning.txt";
  for (int i = 1; i < argc && bad[0] == '\0'; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      if (rank == 0)
        usage();
      MPI_Finalize();
      return 0;
    } else if (strcmp(a, "--verbose") == 0) {
      verbose = 1;
    } else if (strcmp(a, "--blocks-per-proc") != 0 && strcmp(a, "--reps") != 0 &&
               strcmp(a, "--max-candidates") != 0 && strcmp(a, "--op") != 0 &&
               strcmp(a, "--out") != 0 && strcmp(a, "--bytes") != 0) {
      snprintf(bad, sizeof bad, "unknown option '%s'", a);
    } else if (v == NULL) {
      snprintf(bad, sizeof bad, "%s needs a value", a);
    } else if (strcmp(a, "--blocks-per-proc") == 0) {
      if (parse_int(v, 1, 1 << 20, &bpp) != 0)
        snprintf(bad, sizeof bad, "--blocks-per-proc '%s': want a whole number from 1 to %d", v,
                 1 << 20);
      i++;
    } else if (strcmp(a, "--reps") == 0) {
      if (parse_int(v, 1, 1000000, &reps) != 0)
        snprintf(bad, sizeof bad, "--reps '%s': want a whole number from 1 to 1000000", v);
      i++;
    } else if (strcmp(a, "--max-candidates") == 0) {
      if (parse_int(v, 1, MAXC, &maxc) != 0)
        snprintf(bad, sizeof bad, "--max-candidates '%s': want a whole number from 1 to %d", v,
                 MAXC);
      i++;
    } else if (strcmp(a, "--op") == 0) {
      ops = v, i++;
      if (strcmp(ops, "sum") != 0 && strcmp(ops, "over") != 0 && strcmp(ops, "sum,over") != 0 &&
          strcmp(ops, "over,sum") != 0)
        snprintf(bad, sizeof bad, "--op '%s': want sum, over or sum,over", ops);
    } else if (strcmp(a, "--out") == 0) {
      out = v, i++;
    } else { /* --bytes */
      char buf[512];
      snprintf(buf, sizeof buf, "%s", v);
      for (char *t = strtok(buf, ","); t != NULL && bad[0] == '\0'; t = strtok(NULL, ",")) {
        if (nsizes == 16)
          snprintf(bad, sizeof bad, "--bytes: at most 16 sizes");
        else if (parse_size(t, &sizes[nsizes++]) != 0)
          snprintf(bad, sizeof bad,
                   "--bytes: '%s' is not a size from 1 byte to 64G (digits, then K, M or G)", t);
      }
      i++;
    }
  }
  if (nsizes == 0) {
    sizes[0] = 1 << 20;
    sizes[1] = 16 << 20;
    nsizes = 2;
  }
  if (bad[0] == '\0' && (long long)bpp * size > INT_MAX / 2)
    snprintf(bad, sizeof bad, "--blocks-per-proc %d on %d processes: too many blocks", bpp, size);
  if (bad[0] != '\0') {
    if (rank == 0) {
      fprintf(stderr, "bpc-tune: %s\n", bad);
      usage();
    }
    MPI_Finalize();
    return 2;
  }

  bpc_ctx_t *ctx = NULL;
  bpc_assign_t *assign = NULL;
  const int *gids = NULL;
  int nl = 0;
  const int n = bpp * size;
  char results[64][256];
  int nres = 0;
  if (bpc_init(MPI_COMM_WORLD, NULL, &ctx) != BPC_OK ||
      bpc_assign_create(ctx, n, BPC_ASSIGN_CONTIGUOUS, NULL, &assign) != BPC_OK) {
    fprintf(stderr, "bpc-tune: setup failed\n");
    goto done;
  }
  bpc_assign_local(assign, &gids, &nl);

  cand_t *cand = calloc(MAXC, sizeof *cand);
  int nc = 0, cur[MAXK];
  factorise(n, n, cur, 0, cand, &nc, MAXC / 2);
  /* the same factorisations smallest first, where that is a different order */
  for (int i = 0, m = nc; i < m && nc < MAXC - 2; i++) {
    if (cand[i].nk < 2 || cand[i].k[0] == cand[i].k[cand[i].nk - 1])
      continue;
    cand[nc] = cand[i];
    for (int r = 0; r < cand[i].nk; r++)
      cand[nc].k[r] = cand[i].k[cand[i].nk - 1 - r];
    nc++;
  }
  if (nc > maxc)
    nc = maxc; /* the list starts with direct send and the fewest rounds */
  if (n == 1)
    nc = 0;
  /* every other schedule of the registry once (they take no k-vector) */
  {
    bpc_algo_info_t tab[16];
    int ntab = 0;
    if (bpc_algorithms("swap", tab, 16, &ntab) != BPC_OK)
      ntab = 0;
    for (int i = 0; i < ntab; i++) {
      if (tab[i].id == BPC_SWAP_RADIXK)
        for (int c = 0; c < nc; c++)
          cand[c].algo = tab[i].name;
    }
    for (int i = 0; i < ntab && nc < MAXC; i++)
      if (tab[i].id != BPC_SWAP_RADIXK) {
        cand[nc].algo = tab[i].name;
        cand[nc].nk = 0;
        nc++;
      }
  }

  for (int opi = 0; opi < 2; opi++) {
    if (!strstr(ops, opi == 0 ? "sum" : "over"))
      continue;
    const size_t es = opi == 0 ? 4 : 16;
    bpc_op_t op;
    bpc_op_builtin(opi == 0 ? "sum" : "over", MPI_FLOAT, &op);
    bpc_type_t type = bpc_type_contiguous(es, MPI_BYTE);
    for (int si = 0; si < nsizes; si++) {
      const size_t count = sizes[si] / es;
      float **orig = calloc((size_t)nl + 1, sizeof(float *));
      float **work = calloc((size_t)nl + 1, sizeof(float *));
      bpc_swap_piece_t *pieces = calloc((size_t)nl + 1, sizeof *pieces);
      double *t = malloc(sizeof(double) * (size_t)reps);
      int ok = orig != NULL && work != NULL && pieces != NULL && t != NULL, all_ok = 0;
      for (int b = 0; b < nl && ok; b++) {
        orig[b] = malloc(count * es + 64);
        work[b] = malloc(count * es + 64);
        ok = orig[b] != NULL && work[b] != NULL;
        for (size_t e = 0; ok && e < count * es / 4; e++)
          orig[b][e] = (float)((e * 7 + (size_t)gids[b] * 13) % 17) / 32.0f;
      }
      /* a size some rank cannot hold is skipped on every rank */
      MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
      if (!all_ok && rank == 0)
        fprintf(stderr, "bpc-tune: skipping %zu bytes: a process cannot allocate %d x 2 buffers "
                        "of that size\n", sizes[si], nl);
      int best = -1;
      for (int c = 0; c < nc && all_ok; c++) {
        bpc_swap_params_t P = bpc_swap_params_default();
        P.algorithm = cand[c].algo;
        P.k = cand[c].nk ? cand[c].k : NULL;
        P.nk = cand[c].nk;
        P.nthreads = 0;
        int rc = BPC_OK;
        for (int r = -1; r < reps && rc == BPC_OK; r++) {
          for (int b = 0; b < nl; b++)
            memcpy(work[b], orig[b], count * es);
          MPI_Barrier(MPI_COMM_WORLD);
          double t0 = MPI_Wtime();
          rc = bpc_swap(ctx, assign, &type, (void *const *)work, count, &op, &P, pieces, NULL);
          double dt = MPI_Wtime() - t0, dmax = dt;
          MPI_Allreduce(&dt, &dmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
          if (r >= 0)
            t[r] = dmax;
        }
        if (rc != BPC_OK) {
          if (rank == 0)
            fprintf(stderr, "bpc-tune: %s failed: %s\n", cand[c].algo, bpc_last_error(ctx));
          cand[c].t = 1e30;
          continue;
        }
        qsort(t, (size_t)reps, sizeof *t, cmpd);
        cand[c].t = t[reps / 2];
        if (best < 0 || cand[c].t < cand[best].t)
          best = c;
        if (verbose && rank == 0) {
          char kv[128] = "-";
          for (int r = 0; r < cand[c].nk; r++)
            snprintf(kv + (r ? strlen(kv) : 0), sizeof kv - (r ? strlen(kv) : 0), "%s%d",
                     r ? "x" : "", cand[c].k[r]);
          printf("# %s %zu bytes %-7s %-12s %10.1f us\n", opi == 0 ? "sum" : "over", sizes[si],
                 cand[c].algo, kv, cand[c].t * 1e6);
        }
      }
      if (best >= 0 && nres < 64) {
        char kv[128] = "-";
        for (int r = 0; r < cand[best].nk; r++)
          snprintf(kv + (r ? strlen(kv) : 0), sizeof kv - (r ? strlen(kv) : 0), "%s%d",
                   r ? "x" : "", cand[best].k[r]);
        snprintf(results[nres++], sizeof results[0], "swap %d %d %zu %d %s %s %.9g", n, size,
                 sizes[si], opi == 0, cand[best].algo, kv, cand[best].t);
        if (rank == 0)
          printf("%s\n", results[nres - 1]);
      }
      for (int b = 0; b < nl && orig != NULL && work != NULL; b++) {
        free(orig[b]);
        free(work[b]);
      }
      free(orig);
      free(work);
      free(pieces);
      free(t);
    }
  }
  free(cand);

  /* rank 0 merges the results into the file */
  if (rank == 0) {
    char **keep = NULL;
    int nkeep = 0;
    FILE *f = fopen(out, "r");
    if (f != NULL) {
      char line[1024];
      while (fgets(line, sizeof line, f) != NULL) {
        int nb, np, com;
        unsigned long long by;
        char eng[32];
        int same = 0;
        if (sscanf(line, "%31s %d %d %llu %d", eng, &nb, &np, &by, &com) == 5 &&
            strcmp(eng, "swap") == 0)
          for (int r = 0; r < nres && !same; r++) {
            int rnb, rnp, rcom;
            unsigned long long rby;
            sscanf(results[r], "%31s %d %d %llu %d", eng, &rnb, &rnp, &rby, &rcom);
            same = nb == rnb && np == rnp && by == rby && com == rcom;
          }
        if (!same && line[0] != '#') {
          keep = realloc(keep, sizeof(char *) * (size_t)(nkeep + 1));
          keep[nkeep++] = strdup(line);
        }
      }
      fclose(f);
    }
    f = fopen(out, "w");
    if (f == NULL) {
      fprintf(stderr, "bpc-tune: cannot write %s\n", out);
    } else {
      fprintf(f, "# bpc tuning file (bpc-tune); BPC_TUNING_FILE=%s makes bpc_swap 'auto' use it\n"
                 "# swap <nblocks> <nprocs> <bytes> <commutative> <algorithm> <kvec|-> <seconds>\n",
              out);
      for (int i = 0; i < nkeep; i++)
        fputs(keep[i], f);
      for (int r = 0; r < nres; r++)
        fprintf(f, "%s\n", results[r]);
      fclose(f);
      ret = 0;
    }
    for (int i = 0; i < nkeep; i++)
      free(keep[i]);
    free(keep);
  }
  MPI_Bcast(&ret, 1, MPI_INT, 0, MPI_COMM_WORLD);

done:
  bpc_assign_destroy(&assign);
  bpc_finalize(&ctx);
  MPI_Finalize();
  return ret;
}
