/*
 * tests/unit/test_decomp.c - regular decomposition and block store on a
 * serial context. Every property is checked against a brute-force reference
 * computed here: cores tile the domain (each point in exactly one core),
 * sizes differ by at most one, share_face and ghosts, point location, gid <->
 * coordinates, links (blocks whose cores, grown by one, touch, with periodic
 * images), automatic divisions (exhaustive search of the least internal face
 * area), then the block store and foreach, and every error code.
 */
#include "unit_check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bpc.h"

#ifdef _OPENMP
#include <omp.h>
#endif

/* Assertions for hot loops: Check's ck_assert records a checkpoint on every
 * call (a system call), so these only reach Check when they fail. */
#define REQ_MSG(cond, ...)      \
  do {                          \
    if (!(cond))                \
      ck_abort_msg(__VA_ARGS__); \
  } while (0)
#define REQ(cond) REQ_MSG(cond, "%s:%d: '%s' failed", __FILE__, __LINE__, #cond)
#define REQ_EQ(x, y)                                                                     \
  do {                                                                                   \
    long long x_ = (long long)(x), y_ = (long long)(y);                                  \
    REQ_MSG(x_ == y_, "%s:%d: %s == %s failed (%lld vs %lld)", __FILE__, __LINE__, #x, #y, \
            x_, y_);                                                                     \
  } while (0)
#define REQ_NONNULL(p) REQ((p) != NULL)
#define REQ_NULL(p) REQ((p) == NULL)

/* ------------------------------------------------------------ helpers */

static bpc_ctx_t *serial_ctx(void)
{
  bpc_ctx_t *ctx = NULL;
  ck_assert_int_eq(bpc_init_serial(NULL, &ctx), BPC_OK);
  return ctx;
}

/* A small domain offset from the origin, so that domain_min matters. */
static bpc_decomp_params_t params_for(int dim, const int64_t *ext, int nblocks, const int *divs,
                                      int share, int wrapmask, int ghost)
{
  bpc_decomp_params_t p = bpc_decomp_params_default();
  p.dim = dim;
  p.nblocks = nblocks;
  for (int d = 0; d < dim; d++) {
    p.domain_min[d] = -3 + 7 * d;
    p.domain_max[d] = p.domain_min[d] + ext[d];
    p.divs[d] = divs ? divs[d] : 0;
    p.share_face[d] = share;
    p.wrap[d] = (wrapmask >> d) & 1;
    p.ghost[d] = ghost ? ghost + (d % 2) : 0;
  }
  return p;
}

static int64_t npoints_of(int dim, const int64_t *ext)
{
  int64_t n = 1;
  for (int d = 0; d < dim; d++)
    n *= ext[d];
  return n;
}

/* i-th point of the domain (dimension 0 fastest). */
static void point_at(const bpc_decomp_params_t *p, int64_t i, int64_t pt[BPC_MAX_DIM])
{
  for (int d = 0; d < p->dim; d++) {
    int64_t e = p->domain_max[d] - p->domain_min[d];
    pt[d] = p->domain_min[d] + i % e;
    i /= e;
  }
}

static int inside(const bpc_bounds_t *b, const int64_t *pt)
{
  for (int d = 0; d < b->dim; d++)
    if (pt[d] < b->min[d] || pt[d] >= b->max[d])
      return 0;
  return 1;
}

/* ------------------------------------------------- one full property check */

typedef struct link_ref {
  int present;
  int gid;
  int wrap[BPC_MAX_DIM];
} link_ref_t;

/* Brute-force links of g: every block h and every periodic image of h
 * (shift s[d] in -1..1 where d wraps) whose core touches the core of g grown
 * by one. Indexed by direction code t = sum (dir[d]+1) 3^d. */
static void ref_links(int dim, int nb, const bpc_bounds_t *core, const int *wrap, const int64_t *ext,
                      int g, link_ref_t *ref, int nref)
{
  memset(ref, 0, sizeof *ref * (size_t)nref);
  int nshift = 1;
  for (int d = 0; d < dim; d++)
    nshift *= 3;
  for (int h = 0; h < nb; h++) {
    for (int s = 0; s < nshift; s++) {
      int sh[BPC_MAX_DIM], ok = 1, rest = s, allzero = 1;
      for (int d = 0; d < dim; d++) {
        sh[d] = rest % 3 - 1;
        rest /= 3;
        if (sh[d] != 0 && !wrap[d])
          ok = 0;
      }
      if (!ok)
        continue;
      int dir[BPC_MAX_DIM], touch = 1;
      for (int d = 0; d < dim && touch; d++) {
        int64_t lo = core[h].min[d] + sh[d] * ext[d], hi = core[h].max[d] + sh[d] * ext[d];
        if (!(lo < core[g].max[d] + 1 && hi > core[g].min[d] - 1))
          touch = 0;
        dir[d] = hi <= core[g].min[d] ? -1 : (lo >= core[g].max[d] ? 1 : 0);
        if (dir[d] != 0)
          allzero = 0;
      }
      if (!touch || allzero)
        continue;
      int t = 0;
      for (int d = dim - 1; d >= 0; d--)
        t = t * 3 + dir[d] + 1;
      REQ_MSG(t < nref, "direction code");
      REQ_MSG(!ref[t].present, "brute force found two neighbours in one direction");
      ref[t].present = 1;
      ref[t].gid = h;
      for (int d = 0; d < dim; d++)
        ref[t].wrap[d] = sh[d];
    }
  }
}

