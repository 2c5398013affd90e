/*
 * tests/common/merge_items.h - items, merge callbacks and serial references
 * for the merge-reduce suites (tests/unit/test_merge_serial.c under a serial
 * context, tests/mpi/test_merge.c under MPI).
 *
 * Item kinds (every value is a pure function of (gid, index), so any rank
 * can compute the reference of any root on its own):
 *  - MI_SUM:   float arrays of one count, summed element-wise (values are
 *              small integers, so every summation order is exact);
 *  - MI_VSUM:  float arrays of varying counts (some 0), summed into the
 *              longest (the root's callback grows its buffer with realloc);
 *  - MI_MAT:   arrays of 2x2 uint32 matrices, multiplied element-wise in
 *              group order (mod 2^32): not commutative, a wrong order fails;
 *  - MI_LIST:  custom items, lists of ints of varying length (some empty,
 *              some NULL), merged by concatenation and sort;
 *  - MI_CAT:   the same lists merged by concatenation only (order-sensitive).
 * The expected set of gids of every root is computed here from the k-vector
 * with closed formulas (doubling: runs of stride(rounds) consecutive
 * positions; halving: residues modulo the product of the remaining k), not
 * with the engine's own queries.
 */
#ifndef BPC_TESTS_MERGE_ITEMS_H
#define BPC_TESTS_MERGE_ITEMS_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bpc.h"
#include "engines/merge/merge_internal.h"

enum { MI_SUM = 0, MI_VSUM = 1, MI_MAT = 2, MI_LIST = 3, MI_CAT = 4, MI_NKINDS = 5 };

static const char *const mi_kind_name[MI_NKINDS] = {"sum", "vsum", "mat", "list", "cat"};

static inline uint32_t mi_hash(uint32_t a, uint32_t b)
{
  uint64_t x = ((uint64_t)a << 32) ^ b ^ 0x9e3779b97f4a7c15ull;
  x ^= x >> 31;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 29;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 32;
  return (uint32_t)x;
}

/* ------------------------------------------------------------- callbacks */

/* Test callback state: what to do and, optionally, where to fail. */
typedef struct mi_user {
  int kind;
  int fail_gid;   /* root gid whose merge fails (-1: none) */
  int fail_round; /* round of the failure (-1: any) */
  int fail_value; /* returned by the failing callback */
  int calls;      /* merge callback calls on this rank (atomic) */
  int bad;        /* the engine broke the contract (counted here) */
} mi_user_t;

static inline int mi_should_fail(mi_user_t *u, const bpc_merge_group_t *g)
{
  return u->fail_gid >= 0 && g->gids[g->root] == u->fail_gid &&
         (u->fail_round < 0 || u->fail_round == g->round);
}

static inline int mi_check_group(mi_user_t *u, const bpc_merge_group_t *g)
{
  if (g->nitems < 2 || g->root < 0 || g->root >= g->nitems || g->items == NULL || g->gids == NULL)
    __atomic_fetch_add(&u->bad, 1, __ATOMIC_RELAXED);
  __atomic_fetch_add(&u->calls, 1, __ATOMIC_RELAXED);
  return 0;
}

/* float values (small integers: sums are exact in any order) */
static inline float mi_fval(int gid, size_t i) { return (float)(mi_hash((uint32_t)gid, (uint32_t)i) % 13u); }

static inline int mi_merge_sum(bpc_merge_group_t *g, void *user)
{
  mi_user_t *u = user;
  mi_check_group(u, g);
  if (mi_should_fail(u, g))
    return u->fail_value;
  bpc_buf_t *root = g->items[g->root];
  float *restrict out = root->data;
  for (int j = 0; j < g->nitems; j++) {
    if (j == g->root)
      continue;
    const bpc_buf_t *b = g->items[j];
    if (b->count != root->count) {
      __atomic_fetch_add(&u->bad, 1, __ATOMIC_RELAXED);
      continue;
    }
    const float *restrict in = b->data;
    for (size_t i = 0; i < root->count; i++)
      out[i] += in[i];
  }
  return 0;
}

/* One int per block: the root's int += the others'. No reference checks:
 * for tests that need a merge to run (re-entrancy, agreement), not its
 * result beyond the sum. */
static inline int mi_merge_int1(bpc_merge_group_t *g, void *user)
{
  (void)user;
  bpc_buf_t *const *it = (bpc_buf_t *const *)g->items;
  int *acc = it[g->root]->data;
  for (int i = 0; i < g->nitems; i++)
    if (i != g->root)
      *acc += *(const int *)it[i]->data;
  return 0;
}

