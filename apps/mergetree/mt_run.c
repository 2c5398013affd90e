/*
 * apps/mergetree/mt_run.c - the distributed run of bpc-mergetree.
 *
 * 1. Decompose the grid (bpc_decomp_t, optional wrap).
 * 2. Local step, every local block in parallel (bpc_blocks_foreach, OpenMP):
 *    read the block's box, its core plus the upper layer (core [lo, hi) ->
 *    [lo, hi] per axis: every grid edge lies in the box of the block owning
 *    its lower end; with wrap that layer comes from across the domain, and a
 *    point met twice is one vertex), sweep its grid graph (mt_sweep) with the
 *    boundary flags of the block (a block wider than --tile in tiles, their
 *    trees glued as they come): the final pairs stay with the block, the
 *    reduced tree joins the rank's tree (absorb), which is the item of the
 *    rank's first block.
 * 3. Global step: bpc_merge of the trees as a custom variable-size item
 *    type (serialised: region blocks, then gid, value and parent per kept
 *    vertex). The callback glues the group's trees (mt_glue) and reduces
 *    them for the merged region, so items stay near the size of the
 *    region's boundary; at the last root the region is the whole domain and
 *    every remaining pair (and the essential class) is final.
 */
#include "mergetree/mt.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------- geometry */

static int64_t wrapc(int64_t c, int64_t N, int wrap)
{
  if (c >= 0 && c < N)
    return c;
  return wrap ? (c % N + N) % N : -1;
}

void mt_geom_free(mt_geom_t *geo)
{
  for (int d = 0; d < 3; d++) {
    free(geo->nb[d]);
    geo->nb[d] = NULL;
  }
  free(geo->gidtab);
  geo->gidtab = NULL;
}

int mt_geom_tables(mt_geom_t *geo)
{
  int *div[3] = {NULL, NULL, NULL};
  int rc = -1;
  if (bpc_decomp_divs(geo->d, geo->divs) != BPC_OK)
    return -1;
  geo->gidtab = malloc(sizeof(int) * (size_t)geo->nblocks);
  if (geo->gidtab == NULL)
    goto cleanup;
  for (int i2 = 0; i2 < geo->divs[2]; i2++)
    for (int i1 = 0; i1 < geo->divs[1]; i1++)
      for (int i0 = 0; i0 < geo->divs[0]; i0++) {
        const int co[3] = {i0, i1, i2};
        int g = 0;
        bpc_decomp_coords_to_gid(geo->d, co, &g);
        geo->gidtab[i0 + geo->divs[0] * (i1 + geo->divs[1] * i2)] = g;
      }
  for (int d = 0; d < 3; d++) {
    const int64_t N = geo->dims[d];
    div[d] = malloc(sizeof(int) * (size_t)N);
    geo->nb[d] = malloc(4 * sizeof(int) * (size_t)N);
    if (div[d] == NULL || geo->nb[d] == NULL)
      goto cleanup;
    for (int i = 0; i < geo->divs[d]; i++) { /* division i: the core bounds of a block in it */
      int co[3] = {0, 0, 0}, g = 0;
      bpc_bounds_t core;
      co[d] = i;
      bpc_decomp_coords_to_gid(geo->d, co, &g);
      bpc_decomp_bounds(geo->d, g, &core, NULL);
      for (int64_t c = core.min[d]; c < core.max[d]; c++)
        div[d][c] = i;
    }
    for (int64_t c = 0; c < N; c++) {
      int *e = &geo->nb[d][4 * c];
      e[0] = 0;
      for (int q = -1; q <= 0; q++) {
        int64_t w = wrapc(c + q, N, geo->wrap[d]);
        if (w < 0)
          continue;
        int dup = 0;
        for (int k = 0; k < e[0]; k++)
          dup |= e[1 + k] == div[d][w];
        if (!dup)
          e[1 + e[0]++] = div[d][w];
      }
    }
  }
  rc = 0;
cleanup:
  for (int d = 0; d < 3; d++)
    free(div[d]);
  if (rc != 0)
    mt_geom_free(geo);
  return rc;
}

int mt_on_boundary(const mt_geom_t *geo, int64_t gid, const unsigned char *inreg)
{
  const int64_t X = geo->dims[0], Y = geo->dims[1];
  const int *e0 = &geo->nb[0][4 * (gid % X)], *e1 = &geo->nb[1][4 * (gid / X % Y)],
            *e2 = &geo->nb[2][4 * (gid / X / Y)];
  const int D0 = geo->divs[0], D1 = geo->divs[1];
  for (int k = 1; k <= e2[0]; k++)
    for (int j = 1; j <= e1[0]; j++)
      for (int i = 1; i <= e0[0]; i++)
        if (!inreg[geo->gidtab[e0[i] + D0 * (e1[j] + D1 * e2[k])]])
          return 1;
  return 0;
}

/* ------------------------------------------------------------ the boxes */

/* One dimension of a block's box: its distinct coordinates in order, the
 * index of each one's -1 and +1 neighbour (-1: none in the box), and (set
 * by the local step) whether every valid one of c-1, c lies in the block's
 * own division of that axis. */
typedef struct axis {
  int64_t m;
  int64_t *c, *lo, *hi;
  unsigned char *inner;
  int64_t *core; /* box index of core coordinate lo + o */
} axis_t;

typedef struct box {
  axis_t a[3];
  int64_t n;
  const mt_geom_t *geo;
} box_t;

static void axis_free(axis_t *a)
{
  free(a->c);
  free(a->lo);
  free(a->hi);
  free(a->inner);
  free(a->core);
}

static int axis_make(axis_t *a, int64_t lo, int64_t hi, int64_t N, int wrap)
{
  int64_t *pos = malloc(sizeof *pos * (size_t)N);
  size_t cap = (size_t)(hi - lo + 1);
  a->c = malloc(sizeof *a->c * cap);
  a->lo = malloc(sizeof *a->lo * cap);
  a->hi = malloc(sizeof *a->hi * cap);
  a->inner = malloc(cap);
  a->core = malloc(sizeof *a->core * (size_t)(hi - lo));
  a->m = 0;
  if (!pos || !a->c || !a->lo || !a->hi || !a->inner || !a->core) {
    free(pos);
    return -1;
  }
  for (int64_t i = 0; i < N; i++)
    pos[i] = -1;
  for (int64_t c = lo; c <= hi; c++) { /* the core and the upper layer */
    int64_t w = wrapc(c, N, wrap);
    if (w >= 0 && pos[w] < 0) {
      pos[w] = a->m;
      a->c[a->m++] = w;
    }
  }
  for (int64_t i = 0; i < a->m; i++) {
    int64_t l = wrapc(a->c[i] - 1, N, wrap), h = wrapc(a->c[i] + 1, N, wrap);
    a->lo[i] = l >= 0 ? pos[l] : -1;
    a->hi[i] = h >= 0 ? pos[h] : -1;
  }
  for (int64_t o = 0; o < hi - lo; o++)
    a->core[o] = pos[lo + o];
  free(pos);
  return 0;
}

