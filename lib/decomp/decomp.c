/*
 * lib/decomp/decomp.c - regular n-D decomposition (dim 1..BPC_MAX_DIM) of an
 * integer domain into nblocks blocks: argument checks, automatic divisions
 * (least total area of internal faces), gid <-> grid coordinates (dimension 0
 * fastest), core and ghosted bounds (share_face, clamping, periodic wrap),
 * point location and neighbour links.
 *
 * Along a dimension of extent E cut into n pieces, piece i starts at offset
 * floor(i * E / n), so piece sizes differ by at most one. Every check uses
 * only the arguments, so all ranks find the same error for the same call.
 */
#include "decomp/decomp.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Most divisors an int below 2^31 has is 1600 (2095133040). */
#define BPC__MAX_DIVISORS 1600

/* ------------------------------------------------------------ arithmetic */

int64_t bpc__decomp_piece_start(int64_t extent, int n, int i)
{
  /* extent = q n + r: floor(i extent / n) = i q + floor(i r / n); i r < n^2
   * fits in int64 for any int n. */
  int64_t q = extent / n, r = extent % n;
  return (int64_t)i * q + ((int64_t)i * r) / n;
}

/* Index of the piece containing offset x (0 <= x < extent). */
static int piece_of(int64_t extent, int n, int64_t x)
{
  long double g = (long double)x * (long double)n / (long double)extent;
  int i = g < 0 ? 0 : (g >= (long double)n ? n - 1 : (int)g);
  while (i > 0 && bpc__decomp_piece_start(extent, n, i) > x)
    i--;
  while (i + 1 < n && bpc__decomp_piece_start(extent, n, i + 1) <= x)
    i++;
  return i;
}

/* Non-negative remainder of a modulo m (m > 0), without overflow. */
static int64_t mod_pos(int64_t a, int64_t m)
{
  int64_t r = a % m;
  return r < 0 ? r + m : r;
}

/* "4x4x2" (a 0 prints as 0: automatic). */
static const char *fmt_divs(char *buf, size_t len, int dim, const int *divs)
{
  size_t used = 0;
  buf[0] = '\0';
  for (int d = 0; d < dim && used < len; d++) {
    int w = snprintf(buf + used, len - used, d ? "x%d" : "%d", divs[d]);
    if (w < 0)
      break;
    used += (size_t)w;
  }
  return buf;
}

static const char *fmt_extent(char *buf, size_t len, int dim, const int64_t *extent)
{
  size_t used = 0;
  buf[0] = '\0';
  for (int d = 0; d < dim && used < len; d++) {
    int w = snprintf(buf + used, len - used, d ? "x%lld" : "%lld", (long long)extent[d]);
    if (w < 0)
      break;
    used += (size_t)w;
  }
  return buf;
}

/* ---------------------------------------------------- automatic divisions */

typedef struct auto_search {
  int nfree;
  int free_dim[BPC_MAX_DIM]; /* the dimensions to choose, ascending */
  int dim;
  int64_t extent[BPC_MAX_DIM];
  long double face[BPC_MAX_DIM]; /* area of one internal face across d */
  int divisors[BPC__MAX_DIVISORS];
  int ndivisors;
  int cur[BPC_MAX_DIM];
  int best[BPC_MAX_DIM];
  long double best_cost;
  int found;
} auto_search_t;

static int same_cost(long double a, long double b)
{
  long double diff = a > b ? a - b : b - a;
  long double big = a > b ? a : b;
  return diff <= big * 1e-12L;
}

/* cur is better than best: less area; on a tie, lexicographically larger
 * divisions from dimension 0 (more blocks in lower dimensions). */
static int better(const auto_search_t *s, long double cost)
{
  if (!s->found)
    return 1;
  if (!same_cost(cost, s->best_cost))
    return cost < s->best_cost;
  for (int d = 0; d < s->dim; d++)
    if (s->cur[d] != s->best[d])
      return s->cur[d] > s->best[d];
  return 0;
}

/* A lower bound on the area the free dimensions j.. add when their divisions
 * multiply to rem: by the AM-GM inequality, sum f_d a_d >= m (rem prod a_d)^(1/m)
 * for m dimensions with face areas a_d, whatever the f_d. */
static long double rest_bound(const auto_search_t *s, int j, int rem)
{
  int m = s->nfree - j;
  long double logsum = logl((long double)rem), faces = 0.0L;
  for (int k = j; k < s->nfree; k++) {
    logsum += logl(s->face[s->free_dim[k]]);
    faces += s->face[s->free_dim[k]];
  }
  long double b = (long double)m * expl(logsum / (long double)m) - faces;
  return b > 0 ? b * (1.0L - 1e-9L) : 0.0L; /* margin: never prune a tie */
}