static void check_decomp(bpc_ctx_t *ctx, int dim, const int64_t *ext, int nblocks, const int *divs,
                         int wrapmask, int ghost)
{
  char what[200];
  snprintf(what, sizeof what, "dim %d nblocks %d divs %s wrap %x ghost %d", dim, nblocks,
           divs ? "given" : "auto", wrapmask, ghost);
  bpc_decomp_params_t p0 = params_for(dim, ext, nblocks, divs, 0, wrapmask, ghost);
  bpc_decomp_params_t p1 = params_for(dim, ext, nblocks, divs, 1, wrapmask, ghost);
  bpc_decomp_t *d0 = NULL, *d1 = NULL;
  REQ_MSG(bpc_decomp_create(ctx, &p0, &d0) == BPC_OK, "%s: %s", what, bpc_last_error(ctx));
  REQ_EQ(bpc_decomp_create(ctx, &p1, &d1), BPC_OK);

  int dv[BPC_MAX_DIM], dv1[BPC_MAX_DIM], nb = 0, dd = 0;
  REQ_EQ(bpc_decomp_divs(d0, dv), BPC_OK);
  REQ_EQ(bpc_decomp_divs(d1, dv1), BPC_OK);
  REQ_EQ(bpc_decomp_nblocks(d0, &nb), BPC_OK);
  REQ_EQ(bpc_decomp_dim(d0, &dd), BPC_OK);
  REQ_EQ(nb, nblocks);
  REQ_EQ(dd, dim);
  int64_t prod = 1;
  for (int d = 0; d < dim; d++) {
    REQ_MSG(dv[d] >= 1 && dv[d] <= ext[d], "%s: divs[%d] = %d", what, d, dv[d]);
    REQ_EQ(dv[d], dv1[d]);
    if (divs && divs[d])
      REQ_EQ(dv[d], divs[d]);
    prod *= dv[d];
  }
  REQ_EQ(prod, nblocks);
  bpc_bounds_t dom;
  REQ_EQ(bpc_decomp_domain(d0, &dom), BPC_OK);
  REQ_EQ(dom.dim, dim);
  for (int d = 0; d < dim; d++) {
    REQ_EQ(dom.min[d], p0.domain_min[d]);
    REQ_EQ(dom.max[d], p0.domain_max[d]);
  }

  bpc_bounds_t *core = calloc((size_t)nblocks, sizeof *core);
  bpc_bounds_t *core1 = calloc((size_t)nblocks, sizeof *core1);
  bpc_bounds_t *gh = calloc((size_t)nblocks, sizeof *gh);
  int (*co)[BPC_MAX_DIM] = calloc((size_t)nblocks, sizeof *co);
  REQ_NONNULL(core);
  REQ_NONNULL(core1);
  REQ_NONNULL(gh);
  REQ_NONNULL(co);

  /* gid <-> coords: round trip and the documented formula */
  for (int g = 0; g < nblocks; g++) {
    REQ_EQ(bpc_decomp_gid_to_coords(d0, g, co[g]), BPC_OK);
    int expect = 0;
    for (int d = dim - 1; d >= 0; d--) {
      REQ(co[g][d] >= 0 && co[g][d] < dv[d]);
      expect = expect * dv[d] + co[g][d];
    }
    REQ_EQ(expect, g);
    int back = -1;
    REQ_EQ(bpc_decomp_coords_to_gid(d0, co[g], &back), BPC_OK);
    REQ_EQ(back, g);
    REQ_EQ(bpc_decomp_bounds(d0, g, &core[g], NULL), BPC_OK);
    REQ_EQ(bpc_decomp_bounds(d1, g, &core1[g], &gh[g]), BPC_OK);
    REQ_EQ(core[g].dim, dim);
    REQ_EQ(gh[g].dim, dim);
  }

  /* regular grid: along d a block's extent depends only on its coordinate
   * there; sizes differ by at most one; coordinates increase with position */
  for (int d = 0; d < dim; d++) {
    int64_t smin = INT64_MAX, smax = 0;
    for (int g = 0; g < nblocks; g++) {
      int64_t sz = core[g].max[d] - core[g].min[d];
      REQ_MSG(sz >= 1, "%s: empty block", what);
      smin = sz < smin ? sz : smin;
      smax = sz > smax ? sz : smax;
      for (int h = 0; h < nblocks; h++) {
        if (co[h][d] == co[g][d]) {
          REQ_EQ(core[h].min[d], core[g].min[d]);
          REQ_EQ(core[h].max[d], core[g].max[d]);
        } else if (co[h][d] == co[g][d] + 1) {
          REQ_EQ(core[h].min[d], core[g].max[d]);
        }
      }
      if (co[g][d] == 0)
        REQ_EQ(core[g].min[d], p0.domain_min[d]);
      if (co[g][d] == dv[d] - 1)
        REQ_EQ(core[g].max[d], p0.domain_max[d]);
    }
    REQ_MSG(smax - smin <= 1, "%s: sizes %lld..%lld in dim %d", what, (long long)smin,
                  (long long)smax, d);
  }

  /* tiling: every point in exactly one core; point_to_gid agrees */
  int64_t np = npoints_of(dim, ext);
  for (int64_t i = 0; i < np; i++) {
    int64_t pt[BPC_MAX_DIM];
    point_at(&p0, i, pt);
    int owner = -1, count = 0;
    for (int g = 0; g < nblocks; g++)
      if (inside(&core[g], pt)) {
        owner = g;
        count++;
      }
    REQ_MSG(count == 1, "%s: point %lld is in %d cores", what, (long long)i, count);
    int got = -1;
    REQ_EQ(bpc_decomp_point_to_gid(d0, pt, &got), BPC_OK);
    REQ_EQ(got, owner);
    REQ_EQ(bpc_decomp_point_to_gid(d1, pt, &got), BPC_OK);
    REQ_EQ(got, owner);
    /* periodic images (every few points, to stay quick) */
    if (wrapmask && i % 7 == 0) {
      int64_t q[BPC_MAX_DIM];
      for (int k = -2; k <= 2; k++) {
        /* shift by k periods in even wrapping dimensions, -k in odd ones */
        for (int d = 0; d < dim; d++) {
          q[d] = pt[d];
          if ((wrapmask >> d) & 1)
            q[d] += (d % 2 == 0 ? k : -k) * ext[d];
        }
        REQ_EQ(bpc_decomp_point_to_gid(d0, q, &got), BPC_OK);
        REQ_EQ(got, owner);
      }
    }
  }
  /* outside a non-wrapping dimension: BPC_ERANGE */
  for (int d = 0; d < dim; d++) {
    if ((wrapmask >> d) & 1)
      continue;
    int64_t pt[BPC_MAX_DIM];
    point_at(&p0, 0, pt);
    pt[d] = p0.domain_max[d];
    int got = -1;
    REQ_EQ(bpc_decomp_point_to_gid(d0, pt, &got), BPC_ERANGE);
    pt[d] = p0.domain_min[d] - 1;
    REQ_EQ(bpc_decomp_point_to_gid(d0, pt, &got), BPC_ERANGE);
    REQ_NONNULL(strstr(bpc_last_error(ctx), "outside the domain"));
  }

  /* share_face and ghosts */
  for (int g = 0; g < nblocks; g++) {
    for (int d = 0; d < dim; d++) {
      REQ_EQ(core1[g].min[d], core[g].min[d]);
      if (co[g][d] + 1 < dv[d]) {
        REQ_EQ(core1[g].max[d], core[g].max[d] + 1);
        /* the extra point is the upper neighbour's first point */
        int c[BPC_MAX_DIM], up = -1;
        memcpy(c, co[g], sizeof c);
        c[d]++;
        REQ_EQ(bpc_decomp_coords_to_gid(d0, c, &up), BPC_OK);
        REQ_EQ(core1[g].max[d] - 1, core[up].min[d]);
      } else {
        REQ_EQ(core1[g].max[d], core[g].max[d]);
      }
      int64_t gw = p1.ghost[d];
      int64_t lo = core1[g].min[d] - gw, hi = core1[g].max[d] + gw;
      if (!((wrapmask >> d) & 1)) {
        if (lo < p1.domain_min[d])
          lo = p1.domain_min[d];
        if (hi > p1.domain_max[d])
          hi = p1.domain_max[d];
      }
      REQ_EQ(gh[g].min[d], lo);
      REQ_EQ(gh[g].max[d], hi);
    }
  }

  /* links against the brute-force neighbour search */
  int nref = 1;
  for (int d = 0; d < dim; d++)
    nref *= 3;
  link_ref_t *ref = calloc((size_t)nref, sizeof *ref);
  bpc_link_t *links = calloc(BPC_MAX_LINKS, sizeof *links);
  REQ_NONNULL(ref);
  REQ_NONNULL(links);
  int wrapv[BPC_MAX_DIM] = {0};
  for (int d = 0; d < dim; d++)
    wrapv[d] = (wrapmask >> d) & 1;
  for (int g = 0; g < nblocks; g++) {
    ref_links(dim, nblocks, core, wrapv, ext, g, ref, nref);
    int n = -1;
    REQ_EQ(bpc_decomp_links(d0, g, links, BPC_MAX_LINKS, &n), BPC_OK);
    int k = 0;
    for (int t = 0; t < nref; t++) {
      if (!ref[t].present)
        continue;
      REQ_MSG(k < n, "%s: gid %d: too few links", what, g);
      const bpc_link_t *l = &links[k++];
      int tt = 0, nz = 0;
      for (int d = dim - 1; d >= 0; d--) {
        REQ(l->dir[d] >= -1 && l->dir[d] <= 1);
        tt = tt * 3 + l->dir[d] + 1;
        nz += l->dir[d] != 0;
      }
      REQ_MSG(tt == t, "%s: gid %d: link %d has direction code %d, expected %d", what, g,
                    k - 1, tt, t);
      REQ_EQ(l->gid, ref[t].gid);
      REQ_EQ(l->nonzero, nz);
      for (int d = 0; d < dim; d++)
        REQ_EQ(l->wrap[d], ref[t].wrap[d]);
    }
    REQ_MSG(k == n, "%s: gid %d: %d links, brute force %d", what, g, n, k);
    if (n > 0) { /* too small a buffer: BPC_ERANGE with the total */
      int n2 = -1;
      REQ_EQ(bpc_decomp_links(d0, g, links, n - 1, &n2), BPC_ERANGE);
      REQ_EQ(n2, n);
      REQ_EQ(bpc_decomp_links(d0, g, NULL, 0, &n2), n > 0 ? BPC_ERANGE : BPC_OK);
      REQ_EQ(n2, n);
    }
  }
  free(ref);
  free(links);
  free(core);
  free(core1);
  free(gh);
  free(co);
  bpc_decomp_destroy(&d0);
  bpc_decomp_destroy(&d1);
  REQ_NULL(d0);
}

