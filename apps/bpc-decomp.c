/*
 * apps/bpc-decomp.c - the quick-start demo: decompose an n-D integer domain
 * (default 256^3 into 64 blocks) over the processes it runs on and print, on
 * rank 0, one line per block in gid order: owner rank, core and ghosted
 * bounds, face neighbours by gid and the number of edge and corner
 * neighbours. Each rank describes its own local blocks; the descriptions are
 * gathered to rank 0 with MPI_Gatherv.
 *
 *   mpirun -np 4 bpc-decomp [--dim D] [--domain N[,N...]] [--blocks N]
 *                           [--divs a,b,c] [--ghost g[,g...]] [--wrap]
 *                           [--share-face] [--assign contiguous|round-robin]
 *
 * Exit status: 0 on success (and --help), 2 for a bad option (every rank,
 * message on stderr from rank 0), 1 if the library refuses the parameters
 * (bpc_last_error printed by rank 0).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "bpc.h"
#include "common/app_args.h"

static const char *usage_text =
    "usage: bpc-decomp [options]\n"
    "Decompose a regular n-D integer domain into blocks over the MPI processes\n"
    "and print one line per block (rank 0, gid order).\n"
    "\n"
    "  --dim D                dimension, 1..6 (default 3, or the number of\n"
    "                         --domain values when more than one is given)\n"
    "  --domain N[,N,...]     points per dimension; one value applies to all\n"
    "                         (default 256)\n"
    "  --blocks N             number of blocks (default 64)\n"
    "  --divs a,b,c           blocks per dimension, 0 = automatic (default all 0)\n"
    "  --ghost g[,g,...]      ghost width; one value applies to all (default 0)\n"
    "  --wrap                 periodic boundaries in every dimension\n"
    "  --share-face           neighbouring cores share their boundary point\n"
    "  --assign MODE          contiguous (default) or round-robin\n"
    "  --help                 this text\n"
    "\n"
    "Columns: gid, rank, core bounds [min,max) per dimension, ghosted bounds,\n"
    "face neighbours (gids, in link order: dimension 0 fastest, lower side first),\n"
    "number of edge neighbours (2 nonzero directions) and of corner neighbours\n"
    "(3 or more).\n";

typedef struct opts {
  int dim;
  int dim_given;
  int64_t domain[BPC_MAX_DIM];
  int ndomain;
  int nblocks;
  int divs[BPC_MAX_DIM];
  int ndivs;
  int ghost[BPC_MAX_DIM];
  int nghost;
  int wrap;
  int share_face;
  bpc_assign_mode_t assign;
  int help;
} opts_t;

/* Parse argv; on a bad option write a message into err and return -1. */
static int parse_args(int argc, char **argv, opts_t *o, char *err, size_t errlen)
{
  memset(o, 0, sizeof *o);
  o->dim = 3;
  o->nblocks = 64;
  o->assign = BPC_ASSIGN_CONTIGUOUS;
  for (int i = 1; i < argc; i++) {
    const char *arg = argv[i];
    const char *val = NULL;
    char name[64];
    const char *eq = strchr(arg, '=');
    if (strncmp(arg, "--", 2) == 0 && eq != NULL) {
      size_t len = (size_t)(eq - arg);
      if (len >= sizeof name)
        len = sizeof name - 1;
      memcpy(name, arg, len);
      name[len] = '\0';
      val = eq + 1;
    } else {
      snprintf(name, sizeof name, "%s", arg);
    }
    int is_flag = !strcmp(name, "--help") || !strcmp(name, "-h") || !strcmp(name, "--wrap") ||
                  !strcmp(name, "--share-face");
    int known = is_flag || !strcmp(name, "--dim") || !strcmp(name, "--domain") ||
                !strcmp(name, "--blocks") || !strcmp(name, "--divs") ||
                !strcmp(name, "--ghost") || !strcmp(name, "--assign");
    if (!known) {
      snprintf(err, errlen, "unknown option '%s'", arg);
      return -1;
    }
    if (is_flag) {
      if (val != NULL) {
        snprintf(err, errlen, "option %s takes no value", name);
        return -1;
      }
      if (!strcmp(name, "--wrap"))
        o->wrap = 1;
      else if (!strcmp(name, "--share-face"))
        o->share_face = 1;
      else
        o->help = 1;
      continue;
    }
    if (val == NULL) {
      if (i + 1 >= argc) {
        snprintf(err, errlen, "option %s needs a value", name);
        return -1;
      }
      val = argv[++i];
    }
    long long v[BPC_MAX_DIM];
    int n = 0, rc = 0;
    if (!strcmp(name, "--dim")) {
      rc = app_parse_ll_list(val, ",", 1, BPC_MAX_DIM, v, BPC_MAX_DIM, &n);
      if (rc != 0 || n != 1) {
        snprintf(err, errlen, "--dim '%s': expected one integer in 1..%d", val, BPC_MAX_DIM);
        return -1;
      }
      o->dim = (int)v[0];
      o->dim_given = 1;
    } else if (!strcmp(name, "--domain")) {
      rc = app_parse_ll_list(val, ",", 1, INT64_MAX, v, BPC_MAX_DIM, &n);
      if (rc != 0) {
        snprintf(err, errlen, "--domain '%s': expected 1 to %d positive integers separated by commas",
                 val, BPC_MAX_DIM);
        return -1;
      }
      for (int k = 0; k < n; k++)
        o->domain[k] = v[k];
      o->ndomain = n;
    } else if (!strcmp(name, "--blocks")) {
      rc = app_parse_ll_list(val, ",", INT_MIN, INT_MAX, v, BPC_MAX_DIM, &n);
      if (rc != 0 || n != 1) {
        snprintf(err, errlen, "--blocks '%s': expected one integer", val);
        return -1;
      }
      o->nblocks = (int)v[0];
    } else if (!strcmp(name, "--divs")) {
      rc = app_parse_ll_list(val, ",", INT_MIN, INT_MAX, v, BPC_MAX_DIM, &n);
      if (rc != 0) {
        snprintf(err, errlen, "--divs '%s': expected 1 to %d integers separated by commas", val,
                 BPC_MAX_DIM);
        return -1;
      }
      for (int k = 0; k < n; k++)
        o->divs[k] = (int)v[k];
      o->ndivs = n;
    } else if (!strcmp(name, "--ghost")) {
      rc = app_parse_ll_list(val, ",", INT_MIN, INT_MAX, v, BPC_MAX_DIM, &n);
      if (rc != 0) {
        snprintf(err, errlen, "--ghost '%s': expected 1 to %d integers separated by commas", val,
                 BPC_MAX_DIM);
        return -1;
      }
      for (int k = 0; k < n; k++)
        o->ghost[k] = (int)v[k];
      o->nghost = n;
    } else { /* --assign */
      if (!strcmp(val, "contiguous")) {
        o->assign = BPC_ASSIGN_CONTIGUOUS;
      } else if (!strcmp(val, "round-robin")) {
        o->assign = BPC_ASSIGN_ROUND_ROBIN;
      } else {
        snprintf(err, errlen, "--assign '%s': expected contiguous or round-robin", val);
        return -1;
      }
    }
  }
  if (o->help)
    return 0;
  /* dimension from --domain when --dim is absent */
  if (!o->dim_given && o->ndomain > 1)
    o->dim = o->ndomain;
  if (o->ndomain > 1 && o->ndomain != o->dim) {
    snprintf(err, errlen, "--domain has %d values but the dimension is %d", o->ndomain, o->dim);
    return -1;
  }
  if (o->ndivs > 0 && o->ndivs != o->dim) {
    snprintf(err, errlen, "--divs has %d values but the dimension is %d", o->ndivs, o->dim);
    return -1;
  }
  if (o->nghost > 1 && o->nghost != o->dim) {
    snprintf(err, errlen, "--ghost has %d values but the dimension is %d", o->nghost, o->dim);
    return -1;
  }
  return 0;
}