static int grid_nbrs(const void *data, mt_idx_t i, mt_idx_t *out, int cap)
{
  const box_t *b = data;
  const int64_t m0 = b->a[0].m, m1 = b->a[1].m;
  int64_t c[3] = {i % m0, i / m0 % m1, i / m0 / m1};
  int n = 0;
  for (int d = 0; d < 3; d++) {
    const int64_t nb[2] = {b->a[d].lo[c[d]], b->a[d].hi[c[d]]};
    for (int s = 0; s < 2; s++) {
      if (nb[s] < 0 || n >= cap)
        continue;
      int64_t q[3] = {c[0], c[1], c[2]};
      q[d] = nb[s];
      out[n++] = (mt_idx_t)(q[0] + m0 * (q[1] + m1 * q[2]));
    }
  }
  return n;
}

/* The baseline of the benchmark: one union-find sweep over the whole field
 * (x fastest), no blocks. 0 or -1 (out of memory). */
int mt_serial_pairs(const int64_t dims[3], const int wrap[3], const float *field, int sub,
                    mt_pairs_t *pairs)
{
  box_t b;
  mt_tree_t t;
  double *val = NULL;
  int64_t *g = NULL;
  int rc = -1;
  memset(&b, 0, sizeof b);
  for (int d = 0; d < 3; d++)
    if (axis_make(&b.a[d], 0, dims[d], dims[d], wrap[d]) != 0)
      goto cleanup;
  b.n = dims[0] * dims[1] * dims[2];
  val = malloc(sizeof *val * (size_t)b.n);
  g = malloc(sizeof *g * (size_t)b.n);
  if (val != NULL && g != NULL) {
    for (int64_t k = 0, i = 0; k < b.a[2].m; k++)
      for (int64_t j = 0; j < b.a[1].m; j++)
        for (int64_t q = 0; q < b.a[0].m; q++, i++) {
          g[i] = b.a[0].c[q] + dims[0] * (b.a[1].c[j] + dims[1] * b.a[2].c[k]);
          val[i] = field[g[i]];
        }
    mt_graph_t gr = {b.n, val, g, NULL, grid_nbrs, &b, 6};
    if (mt_sweep(&gr, sub, pairs, &t, NULL) == 0) {
      mt_tree_free(&t);
      rc = 0;
    }
  }
cleanup:
  free(val);
  free(g);
  for (int d = 0; d < 3; d++)
    axis_free(&b.a[d]);
  return rc;
}

/* --------------------------------------------------------- the item type */

/* The wire format of a tree: a header {nblk, n, flags}, the region's blocks
 * (int), then per kept vertex its gid (int32 when the grid has fewer than
 * 2^31 vertices, else int64), its value (float32 when the field is float32:
 * exact, else float64) and its parent's index (int32). */
typedef struct wire {
  int gid32, val32;
} wire_t;

enum { W_GID32 = 1, W_VAL32 = 2 };

static size_t node_bytes(int64_t flags)
{
  return ((flags & W_GID32) ? 4 : 8) + ((flags & W_VAL32) ? 4 : 8) + 4;
}

static int64_t wire_flags(const wire_t *w)
{
  return (w->gid32 ? W_GID32 : 0) | (w->val32 ? W_VAL32 : 0);
}

static int tree_size(const void *item, size_t *bytes, void *user)
{
  const mt_tree_t *t = item;
  if (t != NULL && t->n > INT32_MAX)
    return 1; /* parents are int32 */
  *bytes = t ? 3 * sizeof(int64_t) + sizeof(int) * (size_t)t->nblk +
                   (size_t)t->n * node_bytes(wire_flags(user))
             : 0;
  return 0;
}

static int tree_pack(const void *item, void *buf, size_t bytes, void *user)
{
  (void)bytes;
  const mt_tree_t *t = item;
  if (t == NULL)
    return 0;
  const int64_t fl = wire_flags(user);
  unsigned char *p = buf;
  int64_t h[3] = {t->nblk, t->n, fl};
  memcpy(p, h, sizeof h);
  p += sizeof h;
  if (t->nblk > 0) /* blk may be NULL then (memcpy wants a pointer even for 0 bytes) */
    memcpy(p, t->blk, sizeof(int) * (size_t)t->nblk);
  p += sizeof(int) * (size_t)t->nblk;
  for (int64_t i = 0; i < t->n; i++) {
    if (fl & W_GID32) {
      int32_t g = (int32_t)t->gid[i];
      memcpy(p, &g, 4);
      p += 4;
    } else {
      memcpy(p, &t->gid[i], 8);
      p += 8;
    }
  }
  for (int64_t i = 0; i < t->n; i++) {
    if (fl & W_VAL32) {
      float v = (float)t->val[i];
      memcpy(p, &v, 4);
      p += 4;
    } else {
      memcpy(p, &t->val[i], 8);
      p += 8;
    }
  }
  for (int64_t i = 0; i < t->n; i++) {
    int32_t q = (int32_t)t->par[i];
    memcpy(p, &q, 4);
    p += 4;
  }
  return 0;
}

static void tree_destroy(void *item, void *user)
{
  (void)user;
  if (item != NULL) {
    mt_tree_free(item);
    free(item);
  }
}