/* varying counts: the root grows to the longest item (realloc) */
static inline size_t mi_vcount(int gid) { return (size_t)(mi_hash((uint32_t)gid, 77u) % 5u) * 3u; }

static inline int mi_merge_vsum(bpc_merge_group_t *g, void *user)
{
  mi_user_t *u = user;
  mi_check_group(u, g);
  if (mi_should_fail(u, g))
    return u->fail_value;
  bpc_buf_t *root = g->items[g->root];
  size_t maxc = root->count;
  for (int j = 0; j < g->nitems; j++)
    if (((bpc_buf_t *)g->items[j])->count > maxc)
      maxc = ((bpc_buf_t *)g->items[j])->count;
  if (maxc > root->count) {
    float *nd = realloc(root->data, maxc * sizeof(float));
    if (nd == NULL)
      return 99;
    for (size_t i = root->count; i < maxc; i++)
      nd[i] = 0.0f;
    root->data = nd;
    root->count = maxc;
  }
  float *out = root->data;
  for (int j = 0; j < g->nitems; j++) {
    if (j == g->root)
      continue;
    const bpc_buf_t *b = g->items[j];
    const float *in = b->data;
    for (size_t i = 0; i < b->count; i++)
      out[i] += in[i];
  }
  return 0;
}

/* 2x2 matrices mod 2^32: element i of gid g */
typedef struct mi_mat {
  uint32_t a[4];
} mi_mat_t;

static inline mi_mat_t mi_mval(int gid, size_t i)
{
  mi_mat_t m;
  for (int q = 0; q < 4; q++)
    m.a[q] = mi_hash((uint32_t)gid * 4u + (uint32_t)q, (uint32_t)i) % 7u;
  return m;
}

static inline mi_mat_t mi_mmul(mi_mat_t x, mi_mat_t y)
{
  mi_mat_t r;
  r.a[0] = x.a[0] * y.a[0] + x.a[1] * y.a[2];
  r.a[1] = x.a[0] * y.a[1] + x.a[1] * y.a[3];
  r.a[2] = x.a[2] * y.a[0] + x.a[3] * y.a[2];
  r.a[3] = x.a[2] * y.a[1] + x.a[3] * y.a[3];
  return r;
}

static inline int mi_merge_mat(bpc_merge_group_t *g, void *user)
{
  mi_user_t *u = user;
  mi_check_group(u, g);
  if (mi_should_fail(u, g))
    return u->fail_value;
  bpc_buf_t *root = g->items[g->root];
  mi_mat_t *out = root->data;
  for (size_t i = 0; i < root->count; i++) {
    mi_mat_t acc = ((const mi_mat_t *)((bpc_buf_t *)g->items[0])->data)[i];
    for (int j = 1; j < g->nitems; j++)
      acc = mi_mmul(acc, ((const mi_mat_t *)((bpc_buf_t *)g->items[j])->data)[i]);
    out[i] = acc;
  }
  return 0;
}

/* custom lists */
typedef struct mi_list {
  size_t n;
  int *v;
} mi_list_t;

/* length of gid's list; -1 means the item is NULL (empty) */
static inline long mi_llen(int gid)
{
  uint32_t h = mi_hash((uint32_t)gid, 5u) % 7u;
  return h == 0 ? -1 : (long)h - 1; /* -1, 0..5 */
}
static inline int mi_lval(int gid, size_t i) { return (int)(mi_hash((uint32_t)gid, 1000u + (uint32_t)i) % 100u); }

static inline mi_list_t *mi_list_new(size_t n)
{
  mi_list_t *l = malloc(sizeof *l);
  if (l == NULL)
    return NULL;
  l->n = n;
  l->v = n ? malloc(n * sizeof(int)) : NULL;
  if (n && l->v == NULL) {
    free(l);
    return NULL;
  }
  return l;
}

static inline void mi_list_free(void *item, void *user)
{
  (void)user;
  mi_list_t *l = item;
  if (l) {
    free(l->v);
    free(l);
  }
}

static inline int mi_list_size(const void *item, size_t *bytes, void *user)
{
  (void)user;
  const mi_list_t *l = item;
  *bytes = l ? l->n * sizeof(int) : 0;
  return 0;
}

static inline int mi_list_pack(const void *item, void *buf, size_t bytes, void *user)
{
  (void)user;
  const mi_list_t *l = item;
  if (bytes)
    memcpy(buf, l->v, bytes);
  return 0;
}