/* One block's description, as int64 values:
 * gid, rank, core min[6], core max[6], ghost min[6], ghost max[6],
 * nface, face gids[12], edges, corners. */
enum {
  R_GID = 0,
  R_RANK = 1,
  R_CMIN = 2,
  R_CMAX = R_CMIN + BPC_MAX_DIM,
  R_GMIN = R_CMAX + BPC_MAX_DIM,
  R_GMAX = R_GMIN + BPC_MAX_DIM,
  R_NFACE = R_GMAX + BPC_MAX_DIM,
  R_FACE = R_NFACE + 1,
  R_EDGES = R_FACE + 2 * BPC_MAX_DIM,
  R_CORNERS = R_EDGES + 1,
  R_LEN = R_CORNERS + 1
};

static int describe(const bpc_decomp_t *d, int gid, int rank, bpc_link_t *links, int64_t *rec)
{
  bpc_bounds_t core, gh;
  int rc = bpc_decomp_bounds(d, gid, &core, &gh);
  if (rc != BPC_OK)
    return rc;
  int n = 0;
  rc = bpc_decomp_links(d, gid, links, BPC_MAX_LINKS, &n);
  if (rc != BPC_OK)
    return rc;
  memset(rec, 0, sizeof(int64_t) * R_LEN);
  rec[R_GID] = gid;
  rec[R_RANK] = rank;
  for (int i = 0; i < core.dim; i++) {
    rec[R_CMIN + i] = core.min[i];
    rec[R_CMAX + i] = core.max[i];
    rec[R_GMIN + i] = gh.min[i];
    rec[R_GMAX + i] = gh.max[i];
  }
  for (int k = 0; k < n; k++) {
    if (links[k].nonzero == 1 && rec[R_NFACE] < 2 * BPC_MAX_DIM)
      rec[R_FACE + rec[R_NFACE]++] = links[k].gid;
    else if (links[k].nonzero == 2)
      rec[R_EDGES]++;
    else if (links[k].nonzero >= 3)
      rec[R_CORNERS]++;
  }
  return BPC_OK;
}