static int tree_unpack(const void *buf, size_t bytes, void **item, void *user)
{
  (void)user;
  int64_t h[3];
  const unsigned char *p = buf;
  mt_tree_t *t = calloc(1, sizeof *t);
  *item = NULL;
  if (t == NULL || bytes < sizeof h) {
    free(t);
    return 1;
  }
  memcpy(h, p, sizeof h);
  p += sizeof h;
  if (h[0] < 0 || h[1] < 0 || h[1] > INT32_MAX || (h[2] & ~(int64_t)(W_GID32 | W_VAL32)) ||
      bytes != sizeof h + sizeof(int) * (size_t)h[0] + (size_t)h[1] * node_bytes(h[2])) {
    free(t);
    return 2; /* a damaged item */
  }
  t->nblk = (int)h[0];
  t->n = h[1];
  t->blk = malloc(sizeof(int) * (size_t)(t->nblk ? t->nblk : 1));
  t->gid = malloc(sizeof(int64_t) * (size_t)(t->n ? t->n : 1));
  t->val = malloc(sizeof(double) * (size_t)(t->n ? t->n : 1));
  t->par = malloc(sizeof(int64_t) * (size_t)(t->n ? t->n : 1));
  if (!t->blk || !t->gid || !t->val || !t->par) {
    tree_destroy(t, NULL);
    return 1;
  }
  memcpy(t->blk, p, sizeof(int) * (size_t)t->nblk);
  p += sizeof(int) * (size_t)t->nblk;
  for (int64_t i = 0; i < t->n; i++) {
    if (h[2] & W_GID32) {
      int32_t g;
      memcpy(&g, p, 4);
      t->gid[i] = g;
      p += 4;
    } else {
      memcpy(&t->gid[i], p, 8);
      p += 8;
    }
  }
  for (int64_t i = 0; i < t->n; i++) {
    if (h[2] & W_VAL32) {
      float v;
      memcpy(&v, p, 4);
      t->val[i] = v;
      p += 4;
    } else {
      memcpy(&t->val[i], p, 8);
      p += 8;
    }
  }
  for (int64_t i = 0; i < t->n; i++) {
    int32_t q;
    memcpy(&q, p, 4);
    if (q < -1 || q >= t->n) {
      tree_destroy(t, NULL);
      return 2;
    }
    t->par[i] = q;
    p += 4;
  }
  *item = t;
  return 0;
}

/* ------------------------------------------------------------- the run */

typedef struct run {
  const mt_field_t *f;
  const mt_run_params_t *p;
  mt_geom_t geo;
  const bpc_assign_t *assign;
  int *order; /* the merge's order: gids rank by rank (bisect) */
  const int *gids;
  int nl;
  mt_tree_t **trees;   /* per local block: its item */
  mt_pairs_t *bpairs;  /* per local block: the final pairs found at it */
  mt_labs_t *blabs;    /* per local block: labels made final at it (glue) */
  mt_seg_t *seg;       /* NULL: no segmentation */
  int64_t *bad;        /* per local block: first non-finite gid, or -1 */
  int *err;            /* per local block: 0, or 1 out of memory, 2 read error */
  char (*msg)[256];    /* per local block */
  /* the rank's own region (see absorb): its tree so far, the block trees
   * waiting to join it, the pairs and labels its glues made final */
  mt_tree_t *acc;
  mt_tree_t **pend;
  int npend;
  int64_t pend_nodes, local_nodes;
  mt_pairs_t apairs;
  mt_labs_t alabs;
  int aerr;
} run_t;

static int local_index(const run_t *R, int gid)
{
  int li = -1;
  bpc_assign_local_index(R->assign, gid, &li);
  return li;
}

/* The block store holds nothing of its own: the run keeps per-block state. */
static void *block_create(int gid, void *user)
{
  (void)gid;
  return user;
}

/* Glue the waiting block trees into the rank's tree (R->acc). 0 or -1. */
static int absorb_flush(run_t *R)
{
  if (R->npend == 0)
    return 0;
  if (R->acc == NULL && R->npend == 1) { /* nothing to glue with yet */
    R->acc = R->pend[0];
    R->npend = 0;
    R->pend_nodes = 0;
    return 0;
  }
  mt_tree_t *out = calloc(1, sizeof *out);
  if (out == NULL)
    return -1;
  int k = 0;
  if (R->acc != NULL)
    R->pend[R->npend++] = R->acc; /* pend has room for every local block */
  k = R->npend;
  if (mt_glue_region(&R->geo, NULL, NULL, 0, 1, R->pend, k, R->p->sub, &R->apairs, out,
                     R->seg ? &R->alabs : NULL) != 0) {
    free(out);
    if (R->acc != NULL)
      R->npend--;
    return -1;
  }
  for (int i = 0; i < k; i++)
    tree_destroy(R->pend[i], NULL);
  R->acc = out;
  R->npend = 0;
  R->pend_nodes = 0;
  return 0;
}

/* A block's tree joins the rank's region at once rather than waiting for
 * the merge: the rank keeps one tree (the boundary of its blocks' union,
 * not the sum of the blocks' boundaries), and bpc_merge moves that one.
 * Gluing is associative and order-free, so the pairs are the same. Trees
 * wait until they hold as many vertices as the rank's tree (each glue
 * re-sweeps it: so the glues cost O(total) and the waiting trees at most
 * the rank's tree again). Called by one thread at a time. */
static void absorb(run_t *R, mt_tree_t *t)
{
  R->local_nodes += t->n;
  R->pend[R->npend++] = t;
  R->pend_nodes += t->n;
  if (R->pend_nodes >= (R->acc != NULL ? R->acc->n : 0) && absorb_flush(R) != 0)
    R->aerr = 1;
}

/* Sweep the box of core [lo, hi) (plus the upper layer): *tout gets its
 * reduced tree (no blocks listed), the final pairs go to R->bpairs[li],
 * the labels (lab, n entries, when wanted) to *labp with the box in *bp
 * (the caller frees both). The boundary is that of the core [lo, hi)
 * itself: a vertex is on it when a valid point of {c - 1, c} on some axis
 * lies outside (for a block's core: in another block; for a tile: in
 * another tile or block); whole: no boundary at all. 0; 1 out of memory;
 * 2 with a message; R->bad[li] set (and no tree) for a non-finite value. */
