/*
 * apps/mergetree/mt_sweep.c - the union-find sweep shared by the local step
 * (a block's ghosted box) and the global step (glued reduced trees).
 *
 * One pass in sweep order over a graph. Every component (a union-find set)
 * carries its birth (its earliest vertex), whether it holds a boundary
 * vertex (hasb), and its lowest kept vertex (ktip). At vertex v the
 * components of its processed neighbours meet: the elder birth survives,
 * every other birth b dies at v, and the pair (b, v) is final when b's
 * component holds no boundary vertex (nothing outside the region can reach
 * it, and the region already holds every edge of its vertices). v is kept
 * when the merged component holds a boundary vertex; then every ktip below
 * it gets v as parent, and a component without kept vertices that survives
 * keeps its birth (parent v). So the reduced tree holds every vertex whose
 * subtree touches the boundary and the elder birth of each such subtree;
 * among kept vertices it connects exactly what the graph connects at every
 * threshold, which is all a larger region needs.
 */
#include "mergetree/mt.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------- heap high-water */

#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33)) && \
    !defined(BPC_SMPI) /* smpicc: malloc is a macro, which <malloc.h> would redeclare */
#include <malloc.h>
#define MT_HAVE_MALLINFO2 1
#endif

#ifdef MT_HAVE_MALLINFO2
static size_t heap_peak, heap_base;
#endif