static inline int mi_list_unpack(const void *buf, size_t bytes, void **item, void *user)
{
  mi_user_t *u = user;
  if (u != NULL && u->fail_gid == -2) /* unpack failure test */
    return u->fail_value;
  mi_list_t *l = mi_list_new(bytes / sizeof(int));
  if (l == NULL)
    return 98;
  if (bytes)
    memcpy(l->v, buf, bytes);
  *item = l;
  return 0;
}

static inline int mi_cmp_int(const void *a, const void *b)
{
  int x = *(const int *)a, y = *(const int *)b;
  return (x > y) - (x < y);
}

/* concatenate in group order into a new list that replaces the root's
 * item; `sort` sorts it. Takes item 1 when possible to test taking. */
static inline int mi_merge_list_impl(bpc_merge_group_t *g, mi_user_t *u, int sort)
{
  mi_check_group(u, g);
  if (mi_should_fail(u, g))
    return u->fail_value;
  size_t tot = 0;
  for (int j = 0; j < g->nitems; j++)
    if (g->items[j])
      tot += ((mi_list_t *)g->items[j])->n;
  mi_list_t *r = mi_list_new(tot);
  if (r == NULL)
    return 97;
  size_t w = 0;
  for (int j = 0; j < g->nitems; j++) {
    mi_list_t *l = g->items[j];
    if (l && l->n) {
      memcpy(r->v + w, l->v, l->n * sizeof(int));
      w += l->n;
    }
  }
  if (sort && tot)
    qsort(r->v, tot, sizeof(int), mi_cmp_int);
  mi_list_free(g->items[g->root], NULL); /* the old root item is ours to drop */
  g->items[g->root] = r;
  /* take one received item and free it ourselves (ownership transfer) */
  int take = g->root == 0 ? 1 : 0;
  if (take < g->nitems && take != g->root) {
    mi_list_free(g->items[take], NULL);
    g->items[take] = NULL;
  }
  return 0;
}

static inline int mi_merge_list(bpc_merge_group_t *g, void *user) { return mi_merge_list_impl(g, user, 1); }
static inline int mi_merge_cat(bpc_merge_group_t *g, void *user) { return mi_merge_list_impl(g, user, 0); }

/* The same merges as binary operators (bpc_op_t, for op.binary): matrix
 * products element by element, and list concatenation in place (the
 * root's list grows; in_left puts `in` in front). */
static inline int mi_op_mat(const void *in, void *inout, size_t n, int in_left, void *user)
{
  const mi_mat_t *x = in;
  mi_mat_t *o = inout;
  (void)user;
  for (size_t i = 0; i < n; i++)
    o[i] = in_left ? mi_mmul(x[i], o[i]) : mi_mmul(o[i], x[i]);
  return 0;
}

static inline int mi_op_cat(const void *in, void *inout, size_t n, int in_left, void *user)
{
  const mi_list_t *x = in;
  mi_list_t *o = inout;
  (void)user;
  if (n != 1 || o == NULL)
    return 96;
  if (x == NULL || x->n == 0)
    return 0;
  int *v = realloc(o->v, (o->n + x->n) * sizeof(int));
  if (v == NULL)
    return 97;
  if (in_left) {
    memmove(v + x->n, v, o->n * sizeof(int));
    memcpy(v, x->v, x->n * sizeof(int));
  } else {
    memcpy(v + o->n, x->v, x->n * sizeof(int));
  }
  o->v = v;
  o->n += x->n;
  return 0;
}

static inline bpc_type_t mi_list_type(mi_user_t *u)
{
  bpc_type_ops_t ops;
  memset(&ops, 0, sizeof ops);
  ops.packed_size = mi_list_size;
  ops.pack = mi_list_pack;
  ops.unpack = mi_list_unpack;
  ops.destroy = mi_list_free;
  return bpc_type_custom(&ops, u);
}

/* ----------------------------------------------------------- the items */

/* Items of the local blocks: bpc_buf_t[] or void *[] (returned as void *). */
/* Nonzero: lists that would be NULL are made empty instead (a binary
 * operator folds into the root's item in place, so it must exist); the
 * checks then expect an empty list. Set by mi_run for MI_BINARY. */
static int mi_no_null;