static int sweep_box(run_t *R, int li, int gid, const int64_t lo[3], const int64_t hi[3],
                     int whole, mt_tree_t **tout, box_t *bp, int64_t **labp, double **valp)
{
  const mt_geom_t *geo = &R->geo;
  box_t b;
  double *val = NULL;
  int64_t *g = NULL;
  unsigned char *bnd = NULL;
  int64_t *lab = NULL;
  int rc = 1;
  *tout = NULL;
  memset(&b, 0, sizeof b);
  b.geo = geo;
  for (int d = 0; d < 3; d++)
    if (axis_make(&b.a[d], lo[d], hi[d], geo->dims[d], geo->wrap[d]) != 0)
      goto cleanup;
  b.n = b.a[0].m * b.a[1].m * b.a[2].m;
  if (b.n > MT_IDX_MAX) {
    snprintf(R->msg[li], sizeof R->msg[li],
             "block %d: %" PRId64 " vertices, more than a sweep indexes (%d): use more blocks",
             gid, b.n, MT_IDX_MAX);
    rc = 2;
    goto cleanup;
  }
  val = malloc(sizeof *val * (size_t)b.n);
  g = malloc(sizeof *g * (size_t)b.n);
  bnd = malloc((size_t)b.n);
  if (labp != NULL)
    lab = malloc(sizeof *lab * (size_t)b.n);
  if (!val || !g || !bnd || (labp != NULL && lab == NULL))
    goto cleanup;
  if (mt_field_read(R->f, b.a[0].c, b.a[0].m, b.a[1].c, b.a[1].m, b.a[2].c, b.a[2].m, val,
                    R->msg[li], sizeof R->msg[li]) != 0) {
    rc = 2;
    goto cleanup;
  }
  for (int d = 0; d < 3; d++) /* the owners of {c-1, c}^3 are the product of the axes' */
    for (int64_t q = 0; q < b.a[d].m; q++) {
      int in = 1;
      for (int64_t o = -1; o <= 0; o++) {
        int64_t w = wrapc(b.a[d].c[q] + o, geo->dims[d], geo->wrap[d]);
        if (w >= 0)
          in &= w >= lo[d] && w < hi[d];
      }
      b.a[d].inner[q] = (unsigned char)in;
    }
  for (int64_t k = 0, i = 0; k < b.a[2].m; k++)
    for (int64_t j = 0; j < b.a[1].m; j++)
      for (int64_t q = 0; q < b.a[0].m; q++, i++) {
        g[i] = b.a[0].c[q] + geo->dims[0] * (b.a[1].c[j] + geo->dims[1] * b.a[2].c[k]);
        if (!isfinite(val[i]) && (R->bad[li] < 0 || g[i] < R->bad[li]))
          R->bad[li] = g[i];
        bnd[i] = !(b.a[0].inner[q] && b.a[1].inner[j] && b.a[2].inner[k]);
      }
  if (R->bad[li] >= 0) { /* the app reports it; nothing to sweep */
    rc = 0;
    goto cleanup;
  }
  mt_graph_t gr = {b.n, val, g, whole ? NULL : bnd, grid_nbrs, &b, 6};
  mt_tree_t *t = calloc(1, sizeof *t);
  if (t == NULL || mt_sweep(&gr, R->p->sub, &R->bpairs[li], t, lab) != 0) {
    free(t);
    goto cleanup;
  }
  *tout = t;
  rc = 0;
cleanup:
  free(g);
  free(bnd);
  if (rc == 0 && labp != NULL && *tout != NULL) { /* the caller takes them */
    *labp = lab;
    *valp = val;
    *bp = b;
    return 0;
  }
  for (int d = 0; d < 3; d++)
    axis_free(&b.a[d]);
  free(val);
  free(lab);
  return rc;
}

/* The tiles of one block: tile index per axis of every domain coordinate in
 * the block's core (-1 outside), and which tiles the glued tree holds. */
typedef struct tiles {
  const mt_geom_t *geo;
  int k[3];
  int *tix[3];
  unsigned char *done;
} tiles_t;

/* On the boundary of the done tiles: a valid point of {c-1, c}^3 outside
 * the block or in a tile not done. */
static int tile_onb(const void *ctx, int64_t gid)
{
  const tiles_t *T = ctx;
  const mt_geom_t *geo = T->geo;
  const int64_t c[3] = {gid % geo->dims[0], gid / geo->dims[0] % geo->dims[1],
                        gid / geo->dims[0] / geo->dims[1]};
  int l[3][2], nl[3];
  for (int d = 0; d < 3; d++) {
    nl[d] = 0;
    for (int64_t o = -1; o <= 0; o++) {
      int64_t w = wrapc(c[d] + o, geo->dims[d], geo->wrap[d]);
      if (w < 0)
        continue;
      if (T->tix[d][w] < 0)
        return 1;
      l[d][nl[d]++] = T->tix[d][w];
    }
  }
  for (int z = 0; z < nl[2]; z++)
    for (int y = 0; y < nl[1]; y++)
      for (int x = 0; x < nl[0]; x++)
        if (!T->done[l[0][x] + T->k[0] * (l[1][y] + T->k[1] * l[2][z])])
          return 1;
  return 0;
}

/* A block larger than a tile (--tile E: E^3 vertices) is swept tile by
 * tile, the tiles' trees glued as they come (as the rank glues its blocks'
 * trees): only one tile's arrays are alive at a time, so the memory of the
 * local step no longer grows with the block. The last glue has every tile:
 * its boundary is the block's. 0, 1 or 2 as sweep_box. */
