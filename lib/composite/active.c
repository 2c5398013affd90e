/*
 * lib/composite/active.c - active pixels: the encoding of sparse image
 * pieces, and what each local block knows of its own non-empty pixels.
 *
 * A pixel is empty when it equals the empty pattern bit for bit (rgba all
 * +0.0f; depth, if present, the call's empty depth, +infinity by default)
 * and active otherwise. An empty pixel is the identity of every operator
 * (over, the z-buffer, and by contract the user's), so a piece can skip it.
 *
 * The encoding of a piece of n pixels (a range of the image, row-major;
 * row splits are ranges of whole rows), fields native-endian:
 *   uint64 n        pixels of the piece (checked by the receiver)
 *   uint64 nruns    runs of active pixels
 *   nruns x (uint32 start, uint32 len)   each run: first pixel (from the
 *                   piece's start) and length; sorted, disjoint, len >= 1
 *   the runs' pixels, stride floats each, in run order
 * 16 + 8 nruns + 4 stride (active pixels) bytes; an empty piece is 16.
 * A run may hold empty pixels too (it is then only larger, never wrong).
 *
 * Every schedule (radix-k, shift, ring: the sparse hooks of
 * lib/engines/swap/swap_common.h): each local
 * block keeps a sorted list of disjoint pixel runs that cover every active
 * pixel of the ranges it knows (a superset there). A range is learnt when a
 * piece of it is first encoded ("found when sent" below): one scan of what
 * is not known yet, of the user's valid rectangle only where no dense
 * piece landed, on the call's threads; what a block keeps to the end is
 * never scanned. A piece is encoded from the list right after that scan
 * (its pixels still in cache); a received encoded piece is blended straight
 * into the block's buffer touching only its runs (no decode, no dense
 * pass), and its runs join the block's list; after each radix-k round the
 * lists are cut to the block's new range (shift and ring keep the whole
 * image's). So a round's work grows with the active pixels, not with the
 * piece, and a pixel is scanned at most once (again only after a dense
 * piece landed on it).
 *
 * Planar (images with depth, every strategy): the swap works on the rgba plane
 * (in place, 16 bytes a pixel) and depth stays in its own plane; every
 * piece travels encoded, rgba and depth interleaved per pixel (a dense
 * image: one run), and is blended into both planes. No interleaved copy
 * of the image is made, and nothing is copied back.
 *
 * bpc__composite_unpack_runs writes an encoded piece out dense (the empty pattern,
 * then the runs): the sparse gather's receiver.
 */
#include "composite/composite_internal.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define px_empty bpc__composite_px_empty
#define fbits bpc__composite_fbits