static void search(auto_search_t *s, int j, int rem, long double cost)
{
  if (s->found) {
    long double lb = cost + rest_bound(s, j, rem);
    if (lb > s->best_cost && !same_cost(lb, s->best_cost))
      return;
  }
  int d = s->free_dim[j];
  if (j == s->nfree - 1) {
    if ((int64_t)rem > s->extent[d])
      return;
    s->cur[d] = rem;
    long double c = cost + (long double)(rem - 1) * s->face[d];
    if (better(s, c)) {
      memcpy(s->best, s->cur, sizeof s->best);
      s->best_cost = c;
      s->found = 1;
    }
    return;
  }
  for (int k = 0; k < s->ndivisors; k++) {
    int f = s->divisors[k];
    if (f > rem)
      break;
    if (rem % f != 0 || (int64_t)f > s->extent[d])
      continue;
    s->cur[d] = f;
    search(s, j + 1, rem / f, cost + (long double)(f - 1) * s->face[d]);
  }
}

int bpc__decomp_auto_divs(int dim, const int64_t extent[BPC_MAX_DIM], int nblocks,
                          int divs[BPC_MAX_DIM])
{
  static const int max_divisors = BPC__MAX_DIVISORS;
  auto_search_t s;
  memset(&s, 0, sizeof s);
  s.dim = dim;
  int64_t fixed = 1;
  for (int d = 0; d < dim; d++) {
    s.extent[d] = extent[d];
    s.cur[d] = divs[d];
    if (divs[d] == 0) {
      s.free_dim[s.nfree++] = d;
    } else {
      fixed *= divs[d];
      if (fixed > nblocks)
        return -1;
    }
  }
  if (nblocks % fixed != 0)
    return -1;
  int rem = (int)(nblocks / fixed);
  if (s.nfree == 0)
    return rem == 1 ? 0 : -1;
  /* face[d] = product of the other extents, relative to a common scale:
   * the total area is sum_d (divs[d] - 1) * face[d]. */
  for (int d = 0; d < dim; d++) {
    long double a = 1.0L;
    for (int e = 0; e < dim; e++)
      if (e != d)
        a *= (long double)extent[e];
    s.face[d] = a;
  }
  /* divisors of rem, ascending */
  int small[BPC__MAX_DIVISORS], large[BPC__MAX_DIVISORS];
  int ns = 0, nl = 0;
  for (int64_t f = 1; f * f <= rem; f++) {
    if (rem % f != 0)
      continue;
    if (ns < max_divisors)
      small[ns++] = (int)f;
    if (f * f != rem && nl < max_divisors)
      large[nl++] = (int)(rem / f);
  }
  for (int k = 0; k < ns && s.ndivisors < max_divisors; k++)
    s.divisors[s.ndivisors++] = small[k];
  for (int k = nl - 1; k >= 0 && s.ndivisors < max_divisors; k--)
    s.divisors[s.ndivisors++] = large[k];
  search(&s, 0, rem, 0.0L);
  if (!s.found)
    return -1;
  for (int d = 0; d < dim; d++)
    divs[d] = s.best[d];
  return 0;
}

/* ------------------------------------------------------------ create */

bpc_decomp_params_t bpc_decomp_params_default(void)
{
  bpc_decomp_params_t p;
  memset(&p, 0, sizeof p);
  p.dim = 3;
  p.assign = BPC_ASSIGN_CONTIGUOUS;
  p.map = NULL;
  return p;
}