static int sweep_tiled(run_t *R, int li, int gid, const bpc_bounds_t *core, mt_tree_t **tout)
{
  const mt_geom_t *geo = &R->geo;
  tiles_t T;
  mt_tree_t **pend = NULL, *acc = NULL;
  int npend = 0, rc = 1, nt = 1;
  int64_t pend_nodes = 0;
  mt_labs_t tl = {0};
  memset(&T, 0, sizeof T);
  T.geo = geo;
  *tout = NULL;
  for (int d = 0; d < 3; d++) {
    const int64_t ext = core->max[d] - core->min[d];
    T.k[d] = (int)((ext + R->p->tile - 1) / R->p->tile);
    nt *= T.k[d];
    T.tix[d] = malloc(sizeof(int) * (size_t)geo->dims[d]);
    if (T.tix[d] == NULL)
      goto cleanup;
    for (int64_t c = 0; c < geo->dims[d]; c++)
      T.tix[d][c] = -1;
    for (int i = 0; i < T.k[d]; i++) {
      const int64_t t0 = core->min[d] + ext * i / T.k[d];
      const int64_t t1 = core->min[d] + ext * (i + 1) / T.k[d];
      for (int64_t c = t0; c < t1; c++)
        T.tix[d][c] = i;
    }
  }
  T.done = calloc((size_t)nt, 1);
  pend = malloc(sizeof *pend * (size_t)(nt + 1));
  if (T.done == NULL || pend == NULL)
    goto cleanup;
  /* with a segmentation: the block's core labels (-1: pending) and values,
   * filled tile by tile and by the glues */
  int64_t *blab = R->seg != NULL ? R->seg->label[li] : NULL;
  float *bval = R->seg != NULL ? R->seg->value[li] : NULL;
  const int64_t bex[3] = {core->max[0] - core->min[0], core->max[1] - core->min[1],
                          core->max[2] - core->min[2]};
  int ndone = 0;
  for (int tz = 0; tz < T.k[2]; tz++)
    for (int ty = 0; ty < T.k[1]; ty++)
      for (int tx = 0; tx < T.k[0]; tx++) {
        const int ti[3] = {tx, ty, tz};
        int64_t lo[3], hi[3];
        for (int d = 0; d < 3; d++) {
          const int64_t ext = core->max[d] - core->min[d];
          lo[d] = core->min[d] + ext * ti[d] / T.k[d];
          hi[d] = core->min[d] + ext * (ti[d] + 1) / T.k[d];
        }
        mt_tree_t *t = NULL;
        box_t b;
        int64_t *lab = NULL;
        double *val = NULL;
        memset(&b, 0, sizeof b);
        rc = sweep_box(R, li, gid, lo, hi, 0, &t, blab ? &b : NULL, blab ? &lab : NULL,
                       blab ? &val : NULL);
        if (rc != 0 || t == NULL) /* an error, or a non-finite value */
          goto cleanup;
        rc = 1;
        if (blab != NULL) { /* the tile's core into the block's arrays */
          for (int64_t z = lo[2]; z < hi[2]; z++)
            for (int64_t y = lo[1]; y < hi[1]; y++)
              for (int64_t x = lo[0]; x < hi[0]; x++) {
                const int64_t i = b.a[0].core[x - lo[0]] +
                                  b.a[0].m * (b.a[1].core[y - lo[1]] + b.a[1].m * b.a[2].core[z - lo[2]]);
                const int64_t o = (x - core->min[0]) +
                                  bex[0] * ((y - core->min[1]) + bex[1] * (z - core->min[2]));
                blab[o] = lab[i];
                bval[o] = (float)val[i];
              }
          for (int d = 0; d < 3; d++)
            axis_free(&b.a[d]);
          free(lab);
          free(val);
        }
        T.done[tx + T.k[0] * (ty + T.k[1] * tz)] = 1;
        ndone++;
        pend[npend++] = t;
        pend_nodes += t->n;
        if (ndone < nt && pend_nodes < (acc != NULL ? acc->n : 0) + 1)
          continue;
        if (acc != NULL)
          pend[npend++] = acc;
        mt_tree_t *out = calloc(1, sizeof *out);
        if (out == NULL || mt_glue_region(geo, tile_onb, &T, ndone == nt && geo->nblocks == 1,
                                          1, pend, npend, R->p->sub, &R->bpairs[li], out,
                                          blab ? &tl : NULL) != 0) {
          free(out);
          goto cleanup;
        }
        /* labels the glue decided: in the core, at once; elsewhere (none
         * expected: other vertices are on the block's boundary) by the
         * merge's routing */
        for (size_t q = 0; q < tl.n; q++) {
          const int64_t g = tl.p[q].gid, c[3] = {g % geo->dims[0], g / geo->dims[0] % geo->dims[1],
                                                 g / geo->dims[0] / geo->dims[1]};
          int in = 1;
          for (int d = 0; d < 3; d++)
            in &= c[d] >= core->min[d] && c[d] < core->max[d];
          if (in)
            blab[(c[0] - core->min[0]) + bex[0] * ((c[1] - core->min[1]) + bex[1] * (c[2] - core->min[2]))] =
                tl.p[q].label;
          else if (mt_labs_push(&R->blabs[li], g, tl.p[q].label) != 0) {
            tree_destroy(out, NULL);
            goto cleanup;
          }
        }
        tl.n = 0;
        for (int i = 0; i < npend; i++)
          tree_destroy(pend[i], NULL);
        npend = 0;
        pend_nodes = 0;
        acc = out;
      }
  *tout = acc;
  acc = NULL;
  rc = 0;
cleanup:
  for (int i = 0; i < npend; i++)
    if (pend[i] != acc)
      tree_destroy(pend[i], NULL);
  tree_destroy(acc, NULL);
  free(tl.p);
  free(pend);
  free(T.done);
  for (int d = 0; d < 3; d++)
    free(T.tix[d]);
  return rc;
}

/* The local step of one block. */
static int local_step(void *block, int gid, void *user)
{
  (void)block;
  run_t *R = user;
  const int li = local_index(R, gid);
  const mt_geom_t *geo = &R->geo;
  bpc_bounds_t core;
  box_t b;
  double *val = NULL;
  int64_t *lab = NULL;
  mt_tree_t *t = NULL;
  int rc = 1, tiled = 0;
  memset(&b, 0, sizeof b);
  R->bad[li] = -1;
  bpc_decomp_bounds(geo->d, gid, &core, NULL);
  for (int d = 0; d < 3; d++)
    tiled |= R->p->tile > 0 && core.max[d] - core.min[d] > R->p->tile;
  if (tiled && R->seg != NULL) { /* the core's labels, -1 where the merge decides */
    const int64_t nv = (core.max[0] - core.min[0]) * (core.max[1] - core.min[1]) *
                       (core.max[2] - core.min[2]);
    R->seg->core[li] = core;
    R->seg->label[li] = malloc(sizeof(int64_t) * (size_t)nv);
    R->seg->value[li] = malloc(sizeof(float) * (size_t)nv);
    if (R->seg->label[li] == NULL || R->seg->value[li] == NULL)
      goto cleanup;
    for (int64_t i = 0; i < nv; i++)
      R->seg->label[li][i] = -1;
  }
  if (tiled)
    rc = sweep_tiled(R, li, gid, &core, &t);
  else
    rc = sweep_box(R, li, gid, core.min, core.max, geo->nblocks == 1, &t, &b,
                   R->seg != NULL ? &lab : NULL, &val);
  if (rc != 0 || t == NULL)
    goto cleanup;
  rc = 1;
  if (lab != NULL) { /* the core's labels, -1 where the merge decides */
    const int64_t ex[3] = {core.max[0] - core.min[0], core.max[1] - core.min[1],
                           core.max[2] - core.min[2]};
    int64_t *out = malloc(sizeof *out * (size_t)(ex[0] * ex[1] * ex[2]));
    float *fv = malloc(sizeof *fv * (size_t)(ex[0] * ex[1] * ex[2]));
    R->seg->core[li] = core;
    R->seg->label[li] = out;
    R->seg->value[li] = fv;
    if (out == NULL || fv == NULL)
      goto cleanup;
    for (int64_t z = 0; z < ex[2]; z++)
      for (int64_t y = 0; y < ex[1]; y++)
        for (int64_t x = 0; x < ex[0]; x++) {
          int64_t i = b.a[0].core[x] + b.a[0].m * (b.a[1].core[y] + b.a[1].m * b.a[2].core[z]);
          *out++ = lab[i];
          *fv++ = (float)val[i];
        }
  }
  free(t->blk);
  t->nblk = 1;
  t->blk = malloc(sizeof(int));
  if (t->blk == NULL)
    goto cleanup;
  t->blk[0] = gid;
#pragma omp critical(mt_absorb)
  absorb(R, t);
  t = NULL;
  rc = 0;
cleanup:
  if (rc == 1)
    snprintf(R->msg[li], sizeof R->msg[li], "block %d: out of memory", gid);
  R->err[li] = rc;
  tree_destroy(t, NULL);
  for (int d = 0; d < 3; d++)
    axis_free(&b.a[d]);
  free(val);
  free(lab);
  return 0; /* errors are reported through R->err */
}