/* Small domains per dimension on which automatic divisions of the block
 * counts below fit (509 only in dimensions 1 and 2). */
static const int64_t g_ext[BPC_MAX_DIM + 1][BPC_MAX_DIM] = {
    {0},
    {1000},
    {520, 7},
    {13, 9, 7},
    {9, 7, 5, 4},
    {8, 5, 4, 3, 3},
    {7, 4, 3, 3, 2, 2},
};
static const int g_nblocks[] = {1, 2, 3, 5, 7, 8, 12, 64, 509};
#define N_NBLOCKS ((int)(sizeof g_nblocks / sizeof g_nblocks[0]))

START_TEST(test_tiling_auto)
{
  int dim = _i + 1;
  bpc_ctx_t *ctx = serial_ctx();
  for (int k = 0; k < N_NBLOCKS; k++) {
    int nb = g_nblocks[k];
    if (nb == 509 && dim > 2)
      continue;
    check_decomp(ctx, dim, g_ext[dim], nb, NULL, 0, 0);
    /* wrap in alternate dimensions, and in all */
    check_decomp(ctx, dim, g_ext[dim], nb, NULL, 0x15, 1);
    if (nb <= 64)
      check_decomp(ctx, dim, g_ext[dim], nb, NULL, 0x3f, 2);
  }
  bpc_finalize(&ctx);
}
END_TEST