/* A well-mixed 64-bit hash of x (the SplitMix64 finaliser). */
static inline uint64_t mix64(uint64_t x)
{
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

double bpc__composite_active_fraction(const float *px, size_t width, size_t x0, size_t y0, size_t w,
                                      size_t h, int stride, float empty_depth)
{
  /* An estimate (it only decides whether encoding is worth trying; results
   * never depend on it) from BPC__CP_SAMPLES pixels of the rectangle: one in
   * each of as many equal strata of its pixels in row order, at an offset
   * within the stratum hashed from the stratum's index. A fixed step (or an
   * offset sequence such as the golden ratio's) lines up with some widths
   * and column patterns; hashed offsets do not, so the error stays that of
   * random sampling. Each sample is about one cache miss: a large image is
   * not read whole. */
  const size_t n = w * h;
  if (n == 0)
    return 0.0;
  const uint32_t ed = fbits(empty_depth);
  const size_t ns = n < BPC__CP_SAMPLES ? n : BPC__CP_SAMPLES;
  const double span = (double)n / (double)ns;
  size_t act = 0;
  for (size_t i = 0; i < ns; i++) {
    const double u = (double)(mix64(i) >> 11) * 0x1p-53; /* in [0, 1) */
    size_t t = (size_t)(((double)i + u) * span);
    if (t >= n)
      t = n - 1;
    const size_t p = (y0 + t / w) * width + x0 + t % w;
    act += !px_empty(px + p * (size_t)stride, stride, ed);
  }
  return (double)act / (double)ns;
}

static inline void put32(unsigned char *p, size_t at, uint32_t v) { memcpy(p + at, &v, sizeof v); }
static inline void put64(unsigned char *p, size_t at, uint64_t v) { memcpy(p + at, &v, sizeof v); }
static inline uint32_t get32(const unsigned char *p, size_t at)
{
  uint32_t v;
  memcpy(&v, p + at, sizeof v);
  return v;
}
static inline uint64_t get64(const unsigned char *p, size_t at)
{
  uint64_t v;
  memcpy(&v, p + at, sizeof v);
  return v;
}

/* ------------------------------------------------------- the run lists */

/* Append run [s, e) to L (merged with the last run when they touch). */
static int runs_push(bpc__composite_runs_t *L, size_t s, size_t e)
{
  if (L->n > 0 && L->r[2 * L->n - 1] >= s) {
    if (e > L->r[2 * L->n - 1])
      L->r[2 * L->n - 1] = e;
    return 0;
  }
  if (L->n == L->cap) {
    size_t nc = L->cap > 0 ? 2 * L->cap : 64;
    size_t *nr = realloc(L->r, 2 * sizeof(size_t) * nc);
    if (nr == NULL)
      return -1;
    L->r = nr;
    L->cap = nc;
  }
  L->r[2 * L->n] = s;
  L->r[2 * L->n + 1] = e;
  L->n++;
  return 0;
}

/* Is pixel p empty: interleaved (dp NULL, st floats a pixel) or planar
 * (rgba 4 floats a pixel, depth in dp)? */
static inline int pl_empty(const float *px, const float *dp, size_t p, int st, uint32_t ed)
{
  if (dp == NULL)
    return px_empty(px + p * (size_t)st, st, ed);
  return px_empty(px + 4 * p, 4, ed) && fbits(dp[p]) == ed;
}

/* The first pixel of [p, p1) that is not empty (p1 if none); rgba is
 * tested a cache line (4 pixels) at a time. */
static size_t skip_empty(const float *px, const float *dp, size_t p, size_t p1, int st, uint32_t ed)
{
  if (st == 4 || dp != NULL) {
    while (p + 4 <= p1) {
      uint64_t w[8], o = 0;
      memcpy(w, px + 4 * p, sizeof w);
      for (int i = 0; i < 8; i++)
        o |= w[i];
      if (o != 0 || (dp != NULL && (fbits(dp[p]) != ed || fbits(dp[p + 1]) != ed ||
                                    fbits(dp[p + 2]) != ed || fbits(dp[p + 3]) != ed)))
        break;
      p += 4;
    }
  }
  while (p < p1 && pl_empty(px, dp, p, st, ed))
    p++;
  return p;
}

/* The active runs of pixels [p0, p1) of px, appended to L. */
static int runs_scan(bpc__composite_runs_t *L, const float *px, const float *dp, size_t p0,
                     size_t p1, int st, uint32_t ed)
{
  size_t p = p0;
  while (p < p1) {
    p = skip_empty(px, dp, p, p1, st, ed);
    if (p == p1)
      break;
    const size_t s = p;
    while (p < p1 && !pl_empty(px, dp, p, st, ed))
      p++;
    if (runs_push(L, s, p) != 0)
      return -1;
  }
  return 0;
}

/* First run of L whose end is after pixel p. */
static size_t runs_find(const bpc__composite_runs_t *L, size_t p)
{
  size_t lo = 0, hi = L->n;
  while (lo < hi) {
    const size_t mid = lo + (hi - lo) / 2;
    if (L->r[2 * mid + 1] <= p)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

/* L becomes the single run [p0, p1) (always possible: cap >= 1). */
static void runs_whole(bpc__composite_runs_t *L, size_t p0, size_t p1)
{
  L->n = 0;
  if (p1 > p0 && L->cap >= 1) {
    L->r[0] = p0;
    L->r[1] = p1;
    L->n = 1;
  }
}

/* Out is the union of the sorted lists a and b (runs that touch merge).
 * -1: out of memory. */
static int runs_union(bpc__composite_runs_t *out, const bpc__composite_runs_t *a,
                      const bpc__composite_runs_t *b)
{
  out->n = 0;
  size_t i = 0, j = 0;
  while (i < a->n || j < b->n) {
    const bpc__composite_runs_t *f = j >= b->n || (i < a->n && a->r[2 * i] <= b->r[2 * j]) ? a : b;
    size_t *k = f == a ? &i : &j;
    if (runs_push(out, f->r[2 * *k], f->r[2 * *k + 1]) != 0)
      return -1;
    (*k)++;
  }
  return 0;
}

/* Out is list a less the range [p0, p1). -1: out of memory. */
static int runs_minus(bpc__composite_runs_t *out, const bpc__composite_runs_t *a, size_t p0,
                      size_t p1)
{
  out->n = 0;
  for (size_t i = 0; i < a->n; i++) {
    const size_t s = a->r[2 * i], e = a->r[2 * i + 1];
    if (s < p0 && runs_push(out, s, e < p0 ? e : p0) != 0)
      return -1;
    if (e > p1 && runs_push(out, s > p1 ? s : p1, e) != 0)
      return -1;
  }
  return 0;
}

/* L keeps only what lies in [p0, p1) (no allocation). */
static void runs_cut(bpc__composite_runs_t *L, size_t p0, size_t p1)
{
  const size_t first = runs_find(L, p0);
  size_t last = first;
  while (last < L->n && L->r[2 * last] < p1)
    last++;
  const size_t n = last - first;
  if (n > 0 && first > 0)
    memmove(L->r, L->r + 2 * first, 2 * sizeof(size_t) * n);
  L->n = n;
  if (n > 0) {
    if (L->r[0] < p0)
      L->r[0] = p0;
    if (L->r[2 * n - 1] > p1)
      L->r[2 * n - 1] = p1;
  }
}

/* L takes the list built in the spare; the spare keeps L's old memory. */
static void runs_swap_in(bpc__composite_runs_t *L, bpc__composite_runs_t *spare)
{
  bpc__composite_runs_t t = *L;
  *L = *spare;
  *spare = t;
}

/* L gains the runs of the spare list cp->tmp: their union is built in
 * cp->tmp2 and swapped in. -1: out of memory (L unchanged). */
static int runs_join(bpc__composite_t *cp, bpc__composite_runs_t *L)
{
  if (runs_union(&cp->tmp2, L, &cp->tmp) != 0)
    return -1;
  runs_swap_in(L, &cp->tmp2);
  return 0;
}

/* L gains the range [p0, p1). -1: out of memory. */
static int runs_add(bpc__composite_t *cp, bpc__composite_runs_t *L, size_t p0, size_t p1)
{
  cp->tmp.n = 0;
  return runs_push(&cp->tmp, p0, p1) != 0 ? -1 : runs_join(cp, L);
}

/* ------------------------------------------------- found when sent
 *
 * A block's list is not found by a scan up front: a range is scanned the
 * first time a piece of it is encoded (the pixels a block keeps to the end
 * are never looked at), and only where the list does not already cover it
 * (`known`). A received encoded piece joins the list wherever it lands (its
 * pixels are in the image too; a later scan finds them again, which only
 * repeats runs the union merges). A dense piece (sent unencoded where the
 * encoding would not be smaller) makes its range unknown again and "dirty": a
 * later scan of it reads every pixel there, since the sender's non-empty
 * pixels need not lie in this block's valid rectangle; elsewhere a scan
 * reads only the valid rectangle's rows. Out of memory anywhere: the whole
 * image becomes one run, known (a superset: still exact, only larger). */

/* One piece of a scan: pixels [lo, hi), of the valid rectangle's rows only
 * (rect) or all; its runs go to its own list when threads share the scan. */
typedef struct {
  size_t lo, hi;
  int rect;
  bpc__composite_runs_t L;
} scan_task_t;

/* Task t of block lb: its runs appended to L, or (L NULL) only the pixels
 * it reads added to *npx. -1: out of memory. */
static int task_walk(const bpc__composite_t *cp, int lb, const scan_task_t *t,
                     bpc__composite_runs_t *L, size_t *npx)
{
  const float *px = cp->px[lb], *dp = cp->planar ? cp->dpx[lb] : NULL;
  const uint32_t ed = fbits(cp->empty_depth);
  if (!t->rect) {
    if (L == NULL)
      *npx += t->hi - t->lo;
    return L != NULL ? runs_scan(L, px, dp, t->lo, t->hi, cp->stride, ed) : 0;
  }
  const bpc_composite_rect_t *v = &cp->valid[lb];
  const size_t W = cp->width, x0 = (size_t)v->x, x1 = x0 + (size_t)v->width;
  const size_t y1 = (size_t)v->y + (size_t)v->height;
  for (size_t y = t->lo / W > (size_t)v->y ? t->lo / W : (size_t)v->y; y < y1 && y * W < t->hi;
       y++) {
    const size_t s = y * W + x0 > t->lo ? y * W + x0 : t->lo;
    const size_t e = y * W + x1 < t->hi ? y * W + x1 : t->hi;
    if (s < e && L == NULL)
      *npx += e - s;
    else if (s < e && runs_scan(L, px, dp, s, e, cp->stride, ed) != 0)
      return -1;
  }
  return 0;
}

static void init_all(bpc__composite_t *cp, int lb);

/* The whole image one run, known: the answer to running out of memory
 * (an output filled on demand is then filled whole: the run is read). */
static void runs_give_up(bpc__composite_t *cp, int lb)
{
  runs_whole(&cp->runs[lb], 0, cp->npix);
  runs_whole(&cp->known[lb], 0, cp->npix);
  cp->dirty[lb].n = 0;
  if (cp->init != NULL)
    init_all(cp, lb);
}

/* Make block lb's list cover [p0, p1): scan what it does not know yet. */
static void runs_learn(bpc__composite_t *cp, int lb, size_t p0, size_t p1)
{
  bpc__composite_runs_t *K = &cp->known[lb], *D = &cp->dirty[lb];
  scan_task_t small[8], *t = small;
  size_t nt = 0, capt = 8, total = 0;
  int bad = 0;
  /* the gaps of K in [p0, p1), each cut where it enters or leaves D */
  size_t p = p0, ki = runs_find(K, p0);
  while (p < p1 && !bad) {
    if (ki < K->n && K->r[2 * ki] <= p) { /* known: skip it */
      p = K->r[2 * ki + 1];
      ki++;
      continue;
    }
    const size_t g1 = ki < K->n && K->r[2 * ki] < p1 ? K->r[2 * ki] : p1;
    size_t q = p, di = runs_find(D, p);
    while (q < g1 && !bad) {
      const int in = di < D->n && D->r[2 * di] <= q;
      const size_t e = in ? (D->r[2 * di + 1] < g1 ? D->r[2 * di + 1] : g1)
                          : (di < D->n && D->r[2 * di] < g1 ? D->r[2 * di] : g1);
      if (nt == capt) {
        scan_task_t *nt2 = malloc(2 * capt * sizeof *nt2);
        bad = nt2 == NULL;
        if (!bad) {
          memcpy(nt2, t, nt * sizeof *nt2);
          if (t != small)
            free(t);
          t = nt2;
          capt *= 2;
        }
      }
      if (!bad) {
        t[nt] = (scan_task_t){q, e, !in && cp->valid != NULL, {NULL, 0, 0}};
        if (cp->nthreads > 1) /* the pixels to read decide whether threads share them */
          task_walk(cp, lb, &t[nt], NULL, &total);
        nt++;
      }
      if (in)
        di++;
      q = e;
    }
    p = g1;
  }
  /* threads share a large scan: tasks cut into chunks, lists joined in order */
  const int T = cp->nthreads;
  if (!bad && nt > 0 && T > 1 && total >= 2 * cp->min_chunk) {
    size_t chunk = (total + 4 * (size_t)T - 1) / (4 * (size_t)T);
    chunk = chunk < cp->min_chunk ? cp->min_chunk : chunk;
    size_t nu = 0;
    for (size_t i = 0; i < nt; i++)
      nu += (t[i].hi - t[i].lo + chunk - 1) / chunk;
    /* the chunks and their lists are kept for the call's next scans */
    if (nu > cp->nunits) {
      scan_task_t *nu2 = realloc(cp->units, nu * sizeof *nu2);
      bad = nu2 == NULL;
      if (!bad) {
        memset(nu2 + cp->nunits, 0, (nu - cp->nunits) * sizeof *nu2);
        cp->units = nu2;
        cp->nunits = nu;
      }
    }
    scan_task_t *u = cp->units;
    for (size_t i = 0, n = 0; i < nt && !bad; i++)
      for (size_t lo = t[i].lo; lo < t[i].hi; lo += chunk, n++) {
        u[n].lo = lo;
        u[n].hi = lo + chunk < t[i].hi ? lo + chunk : t[i].hi;
        u[n].rect = t[i].rect;
        u[n].L.n = 0;
      }
    if (!bad) {
#pragma omp parallel for num_threads(T) schedule(dynamic, 1)
      for (size_t i = 0; i < nu; i++)
        if (task_walk(cp, lb, &u[i], &u[i].L, NULL) != 0) {
#pragma omp atomic write
          bad = 1;
        }
    }
    bpc__composite_runs_t *S = &cp->tmp;
    S->n = 0;
    for (size_t i = 0; i < nu && !bad; i++)
      for (size_t j = 0; j < u[i].L.n && !bad; j++)
        bad = runs_push(S, u[i].L.r[2 * j], u[i].L.r[2 * j + 1]) != 0;
  } else if (!bad) {
    cp->tmp.n = 0;
    for (size_t i = 0; i < nt && !bad; i++)
      bad = task_walk(cp, lb, &t[i], &cp->tmp, NULL) != 0;
  }
  if (t != small)
    free(t);
  if (!bad && nt == 0)
    return; /* all of it known already */
  /* L joins what the scan found (in cp->tmp); K gains [p0, p1) */
  if (bad || runs_join(cp, &cp->runs[lb]) != 0 || runs_add(cp, K, p0, p1) != 0)
    runs_give_up(cp, lb);
}

int bpc__composite_runs_init(bpc__composite_t *cp)
{
  cp->runs = calloc((size_t)cp->nlocal, sizeof *cp->runs);
  cp->known = calloc((size_t)cp->nlocal, sizeof *cp->known);
  cp->dirty = calloc((size_t)cp->nlocal, sizeof *cp->dirty);
  if (cp->runs == NULL || cp->known == NULL || cp->dirty == NULL)
    return -1;
  /* every list has room for a run, and lists only trade memory with each
   * other: giving up never needs an allocation */
  bpc__composite_runs_t *all[2] = {&cp->tmp, &cp->tmp2};
  for (int i = 0; i < 2; i++)
    if ((all[i]->r = malloc(2 * sizeof(size_t) * 64)) != NULL)
      all[i]->cap = 64;
  if (cp->tmp.r == NULL || cp->tmp2.r == NULL)
    return -1;
  for (int i = 0; i < cp->nlocal; i++) {
    bpc__composite_runs_t *l[3] = {&cp->runs[i], &cp->known[i], &cp->dirty[i]};
    for (int j = 0; j < 3; j++) {
      if ((l[j]->r = malloc(2 * sizeof(size_t) * 16)) == NULL)
        return -1;
      l[j]->cap = 16;
    }
    if (!cp->encode) /* planar without active pixels: all of it, unscanned */
      runs_give_up(cp, i);
  }
  return 0;
}

void bpc__composite_runs_free(bpc__composite_t *cp)
{
  for (int i = 0; i < cp->nlocal; i++) {
    if (cp->runs != NULL)
      free(cp->runs[i].r);
    if (cp->known != NULL)
      free(cp->known[i].r);
    if (cp->dirty != NULL)
      free(cp->dirty[i].r);
  }
  for (int i = 0; cp->init != NULL && i < cp->nlocal; i++)
    free(cp->init[i].r);
  free(cp->runs);
  free(cp->known);
  free(cp->dirty);
  free(cp->init);
  cp->runs = cp->known = cp->dirty = cp->init = NULL;
  free(cp->tmp.r);
  free(cp->tmp2.r);
  cp->tmp = cp->tmp2 = (bpc__composite_runs_t){NULL, 0, 0};
  scan_task_t *u = cp->units;
  for (size_t i = 0; i < cp->nunits; i++)
    free(u[i].L.r);
  free(cp->units);
  cp->units = NULL;
  cp->nunits = 0;
}

/* ------------------------------------------ outputs filled on demand
 *
 * With params.output and valid rectangles a block's output is not made a
 * copy of its input up front (a pass over every image, as much as the
 * whole compositing of a sparse frame): only the rectangle is copied (all
 * a scan of the block's own pixels reads), and the rest of the buffer is
 * written only where the call needs it, with the empty pattern (what the
 * input holds outside the rectangle, by the rectangle's contract): under
 * the runs of an encoded piece and the whole range of a dense one before
 * they are blended there (bpc__composite_prepare), under a piece before it is sent
 * dense, and over the block's final piece at the end (bpc__composite_finish).
 * cp->init[lb] lists the ranges of the buffer that hold the call's data.
 * Out of memory for a list: the whole buffer is filled. */

/* The empty pattern over pixels [s, e) of block lb's buffer (rgba 4 floats
 * a pixel; planar: depth too; never interleaved). */
static void px_clear(const bpc__composite_t *cp, int lb, size_t s, size_t e)
{
  memset(cp->px[lb] + 4 * s, 0, (e - s) * 4 * sizeof(float));
  if (cp->planar) {
    float *d = cp->dpx[lb];
    for (size_t q = s; q < e; q++)
      d[q] = cp->empty_depth;
  }
}

/* Clear what the runs of A hold that block lb's init list does not. */
static void init_clear_gaps(const bpc__composite_t *cp, int lb, const bpc__composite_runs_t *A)
{
  const bpc__composite_runs_t *I = &cp->init[lb];
  size_t j = A->n > 0 ? runs_find(I, A->r[0]) : 0;
  for (size_t i = 0; i < A->n; i++) {
    size_t p = A->r[2 * i];
    const size_t e = A->r[2 * i + 1];
    while (j < I->n && I->r[2 * j + 1] <= p)
      j++;
    for (size_t k = j; p < e;) {
      if (k < I->n && I->r[2 * k] <= p) { /* filled: skip it */
        p = I->r[2 * k + 1];
        k++;
        continue;
      }
      const size_t g = k < I->n && I->r[2 * k] < e ? I->r[2 * k] : e;
      px_clear(cp, lb, p, g);
      p = g;
    }
  }
}

/* All of block lb's buffer filled (no allocation). */
static void init_all(bpc__composite_t *cp, int lb)
{
  size_t r[2] = {0, cp->npix};
  const bpc__composite_runs_t W = {r, 1, 1};
  init_clear_gaps(cp, lb, &W);
  runs_whole(&cp->init[lb], 0, cp->npix);
}

/* Block lb's buffer filled over the runs of cp->tmp. */
static void init_cover_tmp(bpc__composite_t *cp, int lb)
{
  init_clear_gaps(cp, lb, &cp->tmp);
  if (runs_join(cp, &cp->init[lb]) != 0)
    init_all(cp, lb);
}

/* Block lb's buffer filled over pixels [p0, p1). */
static void init_cover(bpc__composite_t *cp, int lb, size_t p0, size_t p1)
{
  if (cp->init == NULL || p1 <= p0)
    return;
  cp->tmp.n = 0;
  if (runs_push(&cp->tmp, p0, p1) != 0)
    init_all(cp, lb);
  else
    init_cover_tmp(cp, lb);
}

int bpc__composite_outputs_on_demand(bpc__composite_t *cp, const bpc_image_t *in)
{
  bpc__composite_runs_t *I = calloc((size_t)cp->nlocal, sizeof *I);
  int bad = I == NULL;
  for (int i = 0; i < cp->nlocal && !bad; i++) {
    /* room for a run from the start: init_all never allocates */
    if ((I[i].r = malloc(2 * sizeof(size_t) * 16)) == NULL) {
      bad = 1;
      break;
    }
    I[i].cap = 16;
    const bpc_composite_rect_t *v = &cp->valid[i];
    const size_t W = cp->width;
    for (size_t y = (size_t)v->y; y < (size_t)v->y + (size_t)v->height && v->width > 0 && !bad;
         y++) {
      const size_t s = y * W + (size_t)v->x, e = s + (size_t)v->width;
      memcpy(cp->px[i] + 4 * s, in[i].rgba + 4 * s, (e - s) * 4 * sizeof(float));
      if (cp->planar)
        memcpy(cp->dpx[i] + s, in[i].depth + s, (e - s) * sizeof(float));
      bad = runs_push(&I[i], s, e) != 0;
    }
  }
  if (bad) {
    for (int i = 0; I != NULL && i < cp->nlocal; i++)
      free(I[i].r);
    free(I);
    return -1;
  }
  cp->init = I;
  return 0;
}

void bpc__composite_finish(bpc__composite_t *cp, int lb, size_t off, size_t count)
{
  init_cover(cp, lb, off * cp->px_per_elem, (off + count) * cp->px_per_elem);
}

/* -------------------------------------------------- the sparse hooks */

/* Write the encoding of pixels [p0, p1) from the runs of L (from index
 * `first`, clipped to the range): n runs, px the pixels of L's index space
 * (stride floats each, or rgba 4 floats with depth in dp). Returns its size. */
static size_t runs_write(const bpc__composite_t *cp, unsigned char *o,
                         const bpc__composite_runs_t *L, size_t first, size_t n, size_t p0,
                         size_t p1, const float *px, const float *dp)
{
  const size_t st = (size_t)cp->stride, ps = sizeof(float) * st;
  put64(o, 0, p1 - p0);
  put64(o, 8, n);
  size_t rec = 16, at = 16 + 8 * n;
  for (size_t i = first; i < L->n && L->r[2 * i] < p1; i++) {
    const size_t s = L->r[2 * i] > p0 ? L->r[2 * i] : p0;
    const size_t e = L->r[2 * i + 1] < p1 ? L->r[2 * i + 1] : p1;
    put32(o, rec, (uint32_t)(s - p0));
    put32(o, rec + 4, (uint32_t)(e - s));
    rec += 8;
    if (dp == NULL) {
      memcpy(o + at, px + s * st, (e - s) * ps);
    } else { /* rgba and depth of each pixel together */
      float *w = (float *)(o + at);
      for (size_t q = s; q < e; q++, w += 5) {
        memcpy(w, px + 4 * q, 4 * sizeof(float));
        w[4] = dp[q];
      }
    }
    at += (e - s) * ps;
  }
  return at;
}

/* Runs of L from index `first` that meet [p0, p1): their count and pixels. */
static void runs_count(const bpc__composite_runs_t *L, size_t first, size_t p0, size_t p1,
                       size_t *n, size_t *act)
{
  *n = *act = 0;
  for (size_t i = first; i < L->n && L->r[2 * i] < p1; i++) {
    const size_t s = L->r[2 * i] > p0 ? L->r[2 * i] : p0;
    const size_t e = L->r[2 * i + 1] < p1 ? L->r[2 * i + 1] : p1;
    (*n)++;
    *act += e - s;
  }
}

size_t bpc__composite_encode_block(void *dst, size_t cap, int lb, size_t off, size_t count,
                                   void *user)
{
  bpc__composite_t *cp = user;
  const bpc__composite_runs_t *L = &cp->runs[lb];
  const size_t ps = sizeof(float) * (size_t)cp->stride;
  const size_t p0 = off * cp->px_per_elem, p1 = (off + count) * cp->px_per_elem;
  cp->bytes_dense += cp->planar ? (p1 - p0) * ps : cap;
  /* send dense (planar: always encoded, cap is the bound) */
  if (!cp->planar && (!cp->encode || p1 - p0 > UINT32_MAX)) {
    init_cover(cp, lb, p0, p1);
    cp->bytes_sent += cap;
    return 0;
  }
  runs_learn(cp, lb, p0, p1);
  const size_t first = runs_find(L, p0);
  size_t n = 0, act = 0;
  runs_count(L, first, p0, p1, &n, &act);
  const size_t size = 16 + 8 * n + ps * act;
  if (!cp->planar && size >= cap) {
    init_cover(cp, lb, p0, p1);
    cp->bytes_sent += cap;
    return 0;
  }
  runs_write(cp, dst, L, first, n, p0, p1, cp->px[lb], cp->planar ? cp->dpx[lb] : NULL);
  cp->bytes_sent += size;
  cp->pieces_encoded++;
  return size;
}

int bpc__composite_check(const void *src, size_t bytes, size_t count, void *user)
{
  const bpc__composite_t *cp = user;
  const unsigned char *in = src;
  const size_t ps = sizeof(float) * (size_t)cp->stride;
  if (bytes < 16)
    return 1;
  const uint64_t np = get64(in, 0), n = get64(in, 8);
  if (np != (uint64_t)count * cp->px_per_elem)
    return 2;
  if (n > (bytes - 16) / 8)
    return 3;
  uint64_t end = 0, act = 0;
  for (uint64_t i = 0; i < n; i++) {
    const uint64_t s = get32(in, 16 + 8 * i), l = get32(in, 16 + 8 * i + 4);
    if (l == 0 || s < end || s + l > np)
      return 4;
    end = s + l;
    act += l;
  }
  if (act > (bytes - 16 - 8 * n) / ps || 16 + 8 * n + act * ps != bytes)
    return 5;
  return 0;
}

size_t bpc__composite_bound(size_t count, void *user)
{
  const bpc__composite_t *cp = user;
  const size_t np = count * cp->px_per_elem;
  /* runs are at least a pixel apart: at most (np + 1) / 2 of them */
  return 16 + 8 * ((np + 1) / 2) + sizeof(float) * (size_t)cp->stride * np;
}

int bpc__composite_blend(int lb, size_t off, void *inout, size_t count, const void *src,
                         size_t bytes, size_t lo, size_t len, int in_first, void *user)
{
  (void)count;
  (void)bytes;
  const bpc__composite_t *cp = user;
  float *od = cp->planar ? cp->dpx[lb] + off * cp->px_per_elem : NULL;
  const unsigned char *in = src;
  const size_t st = (size_t)cp->stride;
  const size_t w0 = lo * cp->px_per_elem, w1 = (lo + len) * cp->px_per_elem;
  const uint64_t n = get64(in, 8);
  const float *data = (const float *)(in + 16 + 8 * n); /* 8-aligned: 16 + 8 n */
  float *o = inout;
  size_t d = 0; /* pixels of data before the current run */
  for (uint64_t i = 0; i < n; i++) {
    const size_t s = get32(in, 16 + 8 * i), l = get32(in, 16 + 8 * i + 4);
    if (s >= w1)
      break;
    const size_t cs = s > w0 ? s : w0, ce = s + l < w1 ? s + l : w1;
    if (cs < ce) {
      int rc = od != NULL ? bpc__composite_px_planar(cp, o + cs * 4, od + cs,
                                                     data + (d + cs - s) * st, ce - cs, in_first)
                          : bpc__composite_px(cp, o + cs * st, data + (d + cs - s) * st, ce - cs,
                                              in_first);
      if (rc != 0)
        return rc;
    }
    d += l;
  }
  return 0;
}

/* The runs of a checked encoding of a piece starting at pixel p0, into
 * cp->tmp (image pixel indices). -1: out of memory. */
static int encoding_runs(bpc__composite_t *cp, const void *src, size_t p0)
{
  const unsigned char *in = src;
  const size_t n = (size_t)get64(in, 8);
  cp->tmp.n = 0;
  for (size_t j = 0; j < n; j++) {
    const size_t s = p0 + get32(in, 16 + 8 * j);
    if (runs_push(&cp->tmp, s, s + get32(in, 16 + 8 * j + 4)) != 0)
      return -1;
  }
  return 0;
}

void bpc__composite_prepare(int lb, size_t off, size_t count, const void *src, size_t bytes,
                            void *user)
{
  (void)bytes;
  bpc__composite_t *cp = user;
  const size_t p0 = off * cp->px_per_elem, p1 = (off + count) * cp->px_per_elem;
  if (cp->init == NULL || p1 == p0)
    return;
  if (src == NULL) { /* a dense piece: all of its range */
    init_cover(cp, lb, p0, p1);
    return;
  }
  /* an encoded one: its runs */
  if (encoding_runs(cp, src, p0) != 0)
    init_all(cp, lb);
  else if (cp->tmp.n > 0)
    init_cover_tmp(cp, lb);
}

void bpc__composite_absorb(int lb, size_t off, size_t count, const void *src, size_t bytes,
                           void *user)
{
  (void)bytes;
  bpc__composite_t *cp = user;
  bpc__composite_runs_t *L = &cp->runs[lb];
  const size_t p0 = off * cp->px_per_elem, p1 = (off + count) * cp->px_per_elem;
  if (p1 == p0)
    return;
  if (src == NULL) { /* a dense piece: its range unknown again, and dirty */
    if (runs_minus(&cp->tmp2, &cp->known[lb], p0, p1) != 0)
      runs_give_up(cp, lb);
    else {
      runs_swap_in(&cp->known[lb], &cp->tmp2);
      if (runs_add(cp, &cp->dirty[lb], p0, p1) != 0)
        runs_give_up(cp, lb);
    }
    return;
  }
  /* the encoding's runs (from p0) join the list, which may extend beyond
   * the range (shift and ring keep the whole buffer's) */
  if (encoding_runs(cp, src, p0) != 0 || (cp->tmp.n > 0 && runs_join(cp, L) != 0))
    runs_give_up(cp, lb); /* no memory: the whole image (a superset) */
}

void bpc__composite_keep(int lb, size_t off, size_t count, void *user)
{
  bpc__composite_t *cp = user;
  const size_t p0 = off * cp->px_per_elem, p1 = (off + count) * cp->px_per_elem;
  runs_cut(&cp->runs[lb], p0, p1);
  runs_cut(&cp->known[lb], p0, p1);
  runs_cut(&cp->dirty[lb], p0, p1);
  /* cp->init keeps what lies outside the range: a piece sent dense from
   * there may still be read (borrowed by a local block, or an MPI send in
   * flight), and init_all must not blank it as a gap */
}

/* ------------------------------------------------- unpacking runs */

void bpc__composite_unpack_runs(const bpc__composite_t *cp, const void *src, size_t np, float *rgba,
                                size_t rs, float *depth, size_t ds)
{
  const size_t st = (size_t)cp->stride;
  /* the empty pattern everywhere */
  if (rs == 4) {
    memset(rgba, 0, np * 4 * sizeof(float));
  } else {
    for (size_t i = 0; i < np; i++)
      memset(rgba + i * rs, 0, 4 * sizeof(float));
  }
  for (size_t i = 0; depth != NULL && i < np; i++)
    depth[i * ds] = cp->empty_depth;
  /* the runs */
  const unsigned char *in = src;
  const uint64_t n = get64(in, 8);
  const float *px = (const float *)(in + 16 + 8 * n);
  const int whole = rs == st && (depth == NULL ? st == 4 : depth == rgba + 4 && ds == st);
  for (uint64_t i = 0; i < n; i++) {
    const size_t s = get32(in, 16 + 8 * i), l = get32(in, 16 + 8 * i + 4);
    if (whole) { /* the encoding's layout: one copy */
      memcpy(rgba + s * rs, px, l * st * sizeof(float));
    } else {
      for (size_t q = s; q < s + l; q++) {
        memcpy(rgba + q * rs, px + (q - s) * st, 4 * sizeof(float));
        if (depth != NULL && st == 5)
          depth[q * ds] = px[(q - s) * st + 4];
      }
    }
    px += l * st;
  }
}