/* "[a,b)x[c,d)" */
static void fmt_bounds(char *buf, size_t len, int dim, const int64_t *mn, const int64_t *mx)
{
  size_t used = 0;
  buf[0] = '\0';
  for (int i = 0; i < dim && used < len; i++) {
    int w = snprintf(buf + used, len - used, "%s[%lld,%lld)", i ? "x" : "", (long long)mn[i],
                     (long long)mx[i]);
    if (w < 0)
      break;
    used += (size_t)w;
  }
}

static void print_table(const bpc_decomp_t *d, const opts_t *o, const int64_t *recs, int nblocks,
                        int nprocs)
{
  int dim = o->dim, divs[BPC_MAX_DIM];
  bpc_decomp_divs(d, divs);
  char dom[256] = "", dv[128] = "", gh[128] = "";
  int64_t zero[BPC_MAX_DIM] = {0};
  fmt_bounds(dom, sizeof dom, dim, zero, o->domain);
  size_t u = 0, g = 0;
  int same_ghost = 1;
  for (int i = 0; i < dim; i++) {
    u += (size_t)snprintf(dv + u, sizeof dv - u, "%s%d", i ? "x" : "", divs[i]);
    g += (size_t)snprintf(gh + g, sizeof gh - g, "%s%d", i ? "," : "", o->ghost[i]);
    same_ghost &= o->ghost[i] == o->ghost[0];
  }
  if (same_ghost)
    snprintf(gh, sizeof gh, "%d", o->ghost[0]);
  printf("bpc-decomp: %d-D domain %s, %d blocks (%s) on %d process%s, %s assignment\n", dim, dom,
         nblocks, dv, nprocs, nprocs == 1 ? "" : "es",
         o->assign == BPC_ASSIGN_ROUND_ROBIN ? "round-robin" : "contiguous");
  printf("ghost %s, wrap %s, share_face %s\n", gh, o->wrap ? "yes" : "no",
         o->share_face ? "yes" : "no");
  /* column widths */
  int wc = 4, wg = 7;
  char b1[512], b2[512];
  for (int k = 0; k < nblocks; k++) {
    const int64_t *r = recs + (size_t)k * R_LEN;
    fmt_bounds(b1, sizeof b1, dim, r + R_CMIN, r + R_CMAX);
    fmt_bounds(b2, sizeof b2, dim, r + R_GMIN, r + R_GMAX);
    wc = (int)strlen(b1) > wc ? (int)strlen(b1) : wc;
    wg = (int)strlen(b2) > wg ? (int)strlen(b2) : wg;
  }
  printf("%5s %5s  %-*s  %-*s  %5s %7s  %s\n", "gid", "rank", wc, "core", wg, "ghosted", "edges",
         "corners", "faces");
  for (int k = 0; k < nblocks; k++) {
    const int64_t *r = recs + (size_t)k * R_LEN;
    fmt_bounds(b1, sizeof b1, dim, r + R_CMIN, r + R_CMAX);
    fmt_bounds(b2, sizeof b2, dim, r + R_GMIN, r + R_GMAX);
    char faces[256] = "-";
    size_t f = 0;
    for (int j = 0; j < r[R_NFACE]; j++)
      f += (size_t)snprintf(faces + f, sizeof faces - f, "%s%lld", j ? "," : "",
                            (long long)r[R_FACE + j]);
    printf("%5lld %5lld  %-*s  %-*s  %5lld %7lld  %s\n", (long long)r[R_GID],
           (long long)r[R_RANK], wc, b1, wg, b2, (long long)r[R_EDGES], (long long)r[R_CORNERS],
           faces);
  }
  /* blocks per process */
  int *per = calloc((size_t)nprocs, sizeof *per);
  if (per != NULL) {
    for (int k = 0; k < nblocks; k++)
      per[recs[(size_t)k * R_LEN + R_RANK]]++;
    int lo = INT_MAX, hi = 0;
    for (int p = 0; p < nprocs; p++) {
      lo = per[p] < lo ? per[p] : lo;
      hi = per[p] > hi ? per[p] : hi;
    }
    printf("blocks per process: %d to %d\n", lo, hi);
    free(per);
  }
}