START_TEST(test_tiling_user_divs)
{
  bpc_ctx_t *ctx = serial_ctx();
  int64_t e1[] = {11, 6, 5};
  int a[] = {4, 1, 3}, b[] = {0, 3, 0}, c[] = {1, 1, 5}, dd[] = {11, 0, 0};
  check_decomp(ctx, 3, e1, 12, a, 0, 0);
  check_decomp(ctx, 3, e1, 12, a, 0x7, 1);
  check_decomp(ctx, 3, e1, 12, b, 0x2, 1);
  check_decomp(ctx, 3, e1, 5, c, 0x4, 0);
  check_decomp(ctx, 3, e1, 22, dd, 0x1, 3);
  /* blocks of one point: extent equals divisions, wrap gives 2-block rings */
  int64_t e2[] = {2, 1, 2, 3};
  int f[] = {2, 1, 2, 3};
  check_decomp(ctx, 4, e2, 12, f, 0xf, 1);
  int64_t e3[] = {5, 4};
  int h[] = {1, 2};
  check_decomp(ctx, 2, e3, 2, h, 0x3, 1); /* one block wide and wrapping */
  bpc_finalize(&ctx);
}
END_TEST

/* ------------------------------------------------- automatic divisions */

static void auto_divs(bpc_ctx_t *ctx, int dim, const int64_t *ext, int nb, int *out)
{
  bpc_decomp_params_t p = params_for(dim, ext, nb, NULL, 0, 0, 0);
  bpc_decomp_t *d = NULL;
  ck_assert_msg(bpc_decomp_create(ctx, &p, &d) == BPC_OK, "%s", bpc_last_error(ctx));
  ck_assert_int_eq(bpc_decomp_divs(d, out), BPC_OK);
  bpc_decomp_destroy(&d);
}

/* Total area of internal faces, exactly (small extents). */
static long long face_area(int dim, const int64_t *ext, const int *dv)
{
  long long a = 0;
  for (int d = 0; d < dim; d++) {
    long long f = dv[d] - 1;
    for (int e = 0; e < dim; e++)
      if (e != d)
        f *= ext[e];
    a += f;
  }
  return a;
}

START_TEST(test_auto_known)
{
  bpc_ctx_t *ctx = serial_ctx();
  int dv[BPC_MAX_DIM];
  int64_t cube[] = {256, 256, 256};
  auto_divs(ctx, 3, cube, 64, dv);
  ck_assert(dv[0] == 4 && dv[1] == 4 && dv[2] == 4);
  auto_divs(ctx, 3, cube, 12, dv);
  int s[3] = {dv[0], dv[1], dv[2]};
  /* a permutation of 3x2x2 */
  ck_assert_int_eq(s[0] * s[1] * s[2], 12);
  ck_assert_int_eq((s[0] == 3) + (s[1] == 3) + (s[2] == 3), 1);
  ck_assert_int_eq((s[0] == 2) + (s[1] == 2) + (s[2] == 2), 2);
  /* the tie-break favours lower dimensions */
  ck_assert_int_eq(s[0], 3);
  int64_t thin[] = {16, 1024, 16};
  auto_divs(ctx, 3, thin, 16, dv);
  ck_assert_msg(dv[1] > dv[0] && dv[1] > dv[2], "long axis got %dx%dx%d", dv[0], dv[1], dv[2]);
  int64_t thin2[] = {4096, 64};
  auto_divs(ctx, 2, thin2, 16, dv);
  ck_assert_int_eq(dv[0], 16);
  ck_assert_int_eq(dv[1], 1);
  /* fit: no more blocks than points in a dimension */
  int64_t flat[] = {3, 100};
  auto_divs(ctx, 2, flat, 8, dv);
  ck_assert(dv[0] <= 3);
  ck_assert_int_eq(dv[0] * dv[1], 8);
  int64_t prime[] = {600, 2};
  auto_divs(ctx, 2, prime, 509, dv);
  ck_assert(dv[0] == 509 && dv[1] == 1);
  /* prime on a cube: all in dimension 0 */
  int64_t c7[] = {10, 10, 10};
  auto_divs(ctx, 3, c7, 7, dv);
  ck_assert(dv[0] == 7 && dv[1] == 1 && dv[2] == 1);
  /* 6-D: 64 = 2^6 on a hypercube */
  int64_t h6[] = {8, 8, 8, 8, 8, 8};
  auto_divs(ctx, 6, h6, 64, dv);
  for (int d = 0; d < 6; d++)
    ck_assert_int_eq(dv[d], 2);
  bpc_finalize(&ctx);
}
END_TEST

/* Exhaustive check in 3-D: the automatic choice has the least face area of
 * all fitting factorisations, and among equal areas the lexicographically
 * largest divisions; partially given divisions are kept. */