static inline void *mi_make_items(int kind, const int *gids, int nl, size_t count)
{
  if (kind == MI_LIST || kind == MI_CAT) {
    void **it = calloc(nl > 0 ? (size_t)nl : 1, sizeof(void *));
    for (int i = 0; i < nl; i++) {
      long len = mi_llen(gids[i]);
      if (len < 0 && !mi_no_null)
        continue;
      mi_list_t *l = mi_list_new(len < 0 ? 0 : (size_t)len);
      for (long j = 0; j < len; j++)
        l->v[j] = mi_lval(gids[i], (size_t)j);
      it[i] = l;
    }
    return it;
  }
  bpc_buf_t *b = calloc(nl > 0 ? (size_t)nl : 1, sizeof(bpc_buf_t));
  for (int i = 0; i < nl; i++) {
    size_t c = kind == MI_VSUM ? mi_vcount(gids[i]) : count;
    b[i].count = c;
    if (kind == MI_MAT) {
      mi_mat_t *d = malloc((c ? c : 1) * sizeof(mi_mat_t));
      for (size_t e = 0; e < c; e++)
        d[e] = mi_mval(gids[i], e);
      b[i].data = d;
    } else {
      float *d = malloc((c ? c : 1) * sizeof(float));
      for (size_t e = 0; e < c; e++)
        d[e] = mi_fval(gids[i], e);
      b[i].data = d;
    }
  }
  return b;
}

/* Make the local items anew in place: free their contents and write
 * fresh ones into the same array (a plan's array). */
static inline void mi_remake_items(int kind, void *items, const int *gids, int nl, size_t count);

static inline void mi_free_items(int kind, void *items, int nl)
{
  if (items == NULL)
    return;
  if (kind == MI_LIST || kind == MI_CAT) {
    for (int i = 0; i < nl; i++)
      mi_list_free(((void **)items)[i], NULL);
  } else {
    for (int i = 0; i < nl; i++)
      free(((bpc_buf_t *)items)[i].data);
  }
  free(items);
}

static inline void mi_remake_items(int kind, void *items, const int *gids, int nl, size_t count)
{
  void *fresh = mi_make_items(kind, gids, nl, count);
  const size_t esz = (kind == MI_LIST || kind == MI_CAT) ? sizeof(void *) : sizeof(bpc_buf_t);
  for (int i = 0; i < nl; i++) {
    if (kind == MI_LIST || kind == MI_CAT)
      mi_list_free(((void **)items)[i], NULL);
    else
      free(((bpc_buf_t *)items)[i].data);
  }
  memcpy(items, fresh, esz * (size_t)nl);
  free(fresh);
}

/* 1 if local item i (gid) holds the merge of gids set[0..ns) in that order;
 * also 1 for a non-root (set NULL) whose item is still its own. Writes a
 * short reason to why. */
static inline int mi_verify(int kind, const void *items, int i, int gid, const int *set, int ns,
                            size_t count, char *why, size_t wlen)
{
  int self = gid;
  const int *s = set;
  int n = ns;
  if (set == NULL) { /* unchanged own item */
    s = &self;
    n = 1;
  }
  if (kind == MI_LIST || kind == MI_CAT) {
    const mi_list_t *l = ((void *const *)items)[i];
    size_t tot = 0;
    for (int q = 0; q < n; q++)
      if (mi_llen(s[q]) > 0)
        tot += (size_t)mi_llen(s[q]);
    int *ref = malloc((tot ? tot : 1) * sizeof(int));
    size_t w = 0;
    for (int q = 0; q < n; q++)
      for (long j = 0; j < mi_llen(s[q]); j++)
        ref[w++] = mi_lval(s[q], (size_t)j);
    if (kind == MI_LIST && set != NULL && tot)
      qsort(ref, tot, sizeof(int), mi_cmp_int);
    int ok;
    if (set == NULL && mi_llen(gid) < 0)
      ok = mi_no_null ? l != NULL && l->n == 0 : l == NULL;
    else if (l == NULL)
      ok = tot == 0;
    else
      ok = l->n == tot && (tot == 0 || memcmp(l->v, ref, tot * sizeof(int)) == 0);
    if (!ok)
      snprintf(why, wlen, "list of gid %d: %zu values, expected %zu", gid, l ? l->n : 0, tot);
    free(ref);
    return ok;
  }
  const bpc_buf_t *b = &((const bpc_buf_t *)items)[i];
  if (kind == MI_MAT) {
    if (b->count != count) {
      snprintf(why, wlen, "gid %d: count %zu, expected %zu", gid, b->count, count);
      return 0;
    }
    for (size_t e = 0; e < count; e++) {
      mi_mat_t acc = mi_mval(s[0], e);
      for (int q = 1; q < n; q++)
        acc = mi_mmul(acc, mi_mval(s[q], e));
      if (memcmp(&acc, &((const mi_mat_t *)b->data)[e], sizeof acc) != 0) {
        snprintf(why, wlen, "gid %d: matrix %zu differs from the ordered product", gid, e);
        return 0;
      }
    }
    return 1;
  }
  size_t want = count;
  if (kind == MI_VSUM) {
    want = 0;
    for (int q = 0; q < n; q++)
      if (mi_vcount(s[q]) > want)
        want = mi_vcount(s[q]);
  }
  if (b->count != want) {
    snprintf(why, wlen, "gid %d: count %zu, expected %zu", gid, b->count, want);
    return 0;
  }
  for (size_t e = 0; e < want; e++) {
    float acc = 0.0f;
    for (int q = 0; q < n; q++)
      if (kind == MI_SUM || e < mi_vcount(s[q]))
        acc += mi_fval(s[q], e);
    if (((const float *)b->data)[e] != acc) {
      snprintf(why, wlen, "gid %d: element %zu is %g, expected %g", gid, e,
               (double)((const float *)b->data)[e], (double)acc);
      return 0;
    }
  }
  return 1;
}