/* Check every parameter but the assignment; fill divs. */
static int check_params(bpc_ctx_t *ctx, const bpc_decomp_params_t *p, int *divs)
{
  char b1[128], b2[160];
  if (p->dim < 1 || p->dim > BPC_MAX_DIM)
    return bpc__err(ctx, BPC_EDIM, "dim %d is not in 1..%d", p->dim, BPC_MAX_DIM);
  int dim = p->dim;
  if (p->nblocks < 1)
    return bpc__err(ctx, BPC_ENBLOCKS, "nblocks is %d; it must be at least 1", p->nblocks);
  int64_t extent[BPC_MAX_DIM] = {0};
  for (int d = 0; d < dim; d++) {
    int64_t lo = p->domain_min[d], hi = p->domain_max[d];
    if (hi <= lo)
      return bpc__err(ctx, BPC_EINVAL,
                      "the domain is empty in dimension %d: [%lld, %lld)", d, (long long)lo,
                      (long long)hi);
    if (lo < 0 && hi > INT64_MAX + lo)
      return bpc__err(ctx, BPC_EINVAL,
                      "the domain extent in dimension %d ([%lld, %lld)) does not fit in int64",
                      d, (long long)lo, (long long)hi);
    extent[d] = hi - lo;
  }
  for (int d = 0; d < dim; d++)
    if (p->ghost[d] < 0)
      return bpc__err(ctx, BPC_EGHOST, "ghost width %d in dimension %d is negative",
                      p->ghost[d], d);
  for (int d = 0; d < dim; d++) {
    if (p->divs[d] < 0)
      return bpc__err(ctx, BPC_EDIVS, "divisions %s: %d in dimension %d is negative",
                      fmt_divs(b1, sizeof b1, dim, p->divs), p->divs[d], d);
    if ((int64_t)p->divs[d] > extent[d])
      return bpc__err(ctx, BPC_EDIVS,
                      "divisions %s: %d blocks in dimension %d exceed the domain extent %lld",
                      fmt_divs(b1, sizeof b1, dim, p->divs), p->divs[d], d,
                      (long long)extent[d]);
  }
  int nfree = 0;
  int64_t prod = 1;
  int over = 0; /* the product does not fit in int64 */
  for (int d = 0; d < dim; d++) {
    divs[d] = p->divs[d];
    if (divs[d] == 0)
      nfree++;
    else if (!over && prod > INT64_MAX / divs[d])
      over = 1;
    else if (!over)
      prod *= divs[d];
  }
  if (nfree == 0 && (over || prod != p->nblocks)) {
    if (over)
      return bpc__err(ctx, BPC_EDIVS, "divisions %s multiply to more than 2^63, but nblocks is %d",
                      fmt_divs(b1, sizeof b1, dim, divs), p->nblocks);
    return bpc__err(ctx, BPC_EDIVS, "divisions %s multiply to %lld, but nblocks is %d",
                    fmt_divs(b1, sizeof b1, dim, divs), (long long)prod, p->nblocks);
  }
  if (nfree > 0 && (over || prod > p->nblocks || p->nblocks % prod != 0)) {
    if (over)
      return bpc__err(ctx, BPC_EDIVS,
                      "divisions %s: the given divisions multiply to more than 2^63, which does "
                      "not divide nblocks %d",
                      fmt_divs(b1, sizeof b1, dim, divs), p->nblocks);
    return bpc__err(ctx, BPC_EDIVS,
                    "divisions %s: the given divisions multiply to %lld, which does not divide "
                    "nblocks %d",
                    fmt_divs(b1, sizeof b1, dim, divs), (long long)prod, p->nblocks);
  }
  if (nfree > 0 && bpc__decomp_auto_divs(dim, extent, p->nblocks, divs) != 0)
    return bpc__err(ctx, BPC_EDIVS,
                    "no division of %d blocks (given divisions %s, 0 = automatic) fits the "
                    "domain %s with at least one point per block",
                    p->nblocks, fmt_divs(b1, sizeof b1, dim, p->divs),
                    fmt_extent(b2, sizeof b2, dim, extent));
  return BPC_OK;
}

int bpc__decomp_make(bpc_ctx_t *ctx, const bpc_decomp_params_t *params, bpc_decomp_t **out)
{
  int rc = BPC_OK;
  bpc_decomp_t *d = NULL;
  int divs[BPC_MAX_DIM] = {0};
  if (out != NULL)
    *out = NULL;
  if (ctx == NULL || params == NULL || out == NULL)
    return bpc__err(ctx, BPC_ENULL, "bpc_decomp_create: %s is NULL",
                    ctx == NULL ? "ctx" : (params == NULL ? "params" : "out"));
  rc = check_params(ctx, params, divs);
  if (rc != BPC_OK)
    goto cleanup;
  d = bpc__calloc(1, sizeof *d);
  if (d == NULL) {
    rc = bpc__err(ctx, BPC_ENOMEM, "bpc_decomp_create: out of memory");
    goto cleanup;
  }
  d->ctx = ctx;
  d->dim = params->dim;
  d->nblocks = params->nblocks;
  for (int i = 0; i < d->dim; i++) {
    d->dmin[i] = params->domain_min[i];
    d->dmax[i] = params->domain_max[i];
    d->divs[i] = divs[i];
    d->share_face[i] = params->share_face[i] != 0;
    d->wrap[i] = params->wrap[i] != 0;
    d->ghost[i] = params->ghost[i];
  }
  rc = bpc__assign_make(ctx, params->nblocks, params->assign, params->map, &d->assign);
  if (rc != BPC_OK)
    goto cleanup;
cleanup:
  if (rc != BPC_OK) {
    bpc_decomp_destroy(&d);
    return rc;
  }
  *out = d;
  return BPC_OK;
}