START_TEST(test_auto_exhaustive)
{
  bpc_ctx_t *ctx = serial_ctx();
  const int64_t exts[][3] = {{16, 16, 16}, {30, 7, 12}, {5, 40, 3}, {2, 2, 100}, {9, 9, 1}};
  const int nbs[] = {1, 2, 6, 8, 12, 18, 24, 30, 36, 48, 60, 64, 72, 81, 96};
  for (size_t e = 0; e < sizeof exts / sizeof exts[0]; e++) {
    for (size_t k = 0; k < sizeof nbs / sizeof nbs[0]; k++) {
      int nb = nbs[k];
      for (int fix = -1; fix < 3; fix++) { /* fix: dimension given by the user */
        int best[3] = {0, 0, 0}, found = 0;
        long long best_a = 0;
        for (int a = 1; a <= nb; a++)
          for (int b = 1; b <= nb / a; b++) {
            if (nb % (a * b) != 0)
              continue;
            int c = nb / (a * b);
            int cand[3] = {a, b, c};
            if (a > exts[e][0] || b > exts[e][1] || c > exts[e][2])
              continue;
            if (fix >= 0 && cand[fix] != 2)
              continue;
            long long ar = face_area(3, exts[e], cand);
            int take = !found || ar < best_a;
            if (found && ar == best_a)
              take = cand[0] > best[0] || (cand[0] == best[0] && cand[1] > best[1]);
            if (take) {
              memcpy(best, cand, sizeof best);
              best_a = ar;
              found = 1;
            }
          }
        int user[3] = {0, 0, 0};
        if (fix >= 0)
          user[fix] = 2;
        bpc_decomp_params_t p = params_for(3, exts[e], nb, user, 0, 0, 0);
        bpc_decomp_t *d = NULL;
        int rc = bpc_decomp_create(ctx, &p, &d);
        if (!found) {
          ck_assert_msg(rc == BPC_EDIVS, "ext %d nb %d fix %d: rc %d", (int)e, nb, fix, rc);
          continue;
        }
        ck_assert_msg(rc == BPC_OK, "ext %d nb %d fix %d: %s", (int)e, nb, fix,
                      bpc_last_error(ctx));
        int dv[BPC_MAX_DIM];
        bpc_decomp_divs(d, dv);
        ck_assert_msg(dv[0] == best[0] && dv[1] == best[1] && dv[2] == best[2],
                      "ext %d nb %d fix %d: got %dx%dx%d, expected %dx%dx%d", (int)e, nb, fix,
                      dv[0], dv[1], dv[2], best[0], best[1], best[2]);
        bpc_decomp_destroy(&d);
      }
    }
  }
  bpc_finalize(&ctx);
}
END_TEST

/* A 3x3x3 grid: the centre block has 6 face, 12 edge and 8 corner links. */
START_TEST(test_links_counts)
{
  bpc_ctx_t *ctx = serial_ctx();
  int64_t ext[] = {9, 9, 9};
  int dv[] = {3, 3, 3};
  bpc_decomp_params_t p = params_for(3, ext, 27, dv, 0, 0, 0);
  bpc_decomp_t *d = NULL;
  ck_assert_int_eq(bpc_decomp_create(ctx, &p, &d), BPC_OK);
  bpc_link_t links[BPC_MAX_LINKS];
  int n = 0, c[BPC_MAX_DIM] = {1, 1, 1}, gid = -1;
  ck_assert_int_eq(bpc_decomp_coords_to_gid(d, c, &gid), BPC_OK);
  ck_assert_int_eq(gid, 13);
  ck_assert_int_eq(bpc_decomp_links(d, gid, links, BPC_MAX_LINKS, &n), BPC_OK);
  int cnt[4] = {0, 0, 0, 0};
  for (int i = 0; i < n; i++)
    cnt[links[i].nonzero]++;
  ck_assert_int_eq(n, 26);
  ck_assert_int_eq(cnt[1], 6);
  ck_assert_int_eq(cnt[2], 12);
  ck_assert_int_eq(cnt[3], 8);
  /* a corner block without wrap: 3 faces, 3 edges, 1 corner */
  ck_assert_int_eq(bpc_decomp_links(d, 0, links, BPC_MAX_LINKS, &n), BPC_OK);
  memset(cnt, 0, sizeof cnt);
  for (int i = 0; i < n; i++)
    cnt[links[i].nonzero]++;
  ck_assert(n == 7 && cnt[1] == 3 && cnt[2] == 3 && cnt[3] == 1);
  bpc_decomp_destroy(&d);
  /* one block wrapping in 6-D: itself, 728 times */
  bpc_decomp_params_t q = bpc_decomp_params_default();
  q.dim = 6;
  q.nblocks = 1;
  for (int i = 0; i < 6; i++) {
    q.domain_max[i] = 2;
    q.wrap[i] = 1;
  }
  ck_assert_int_eq(bpc_decomp_create(ctx, &q, &d), BPC_OK);
  ck_assert_int_eq(bpc_decomp_links(d, 0, links, BPC_MAX_LINKS, &n), BPC_OK);
  ck_assert_int_eq(n, BPC_MAX_LINKS);
  for (int i = 0; i < n; i++) {
    ck_assert_int_eq(links[i].gid, 0);
    for (int k = 0; k < 6; k++)
      ck_assert_int_eq(links[i].wrap[k], links[i].dir[k]);
  }
  bpc_decomp_destroy(&d);
  bpc_finalize(&ctx);
}
END_TEST

START_TEST(test_params_default)
{
  bpc_decomp_params_t p = bpc_decomp_params_default();
  ck_assert_int_eq(p.dim, 3);
  ck_assert_int_eq(p.nblocks, 0);
  ck_assert_int_eq(p.assign, BPC_ASSIGN_CONTIGUOUS);
  ck_assert_ptr_null(p.map);
  for (int d = 0; d < BPC_MAX_DIM; d++) {
    ck_assert_int_eq(p.domain_min[d], p.domain_max[d]);
    ck_assert(p.divs[d] == 0 && p.share_face[d] == 0 && p.wrap[d] == 0 && p.ghost[d] == 0);
  }
}
END_TEST