/* Whether merge row `name` runs commutative merges only (its variant's
 * trait, lib/engines/merge/merge_internal.h: bpc_merge refuses it for others with
 * BPC_EINVAL); 0 for an unknown name. */
static inline int mi_row_commutative_only(const char *name)
{
  const bpc__algo_t *row = name != NULL ? bpc__algo_find(&bpc__engine_merge, name) : NULL;
  return row != NULL && ((const bpc__merge_variant_t *)row->data)->commutative_only;
}

/* ------------------------------------------------ schedule reference */

/*
 * Positions absorbed by root position p after `rounds` rounds (closed
 * formulas), or 0 if p is not a root. Written ascending to out (room n).
 *  doubling: roots are multiples of S = k[0]*...*k[rounds-1]; p absorbs
 *            p..p+S-1.
 *  halving:  with Q = k[rounds]*...*k[R-1], roots are 0..Q-1; p absorbs
 *            p, p+Q, p+2Q, ... (n/Q of them).
 */
static inline int mi_ref_absorbed(int n, const int *k, int nk, int rounds, int halving, int p,
                                  int *out)
{
  long S = 1, Q = 1;
  for (int r = 0; r < rounds; r++)
    S *= k[r];
  for (int r = rounds; r < nk; r++)
    Q *= k[r];
  if (!halving) {
    if (p % S != 0)
      return 0;
    for (long j = 0; j < S; j++)
      out[j] = (int)(p + j);
    return (int)S;
  }
  if (p >= Q)
    return 0;
  int c = 0;
  for (long q = p; q < n; q += Q)
    out[c++] = (int)q;
  return c;
}


/* The same question without the list: is p a root after `rounds` rounds,
 * and does root position `root` hold position q then? O(rounds), so the
 * checks of thousands of blocks stay linear in the blocks. */
static inline int mi_ref_holds(int n, const int *k, int nk, int rounds, int halving, int root,
                               int q)
{
  long S = 1, Q = 1;
  for (int r = 0; r < rounds; r++)
    S *= k[r];
  for (int r = rounds; r < nk; r++)
    Q *= k[r];
  if (root < 0 || q < 0 || q >= n)
    return 0;
  if (!halving)
    return root % S == 0 && q >= root && q < root + S;
  return root < Q && q % Q == root;
}

/* ------------------------------------------------------- config runner
 * Needs MI_CHECK(cond, fmt, ...) from the includer (T_CHECK under MPI,
 * a counting check in serial suites). */
#ifdef MI_CHECK

typedef struct mi_cfg {
  int n;
  bpc_assign_mode_t mode; /* contiguous, round-robin, or user (map below) */
  int kind;
  const int *k; /* NULL: auto */
  int nk;
  int rounds;        /* 0: full */
  const char *algo;  /* NULL: auto */
  int order;         /* 0 identity, 1 reversed, 2 shuffled */
  size_t count;      /* elements (sum, mat) */
  size_t seg;        /* segment_bytes (0 default) */
  int nthreads;      /* 0 default */
  unsigned flags;    /* MI_EW, MI_DECLARE, MI_PLAN, MI_BINARY */
} mi_cfg_t;

/* cfg flags: an element-wise op (op.elementwise); pass the element count in
 * params->count */
#define MI_EW (1u << 0)
#define MI_DECLARE (1u << 30)
/* run as a persistent plan (bpc_merge_init) started MI_PLAN_STARTS times,
 * the items made anew (in the plan's array) before every start but the
 * first; the last start is checked */
#define MI_PLAN (1u << 29)
#define MI_PLAN_STARTS 3
/* the merge as op.binary (bpc_op_t) instead of the group callback: MI_SUM
 * with the built-in "sum", MI_MAT with mi_op_mat, MI_CAT with mi_op_cat */