/* The merge callback: glue the group's trees at the root. */
static int merge_trees(bpc_merge_group_t *grp, void *user)
{
  run_t *R = user;
  const int li = local_index(R, grp->gids[grp->root]);
  mt_heap_sample(); /* the group's items are unpacked */
  if (li < 0)
    return 1;
  /* the other local blocks' items are empty (the rank's tree lists their
   * blocks): then the root's tree already is the group's */
  int others = 0;
  for (int i = 0; i < grp->nitems; i++) {
    const mt_tree_t *t = grp->items[i];
    others |= i != grp->root && (t->n > 0 || t->nblk > 0);
  }
  if (!others)
    return 0;
  mt_tree_t *out = calloc(1, sizeof *out);
  if (out == NULL)
    return 1;
  /* consume: the items are destroyed after the callback (the root's here) */
  if (mt_glue_region(&R->geo, NULL, NULL, 0, 1, (mt_tree_t *const *)grp->items, grp->nitems,
                     R->p->sub, &R->bpairs[li], out, R->seg ? &R->blabs[li] : NULL) != 0) {
    free(out);
    return 1;
  }
  tree_destroy(grp->items[grp->root], NULL);
  grp->items[grp->root] = out;
  return 0;
}

void mt_seg_free(mt_seg_t *s)
{
  for (int i = 0; s->label != NULL && i < s->nl; i++)
    free(s->label[i]);
  for (int i = 0; s->value != NULL && i < s->nl; i++)
    free(s->value[i]);
  free(s->label);
  free(s->value);
  free(s->core);
  memset(s, 0, sizeof *s);
}

static int cmp_lab(const void *a, const void *b)
{
  const mt_lab_t *x = a, *y = b;
  return (x->gid > y->gid) - (x->gid < y->gid);
}

/* Send every label made final at a merge to the rank owning the vertex's
 * block, and fill the pending (-1) core labels with them. 0, or -1 with a
 * message (an internal error: a vertex whose label was never decided). */