/* ------------------------------------------------------------ bad input */

#define EXPECT_ERR(call, code, substr)                                                   \
  do {                                                                                   \
    int rc_ = (call);                                                                    \
    ck_assert_msg(rc_ == (code), "%s returned %s, expected %s (%s)", #call,              \
                  bpc_err_name(rc_), bpc_err_name(code), bpc_last_error(ctx));           \
    ck_assert_msg(strstr(bpc_last_error(ctx), (substr)) != NULL,                         \
                  "%s: message '%s' does not contain '%s'", #call, bpc_last_error(ctx),  \
                  (substr));                                                             \
  } while (0)

static bpc_decomp_params_t good_params(void)
{
  bpc_decomp_params_t p = bpc_decomp_params_default();
  p.nblocks = 64;
  for (int d = 0; d < 3; d++)
    p.domain_max[d] = 32;
  return p;
}

START_TEST(test_bad_input)
{
  bpc_ctx_t *ctx = serial_ctx();
  bpc_decomp_t *d = NULL;
  bpc_decomp_params_t p = good_params();
  ck_assert_int_eq(bpc_decomp_create(NULL, &p, &d), BPC_ENULL);
  EXPECT_ERR(bpc_decomp_create(ctx, NULL, &d), BPC_ENULL, "params is NULL");
  EXPECT_ERR(bpc_decomp_create(ctx, &p, NULL), BPC_ENULL, "out is NULL");

  p = good_params();
  p.dim = 0;
  EXPECT_ERR(bpc_decomp_create(ctx, &p, &d), BPC_EDIM, "dim 0 is not in 1..6");
  p.dim = 7;
  EXPECT_ERR(bpc_decomp_create(ctx, &p, &d), BPC_EDIM, "dim 7 is not in 1..6");
  ck_assert_ptr_null(d);

  p = good_params();
  p.nblocks = 0;
  EXPECT_ERR(bpc_decomp_create(ctx, &p, &d), BPC_ENBLOCKS, "nblocks is 0");
  p.nblocks = -5;
  EXPECT_ERR(bpc_decomp_create(ctx, &p, &d), BPC_ENBLOCKS, "nblocks is -5");

  p = good_params();
  p.domain_min[1] = 5;
  p.domain_max[1] = 5;
  EXPECT_ERR(bpc_decomp_create(ctx, &p, &d), BPC_EINVAL, "empty in dimension 1");

  p = good_params();
  p.divs[0] = 4;
  p.divs[1] = 4;
  p.divs[2] = 2;
  EXPECT_ERR(bpc_decomp_create(ctx, &p, &d), BPC_EDIVS,
             "divisions 4x4x2 multiply to 32, but nblocks is 64");
  p.divs[2] = 8;
  EXPECT_ERR(bpc_decomp_create(ctx, &p, &d), BPC_EDIVS, "multiply to 128, but nblocks is 64");
  p.divs[0] = 3;
  p.divs[1] = 0;
  p.divs[2] = 0;
  EXPECT_ERR(bpc_decomp_create(ctx, &p, &d), BPC_EDIVS, "does not divide nblocks 64");
  p.divs[0] = -2;
  EXPECT_ERR(bpc_decomp_create(ctx, &p, &d), BPC_EDIVS, "-2 in dimension 0 is negative");
  p = good_params();
  p.domain_max[2] = 4;
  p.divs[0] = 2;
  p.divs[1] = 4;
  p.divs[2] = 8;
  EXPECT_ERR(bpc_decomp_create(ctx, &p, &d), BPC_EDIVS,
             "8 blocks in dimension 2 exceed the domain extent 4");
  /* no automatic choice fits: 509 is prime and every extent is 32 */
  p = good_params();
  p.nblocks = 509;
  EXPECT_ERR(bpc_decomp_create(ctx, &p, &d), BPC_EDIVS, "no division of 509 blocks");

  p = good_params();
  p.ghost[2] = -1;
  EXPECT_ERR(bpc_decomp_create(ctx, &p, &d), BPC_EGHOST,
             "ghost width -1 in dimension 2 is negative");

  p = good_params();
  p.assign = BPC_ASSIGN_USER;
  EXPECT_ERR(bpc_decomp_create(ctx, &p, &d), BPC_EASSIGN, "needs a map");
  int *map = calloc(64, sizeof *map);
  ck_assert_ptr_nonnull(map);
  map[17] = 1; /* serial context: only rank 0 exists */
  p.map = map;
  EXPECT_ERR(bpc_decomp_create(ctx, &p, &d), BPC_EASSIGN, "map[17] = 1 is not a rank");
  map[17] = -1;
  EXPECT_ERR(bpc_decomp_create(ctx, &p, &d), BPC_EASSIGN, "map[17] = -1");
  map[17] = 0;
  ck_assert_int_eq(bpc_decomp_create(ctx, &p, &d), BPC_OK);
  map[3] = 99; /* the map was copied */
  int r = -1;
  ck_assert_int_eq(bpc_assign_rank(bpc_decomp_assign(d), 3, &r), BPC_OK);
  ck_assert_int_eq(r, 0);
  free(map);
  bpc_decomp_destroy(&d);
  p = good_params();
  p.assign = (bpc_assign_mode_t)7;
  EXPECT_ERR(bpc_decomp_create(ctx, &p, &d), BPC_EASSIGN, "unknown assignment mode 7");
  ck_assert_ptr_null(d);

  /* queries on a good decomposition */
  p = good_params();
  ck_assert_int_eq(bpc_decomp_create(ctx, &p, &d), BPC_OK);
  int c[BPC_MAX_DIM] = {0}, g = 0, n = 0, dv[BPC_MAX_DIM];
  bpc_bounds_t b;
  bpc_link_t l[4];
  int64_t pt[BPC_MAX_DIM] = {0};
  EXPECT_ERR(bpc_decomp_gid_to_coords(d, 64, c), BPC_ERANGE, "gid 64 is not in [0, 64)");
  EXPECT_ERR(bpc_decomp_gid_to_coords(d, -1, c), BPC_ERANGE, "gid -1");
  c[1] = 4;
  EXPECT_ERR(bpc_decomp_coords_to_gid(d, c, &g), BPC_ERANGE, "coordinate 4 in dimension 1");
  EXPECT_ERR(bpc_decomp_bounds(d, 100, &b, &b), BPC_ERANGE, "gid 100");
  EXPECT_ERR(bpc_decomp_links(d, 64, l, 4, &n), BPC_ERANGE, "gid 64");
  EXPECT_ERR(bpc_decomp_links(d, 0, l, 4, &n), BPC_ERANGE, "has 7 links, but cap is 4");
  ck_assert_int_eq(n, 7);
  pt[2] = 32;
  EXPECT_ERR(bpc_decomp_point_to_gid(d, pt, &g), BPC_ERANGE, "dimension 2 is outside");
  EXPECT_ERR(bpc_decomp_gid_to_coords(d, 0, NULL), BPC_ENULL, "coords is NULL");
  EXPECT_ERR(bpc_decomp_links(d, 0, NULL, 4, &n), BPC_ENULL, "links is NULL");
  EXPECT_ERR(bpc_decomp_point_to_gid(d, NULL, &g), BPC_ENULL, "pt is NULL");
  EXPECT_ERR(bpc_decomp_dim(d, NULL), BPC_ENULL, "dim is NULL");
  EXPECT_ERR(bpc_decomp_divs(d, NULL), BPC_ENULL, "divs is NULL");
  ck_assert_int_eq(bpc_decomp_dim(NULL, &n), BPC_ENULL);
  ck_assert_int_eq(bpc_decomp_nblocks(NULL, &n), BPC_ENULL);
  ck_assert_int_eq(bpc_decomp_divs(NULL, dv), BPC_ENULL);
  ck_assert_int_eq(bpc_decomp_domain(NULL, &b), BPC_ENULL);
  ck_assert_int_eq(bpc_decomp_bounds(NULL, 0, &b, NULL), BPC_ENULL);
  ck_assert_int_eq(bpc_decomp_links(NULL, 0, l, 4, &n), BPC_ENULL);
  ck_assert_int_eq(bpc_decomp_gid_to_coords(NULL, 0, c), BPC_ENULL);
  ck_assert_int_eq(bpc_decomp_coords_to_gid(NULL, c, &g), BPC_ENULL);
  ck_assert_int_eq(bpc_decomp_point_to_gid(NULL, pt, &g), BPC_ENULL);
  ck_assert_ptr_null(bpc_decomp_assign(NULL));
  ck_assert_int_eq(bpc_decomp_bounds(d, 0, NULL, NULL), BPC_OK);
  ck_assert_int_eq(bpc_decomp_destroy(&d), BPC_OK);
  ck_assert_int_eq(bpc_decomp_destroy(&d), BPC_OK);
  ck_assert_int_eq(bpc_decomp_destroy(NULL), BPC_OK);
  bpc_finalize(&ctx);
}
END_TEST