#define MI_BINARY (1u << 28)

static inline bpc_merge_fn mi_kind_fn(int kind)
{
  switch (kind) {
  case MI_SUM: return mi_merge_sum;
  case MI_VSUM: return mi_merge_vsum;
  case MI_MAT: return mi_merge_mat;
  case MI_LIST: return mi_merge_list;
  default: return mi_merge_cat;
  }
}

/* Is the merge of this kind commutative (op.commutative)? */
static inline int mi_kind_commutative(int kind)
{
  return kind == MI_SUM || kind == MI_VSUM || kind == MI_LIST;
}

/* The op of a kind (fn, commutative, not element-wise), with `user`. */
static inline bpc_merge_op_t mi_kind_op(int kind, void *user)
{
  bpc_merge_op_t op = {
      .fn = mi_kind_fn(kind), .commutative = mi_kind_commutative(kind), .user = user};
  return op;
}

static inline void mi_make_order(int n, int how, int *order)
{
  for (int p = 0; p < n; p++)
    order[p] = how == 1 ? n - 1 - p : p;
  if (how == 2) /* deterministic shuffle */
    for (int p = n - 1; p > 0; p--) {
      int q = (int)(mi_hash(991u, (uint32_t)p) % (uint32_t)(p + 1));
      int t = order[p];
      order[p] = order[q];
      order[q] = t;
    }
}

static inline void mi_cfg_text(const mi_cfg_t *c, char *buf, size_t len)
{
  char kv[128] = "auto";
  if (c->k) {
    int w = 0;
    for (int i = 0; i < c->nk && w < (int)sizeof kv - 8; i++)
      w += snprintf(kv + w, sizeof kv - (size_t)w, i ? "x%d" : "%d", c->k[i]);
  }
  snprintf(buf, len,
           "[%s n=%d mode=%d k=%s rounds=%d algo=%s order=%d count=%zu seg=%zu thr=%d%s%s%s%s]",
           mi_kind_name[c->kind], c->n, (int)c->mode, kv, c->rounds, c->algo ? c->algo : "auto",
           c->order, c->count, c->seg, c->nthreads, (c->flags & MI_EW) ? " ew" : "",
           (c->flags & MI_DECLARE) ? " declared" : "", (c->flags & MI_PLAN) ? " plan" : "",
           (c->flags & MI_BINARY) ? " binary" : "");
}

/* Run one configuration on ctx and check every local block against the
 * serial reference; returns the bpc_merge code. */