static int route_labels(run_t *R, int size, char *msg, size_t len)
{
  int *scount = calloc((size_t)size, sizeof(int)), *rcount = calloc((size_t)size, sizeof(int));
  int *sdis = calloc((size_t)size, sizeof(int)), *rdis = calloc((size_t)size, sizeof(int));
  int *fill = calloc((size_t)size, sizeof(int));
  mt_lab_t *sbuf = NULL, *rbuf = NULL;
  size_t ns = 0;
  int rc = -1, err = 0;
  if (!scount || !rcount || !sdis || !rdis || !fill)
    err = 1;
  for (int i = 0; i < R->nl; i++)
    ns += R->blabs[i].n;
  sbuf = malloc(sizeof *sbuf * (ns ? ns : 1));
  err |= sbuf == NULL;
  for (int pass = 0; pass < 2 && !err; pass++) {
    for (int i = 0; i < R->nl; i++)
      for (size_t q = 0; q < R->blabs[i].n; q++) {
        const int64_t gg = R->blabs[i].p[q].gid;
        int64_t c[3] = {gg % R->geo.dims[0], gg / R->geo.dims[0] % R->geo.dims[1],
                        gg / R->geo.dims[0] / R->geo.dims[1]};
        int blk = 0, rk = 0;
        bpc_decomp_point_to_gid(R->geo.d, c, &blk);
        bpc_assign_rank(R->assign, blk, &rk);
        if (pass == 0)
          scount[rk]++;
        else
          sbuf[sdis[rk] + fill[rk]++] = R->blabs[i].p[q];
      }
    for (int r = 1; pass == 0 && r < size; r++)
      sdis[r] = sdis[r - 1] + scount[r - 1];
  }
  int any = err;
  MPI_Allreduce(&err, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (any) {
    snprintf(msg, len, "out of memory routing the labels");
    goto cleanup;
  }
  MPI_Alltoall(scount, 1, MPI_INT, rcount, 1, MPI_INT, MPI_COMM_WORLD);
  size_t nr = 0;
  for (int r = 0; r < size; r++) {
    rdis[r] = (int)nr;
    nr += (size_t)rcount[r];
  }
  rbuf = malloc(sizeof *rbuf * (nr ? nr : 1));
  err = rbuf == NULL;
  MPI_Allreduce(&err, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (any) {
    snprintf(msg, len, "out of memory routing the labels");
    goto cleanup;
  }
  MPI_Datatype lt;
  MPI_Type_contiguous((int)sizeof(mt_lab_t), MPI_BYTE, &lt);
  MPI_Type_commit(&lt);
  MPI_Alltoallv(sbuf, scount, sdis, lt, rbuf, rcount, rdis, lt, MPI_COMM_WORLD);
  MPI_Type_free(&lt);
  qsort(rbuf, nr, sizeof *rbuf, cmp_lab);
  int64_t missing = -1;
  for (int i = 0; i < R->nl; i++) {
    const bpc_bounds_t *b = &R->seg->core[i];
    int64_t *l = R->seg->label[i];
    for (int64_t z = b->min[2]; z < b->max[2]; z++)
      for (int64_t y = b->min[1]; y < b->max[1]; y++)
        for (int64_t x = b->min[0]; x < b->max[0]; x++, l++) {
          if (*l >= 0)
            continue;
          mt_lab_t key = {x + R->geo.dims[0] * (y + R->geo.dims[1] * z), 0};
          const mt_lab_t *hit = bsearch(&key, rbuf, nr, sizeof *rbuf, cmp_lab);
          if (hit == NULL && missing < 0)
            missing = key.gid;
          *l = hit ? hit->label : -1;
        }
  }
  err = missing >= 0;
  MPI_Allreduce(&err, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (any) {
    snprintf(msg, len, "internal error: the label of vertex %" PRId64 " was never decided",
             missing);
    goto cleanup;
  }
  rc = 0;
cleanup:
  free(scount);
  free(rcount);
  free(sdis);
  free(rdis);
  free(fill);
  free(sbuf);
  free(rbuf);
  return rc;
}

/* Compact regions per rank: split the box [lo, hi) of block coordinates
 * across its longest side (in vertices) in proportion to the ranks
 * [r0, r1) of each side, recursively (recursive bisection). A rank's
 * blocks then form a near-cubic box, not a slab of consecutive gids: its
 * tree (the region's boundary) and the glues of the merge's rounds across
 * ranks stay small. Ranks 2i and 2i + 1 are the two halves of one split,
 * and so on up, so the merge's rounds glue neighbouring regions. */
static void bisect(const bpc_decomp_t *d, const int lo[3], const int hi[3], int r0, int r1,
                   const double ext[3], int *map)
{
  int axis = -1;
  for (int a = 0; a < 3; a++)
    if (hi[a] - lo[a] > 1 &&
        (axis < 0 || (hi[a] - lo[a]) * ext[a] > (hi[axis] - lo[axis]) * ext[axis]))
      axis = a;
  if (r1 - r0 == 1 || axis < 0) {
    int c[3];
    for (c[2] = lo[2]; c[2] < hi[2]; c[2]++)
      for (c[1] = lo[1]; c[1] < hi[1]; c[1]++)
        for (c[0] = lo[0]; c[0] < hi[0]; c[0]++) {
          int gid = 0;
          bpc_decomp_coords_to_gid(d, c, &gid);
          map[gid] = r0;
        }
    return;
  }
  const int n = r1 - r0, nl = n / 2, len = hi[axis] - lo[axis];
  int cut = lo[axis] + (int)(((long long)len * nl + n / 2) / n);
  if (cut < lo[axis] + 1)
    cut = lo[axis] + 1;
  if (cut > hi[axis] - 1)
    cut = hi[axis] - 1;
  int mid[3] = {hi[0], hi[1], hi[2]}, mlo[3] = {lo[0], lo[1], lo[2]};
  mid[axis] = cut;
  mlo[axis] = cut;
  bisect(d, lo, mid, r0, r0 + nl, ext, map);
  bisect(d, mlo, hi, r0 + nl, r1, ext, map);
}

int mt_run(bpc_ctx_t *ctx, const mt_field_t *f, const mt_run_params_t *p, mt_pairs_t *pairs,
           mt_seg_t *seg, mt_run_stats_t *st, char *msg, size_t len)
{
  run_t R;
  bpc_decomp_t *d = NULL;
  bpc_blocks_t *blocks = NULL;
  int ret = 1, rc;
  memset(&R, 0, sizeof R);
  memset(st, 0, sizeof *st);
  R.f = f;
  R.p = p;
  bpc_decomp_params_t dp = bpc_decomp_params_default();
  dp.dim = 3;
  for (int i = 0; i < 3; i++) {
    dp.domain_max[i] = f->dims[i];
    dp.wrap[i] = p->wrap[i];
    dp.ghost[i] = 1;
    R.geo.dims[i] = f->dims[i];
    R.geo.wrap[i] = p->wrap[i];
  }
  dp.nblocks = p->nblocks;
  rc = bpc_decomp_create(ctx, &dp, &d);
  /* a bad block count is a local error on every rank alike */
  if (rc != BPC_OK) {
    snprintf(msg, len, "%s", bpc_last_error(ctx));
    return 2;
  }
  /* the same cut, its blocks given to the ranks in compact boxes (bisect);
   * the merge visits them rank by rank (order) */
  int size = 1, divs[3] = {1, 1, 1};
  bpc_ctx_size(ctx, &size);
  int *bmap = malloc(sizeof *bmap * (size_t)p->nblocks);
  int *order = malloc(sizeof *order * (size_t)p->nblocks);
  /* the same on every rank: a failure here is every rank's */
  if (bmap == NULL || order == NULL) {
    free(bmap);
    free(order);
    bpc_decomp_destroy(&d);
    snprintf(msg, len, "out of memory");
    return 1;
  }
  {
    const int lo[3] = {0, 0, 0};
    double ext[3];
    bpc_decomp_divs(d, divs);
    for (int i = 0; i < 3; i++)
      ext[i] = (double)f->dims[i] / divs[i];
    bisect(d, lo, divs, 0, size, ext, bmap);
    int w = 0;
    for (int r = 0; r < size; r++)
      for (int g = 0; g < p->nblocks; g++)
        if (bmap[g] == r)
          order[w++] = g;
  }
  bpc_decomp_destroy(&d);
  dp.assign = BPC_ASSIGN_USER;
  dp.map = bmap;
  rc = bpc_decomp_create(ctx, &dp, &d);
  free(bmap);
  if (rc != BPC_OK) {
    free(order);
    snprintf(msg, len, "%s", bpc_last_error(ctx));
    return 1;
  }
  R.order = order;
  R.geo.d = d;
  R.geo.nblocks = p->nblocks;
  int lerr = mt_geom_tables(&R.geo) != 0;
  R.assign = bpc_decomp_assign(d);
  bpc_assign_local(R.assign, &R.gids, &R.nl);
  size_t nb = (size_t)(R.nl > 0 ? R.nl : 1);
  R.trees = calloc(nb, sizeof *R.trees);
  R.bpairs = calloc(nb, sizeof *R.bpairs);
  R.bad = calloc(nb, sizeof *R.bad);
  R.err = calloc(nb, sizeof *R.err);
  R.msg = calloc(nb, sizeof *R.msg);
  R.blabs = calloc(nb, sizeof *R.blabs);
  R.pend = calloc(nb + 1, sizeof *R.pend);
  lerr |= !R.pend || !R.trees || !R.bpairs || !R.bad || !R.err || !R.msg || !R.blabs;
  if (p->labels && seg != NULL) {
    memset(seg, 0, sizeof *seg);
    seg->nl = R.nl;
    seg->core = calloc(nb, sizeof *seg->core);
    seg->label = calloc(nb, sizeof *seg->label);
    seg->value = calloc(nb, sizeof *seg->value);
    lerr |= !seg->core || !seg->label || !seg->value;
    R.seg = seg;
  }
  if (lerr)
    snprintf(msg, len, "out of memory");

  /* local step */
  double t0 = bpc_wtime(ctx);
  if (!lerr && bpc_blocks_create(R.assign, block_create, NULL, &R, &blocks) != BPC_OK) {
    snprintf(msg, len, "%s", bpc_last_error(ctx));
    lerr = 1;
  }
  if (!lerr)
    bpc_blocks_foreach(blocks, local_step, &R, p->nthreads);
  int64_t bad = -1;
  for (int i = 0; i < R.nl && !lerr; i++) {
    if (R.err[i]) {
      snprintf(msg, len, "%s", R.msg[i]);
      lerr = R.err[i];
    }
    if (R.bad[i] >= 0 && (bad < 0 || R.bad[i] < bad))
      bad = R.bad[i];
  }
  st->local_nodes = R.local_nodes;
  /* the rank's tree is the item of its first block; the others' are empty
   * (no vertices, no blocks: the first one's tree lists them all) */
  if (!lerr && bad < 0 && R.nl > 0) {
    if (absorb_flush(&R) != 0 || R.aerr || R.acc == NULL) {
      snprintf(msg, len, "out of memory gluing the local trees");
      lerr = 1;
    } else {
      R.trees[0] = R.acc;
      R.acc = NULL;
      for (int i = 1; i < R.nl && !lerr; i++)
        if ((R.trees[i] = calloc(1, sizeof *R.trees[i])) == NULL) {
          snprintf(msg, len, "out of memory");
          lerr = 1;
        }
    }
    /* what the glues made final: with the first block's */
    for (size_t q = 0; q < R.apairs.n && !lerr; q++) {
      const mt_pair_t *x = &R.apairs.p[q];
      if (mt_pairs_push(&R.bpairs[0], x->birth, x->death, x->bgid, x->dgid) != 0)
        lerr = 1;
    }
    for (size_t q = 0; q < R.alabs.n && !lerr; q++)
      if (mt_labs_push(&R.blabs[0], R.alabs.p[q].gid, R.alabs.p[q].label) != 0)
        lerr = 1;
    if (lerr && msg[0] == '\0')
      snprintf(msg, len, "out of memory");
  }
  mt_pairs_free(&R.apairs);
  free(R.alabs.p);
  memset(&R.alabs, 0, sizeof R.alabs);
  st->t_local = bpc_wtime(ctx) - t0;
  mt_heap_sample();
  /* agree: any error, and the first non-finite vertex */
  int64_t v[2] = {lerr, bad < 0 ? INT64_MAX : bad}, w[2];
  MPI_Allreduce(v, w, 2, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD);
  int64_t mb = bad < 0 ? INT64_MAX : bad, gb;
  MPI_Allreduce(&mb, &gb, 1, MPI_INT64_T, MPI_MIN, MPI_COMM_WORLD);
  if (w[0] != 0) {
    if (!lerr)
      snprintf(msg, len, "failed on another rank");
    goto cleanup;
  }
  if (gb != INT64_MAX) {
    int64_t x = gb % f->dims[0], y = gb / f->dims[0] % f->dims[1],
            z = gb / f->dims[0] / f->dims[1];
    snprintf(msg, len, "the field has a non-finite value (NaN or inf) at vertex %" PRId64
                       " (x=%" PRId64 ", y=%" PRId64 ", z=%" PRId64 "); NaN is not supported",
             gb, x, y, z);
    ret = 2;
    goto cleanup;
  }

  /* global step */
  const bpc_type_ops_t ops = {tree_size, tree_pack, tree_unpack, tree_destroy, NULL};
  wire_t wire = {f->dims[0] * f->dims[1] * f->dims[2] <= INT32_MAX,
                 f->source == MT_SYNTHETIC || !f->is_double};
  bpc_type_t type = bpc_type_custom(&ops, &wire);
  bpc_merge_op_t op = {.fn = merge_trees, .commutative = 1, .user = &R};
  bpc_merge_params_t mp = bpc_merge_params_default();
  mp.nthreads = p->nthreads;
  mp.algorithm = "doubling";
  /* rounds of the smallest groups (the prime factors of the block count,
   * ascending): the rounds across ranks glue two or three trees at a time,
   * not four or more, so the largest glue (whose inputs are near the
   * interface of two big regions) stays small */
  int kv[32], nk = 0;
  for (int m = p->nblocks, q = 2; m > 1 && nk < 32; q++)
    while (m % q == 0 && nk < 32) {
      kv[nk++] = q;
      m /= q;
    }
  if (nk > 0) {
    mp.k = kv;
    mp.nk = nk;
  }
  mp.order = R.order;
  t0 = bpc_wtime(ctx);
  rc = bpc_merge(ctx, R.assign, &type, (void **)R.trees, &op, &mp, NULL);
  st->t_merge = bpc_wtime(ctx) - t0;
  mt_heap_sample();
  if (rc != BPC_OK) {
    snprintf(msg, len, "merge failed: %s: %s", bpc_err_name(rc), bpc_last_error(ctx));
    goto cleanup;
  }
  bpc_call_stats_t cs;
  if (bpc_stats_last_call(ctx, &cs) == BPC_OK)
    st->bytes_sent = cs.total.bytes_sent;
  if (R.seg != NULL) {
    int size = 1;
    bpc_ctx_size(ctx, &size);
    if (route_labels(&R, size, msg, len) != 0)
      goto cleanup;
  }
  for (int i = 0; i < R.nl; i++)
    for (size_t q = 0; q < R.bpairs[i].n; q++) {
      const mt_pair_t *x = &R.bpairs[i].p[q];
      if (mt_pairs_push(pairs, x->birth, x->death, x->bgid, x->dgid) != 0) {
        snprintf(msg, len, "out of memory");
        goto cleanup; /* collective steps are over: a local failure */
      }
    }
  ret = 0;
cleanup:
  for (int i = 0; i < R.nl; i++) {
    if (R.trees)
      tree_destroy(R.trees[i], NULL);
    if (R.bpairs)
      mt_pairs_free(&R.bpairs[i]);
    if (R.blabs) {
      free(R.blabs[i].p);
      R.blabs[i].p = NULL;
    }
  }
  free(R.blabs);
  for (int i = 0; R.pend != NULL && i < R.npend; i++)
    tree_destroy(R.pend[i], NULL);
  free(R.pend);
  tree_destroy(R.acc, NULL);
  mt_pairs_free(&R.apairs);
  free(R.alabs.p);
  if (ret != 0 && R.seg != NULL)
    mt_seg_free(R.seg);
  free(R.trees);
  free(R.bpairs);
  free(R.bad);
  free(R.err);
  free(R.msg);
  bpc_blocks_destroy(&blocks);
  mt_geom_free(&R.geo);
  bpc_decomp_destroy(&d);
  free(R.order);
  return ret;
}