/* ------------------------------------------------------------ block store */

typedef struct tblock {
  int gid;
  int visits;
  int thread_ok;
} tblock_t;

typedef struct tstate {
  int created[64];
  int destroyed[64];
  int fail_at;   /* create returns NULL for this gid (-1: never) */
  int nthreads;  /* foreach: the thread count asked for */
  int fail_mask; /* foreach: gids (bit) whose callback fails with 100+gid */
} tstate_t;

static void *t_create(int gid, void *user)
{
  tstate_t *s = user;
  s->created[gid]++;
  if (gid == s->fail_at)
    return NULL;
  tblock_t *b = calloc(1, sizeof *b);
  if (b)
    b->gid = gid;
  return b;
}

static void t_destroy(void *block, int gid, void *user)
{
  tstate_t *s = user;
  tblock_t *b = block;
  ck_assert_int_eq(b->gid, gid);
  s->destroyed[gid]++;
  free(b);
}

static int t_visit(void *block, int gid, void *user)
{
  tstate_t *s = user;
  tblock_t *b = block;
  if (b->gid != gid)
    return -1000;
  b->visits++;
#ifdef _OPENMP
  b->thread_ok = omp_get_thread_num() < (s->nthreads > 0 ? s->nthreads : omp_get_max_threads());
#else
  b->thread_ok = 1;
#endif
  if (gid < 31 && ((s->fail_mask >> gid) & 1))
    return 100 + gid;
  return 0;
}