int bpc_decomp_destroy(bpc_decomp_t **pd)
{
  if (pd == NULL || *pd == NULL)
    return BPC_OK;
  bpc_assign_destroy(&(*pd)->assign);
  free(*pd);
  *pd = NULL;
  return BPC_OK;
}

/* ------------------------------------------------------------ accessors */

const bpc_assign_t *bpc_decomp_assign(const bpc_decomp_t *d) { return d ? d->assign : NULL; }

int bpc_decomp_dim(const bpc_decomp_t *d, int *dim)
{
  if (d == NULL || dim == NULL)
    return bpc__err(d ? d->ctx : NULL, BPC_ENULL, "bpc_decomp_dim: %s is NULL",
                    d ? "dim" : "d");
  *dim = d->dim;
  return BPC_OK;
}

int bpc_decomp_nblocks(const bpc_decomp_t *d, int *nblocks)
{
  if (d == NULL || nblocks == NULL)
    return bpc__err(d ? d->ctx : NULL, BPC_ENULL, "bpc_decomp_nblocks: %s is NULL",
                    d ? "nblocks" : "d");
  *nblocks = d->nblocks;
  return BPC_OK;
}

int bpc_decomp_divs(const bpc_decomp_t *d, int *divs)
{
  if (d == NULL || divs == NULL)
    return bpc__err(d ? d->ctx : NULL, BPC_ENULL, "bpc_decomp_divs: %s is NULL",
                    d ? "divs" : "d");
  for (int i = 0; i < d->dim; i++)
    divs[i] = d->divs[i];
  return BPC_OK;
}

int bpc_decomp_domain(const bpc_decomp_t *d, bpc_bounds_t *domain)
{
  if (d == NULL || domain == NULL)
    return bpc__err(d ? d->ctx : NULL, BPC_ENULL, "bpc_decomp_domain: %s is NULL",
                    d ? "domain" : "d");
  memset(domain, 0, sizeof *domain);
  domain->dim = d->dim;
  for (int i = 0; i < d->dim; i++) {
    domain->min[i] = d->dmin[i];
    domain->max[i] = d->dmax[i];
  }
  return BPC_OK;
}

/* ------------------------------------------------------------ geometry */

static void coords_of(const bpc_decomp_t *d, int gid, int c[BPC_MAX_DIM])
{
  for (int i = 0; i < d->dim; i++) {
    c[i] = gid % d->divs[i];
    gid /= d->divs[i];
  }
}

static int gid_of(const bpc_decomp_t *d, const int c[BPC_MAX_DIM])
{
  int g = 0;
  for (int i = d->dim - 1; i >= 0; i--)
    g = g * d->divs[i] + c[i];
  return g;
}

int bpc_decomp_gid_to_coords(const bpc_decomp_t *d, int gid, int *coords)
{
  if (d == NULL || coords == NULL)
    return bpc__err(d ? d->ctx : NULL, BPC_ENULL, "bpc_decomp_gid_to_coords: %s is NULL",
                    d ? "coords" : "d");
  if (gid < 0 || gid >= d->nblocks)
    return bpc__err(d->ctx, BPC_ERANGE, "gid %d is not in [0, %d)", gid, d->nblocks);
  coords_of(d, gid, coords);
  return BPC_OK;
}

int bpc_decomp_coords_to_gid(const bpc_decomp_t *d, const int *coords, int *gid)
{
  if (d == NULL || coords == NULL || gid == NULL)
    return bpc__err(d ? d->ctx : NULL, BPC_ENULL, "bpc_decomp_coords_to_gid: %s is NULL",
                    d == NULL ? "d" : (coords == NULL ? "coords" : "gid"));
  for (int i = 0; i < d->dim; i++)
    if (coords[i] < 0 || coords[i] >= d->divs[i])
      return bpc__err(d->ctx, BPC_ERANGE, "coordinate %d in dimension %d is not in [0, %d)",
                      coords[i], i, d->divs[i]);
  *gid = gid_of(d, coords);
  return BPC_OK;
}