void mt_heap_sample(void)
{
#ifdef MT_HAVE_MALLINFO2
  struct mallinfo2 mi = mallinfo2();
  size_t now = mi.uordblks + mi.hblkhd, old = __atomic_load_n(&heap_peak, __ATOMIC_RELAXED);
  while (now > old &&
         !__atomic_compare_exchange_n(&heap_peak, &old, now, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
    ;
#endif
}

int64_t mt_heap_peak(int reset)
{
#ifdef MT_HAVE_MALLINFO2
  size_t p = __atomic_load_n(&heap_peak, __ATOMIC_RELAXED);
  int64_t above = p > heap_base ? (int64_t)(p - heap_base) : 0;
  if (reset) {
    struct mallinfo2 mi = mallinfo2();
    heap_base = mi.uordblks + mi.hblkhd;
    __atomic_store_n(&heap_peak, heap_base, __ATOMIC_RELAXED);
  }
  return above;
#else
  (void)reset;
  return -1;
#endif
}

/* Room for one more element of `elem` bytes in the vector *p of n of cap. */
static int grow(void **p, size_t n, size_t *cap, size_t elem)
{
  if (n < *cap)
    return 0;
  size_t c = *cap ? 2 * *cap : 64;
  void *q = realloc(*p, c * elem);
  if (q == NULL)
    return -1;
  *p = q;
  *cap = c;
  return 0;
}

int mt_pairs_push(mt_pairs_t *v, double b, double d, int64_t bg, int64_t dg)
{
  void *p = v->p;
  int rc = grow(&p, v->n, &v->cap, sizeof *v->p);
  v->p = p;
  if (rc != 0)
    return -1;
  v->p[v->n++] = (mt_pair_t){b, d, bg, dg};
  return 0;
}

void mt_pairs_free(mt_pairs_t *v)
{
  free(v->p);
  memset(v, 0, sizeof *v);
}

static int cmp_sub(const void *a, const void *b)
{
  const mt_pair_t *x = a, *y = b;
  if (mt_before(x->birth, x->bgid, y->birth, y->bgid, 1))
    return -1;
  return x->bgid != y->bgid;
}

static int cmp_super(const void *a, const void *b)
{
  const mt_pair_t *x = a, *y = b;
  if (mt_before(x->birth, x->bgid, y->birth, y->bgid, 0))
    return -1;
  return x->bgid != y->bgid;
}

void mt_pairs_sort(mt_pair_t *p, size_t n, int sub)
{
  qsort(p, n, sizeof *p, sub ? cmp_sub : cmp_super);
}

void mt_tree_free(mt_tree_t *t)
{
  free(t->blk);
  free(t->gid);
  free(t->val);
  free(t->par);
  memset(t, 0, sizeof *t);
}

/* Bottom-up merge sort of idx[0..n) into sweep order (tmp: n entries). */
static void sort_sweep(mt_idx_t *idx, mt_idx_t *tmp, mt_idx_t n, const double *val,
                       const int64_t *gid, int sub)
{
  mt_idx_t *a = idx, *b = tmp;
  for (mt_idx_t w = 1; w < n; w *= 2) {
    for (mt_idx_t lo = 0; lo < n; lo += 2 * w) {
      mt_idx_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
      mt_idx_t i = lo, j = mid, o = lo;
      while (i < mid && j < hi) {
        mt_idx_t x = a[i], y = a[j];
        if (mt_before(val[y], gid[y], val[x], gid[x], sub))
          b[o++] = a[j++];
        else
          b[o++] = a[i++];
      }
      while (i < mid)
        b[o++] = a[i++];
      while (j < hi)
        b[o++] = a[j++];
    }
    mt_idx_t *t = a;
    a = b;
    b = t;
  }
  if (a != idx)
    memcpy(idx, a, (size_t)n * sizeof *idx);
}

static mt_idx_t find(mt_idx_t *uf, mt_idx_t x)
{
  while (uf[x] != x) {
    uf[x] = uf[uf[x]];
    x = uf[x];
  }
  return x;
}

#define KEPT_NOT (-2)

int mt_labs_push(mt_labs_t *v, int64_t gid, int64_t label)
{
  void *p = v->p;
  int rc = grow(&p, v->n, &v->cap, sizeof *v->p);
  v->p = p;
  if (rc != 0)
    return -1;
  v->p[v->n++] = (mt_lab_t){gid, label};
  return 0;
}

int mt_sweep(const mt_graph_t *g, int sub, mt_pairs_t *pairs, mt_tree_t *out, int64_t *label)
{
  if (g->n > MT_IDX_MAX)
    return -1;
  const mt_idx_t n = (mt_idx_t)g->n;
  const size_t nn = (size_t)(n > 0 ? n : 1);
  mt_idx_t *order = malloc(nn * sizeof *order), *uf = malloc(nn * sizeof *uf);
  mt_idx_t *birth = malloc(nn * sizeof *birth), *ktip = malloc(nn * sizeof *ktip);
  mt_idx_t *kpar = malloc(nn * sizeof *kpar);
  unsigned char *hasb = malloc(nn);
  mt_idx_t *nb = malloc(sizeof *nb * (size_t)(g->maxdeg > 0 ? g->maxdeg : 1));
  mt_idx_t *roots = malloc(sizeof *roots * (size_t)(g->maxdeg > 0 ? g->maxdeg : 1));
  int rc = -1;
  memset(out, 0, sizeof *out);
  if (!order || !uf || !birth || !ktip || !kpar || !hasb || !nb || !roots)
    goto cleanup;
  /* sort (uf serves as the merge sort's buffer) */
  for (mt_idx_t i = 0; i < n; i++)
    order[i] = i;
  sort_sweep(order, uf, n, g->val, g->gid, sub);
  for (mt_idx_t i = 0; i < n; i++) {
    uf[i] = -1; /* not yet swept */
    kpar[i] = KEPT_NOT;
  }
  const double *val = g->val;
  const int64_t *gid = g->gid;
  for (mt_idx_t s = 0; s < n; s++) {
    const mt_idx_t v = order[s];
    int nr = 0;
    int m = g->nbrs(g->nbr_data, v, nb, g->maxdeg);
    for (int j = 0; j < m; j++) {
      if (nb[j] == v || uf[nb[j]] < 0)
        continue;
      mt_idx_t r = find(uf, nb[j]), dup = 0;
      for (int q = 0; q < nr && !dup; q++)
        dup = roots[q] == r;
      if (!dup)
        roots[nr++] = r;
    }
    /* the elder birth and the boundary flag of the merged component */
    mt_idx_t eld = v;
    unsigned char hb = g->bnd ? g->bnd[v] : 0;
    for (int q = 0; q < nr; q++) {
      mt_idx_t b = birth[roots[q]];
      if (eld == v || mt_before(val[b], gid[b], val[eld], gid[eld], sub))
        eld = b;
      hb |= hasb[roots[q]];
    }
    for (int q = 0; q < nr; q++) {
      mt_idx_t r = roots[q], b = birth[r];
      if (b != eld && !hasb[r] &&
          mt_pairs_push(pairs, val[b], val[v], gid[b], gid[v]) != 0)
        goto cleanup;
    }
    mt_idx_t tip = -1;
    if (hb) {
      kpar[v] = -1;
      tip = v;
      for (int q = 0; q < nr; q++) {
        mt_idx_t r = roots[q];
        if (ktip[r] >= 0)
          kpar[ktip[r]] = v;
        else if (birth[r] == eld)
          kpar[eld] = v; /* a component without boundary survives: keep its birth */
      }
    }
    /* union: v and every root, the set data at the new root */
    uf[v] = v;
    mt_idx_t rep = v;
    for (int q = 0; q < nr; q++)
      uf[roots[q]] = rep;
    birth[rep] = eld;
    hasb[rep] = hb;
    ktip[rep] = tip;
    if (label != NULL)
      label[v] = hb ? -1 : gid[eld];
  }
  if (g->bnd == NULL) /* the whole domain: the survivors are essential */
    for (mt_idx_t i = 0; i < n; i++)
      if (uf[i] == i &&
          mt_pairs_push(pairs, val[birth[i]], sub ? INFINITY : -INFINITY, gid[birth[i]], -1))
        goto cleanup;

  /* Contract: without labels to decide, a kept vertex that is not on the
   * boundary and has exactly one kept child only lies on the path from that
   * child to its parent. No other region has it (it is not on the boundary),
   * nothing dies there that is not final already (other components merging
   * at it hold no boundary vertex: younger ones died, an elder one's birth
   * would be a second child), so the path's edge carries the same
   * connectivity at every threshold. What stays: boundary vertices, the
   * elder births (leaves) and the vertices where two kept subtrees merge. */
  if (label == NULL && g->bnd != NULL) {
    mt_idx_t *nch = ktip, *up = birth; /* free after the sweep */
    for (mt_idx_t i = 0; i < n; i++)
      nch[i] = 0;
    for (mt_idx_t i = 0; i < n; i++)
      if (kpar[i] >= 0)
        nch[kpar[i]]++;
    for (mt_idx_t s = n - 1; s >= 0; s--) { /* parents are swept after children */
      const mt_idx_t v = order[s];
      if (kpar[v] == KEPT_NOT)
        continue;
      if (!g->bnd[v] && nch[v] == 1)
        up[v] = kpar[v] >= 0 ? up[kpar[v]] : -1;
      else
        up[v] = v;
    }
    for (mt_idx_t i = 0; i < n; i++)
      if (kpar[i] != KEPT_NOT)
        kpar[i] = up[i] != i ? KEPT_NOT : kpar[i] >= 0 ? up[kpar[i]] : -1;
  }

  /* the reduced tree: kept vertices, renumbered in index order */
  mt_idx_t nk = 0;
  for (mt_idx_t i = 0; i < n; i++)
    if (kpar[i] != KEPT_NOT)
      uf[i] = nk++; /* uf is free now: new index */
  out->n = nk;
  size_t ck = (size_t)(nk > 0 ? nk : 1);
  out->gid = malloc(ck * sizeof *out->gid);
  out->val = malloc(ck * sizeof *out->val);
  out->par = malloc(ck * sizeof *out->par);
  if (!out->gid || !out->val || !out->par)
    goto cleanup;
  for (mt_idx_t i = 0; i < n; i++)
    if (kpar[i] != KEPT_NOT) {
      mt_idx_t k = uf[i];
      out->gid[k] = gid[i];
      out->val[k] = val[i];
      out->par[k] = kpar[i] >= 0 ? uf[kpar[i]] : -1;
    }
  rc = 0;
  mt_heap_sample(); /* every array of the sweep (and the caller's) is alive */
cleanup:
  if (rc != 0)
    mt_tree_free(out);
  free(order);
  free(uf);
  free(birth);
  free(ktip);
  free(kpar);
  free(hasb);
  free(nb);
  free(roots);
  return rc;
}

/* --------------------------------------------------------------- gluing */

typedef struct csr {
  mt_idx_t *off, *adj;
} csr_t;

static int csr_nbrs(const void *data, mt_idx_t i, mt_idx_t *out, int cap)
{
  const csr_t *c = data;
  int m = 0;
  for (mt_idx_t e = c->off[i]; e < c->off[i + 1] && m < cap; e++)
    out[m++] = c->adj[e];
  return m;
}

typedef struct gv {
  int64_t gid;
  double val;
} gv_t;

static int cmp_gv(const void *a, const void *b)
{
  const gv_t *x = a, *y = b;
  return (x->gid > y->gid) - (x->gid < y->gid);
}

static int64_t lookup(const int64_t *gids, int64_t n, int64_t g)
{
  int64_t lo = 0, hi = n;
  while (lo < hi) {
    int64_t mid = lo + (hi - lo) / 2;
    if (gids[mid] < g)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < n && gids[lo] == g ? lo : -1;
}

static int cmp_int(const void *a, const void *b)
{
  int x = *(const int *)a, y = *(const int *)b;
  return (x > y) - (x < y);
}

int mt_glue(const mt_geom_t *geo, mt_tree_t *const *trees, int k, int sub, mt_pairs_t *pairs,
            mt_tree_t *out, mt_labs_t *labs)
{
  return mt_glue_region(geo, NULL, NULL, 0, 0, trees, k, sub, pairs, out, labs);
}

int mt_glue_region(const mt_geom_t *geo, mt_onb_fn onb, const void *ctx, int whole_given,
                   int consume, mt_tree_t *const *trees, int k, int sub, mt_pairs_t *pairs,
                   mt_tree_t *out, mt_labs_t *labs)
{
  int64_t total = 0;
  int nblk = 0, rc = -1;
  for (int t = 0; t < k; t++) {
    total += trees[t]->n;
    nblk += trees[t]->nblk;
  }
  size_t ct = (size_t)(total > 0 ? total : 1);
  gv_t *all = NULL;
  int64_t *gid = malloc(ct * sizeof *gid), *map = malloc(ct * sizeof *map);
  double *val = malloc(ct * sizeof *val);
  mt_idx_t *deg = NULL, *adj = NULL;
  unsigned char *bnd = NULL, *inreg = NULL;
  int *blk = malloc(sizeof *blk * (size_t)(nblk > 0 ? nblk : 1));
  memset(out, 0, sizeof *out);
  if (!gid || !map || !val || !blk || total > MT_IDX_MAX / 2) /* edge offsets are mt_idx_t */
    goto cleanup;
  /* the region's blocks */
  for (int t = 0, w = 0; t < k; t++)
    for (int i = 0; i < trees[t]->nblk; i++)
      blk[w++] = trees[t]->blk[i];
  qsort(blk, (size_t)nblk, sizeof *blk, cmp_int);
  /* the union of the vertices, by gid, and map: tree node -> vertex. Trees
   * made by a glue, and a block's or tile's without wrap, list their
   * vertices by ascending gid: then a k-way merge makes the union with no
   * copy of the input (the peak of a glue is its input plus the union) */
  int sorted = 1;
  for (int t = 0; t < k && sorted; t++)
    for (int64_t i = 1; i < trees[t]->n && sorted; i++)
      sorted = trees[t]->gid[i - 1] < trees[t]->gid[i];
  int64_t n = 0;
  if (sorted && k <= 64) {
    int64_t cur[64], off[64];
    for (int t = 0; t < k; t++) {
      cur[t] = 0;
      off[t] = t == 0 ? 0 : off[t - 1] + trees[t - 1]->n;
    }
    for (;;) {
      int best = -1;
      for (int t = 0; t < k; t++)
        if (cur[t] < trees[t]->n &&
            (best < 0 || trees[t]->gid[cur[t]] < trees[best]->gid[cur[best]]))
          best = t;
      if (best < 0)
        break;
      const int64_t g = trees[best]->gid[cur[best]];
      gid[n] = g;
      val[n] = trees[best]->val[cur[best]];
      for (int t = 0; t < k; t++)
        if (cur[t] < trees[t]->n && trees[t]->gid[cur[t]] == g)
          map[off[t] + cur[t]++] = n;
      n++;
    }
  } else {
    all = malloc(ct * sizeof *all);
    if (all == NULL)
      goto cleanup;
    int64_t w = 0;
    for (int t = 0; t < k; t++)
      for (int64_t i = 0; i < trees[t]->n; i++)
        all[w++] = (gv_t){trees[t]->gid[i], trees[t]->val[i]};
    qsort(all, (size_t)total, sizeof *all, cmp_gv);
    for (int64_t i = 0; i < total; i++)
      if (n == 0 || all[i].gid != gid[n - 1]) {
        gid[n] = all[i].gid;
        val[n++] = all[i].val;
      }
    free(all);
    all = NULL;
    int64_t *m = map;
    for (int t = 0; t < k; t++) {
      for (int64_t i = 0; i < trees[t]->n; i++)
        m[i] = lookup(gid, n, trees[t]->gid[i]);
      m += trees[t]->n;
    }
  }
  mt_heap_sample(); /* the input and the union's vertices */
  /* the inputs' gids and values are in the union now */
  for (int t = 0; consume && t < k; t++) {
    free(trees[t]->gid);
    free(trees[t]->val);
    trees[t]->gid = NULL;
    trees[t]->val = NULL;
  }
  /* the union of the edges (node - parent), as CSR */
  deg = calloc(ct + 1, sizeof *deg);
  adj = malloc(2 * ct * sizeof *adj);
  if (!deg || !adj)
    goto cleanup;
  int64_t *m = map;
  for (int t = 0; t < k; t++) {
    for (int64_t i = 0; i < trees[t]->n; i++)
      if (trees[t]->par[i] >= 0) {
        deg[m[i] + 1]++;
        deg[m[trees[t]->par[i]] + 1]++;
      }
    m += trees[t]->n;
  }
  int maxdeg = 1;
  for (int64_t i = 0; i < n; i++) {
    if (deg[i + 1] > maxdeg)
      maxdeg = (int)deg[i + 1];
    deg[i + 1] += deg[i];
  }
  /* deg[i] is i's cursor while filling, then the start of i + 1 */
  m = map;
  for (int t = 0; t < k; t++) {
    for (int64_t i = 0; i < trees[t]->n; i++)
      if (trees[t]->par[i] >= 0) {
        mt_idx_t a = (mt_idx_t)m[i], b = (mt_idx_t)m[trees[t]->par[i]];
        adj[deg[a]++] = b;
        adj[deg[b]++] = a;
      }
    m += trees[t]->n;
  }
  for (int64_t i = n; i > 0; i--)
    deg[i] = deg[i - 1];
  deg[0] = 0;
  mt_heap_sample(); /* the union and what is left of the input */
  /* the sweep is the peak: drop what it does not need first */
  if (labs == NULL) {
    free(map);
    map = NULL;
  }
  for (int t = 0; consume && t < k; t++)
    mt_tree_free(trees[t]);
  bnd = malloc(ct);
  if (bnd == NULL)
    goto cleanup;
  int whole = onb != NULL ? whole_given : nblk == geo->nblocks;
  if (onb == NULL) {
    inreg = calloc((size_t)geo->nblocks, 1);
    if (inreg == NULL)
      goto cleanup;
    for (int i = 0; i < nblk; i++)
      inreg[blk[i]] = 1;
  }
  for (int64_t i = 0; i < n && !whole; i++)
    bnd[i] = (unsigned char)(onb != NULL ? onb(ctx, gid[i]) : mt_on_boundary(geo, gid[i], inreg));
  csr_t c = {deg, adj};
  mt_graph_t g = {n, val, gid, whole ? NULL : bnd, csr_nbrs, &c, maxdeg};
  /* labels: map (as int64 per vertex) is free now */
  if (mt_sweep(&g, sub, pairs, out, labs ? map : NULL) != 0)
    goto cleanup;
  for (int64_t i = 0; labs != NULL && i < n; i++)
    if (map[i] >= 0 && mt_labs_push(labs, gid[i], map[i]) != 0) {
      mt_tree_free(out);
      goto cleanup;
    }
  out->blk = blk;
  out->nblk = nblk;
  blk = NULL;
  rc = 0;
cleanup:
  free(all);
  free(gid);
  free(map);
  free(val);
  free(deg);
  free(adj);
  free(bnd);
  free(inreg);
  free(blk);
  return rc;
}