START_TEST(test_blocks)
{
  bpc_ctx_t *ctx = serial_ctx();
  bpc_assign_t *a = NULL;
  ck_assert_int_eq(bpc_assign_create(ctx, 20, BPC_ASSIGN_CONTIGUOUS, NULL, &a), BPC_OK);
  tstate_t s;
  memset(&s, 0, sizeof s);
  s.fail_at = -1;
  bpc_blocks_t *b = NULL;
  ck_assert_int_eq(bpc_blocks_create(a, t_create, t_destroy, &s, &b), BPC_OK);
  int n = 0;
  ck_assert_int_eq(bpc_blocks_count(b, &n), BPC_OK);
  ck_assert_int_eq(n, 20);
  for (int i = 0; i < 20; i++) {
    void *p = NULL;
    int g = -1;
    ck_assert_int_eq(s.created[i], 1);
    ck_assert_int_eq(bpc_blocks_at(b, i, &p, &g), BPC_OK);
    ck_assert_int_eq(g, i);
    ck_assert_int_eq(((tblock_t *)p)->gid, i);
    void *q = NULL;
    ck_assert_int_eq(bpc_blocks_get(b, i, &q), BPC_OK);
    ck_assert_ptr_eq(p, q);
  }
  void *q = NULL;
  EXPECT_ERR(bpc_blocks_get(b, 20, &q), BPC_ENOTFOUND, "gid 20 is not a local block");
  EXPECT_ERR(bpc_blocks_get(b, -1, &q), BPC_ENOTFOUND, "gid -1");
  EXPECT_ERR(bpc_blocks_at(b, 20, &q, NULL), BPC_ERANGE, "index 20");
  /* foreach visits every block once, with 1, 2 and the default threads */
  const int threads[] = {1, 2, 0, 3};
  for (int t = 0; t < 4; t++) {
    s.nthreads = threads[t];
    ck_assert_int_eq(bpc_blocks_foreach(b, t_visit, &s, threads[t]), BPC_OK);
    for (int i = 0; i < 20; i++) {
      tblock_t *p = NULL;
      bpc_blocks_get(b, i, (void **)&p);
      ck_assert_int_eq(p->visits, t + 1);
      ck_assert(p->thread_ok);
    }
  }
  /* failures: all visited, the first in gid order reported */
  s.fail_mask = (1 << 13) | (1 << 7);
  for (int t = 0; t < 2; t++) {
    s.nthreads = t + 1;
    EXPECT_ERR(bpc_blocks_foreach(b, t_visit, &s, t + 1), BPC_ECALLBACK,
               "returned 107 for gid 7");
    for (int i = 0; i < 20; i++) {
      tblock_t *p = NULL;
      bpc_blocks_get(b, i, (void **)&p);
      ck_assert_int_eq(p->visits, 5 + t);
    }
  }
  EXPECT_ERR(bpc_blocks_foreach(b, NULL, &s, 1), BPC_ENULL, "fn is NULL");
  EXPECT_ERR(bpc_blocks_foreach(b, t_visit, &s, -2), BPC_EINVAL, "nthreads is -2");
  ck_assert_int_eq(bpc_blocks_foreach(NULL, t_visit, &s, 1), BPC_ENULL);
  ck_assert_int_eq(bpc_blocks_destroy(&b), BPC_OK);
  ck_assert_ptr_null(b);
  for (int i = 0; i < 20; i++)
    ck_assert_int_eq(s.destroyed[i], 1);
  ck_assert_int_eq(bpc_blocks_destroy(&b), BPC_OK);

  /* create fails at gid 6: 0..5 destroyed once, nothing after 6 made */
  memset(&s, 0, sizeof s);
  s.fail_at = 6;
  EXPECT_ERR(bpc_blocks_create(a, t_create, t_destroy, &s, &b), BPC_ECALLBACK,
             "returned NULL for gid 6");
  ck_assert_ptr_null(b);
  for (int i = 0; i < 20; i++) {
    ck_assert_int_eq(s.created[i], i <= 6);
    ck_assert_int_eq(s.destroyed[i], i < 6);
  }
  /* NULL arguments; destroy may be NULL */
  EXPECT_ERR(bpc_blocks_create(a, NULL, t_destroy, &s, &b), BPC_ENULL, "create is NULL");
  EXPECT_ERR(bpc_blocks_create(a, t_create, t_destroy, &s, NULL), BPC_ENULL, "out is NULL");
  ck_assert_int_eq(bpc_blocks_create(NULL, t_create, t_destroy, &s, &b), BPC_ENULL);
  ck_assert_int_eq(bpc_blocks_count(NULL, &n), BPC_ENULL);
  ck_assert_int_eq(bpc_blocks_at(NULL, 0, &q, &n), BPC_ENULL);
  ck_assert_int_eq(bpc_blocks_get(NULL, 0, &q), BPC_ENULL);
  memset(&s, 0, sizeof s);
  s.fail_at = -1;
  ck_assert_int_eq(bpc_blocks_create(a, t_create, NULL, &s, &b), BPC_OK);
  for (int i = 0; i < 20; i++) {
    bpc_blocks_at(b, i, &q, NULL);
    free(q); /* no destroy callback: the caller frees */
  }
  bpc_blocks_destroy(&b);
  for (int i = 0; i < 20; i++)
    ck_assert_int_eq(s.destroyed[i], 0);
  bpc_assign_destroy(&a);
  bpc_finalize(&ctx);
}
END_TEST

static Suite *decomp_suite(void)
{
  Suite *s = suite_create("decomp");
  TCase *tc = tcase_create("geometry");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_params_default);
  tcase_add_loop_test(tc, test_tiling_auto, 0, BPC_MAX_DIM);
  tcase_add_test(tc, test_tiling_user_divs);
  tcase_add_test(tc, test_auto_known);
  tcase_add_test(tc, test_auto_exhaustive);
  tcase_add_test(tc, test_links_counts);
  suite_add_tcase(s, tc);
  TCase *tb = tcase_create("errors_and_blocks");
  tcase_add_test(tb, test_bad_input);
  tcase_add_test(tb, test_blocks);
  suite_add_tcase(s, tb);
  return s;
}

BPC_T_UNIT_MAIN(decomp_suite)