int bpc_decomp_bounds(const bpc_decomp_t *d, int gid, bpc_bounds_t *core, bpc_bounds_t *ghosted)
{
  if (d == NULL)
    return BPC_ENULL;
  if (gid < 0 || gid >= d->nblocks)
    return bpc__err(d->ctx, BPC_ERANGE, "gid %d is not in [0, %d)", gid, d->nblocks);
  int c[BPC_MAX_DIM];
  coords_of(d, gid, c);
  bpc_bounds_t cb, gb;
  memset(&cb, 0, sizeof cb);
  memset(&gb, 0, sizeof gb);
  cb.dim = gb.dim = d->dim;
  for (int i = 0; i < d->dim; i++) {
    int64_t ext = d->dmax[i] - d->dmin[i];
    int n = d->divs[i];
    cb.min[i] = d->dmin[i] + bpc__decomp_piece_start(ext, n, c[i]);
    cb.max[i] = d->dmin[i] + bpc__decomp_piece_start(ext, n, c[i] + 1);
    if (d->share_face[i] && c[i] + 1 < n)
      cb.max[i] += 1;
    int64_t g = d->ghost[i];
    if (d->wrap[i]) {
      gb.min[i] = cb.min[i] - g;
      gb.max[i] = cb.max[i] + g;
    } else {
      gb.min[i] = (cb.min[i] - d->dmin[i] > g) ? cb.min[i] - g : d->dmin[i];
      gb.max[i] = (d->dmax[i] - cb.max[i] > g) ? cb.max[i] + g : d->dmax[i];
    }
  }
  if (core != NULL)
    *core = cb;
  if (ghosted != NULL)
    *ghosted = gb;
  return BPC_OK;
}

int bpc_decomp_point_to_gid(const bpc_decomp_t *d, const int64_t *pt, int *gid)
{
  if (d == NULL || pt == NULL || gid == NULL)
    return bpc__err(d ? d->ctx : NULL, BPC_ENULL, "bpc_decomp_point_to_gid: %s is NULL",
                    d == NULL ? "d" : (pt == NULL ? "pt" : "gid"));
  int c[BPC_MAX_DIM];
  for (int i = 0; i < d->dim; i++) {
    int64_t ext = d->dmax[i] - d->dmin[i], x;
    if (d->wrap[i]) {
      x = mod_pos(pt[i], ext) - mod_pos(d->dmin[i], ext);
      if (x < 0)
        x += ext;
    } else {
      if (pt[i] < d->dmin[i] || pt[i] >= d->dmax[i])
        return bpc__err(d->ctx, BPC_ERANGE,
                        "point coordinate %lld in dimension %d is outside the domain [%lld, %lld)",
                        (long long)pt[i], i, (long long)d->dmin[i], (long long)d->dmax[i]);
      x = pt[i] - d->dmin[i];
    }
    c[i] = piece_of(ext, d->divs[i], x);
  }
  *gid = gid_of(d, c);
  return BPC_OK;
}

/* ------------------------------------------------------------ links */

int bpc_decomp_links(const bpc_decomp_t *d, int gid, bpc_link_t *links, int cap, int *n)
{
  if (d == NULL || n == NULL || (links == NULL && cap > 0))
    return bpc__err(d ? d->ctx : NULL, BPC_ENULL, "bpc_decomp_links: %s is NULL",
                    d == NULL ? "d" : (n == NULL ? "n" : "links"));
  if (cap < 0)
    return bpc__err(d->ctx, BPC_ERANGE, "bpc_decomp_links: cap %d is negative", cap);
  if (gid < 0 || gid >= d->nblocks)
    return bpc__err(d->ctx, BPC_ERANGE, "gid %d is not in [0, %d)", gid, d->nblocks);
  int c[BPC_MAX_DIM];
  coords_of(d, gid, c);
  int ndirs = 1;
  for (int i = 0; i < d->dim; i++)
    ndirs *= 3;
  int count = 0;
  for (int t = 0; t < ndirs; t++) {
    bpc_link_t l;
    memset(&l, 0, sizeof l);
    int nc[BPC_MAX_DIM];
    int ok = 1, rest = t;
    for (int i = 0; i < d->dim && ok; i++) {
      int dir = rest % 3 - 1;
      rest /= 3;
      l.dir[i] = dir;
      l.nonzero += dir != 0;
      nc[i] = c[i] + dir;
      if (nc[i] < 0 || nc[i] >= d->divs[i]) {
        if (!d->wrap[i]) {
          ok = 0;
        } else {
          l.wrap[i] = dir; /* -1: crossed the lower boundary, +1: the upper */
          nc[i] = nc[i] < 0 ? d->divs[i] - 1 : 0;
        }
      }
    }
    if (!ok || l.nonzero == 0)
      continue;
    l.gid = gid_of(d, nc);
    if (count < cap)
      links[count] = l;
    count++;
  }
  *n = count;
  if (count > cap)
    return bpc__err(d->ctx, BPC_ERANGE, "gid %d has %d links, but cap is %d", gid, count, cap);
  return BPC_OK;
}