int main(int argc, char **argv)
{
  int status = 0, rank = 0, size = 1;
  bpc_ctx_t *ctx = NULL;
  bpc_decomp_t *d = NULL;
  bpc_link_t *links = NULL;
  int64_t *mine = NULL, *all = NULL;
  int *counts = NULL, *displs = NULL;
  opts_t o;
  char err[256] = "";

  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);

  /* every rank parses the same argv, so every rank takes the same branch */
  if (parse_args(argc, argv, &o, err, sizeof err) != 0) {
    if (rank == 0)
      fprintf(stderr, "bpc-decomp: %s (try --help)\n", err);
    status = 2;
    goto done;
  }
  if (o.help) {
    if (rank == 0)
      fputs(usage_text, stdout);
    goto done;
  }

  int rc = bpc_init(MPI_COMM_WORLD, NULL, &ctx);
  if (rc != BPC_OK) {
    if (rank == 0)
      fprintf(stderr, "bpc-decomp: bpc_init failed: %s\n", bpc_strerror(rc));
    status = 1;
    goto done;
  }
  bpc_decomp_params_t p = bpc_decomp_params_default();
  p.dim = o.dim;
  p.nblocks = o.nblocks;
  p.assign = o.assign;
  for (int i = 0; i < o.dim; i++) {
    o.domain[i] = o.ndomain == 0 ? 256 : (o.ndomain == 1 ? o.domain[0] : o.domain[i]);
    o.ghost[i] = o.nghost == 0 ? 0 : (o.nghost == 1 ? o.ghost[0] : o.ghost[i]);
    p.domain_min[i] = 0;
    p.domain_max[i] = o.domain[i];
    p.divs[i] = o.ndivs ? o.divs[i] : 0;
    p.ghost[i] = o.ghost[i];
    p.wrap[i] = o.wrap;
    p.share_face[i] = o.share_face;
  }
  rc = bpc_decomp_create(ctx, &p, &d);
  if (rc != BPC_OK) { /* validation uses only arguments: same on every rank */
    if (rank == 0)
      fprintf(stderr, "bpc-decomp: %s\n", bpc_last_error(ctx));
    status = 1;
    goto done;
  }

  /* describe the local blocks */
  const int *gids = NULL;
  int nlocal = 0;
  bpc_assign_local(bpc_decomp_assign(d), &gids, &nlocal);
  links = malloc(sizeof *links * BPC_MAX_LINKS);
  mine = malloc(sizeof *mine * R_LEN * (size_t)(nlocal > 0 ? nlocal : 1));
  int lrc = (links && mine) ? BPC_OK : BPC_ENOMEM;
  for (int k = 0; k < nlocal && lrc == BPC_OK; k++)
    lrc = describe(d, gids[k], rank, links, mine + (size_t)k * R_LEN);
  int worst = 0;
  MPI_Allreduce(&lrc, &worst, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (worst != BPC_OK) {
    if (lrc != BPC_OK)
      fprintf(stderr, "bpc-decomp: rank %d: %s\n", rank,
              lrc == BPC_ENOMEM ? "out of memory" : bpc_last_error(ctx));
    status = 1;
    goto done;
  }

  /* gather to rank 0 (which first says whether it has room) */
  int nvals = nlocal * R_LEN, ok = 1;
  if (rank == 0) {
    counts = malloc(sizeof *counts * (size_t)size);
    displs = malloc(sizeof *displs * (size_t)size);
    all = malloc(sizeof *all * R_LEN * (size_t)o.nblocks * 2);
    ok = counts != NULL && displs != NULL && all != NULL;
    if (!ok)
      fprintf(stderr, "bpc-decomp: out of memory for %d blocks\n", o.nblocks);
  }
  MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (!ok) {
    status = 1;
    goto done;
  }
  MPI_Gather(&nvals, 1, MPI_INT, counts, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    int off = 0;
    for (int r = 0; r < size; r++) {
      displs[r] = off;
      off += counts[r];
    }
  }
  MPI_Gatherv(mine, nvals, MPI_INT64_T, all, counts, displs, MPI_INT64_T, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    /* records arrive in rank order; place them in gid order in the second
     * half of the buffer */
    int64_t *sorted = all + (size_t)R_LEN * (size_t)o.nblocks;
    for (int k = 0; k < o.nblocks; k++) {
      int64_t g = all[(size_t)k * R_LEN + R_GID];
      memcpy(sorted + (size_t)g * R_LEN, all + (size_t)k * R_LEN, sizeof *all * R_LEN);
    }
    print_table(d, &o, sorted, o.nblocks, size);
  }

done:
  free(links);
  free(mine);
  free(all);
  free(counts);
  free(displs);
  bpc_decomp_destroy(&d);
  bpc_finalize(&ctx);
  MPI_Finalize();
  return status;
}