static inline int mi_run(bpc_ctx_t *ctx, const mi_cfg_t *c)
{
  int P = 1, me = 0;
  bpc_ctx_size(ctx, &P);
  bpc_ctx_rank(ctx, &me);
  char txt[256];
  mi_cfg_text(c, txt, sizeof txt);
  int *map = NULL, *order = NULL, *pos_of = NULL, *ref = NULL, *got = NULL;
  bpc_assign_t *a = NULL;
  bpc_merge_result_t *res = NULL;
  void *items = NULL;
  const int *gids = NULL;
  int nl = 0, rc;
  mi_user_t u;
  memset(&u, 0, sizeof u);
  u.kind = c->kind;
  u.fail_gid = -1;
  if (c->mode == BPC_ASSIGN_USER) { /* scattered, some ranks may have none */
    map = malloc(sizeof(int) * (size_t)c->n);
    for (int g = 0; g < c->n; g++)
      map[g] = (int)(mi_hash(17u, (uint32_t)g) % (uint32_t)P);
  }
  rc = bpc_assign_create(ctx, c->n, c->mode, map, &a);
  MI_CHECK(rc == BPC_OK, "%s assign: %s", txt, bpc_last_error(ctx));
  if (rc != BPC_OK)
    goto done;
  bpc_assign_local(a, &gids, &nl);
  mi_no_null = (c->flags & MI_BINARY) != 0;
  items = mi_make_items(c->kind, gids, nl, c->count);
  bpc_type_t ft = bpc_type_contiguous(sizeof(float), MPI_FLOAT);
  bpc_type_t mt = bpc_type_contiguous(sizeof(mi_mat_t), MPI_BYTE);
  bpc_type_t lt = mi_list_type(&u);
  const bpc_type_t *type = c->kind == MI_MAT ? &mt : (c->kind == MI_LIST || c->kind == MI_CAT) ? &lt : &ft;
  bpc_merge_op_t op = mi_kind_op(c->kind, &u);
  op.elementwise = (c->flags & MI_EW) != 0;
  if (c->flags & MI_BINARY) {
    op = (bpc_merge_op_t){.fn = NULL};
    if (c->kind == MI_SUM)
      bpc_op_builtin("sum", MPI_FLOAT, &op.binary);
    else
      op.binary = (bpc_op_t){c->kind == MI_MAT ? mi_op_mat : mi_op_cat, 0, NULL};
  }
  bpc_merge_params_t p = bpc_merge_params_default();
  p.k = c->k;
  p.nk = c->nk;
  p.rounds = c->rounds;
  p.algorithm = c->algo;
  if (c->flags & MI_DECLARE)
    p.count = c->count;
  p.segment_bytes = c->seg;
  p.nthreads = c->nthreads;
  order = malloc(sizeof(int) * (size_t)c->n);
  pos_of = malloc(sizeof(int) * (size_t)c->n);
  mi_make_order(c->n, c->order, order);
  for (int q = 0; q < c->n; q++)
    pos_of[order[q]] = q;
  if (c->order)
    p.order = order;
  if (c->flags & MI_PLAN) {
    bpc_plan_t *plan = NULL;
    rc = bpc_merge_init(ctx, a, type, items, &op, &p, &plan);
    MI_CHECK(rc == BPC_OK, "%s bpc_merge_init: %s (%s)", txt, bpc_err_name(rc),
             bpc_last_error(ctx));
    for (int s = 0; s < MI_PLAN_STARTS && rc == BPC_OK; s++) {
      if (s > 0) /* the merged items of the last start go: fresh ones */
        mi_remake_items(c->kind, items, gids, nl, c->count);
      rc = bpc_plan_start(plan);
      MI_CHECK(rc == BPC_OK, "%s start %d: %s (%s)", txt, s, bpc_err_name(rc),
               bpc_last_error(ctx));
    }
    if (rc == BPC_OK) {
      rc = bpc_merge_plan_result(plan, &res);
      MI_CHECK(rc == BPC_OK, "%s bpc_merge_plan_result: %s", txt, bpc_err_name(rc));
    }
    bpc_plan_free(&plan);
  } else {
    rc = bpc_merge(ctx, a, type, items, &op, &p, &res);
    MI_CHECK(rc == BPC_OK, "%s bpc_merge: %s (%s)", txt, bpc_err_name(rc), bpc_last_error(ctx));
  }
  MI_CHECK(u.bad == 0, "%s the callback saw %d bad group(s)", txt, u.bad);
  if (rc != BPC_OK)
    goto done;

  /* what ran */
  bpc_merge_info_t info;
  rc = bpc_merge_info(res, &info);
  MI_CHECK(rc == BPC_OK, "%s info query", txt);
  const char *an = info.name;
  const int *k = info.k, nk = info.nk, rounds = info.rounds;
  long prod = 1;
  for (int i = 0; i < nk; i++)
    prod *= k[i];
  MI_CHECK(prod == c->n, "%s k-vector multiplies to %ld", txt, prod);
  MI_CHECK(rounds == (c->rounds ? c->rounds : nk), "%s rounds %d", txt, rounds);
  if (c->algo) {
    MI_CHECK(strcmp(an, c->algo) == 0, "%s ran %s", txt, an);
    MI_CHECK(info.source == BPC_SOURCE_ARGUMENT, "%s source %d", txt, (int)info.source);
  } else if (getenv("BPC_MERGE_ALGORITHM") == NULL) {
    MI_CHECK(info.source == BPC_SOURCE_BUILTIN, "%s source %d", txt, (int)info.source);
  }
  {
    bpc_algo_info_t tab[16];
    int nt = 0, id = -1;
    bpc_algorithms("merge", tab, 16, &nt);
    for (int t = 0; t < nt; t++)
      if (strcmp(tab[t].name, an) == 0)
        id = tab[t].id;
    MI_CHECK(id >= 0 && (int)info.algorithm == id, "%s algorithm id %d for %s (table: %d)", txt,
             (int)info.algorithm, an, id);
  }
  if (c->k) {
    MI_CHECK(nk == c->nk, "%s nk %d", txt, nk);
    for (int i = 0; i < nk && i < c->nk; i++)
      MI_CHECK(k[i] == c->k[i], "%s k[%d] = %d", txt, i, k[i]);
  }
  /* doubling and halving have closed-form references (mi_ref_absorbed);
   * any other row of the table is checked against its own result queries,
   * which must cut the blocks into runs: every gid in exactly one root's
   * absorbed set, in it the root itself, root_of naming that root. The
   * merged items are then checked against the sets either way. */
  const int halving = strcmp(an, "halving") == 0;
  const int known = halving || strcmp(an, "doubling") == 0;
  ref = malloc(sizeof(int) * (size_t)c->n);
  got = malloc(sizeof(int) * (size_t)c->n);
  if (!known) {
    int *seen = calloc((size_t)c->n, sizeof(int)), total = 0;
    for (int g = 0; g < c->n; g++) {
      int isr = 0, na = 0;
      bpc_merge_is_root(res, g, &isr);
      if (!isr)
        continue;
      rc = bpc_merge_absorbed(res, g, got, c->n, &na);
      MI_CHECK(rc == BPC_OK && na >= 1, "%s root %d absorbed %d gids (%s)", txt, g, na,
               bpc_err_name(rc));
      int self = 0;
      for (int q = 0; q < na && rc == BPC_OK; q++) {
        int root = -1;
        self += got[q] == g;
        seen[got[q]]++;
        bpc_merge_root_of(res, got[q], &root);
        MI_CHECK(root == g, "%s root_of(%d) = %d, but root %d absorbed it", txt, got[q], root, g);
      }
      MI_CHECK(self == 1, "%s root %d not once in its own set", txt, g);
      total += na;
    }
    for (int g = 0; g < c->n; g++)
      MI_CHECK(seen[g] == 1, "%s gid %d in %d absorbed sets", txt, g, seen[g]);
    MI_CHECK(total == c->n, "%s the absorbed sets hold %d gids of %d", txt, total, c->n);
    free(seen);
  }
  for (int i = 0; i < nl; i++) {
    int g = gids[i], pos = pos_of[g];
    int ns = 0;
    if (known) {
      ns = mi_ref_absorbed(c->n, k, nk, rounds, halving, pos, ref);
      for (int q = 0; q < ns; q++)
        ref[q] = order[ref[q]];
    } else { /* the library's set, in position order (checked above) */
      int isr = 0;
      bpc_merge_is_root(res, g, &isr);
      if (isr && bpc_merge_absorbed(res, g, ref, c->n, &ns) != BPC_OK)
        ns = 0;
      for (int q = 0; q < ns; q++)
        ref[q] = pos_of[ref[q]];
      qsort(ref, (size_t)ns, sizeof(int), mi_cmp_int);
      for (int q = 0; q < ns; q++)
        ref[q] = order[ref[q]];
    }
    int isr = -1, root = -1, na = -1;
    bpc_merge_is_root(res, g, &isr);
    MI_CHECK(isr == (ns > 0), "%s gid %d: is_root %d, expected %d", txt, g, isr, ns > 0);
    rc = bpc_merge_absorbed(res, g, got, c->n, &na);
    MI_CHECK(rc == BPC_OK && na == ns, "%s gid %d: absorbed %d gids, expected %d", txt, g, na, ns);
    for (int q = 0; q < ns && q < na; q++)
      MI_CHECK(got[q] == ref[q], "%s gid %d: absorbed[%d] = %d, expected %d", txt, g, q, got[q],
               ref[q]);
    bpc_merge_root_of(res, g, &root);
    if (ns > 0)
      MI_CHECK(root == g, "%s root_of(%d) = %d", txt, g, root);
    else if (!known)
      continue; /* a sent item's partial: only the closed forms say what it holds */
    else {
      /* g's position lies in its root's run */
      const int found =
          root >= 0 && root < c->n && mi_ref_holds(c->n, k, nk, rounds, halving, pos_of[root], pos);
      MI_CHECK(found, "%s root_of(%d) = %d does not hold it", txt, g, root);
    }
    /* a block that sent its item holds what it had merged before: the run
     * it absorbed in the rounds before it sent (only itself for a leaf) */
    int rs = rounds;
    if (ns == 0) {
      rs = 0;
      while (mi_ref_holds(c->n, k, nk, rs + 1, halving, pos, pos))
        rs++;
      ns = mi_ref_absorbed(c->n, k, nk, rs, halving, pos, ref);
      for (int q = 0; q < ns; q++)
        ref[q] = order[ref[q]];
    }
    char why[160] = "";
    int ok = mi_verify(c->kind, items, i, g, ns > 1 ? ref : NULL, ns, c->count, why, sizeof why);
    MI_CHECK(ok, "%s %s", txt, why);
  }
  rc = BPC_OK;
done:
  bpc_merge_result_destroy(&res);
  mi_free_items(c->kind, items, nl);
  mi_no_null = 0;
  bpc_assign_destroy(&a);
  free(map);
  free(order);
  free(pos_of);
  free(ref);
  free(got);
  return rc;
}

#endif /* MI_CHECK */

#endif /* BPC_TESTS_MERGE_ITEMS_H */
