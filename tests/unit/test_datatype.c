/*
 * tests/unit/test_datatype.c - item types: round trips of variable-size
 * custom items (particle lists, binary trees) and contiguous items through
 * size/pack/unpack, the engines' helpers (zero-copy send bytes, views,
 * splits, bundles of several items), every documented error, and the
 * built-in operators of bpc_op_builtin against their formulas.
 */
#include "unit_check.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bpc.h"
#include "datatype/datatype.h"

static bpc_ctx_t *new_ctx(void)
{
  bpc_ctx_t *ctx = NULL;
  ck_assert_int_eq(bpc_init_serial(NULL, &ctx), BPC_OK);
  bpc_set_log_level(ctx, BPC_LOG_NONE);
  return ctx;
}

static void assert_msg(const bpc_ctx_t *ctx, const char *sub)
{
  const char *m = bpc_last_error(ctx);
  ck_assert_msg(strstr(m, sub) != NULL, "error message \"%s\" lacks \"%s\"", m, sub);
}

/* Deterministic pseudo-random numbers (independent of the library). */
static uint32_t lcg(uint32_t *s)
{
  *s = *s * 1664525u + 1013904223u;
  return *s >> 8;
}

/* ------------------------------------------------------------- particles
 * Packed form: uint64 n, then n records of x, y, z (double) and id (int32):
 * 28 bytes each. A NULL item is "no list" and packs to 0 bytes; a list with
 * n == 0 packs to 8 bytes. */

typedef struct {
  double x, y, z;
  int id;
} particle_t;

typedef struct {
  size_t n;
  particle_t *p;
} plist_t;

#define PREC 28u

static plist_t *plist_new(size_t n, uint32_t seed)
{
  plist_t *l = malloc(sizeof *l);
  ck_assert_ptr_nonnull(l);
  l->n = n;
  l->p = n > 0 ? malloc(n * sizeof *l->p) : NULL;
  for (size_t i = 0; i < n; i++) {
    l->p[i].x = (double)lcg(&seed) / 7.0;
    l->p[i].y = -(double)lcg(&seed) / 3.0;
    l->p[i].z = (double)lcg(&seed) * 0.125;
    l->p[i].id = (int)lcg(&seed) - (1 << 22);
  }
  return l;
}

static void plist_destroy(void *item, void *user)
{
  int *ndestroy = user;
  plist_t *l = item;
  if (l == NULL)
    return;
  if (ndestroy != NULL)
    (*ndestroy)++;
  free(l->p);
  free(l);
}

static int plist_size(const void *item, size_t *bytes, void *user)
{
  (void)user;
  const plist_t *l = item;
  *bytes = l == NULL ? 0 : 8 + l->n * PREC;
  return 0;
}

static int plist_pack(const void *item, void *buf, size_t bytes, void *user)
{
  (void)user;
  const plist_t *l = item;
  if (l == NULL)
    return bytes == 0 ? 0 : 1;
  if (bytes != 8 + l->n * PREC)
    return 2;
  unsigned char *o = buf;
  uint64_t n = l->n;
  memcpy(o, &n, 8);
  o += 8;
  for (size_t i = 0; i < l->n; i++) {
    int32_t id = l->p[i].id;
    memcpy(o, &l->p[i].x, 8);
    memcpy(o + 8, &l->p[i].y, 8);
    memcpy(o + 16, &l->p[i].z, 8);
    memcpy(o + 24, &id, 4);
    o += PREC;
  }
  return 0;
}

static int plist_unpack(const void *buf, size_t bytes, void **item, void *user)
{
  (void)user;
  if (bytes == 0) {
    *item = NULL;
    return 0;
  }
  const unsigned char *in = buf;
  uint64_t n = 0;
  if (bytes < 8)
    return 3;
  memcpy(&n, in, 8);
  if (bytes != 8 + n * PREC)
    return 3;
  plist_t *l = malloc(sizeof *l);
  l->n = (size_t)n;
  l->p = n > 0 ? malloc(l->n * sizeof *l->p) : NULL;
  in += 8;
  for (size_t i = 0; i < l->n; i++) {
    int32_t id = 0;
    memcpy(&l->p[i].x, in, 8);
    memcpy(&l->p[i].y, in + 8, 8);
    memcpy(&l->p[i].z, in + 16, 8);
    memcpy(&id, in + 24, 4);
    l->p[i].id = id;
    in += PREC;
  }
  *item = l;
  return 0;
}

/* Piece i of k: particles [i*n/k, (i+1)*n/k), computed here independently. */
static int plist_split(const void *item, int k, int i, void **piece, void *user)
{
  (void)user;
  const plist_t *l = item;
  size_t n = l == NULL ? 0 : l->n;
  size_t a = n * (size_t)i / (size_t)k, b = n * (size_t)(i + 1) / (size_t)k;
  plist_t *p = malloc(sizeof *p);
  p->n = b - a;
  p->p = p->n > 0 ? malloc(p->n * sizeof *p->p) : NULL;
  if (p->n > 0)
    memcpy(p->p, l->p + a, p->n * sizeof *p->p);
  *piece = p;
  return 0;
}

static bpc_type_t plist_type(int *ndestroy)
{
  bpc_type_ops_t ops = {plist_size, plist_pack, plist_unpack, plist_destroy, plist_split};
  return bpc_type_custom(&ops, ndestroy);
}

static void plist_assert_eq(const plist_t *a, const plist_t *b)
{
  if (a == NULL || b == NULL) {
    ck_assert_ptr_eq(a, b);
    return;
  }
  ck_assert_ptr_ne(a, b);
  ck_assert_uint_eq(a->n, b->n);
  for (size_t i = 0; i < a->n; i++) {
    ck_assert(a->p[i].x == b->p[i].x);
    ck_assert(a->p[i].y == b->p[i].y);
    ck_assert(a->p[i].z == b->p[i].z);
    ck_assert_int_eq(a->p[i].id, b->p[i].id);
  }
}

START_TEST(test_particles_roundtrip)
{
  bpc_ctx_t *ctx = new_ctx();
  int ndestroy = 0;
  bpc_type_t t = plist_type(&ndestroy);
  ck_assert_int_eq(bpc_type_check(ctx, &t), BPC_OK);
  ck_assert_int_eq(t.kind, BPC_TYPE_CUSTOM);
  size_t sizes[] = {0, 1, 5, 1000};
  for (int c = 0; c < 4; c++) {
    plist_t *l = plist_new(sizes[c], 11u + (uint32_t)c);
    size_t n = 0;
    ck_assert_int_eq(bpc_type_size(ctx, &t, l, &n), BPC_OK);
    ck_assert_uint_eq(n, 8 + sizes[c] * PREC);
    unsigned char *buf = malloc(n + 1);
    buf[n] = 0xA5; /* must stay untouched */
    ck_assert_int_eq(bpc_type_pack(ctx, &t, l, buf, n + 1), BPC_OK);
    ck_assert_uint_eq(buf[n], 0xA5);
    void *back = NULL;
    ck_assert_int_eq(bpc_type_unpack(ctx, &t, buf, n, &back), BPC_OK);
    plist_assert_eq(l, back);
    bpc_type_item_destroy(&t, back);

    /* the engines' send path: a packed copy owned by the caller */
    const void *bytes = NULL;
    size_t nb = 0;
    void *owned = NULL;
    ck_assert_int_eq(bpc__type_msg(ctx, &t, l, &bytes, &nb, &owned), BPC_OK);
    ck_assert_uint_eq(nb, n);
    ck_assert_ptr_nonnull(owned);
    ck_assert_ptr_eq(bytes, owned);
    ck_assert_mem_eq(bytes, buf, n);
    int own = 0;
    ck_assert_int_eq(bpc__type_view(ctx, &t, owned, nb, NULL, &back, &own), BPC_OK);
    ck_assert_int_eq(own, 1);
    plist_assert_eq(l, back);
    bpc__type_release(&t, back, own);
    free(owned);
    free(buf);
    plist_destroy(l, NULL);
  }
  ck_assert_int_eq(ndestroy, 8);

  /* NULL item: 0 bytes, unpacks to NULL */
  size_t n = 99;
  ck_assert_int_eq(bpc_type_size(ctx, &t, NULL, &n), BPC_OK);
  ck_assert_uint_eq(n, 0);
  ck_assert_int_eq(bpc_type_pack(ctx, &t, NULL, NULL, 0), BPC_OK);
  void *back = &n;
  ck_assert_int_eq(bpc_type_unpack(ctx, &t, NULL, 0, &back), BPC_OK);
  ck_assert_ptr_null(back);
  bpc_type_item_destroy(&t, back); /* NULL is fine */
  const void *bytes = &n;
  size_t nb = 5;
  void *owned = &n;
  ck_assert_int_eq(bpc__type_msg(ctx, &t, NULL, &bytes, &nb, &owned), BPC_OK);
  ck_assert_ptr_null(bytes);
  ck_assert_ptr_null(owned);
  ck_assert_uint_eq(nb, 0);
  ck_assert_int_eq(ndestroy, 8);
  bpc_finalize(&ctx);
}
END_TEST

START_TEST(test_particles_split)
{
  bpc_ctx_t *ctx = new_ctx();
  bpc_type_t t = plist_type(NULL);
  ck_assert(bpc__type_divisible(&t));
  plist_t *l = plist_new(10, 5);
  const int k = 4;
  size_t seen = 0;
  for (int i = 0; i < k; i++) {
    void *piece = NULL;
    int own = 0;
    ck_assert_int_eq(bpc__type_split(ctx, &t, l, k, i, NULL, &piece, &own), BPC_OK);
    ck_assert_int_eq(own, 1);
    const plist_t *p = piece;
    for (size_t j = 0; j < p->n; j++)
      ck_assert_int_eq(p->p[j].id, l->p[seen + j].id);
    seen += p->n;
    bpc__type_release(&t, piece, own);
  }
  ck_assert_uint_eq(seen, 10);
  plist_destroy(l, NULL);
  bpc_finalize(&ctx);
}
END_TEST

/* ---------------------------------------------------------------- trees
 * Pre-order: a present node is byte 1 then its int32 value, then its left
 * and right subtrees; an absent node is byte 0. An empty tree (NULL) is the
 * single byte 0; unpack of 0 bytes also gives the empty tree. */

typedef struct node {
  int value;
  struct node *left, *right;
} node_t;

static size_t tree_nodes(const node_t *n)
{
  return n == NULL ? 0 : 1 + tree_nodes(n->left) + tree_nodes(n->right);
}

static void tree_free(node_t *n)
{
  if (n == NULL)
    return;
  tree_free(n->left);
  tree_free(n->right);
  free(n);
}

static void tree_destroy(void *item, void *user)
{
  (void)user;
  tree_free(item);
}

static int tree_size(const void *item, size_t *bytes, void *user)
{
  (void)user;
  size_t n = tree_nodes(item);
  *bytes = 5 * n + (n + 1);
  return 0;
}

static unsigned char *tree_write(const node_t *n, unsigned char *o)
{
  if (n == NULL) {
    *o = 0;
    return o + 1;
  }
  int32_t v = n->value;
  *o = 1;
  memcpy(o + 1, &v, 4);
  o = tree_write(n->left, o + 5);
  return tree_write(n->right, o);
}

static int tree_pack(const void *item, void *buf, size_t bytes, void *user)
{
  (void)user;
  unsigned char *end = tree_write(item, buf);
  return (size_t)(end - (unsigned char *)buf) == bytes ? 0 : 4;
}

/* Read a subtree at *pos; returns 0 or 5 (malformed). */
static int tree_read(const unsigned char *in, size_t bytes, size_t *pos, node_t **out)
{
  *out = NULL;
  if (*pos >= bytes)
    return 5;
  if (in[(*pos)++] == 0)
    return 0;
  if (bytes - *pos < 4)
    return 5;
  node_t *n = calloc(1, sizeof *n);
  int32_t v = 0;
  memcpy(&v, in + *pos, 4);
  *pos += 4;
  n->value = v;
  *out = n;
  int rc = tree_read(in, bytes, pos, &n->left);
  if (rc == 0)
    rc = tree_read(in, bytes, pos, &n->right);
  return rc;
}

static int tree_unpack(const void *buf, size_t bytes, void **item, void *user)
{
  (void)user;
  node_t *root = NULL;
  size_t pos = 0;
  if (bytes == 0) {
    *item = NULL;
    return 0;
  }
  int rc = tree_read(buf, bytes, &pos, &root);
  if (rc == 0 && pos != bytes)
    rc = 6;
  if (rc != 0) {
    tree_free(root); /* the callback cleans up after itself on failure */
    return rc;
  }
  *item = root;
  return 0;
}

static bpc_type_t tree_type(void)
{
  bpc_type_ops_t ops = {tree_size, tree_pack, tree_unpack, tree_destroy, NULL};
  return bpc_type_custom(&ops, NULL);
}

static node_t *node_new(int v)
{
  node_t *n = calloc(1, sizeof *n);
  n->value = v;
  return n;
}

/* Insert into a binary search tree (duplicates go right). */
static node_t *bst_insert(node_t *root, int v)
{
  if (root == NULL)
    return node_new(v);
  if (v < root->value)
    root->left = bst_insert(root->left, v);
  else
    root->right = bst_insert(root->right, v);
  return root;
}

static void tree_assert_eq(const node_t *a, const node_t *b, size_t *count)
{
  if (a == NULL || b == NULL) {
    ck_assert_ptr_eq(a, b);
    return;
  }
  ck_assert_ptr_ne(a, b);
  ck_assert_int_eq(a->value, b->value);
  (*count)++;
  tree_assert_eq(a->left, b->left, count);
  tree_assert_eq(a->right, b->right, count);
}

static void tree_roundtrip(bpc_ctx_t *ctx, const bpc_type_t *t, node_t *tree, size_t expect_nodes)
{
  size_t n = 0;
  ck_assert_uint_eq(tree_nodes(tree), expect_nodes);
  ck_assert_int_eq(bpc_type_size(ctx, t, tree, &n), BPC_OK);
  ck_assert_uint_eq(n, 6 * expect_nodes + 1);
  unsigned char *buf = malloc(n);
  ck_assert_int_eq(bpc_type_pack(ctx, t, tree, buf, n), BPC_OK);
  void *back = NULL;
  ck_assert_int_eq(bpc_type_unpack(ctx, t, buf, n, &back), BPC_OK);
  size_t count = 0;
  tree_assert_eq(tree, back, &count);
  ck_assert_uint_eq(count, expect_nodes);
  bpc_type_item_destroy(t, back);
  free(buf);
}

START_TEST(test_tree_roundtrip)
{
  bpc_ctx_t *ctx = new_ctx();
  bpc_type_t t = tree_type();
  ck_assert_int_eq(bpc_type_check(ctx, &t), BPC_OK);
  ck_assert(!bpc__type_divisible(&t));

  tree_roundtrip(ctx, &t, NULL, 0); /* empty tree */
  node_t *one = node_new(-42);
  tree_roundtrip(ctx, &t, one, 1);
  tree_free(one);

  /* unbalanced: BST of 50 pseudo-random values plus a long left spine */
  node_t *root = NULL;
  uint32_t s = 2024;
  for (int i = 0; i < 40; i++)
    root = bst_insert(root, (int)(lcg(&s) % 1000));
  for (int i = 0; i < 10; i++)
    root = bst_insert(root, -1 - i);
  tree_roundtrip(ctx, &t, root, 50);

  /* a corrupt stream: the unpack callback refuses it */
  size_t n = 0;
  ck_assert_int_eq(bpc_type_size(ctx, &t, root, &n), BPC_OK);
  unsigned char *buf = malloc(n);
  ck_assert_int_eq(bpc_type_pack(ctx, &t, root, buf, n), BPC_OK);
  void *back = NULL;
  ck_assert_int_eq(bpc_type_unpack(ctx, &t, buf, n - 1, &back), BPC_ECALLBACK);
  ck_assert_ptr_null(back);
  assert_msg(ctx, "unpack callback returned 5");
  free(buf);
  tree_free(root);
  bpc_finalize(&ctx);
}
END_TEST

/* ----------------------------------------------------------- contiguous */

typedef struct {
  int32_t a;
  float b;
  double c;
} rec16_t;

START_TEST(test_contiguous)
{
  bpc_ctx_t *ctx = new_ctx();
  ck_assert_uint_eq(sizeof(rec16_t), 16);
  bpc_type_t tf = bpc_type_contiguous(sizeof(float), MPI_FLOAT);
  bpc_type_t tr = bpc_type_contiguous(sizeof(rec16_t), MPI_BYTE);
  ck_assert_int_eq(bpc_type_check(ctx, &tf), BPC_OK);
  ck_assert_int_eq(bpc_type_check(NULL, &tr), BPC_OK);
  ck_assert_int_eq(tf.kind, BPC_TYPE_CONTIGUOUS);
  ck_assert(tf.mpi_type == MPI_FLOAT);
  ck_assert(bpc__type_divisible(&tf));

  size_t counts[] = {0, 1, 7, 1000};
  for (int c = 0; c < 4; c++) {
    size_t cnt = counts[c];
    float *f = malloc((cnt + 1) * sizeof *f);
    rec16_t *r = malloc((cnt + 1) * sizeof *r);
    for (size_t i = 0; i < cnt; i++) {
      f[i] = (float)i * 0.5f - 3.0f;
      r[i].a = (int32_t)(i * 31);
      r[i].b = (float)i / 3.0f;
      r[i].c = -(double)i * 1e10;
    }
    const bpc_type_t *ts[2] = {&tf, &tr};
    void *datas[2] = {f, r};
    for (int w = 0; w < 2; w++) {
      const bpc_type_t *t = ts[w];
      bpc_buf_t item = {datas[w], cnt};
      size_t n = 0;
      ck_assert_int_eq(bpc_type_size(ctx, t, &item, &n), BPC_OK);
      ck_assert_uint_eq(n, cnt * t->elem_size);
      unsigned char *buf = malloc(n + 1);
      ck_assert_int_eq(bpc_type_pack(ctx, t, &item, buf, n), BPC_OK);
      ck_assert_mem_eq(buf, datas[w], n);
      void *back = NULL;
      ck_assert_int_eq(bpc_type_unpack(ctx, t, buf, n, &back), BPC_OK);
      ck_assert_ptr_nonnull(back);
      const bpc_buf_t *bb = back;
      ck_assert_uint_eq(bb->count, cnt);
      ck_assert_ptr_nonnull(bb->data);
      ck_assert_ptr_ne(bb->data, buf); /* a copy */
      ck_assert_mem_eq(bb->data, datas[w], n);
      ck_assert_uint_eq((uintptr_t)bb->data % _Alignof(max_align_t), 0);
      bpc_type_item_destroy(t, back);

      /* zero copy send: a pointer into the user's data */
      const void *bytes = NULL;
      size_t nb = 1;
      void *owned = &nb;
      ck_assert_int_eq(bpc__type_msg(ctx, t, &item, &bytes, &nb, &owned), BPC_OK);
      ck_assert_ptr_null(owned);
      ck_assert_uint_eq(nb, n);
      if (cnt > 0)
        ck_assert_ptr_eq(bytes, datas[w]);
      /* view onto received bytes: no copy */
      bpc_buf_t view;
      int own = 1;
      ck_assert_int_eq(bpc__type_view(ctx, t, buf, n, &view, &back, &own), BPC_OK);
      ck_assert_int_eq(own, 0);
      ck_assert_ptr_eq(back, &view);
      ck_assert_uint_eq(view.count, cnt);
      if (cnt > 0)
        ck_assert_ptr_eq(view.data, buf);
      bpc__type_release(t, back, own); /* no-op */
      /* exact pack with the measured size */
      memset(buf, 0, n + 1);
      ck_assert_int_eq(bpc__type_pack_exact(ctx, t, &item, buf, n), BPC_OK);
      ck_assert_mem_eq(buf, datas[w], n);
      free(buf);
    }
    free(f);
    free(r);
  }

  /* NULL item and an empty buffer behave alike */
  size_t n = 7;
  ck_assert_int_eq(bpc_type_size(ctx, &tf, NULL, &n), BPC_OK);
  ck_assert_uint_eq(n, 0);
  bpc_buf_t empty = {NULL, 0};
  ck_assert_int_eq(bpc_type_size(ctx, &tf, &empty, &n), BPC_OK);
  ck_assert_uint_eq(n, 0);
  ck_assert_int_eq(bpc_type_pack(ctx, &tf, &empty, NULL, 0), BPC_OK);
  void *back = NULL;
  ck_assert_int_eq(bpc_type_unpack(ctx, &tf, NULL, 0, &back), BPC_OK);
  ck_assert_uint_eq(((bpc_buf_t *)back)->count, 0);
  bpc_type_item_destroy(&tf, back);
  bpc_finalize(&ctx);
}
END_TEST

START_TEST(test_contiguous_split)
{
  bpc_ctx_t *ctx = new_ctx();
  bpc_type_t t = bpc_type_contiguous(sizeof(double), MPI_DOUBLE);
  size_t counts[] = {0, 2, 3, 10, 101};
  int ks[] = {1, 3, 4, 7};
  for (int c = 0; c < 5; c++) {
    double *d = malloc((counts[c] + 1) * sizeof *d);
    for (size_t j = 0; j < counts[c]; j++)
      d[j] = (double)j;
    bpc_buf_t item = {d, counts[c]};
    for (int q = 0; q < 4; q++) {
      int k = ks[q];
      size_t next = 0; /* pieces must tile [0, count) in order */
      for (int i = 0; i < k; i++) {
        bpc_buf_t view;
        void *piece = NULL;
        int own = 1;
        ck_assert_int_eq(bpc__type_split(ctx, &t, &item, k, i, &view, &piece, &own), BPC_OK);
        ck_assert_int_eq(own, 0);
        ck_assert_ptr_eq(piece, &view);
        /* independent reference: floor(i*n/k) .. floor((i+1)*n/k) */
        size_t lo = (size_t)i * counts[c] / (size_t)k, hi = (size_t)(i + 1) * counts[c] / (size_t)k;
        ck_assert_uint_eq(view.count, hi - lo);
        ck_assert_uint_eq(lo, next);
        if (view.count > 0)
          ck_assert(((double *)view.data)[0] == (double)lo);
        next = hi;
      }
      ck_assert_uint_eq(next, counts[c]);
    }
    free(d);
  }
  bpc_buf_t view;
  void *piece = NULL;
  int own = 0;
  ck_assert_int_eq(bpc__type_split(ctx, &t, NULL, 3, 3, &view, &piece, &own), BPC_ERANGE);
  assert_msg(ctx, "piece 3 of 3");
  ck_assert_int_eq(bpc__type_split(ctx, &t, NULL, 0, 0, &view, &piece, &own), BPC_ERANGE);
  bpc_type_t tt = tree_type();
  ck_assert_int_eq(bpc__type_split(ctx, &tt, NULL, 2, 0, NULL, &piece, &own), BPC_ETYPE);
  assert_msg(ctx, "no split callback");
  bpc_finalize(&ctx);
}
END_TEST

/* -------------------------------------------------------------- bundles */

START_TEST(test_bundle_custom)
{
  bpc_ctx_t *ctx = new_ctx();
  int ndestroy = 0;
  bpc_type_t t = plist_type(&ndestroy);
  enum { N = 7 };
  size_t sizes[N] = {0, 5, 0, 1, 1000, 0, 3};
  plist_t *items[N];
  int64_t keys[N];
  for (int i = 0; i < N; i++) {
    /* items 2 and 5 are NULL (0 bytes); item 0 is an empty list (8 bytes) */
    items[i] = (i == 2 || i == 5) ? NULL : plist_new(sizes[i], 100u + (uint32_t)i);
    keys[i] = (int64_t)i * 1000003 - 5;
  }
  size_t total = 0;
  ck_assert_int_eq(bpc__pack_many_size(ctx, &t, N, (const void *const *)items, &total), BPC_OK);
  /* independent reference of the layout */
  size_t ref = 8 + 16 * N;
  for (int i = 0; i < N; i++) {
    size_t s = items[i] == NULL ? 0 : 8 + sizes[i] * PREC;
    ref = (ref + 15) / 16 * 16 + s;
  }
  ck_assert_uint_eq(total, ref);

  unsigned char *buf = malloc(total);
  size_t used = 0;
  ck_assert_int_eq(bpc__pack_many(ctx, &t, N, (const void *const *)items, keys, buf, total - 1,
                                  &used),
                   BPC_ERANGE);
  assert_msg(ctx, "needs");
  ck_assert_uint_eq(used, 0);
  ck_assert_int_eq(bpc__pack_many(ctx, &t, N, (const void *const *)items, keys, buf, 20, &used),
                   BPC_ERANGE);
  assert_msg(ctx, "index");
  ck_assert_int_eq(
      bpc__pack_many(ctx, &t, N, (const void *const *)items, keys, buf, total, &used), BPC_OK);
  ck_assert_uint_eq(used, total);

  int n = -1;
  bpc__part_t *parts = NULL;
  ck_assert_int_eq(bpc__unpack_many(ctx, buf, used, &n, &parts), BPC_OK);
  ck_assert_int_eq(n, N);
  for (int i = 0; i < N; i++) {
    ck_assert(parts[i].key == keys[i]);
    size_t s = items[i] == NULL ? 0 : 8 + sizes[i] * PREC;
    ck_assert_uint_eq(parts[i].bytes, s);
    if (s > 0)
      ck_assert_uint_eq(((unsigned char *)parts[i].data - buf) % BPC__PACK_ALIGN, 0);
    else
      ck_assert_ptr_null(parts[i].data);
    void *back = NULL;
    int own = 0;
    ck_assert_int_eq(bpc__type_view(ctx, &t, parts[i].data, parts[i].bytes, NULL, &back, &own),
                     BPC_OK);
    plist_assert_eq(items[i], back);
    bpc__type_release(&t, back, own);
  }
  free(parts);

  /* malformed bundles */
  ck_assert_int_eq(bpc__unpack_many(ctx, buf, used - 1, &n, &parts), BPC_ETRUNC);
  assert_msg(ctx, "runs past the end");
  ck_assert_ptr_null(parts);
  ck_assert_int_eq(n, 0);
  unsigned char *longer = malloc(used + 1);
  memcpy(longer, buf, used);
  longer[used] = 0;
  ck_assert_int_eq(bpc__unpack_many(ctx, longer, used + 1, &n, &parts), BPC_ETRUNC);
  assert_msg(ctx, "should be");
  free(longer);
  ck_assert_int_eq(bpc__unpack_many(ctx, buf, 5, &n, &parts), BPC_ETRUNC);
  assert_msg(ctx, "shorter than");
  uint64_t huge = UINT64_C(1) << 40;
  memcpy(buf, &huge, 8);
  ck_assert_int_eq(bpc__unpack_many(ctx, buf, used, &n, &parts), BPC_ETRUNC);
  assert_msg(ctx, "claims");
  free(buf);

  for (int i = 0; i < N; i++)
    plist_destroy(items[i], NULL);
  /* every owned item made above was destroyed once: 5 non-NULL lists */
  ck_assert_int_eq(ndestroy, 5);
  bpc_finalize(&ctx);
}
END_TEST

START_TEST(test_bundle_contiguous)
{
  bpc_ctx_t *ctx = new_ctx();
  bpc_type_t t = bpc_type_contiguous(sizeof(double), MPI_DOUBLE);
  enum { N = 5 };
  size_t counts[N] = {3, 0, 1, 0, 17};
  bpc_buf_t bufs[N];
  const void *items[N];
  for (int i = 0; i < N; i++) {
    bufs[i].count = counts[i];
    bufs[i].data = counts[i] > 0 ? malloc(counts[i] * sizeof(double)) : NULL;
    for (size_t j = 0; j < counts[i]; j++)
      ((double *)bufs[i].data)[j] = (double)(i * 100) + (double)j;
    items[i] = (i == 3) ? NULL : &bufs[i];
  }
  size_t total = 0, used = 0;
  ck_assert_int_eq(bpc__pack_many_size(ctx, &t, N, items, &total), BPC_OK);
  unsigned char *buf = malloc(total);
  ck_assert_int_eq(bpc__pack_many(ctx, &t, N, items, NULL, buf, total, &used), BPC_OK);
  ck_assert_uint_eq(used, total);
  int n = 0;
  bpc__part_t *parts = NULL;
  ck_assert_int_eq(bpc__unpack_many(ctx, buf, used, &n, &parts), BPC_OK);
  ck_assert_int_eq(n, N);
  for (int i = 0; i < N; i++) {
    ck_assert(parts[i].key == 0);
    bpc_buf_t view;
    void *it = NULL;
    int own = 1;
    ck_assert_int_eq(bpc__type_view(ctx, &t, parts[i].data, parts[i].bytes, &view, &it, &own),
                     BPC_OK);
    ck_assert_int_eq(own, 0);
    ck_assert_uint_eq(view.count, counts[i]);
    for (size_t j = 0; j < counts[i]; j++)
      ck_assert(((double *)view.data)[j] == (double)(i * 100) + (double)j);
    if (view.count > 0)
      ck_assert_uint_eq((uintptr_t)view.data % _Alignof(double), 0);
  }
  free(parts);
  /* a payload that is not a multiple of elem_size: view fails with ETRUNC */
  bpc_buf_t view;
  void *it = NULL;
  int own = 0;
  ck_assert_int_eq(bpc__type_view(ctx, &t, buf, 12, &view, &it, &own), BPC_ETRUNC);
  assert_msg(ctx, "12 bytes");
  free(buf);

  /* an empty bundle */
  unsigned char small[8];
  ck_assert_int_eq(bpc__pack_many_size(ctx, &t, 0, NULL, &total), BPC_OK);
  ck_assert_uint_eq(total, 8);
  ck_assert_int_eq(bpc__pack_many(ctx, &t, 0, NULL, NULL, small, sizeof small, &used), BPC_OK);
  ck_assert_uint_eq(used, 8);
  ck_assert_int_eq(bpc__unpack_many(ctx, small, used, &n, &parts), BPC_OK);
  ck_assert_int_eq(n, 0);
  ck_assert_ptr_null(parts);
  ck_assert_int_eq(bpc__pack_many(ctx, &t, -1, NULL, NULL, small, sizeof small, &used),
                   BPC_ERANGE);
  ck_assert_int_eq(bpc__pack_many(ctx, &t, 2, NULL, NULL, small, sizeof small, &used),
                   BPC_ENULL);
  for (int i = 0; i < N; i++)
    free(bufs[i].data);
  bpc_finalize(&ctx);
}
END_TEST

/* ------------------------------------------------------------ bad input */

static int fail_size(const void *item, size_t *bytes, void *user)
{
  (void)item;
  (void)user;
  *bytes = 0;
  return -2;
}

static int fixed_size(const void *item, size_t *bytes, void *user)
{
  (void)item;
  int *calls = user;
  /* not deterministic when user counts calls: 8, 9, 10, ... */
  *bytes = calls != NULL ? (size_t)(8 + (*calls)++) : 8;
  return 0;
}

static int fail_pack(const void *item, void *buf, size_t bytes, void *user)
{
  (void)item;
  (void)buf;
  (void)bytes;
  (void)user;
  return 7;
}

static int ok_pack(const void *item, void *buf, size_t bytes, void *user)
{
  (void)item;
  (void)user;
  memset(buf, 1, bytes);
  return 0;
}

static int fail_unpack(const void *buf, size_t bytes, void **item, void *user)
{
  (void)buf;
  (void)bytes;
  (void)item;
  (void)user;
  return 9;
}

static int fail_split(const void *item, int k, int i, void **piece, void *user)
{
  (void)item;
  (void)k;
  (void)i;
  (void)piece;
  (void)user;
  return 4;
}

START_TEST(test_bad_input)
{
  bpc_ctx_t *ctx = new_ctx();
  bpc_type_t tf = bpc_type_contiguous(4, MPI_FLOAT);
  unsigned char buf[64];
  size_t n = 0;
  void *item = NULL;
  float f[3] = {1, 2, 3};
  bpc_buf_t b3 = {f, 3};

  /* NULL pointers */
  ck_assert_int_eq(bpc_type_check(ctx, NULL), BPC_ENULL);
  assert_msg(ctx, "type is NULL");
  ck_assert_int_eq(bpc_type_size(ctx, NULL, &b3, &n), BPC_ENULL);
  ck_assert_int_eq(bpc_type_size(ctx, &tf, &b3, NULL), BPC_ENULL);
  assert_msg(ctx, "bytes");
  ck_assert_int_eq(bpc_type_pack(ctx, &tf, &b3, NULL, 64), BPC_ENULL);
  assert_msg(ctx, "buf is NULL");
  ck_assert_int_eq(bpc_type_unpack(ctx, &tf, buf, 4, NULL), BPC_ENULL);
  ck_assert_int_eq(bpc_type_unpack(ctx, &tf, NULL, 4, &item), BPC_ENULL);
  assert_msg(ctx, "buf is NULL");
  bpc_buf_t bad = {NULL, 3};
  ck_assert_int_eq(bpc_type_size(ctx, &tf, &bad, &n), BPC_ENULL);
  assert_msg(ctx, "count 3 but data NULL");
  ck_assert_int_eq(bpc__type_msg(ctx, &tf, &b3, NULL, &n, &item), BPC_ENULL);
  ck_assert_int_eq(bpc__type_view(ctx, &tf, buf, 4, NULL, &item, &(int){0}), BPC_ENULL);
  ck_assert_int_eq(bpc__unpack_many(ctx, NULL, 8, &(int){0}, &(bpc__part_t *){NULL}), BPC_ENULL);

  /* bad types */
  bpc_type_t t0 = bpc_type_contiguous(0, MPI_BYTE);
  ck_assert_int_eq(bpc_type_check(ctx, &t0), BPC_ETYPE);
  assert_msg(ctx, "elem_size 0");
  ck_assert_int_eq(bpc_type_size(ctx, &t0, &b3, &n), BPC_ETYPE);
  ck_assert_int_eq(bpc_type_unpack(ctx, &t0, buf, 4, &item), BPC_ETYPE);
  bpc_type_ops_t nopack = {fixed_size, NULL, fail_unpack, NULL, NULL};
  bpc_type_t tn = bpc_type_custom(&nopack, NULL);
  ck_assert_int_eq(bpc_type_check(ctx, &tn), BPC_ETYPE);
  assert_msg(ctx, "missing the pack callback");
  bpc_type_t tnone = bpc_type_custom(NULL, NULL);
  ck_assert_int_eq(bpc_type_check(ctx, &tnone), BPC_ETYPE);
  assert_msg(ctx, "packed_size, pack, unpack callbacks");
  bpc_type_t tk = tf;
  tk.kind = (bpc_type_kind_t)77;
  ck_assert_int_eq(bpc_type_check(ctx, &tk), BPC_ETYPE);
  assert_msg(ctx, "kind 77");
  bpc_type_item_destroy(&tk, NULL);

  /* short buffer */
  ck_assert_int_eq(bpc_type_pack(ctx, &tf, &b3, buf, 11), BPC_ERANGE);
  assert_msg(ctx, "12 bytes");
  assert_msg(ctx, "only 11");

  /* contiguous data not a multiple of elem_size */
  ck_assert_int_eq(bpc_type_unpack(ctx, &tf, buf, 10, &item), BPC_ETRUNC);
  assert_msg(ctx, "10 bytes");
  assert_msg(ctx, "element size 4");
  ck_assert_ptr_null(item);

  /* failing callbacks: the value is in the message */
  bpc_type_ops_t ops = {fail_size, fail_pack, fail_unpack, NULL, fail_split};
  bpc_type_t tc = bpc_type_custom(&ops, NULL);
  ck_assert_int_eq(bpc_type_size(ctx, &tc, NULL, &n), BPC_ECALLBACK);
  assert_msg(ctx, "packed_size callback returned -2");
  ops.packed_size = fixed_size;
  tc = bpc_type_custom(&ops, NULL);
  ck_assert_int_eq(bpc_type_pack(ctx, &tc, NULL, buf, sizeof buf), BPC_ECALLBACK);
  assert_msg(ctx, "pack callback returned 7");
  const void *bytes = NULL;
  void *owned = NULL;
  ck_assert_int_eq(bpc__type_msg(ctx, &tc, NULL, &bytes, &n, &owned), BPC_ECALLBACK);
  ck_assert_ptr_null(owned); /* the temporary buffer was freed */
  assert_msg(ctx, "pack callback returned 7");
  item = &n;
  ck_assert_int_eq(bpc_type_unpack(ctx, &tc, buf, 8, &item), BPC_ECALLBACK);
  assert_msg(ctx, "unpack callback returned 9");
  ck_assert_ptr_null(item);
  int own = 1;
  ck_assert_int_eq(bpc__type_view(ctx, &tc, buf, 8, NULL, &item, &own), BPC_ECALLBACK);
  ck_assert_int_eq(own, 0);
  ck_assert_int_eq(bpc__type_split(ctx, &tc, NULL, 2, 1, NULL, &item, &own), BPC_ECALLBACK);
  assert_msg(ctx, "split callback returned 4");
  const void *one[1] = {NULL};
  size_t used = 0;
  ck_assert_int_eq(bpc__pack_many(ctx, &tc, 1, one, NULL, buf, sizeof buf, &used),
                   BPC_ECALLBACK);
  assert_msg(ctx, "pack callback returned 7");

  /* packed_size that disagrees with the size pack is asked to write */
  int calls = 0;
  ops.pack = ok_pack;
  bpc_type_t tv = bpc_type_custom(&ops, &calls);
  ck_assert_int_eq(bpc_type_size(ctx, &tv, NULL, &n), BPC_OK);
  ck_assert_uint_eq(n, 8);
  ck_assert_int_eq(bpc__type_pack_exact(ctx, &tv, NULL, buf, n), BPC_ETYPE);
  assert_msg(ctx, "reports 9 bytes");
  assert_msg(ctx, "measured 8 bytes");
  bpc_type_t tfix = bpc_type_custom(&ops, NULL);
  memset(buf, 0, sizeof buf);
  ck_assert_int_eq(bpc__type_pack_exact(ctx, &tfix, NULL, buf, 8), BPC_OK);
  ck_assert_uint_eq(buf[7], 1);
  ck_assert_uint_eq(buf[8], 0);

  /* ctx NULL: codes only */
  ck_assert_int_eq(bpc_type_check(NULL, NULL), BPC_ENULL);
  ck_assert_int_eq(bpc_type_pack(NULL, &tf, &b3, buf, 11), BPC_ERANGE);
  ck_assert_int_eq(bpc_type_unpack(NULL, &tf, buf, 10, &item), BPC_ETRUNC);
  ck_assert_int_eq(bpc_type_pack(NULL, &tc, NULL, buf, sizeof buf), BPC_ECALLBACK);
  bpc_finalize(&ctx);
}
END_TEST

/* ------------------------------------------------------- built-in operators */

/* Each arithmetic operator on one C type against the formula, both sides. */
#define CHECK_ARITH(T, MT)                                                                         \
  do {                                                                                             \
    const T a[5] = {3, (T)-2, 7, 0, 5}, b[5] = {4, 6, (T)-9, 1, 5};                                \
    static const char *const names[4] = {"sum", "prod", "min", "max"};                             \
    for (int q = 0; q < 8; q++) {                                                                  \
      bpc_op_t op;                                                                                 \
      ck_assert_int_eq(bpc_op_builtin(names[q % 4], MT, &op), BPC_OK);                             \
      ck_assert(op.fn != NULL && op.commutative == 1 && op.user == NULL);                          \
      T o[5];                                                                                      \
      memcpy(o, b, sizeof o);                                                                      \
      ck_assert_int_eq(op.fn(a, o, 5, q / 4, NULL), 0);                                            \
      for (int i = 0; i < 5; i++) {                                                                \
        const T x = a[i], y = b[i];                                                                \
        const T want = q % 4 == 0   ? (T)(x + y)                                                   \
                       : q % 4 == 1 ? (T)(x * y)                                                   \
                       : q % 4 == 2 ? (x < y ? x : y)                                              \
                                    : (x > y ? x : y);                                             \
        ck_assert_msg(memcmp(&o[i], &want, sizeof want) == 0, "%s on " #T " element %d",           \
                      names[q % 4], i);                                                            \
      }                                                                                            \
    }                                                                                              \
  } while (0)

START_TEST(test_builtin_ops)
{
  CHECK_ARITH(float, MPI_FLOAT);
  CHECK_ARITH(double, MPI_DOUBLE);
  CHECK_ARITH(int, MPI_INT);
  CHECK_ARITH(unsigned, MPI_UNSIGNED);
  CHECK_ARITH(long, MPI_LONG);
  CHECK_ARITH(unsigned long, MPI_UNSIGNED_LONG);
  CHECK_ARITH(long long, MPI_LONG_LONG);
  CHECK_ARITH(unsigned long long, MPI_UNSIGNED_LONG_LONG);
  CHECK_ARITH(int32_t, MPI_INT32_T);
  CHECK_ARITH(uint32_t, MPI_UINT32_T);
  CHECK_ARITH(int64_t, MPI_INT64_T);
  CHECK_ARITH(uint64_t, MPI_UINT64_T);

  bpc_op_t op;
  /* signed sums wrap (two's complement), never trap */
  ck_assert_int_eq(bpc_op_builtin("SUM", MPI_INT32_T, &op), BPC_OK); /* any case */
  int32_t one = 1, big = INT32_MAX;
  op.fn(&one, &big, 1, 0, NULL);
  ck_assert_int_eq(big, INT32_MIN);
  /* min / max of an unordered pair keep the earlier operand */
  const float nan = NAN;
  float o = 1.0f;
  ck_assert_int_eq(bpc_op_builtin("min", MPI_FLOAT, &op), BPC_OK);
  op.fn(&nan, &o, 1, 0, NULL); /* inout earlier */
  ck_assert(o == 1.0f);
  op.fn(&nan, &o, 1, 1, NULL); /* in earlier */
  ck_assert(isnan(o));

  /* over: not commutative, in_left puts `in` in front */
  ck_assert_int_eq(bpc_op_builtin("over", MPI_FLOAT, &op), BPC_OK);
  ck_assert_int_eq(op.commutative, 0);
  const float f[8] = {0.25f, 0.5f, 0.0f, 0.5f, 0.0f, 0.0f, 0.0f, 0.0f};
  const float k[8] = {0.5f, 0.0f, 0.25f, 0.75f, 0.125f, 0.25f, 0.5f, 1.0f};
  for (int in_left = 0; in_left < 2; in_left++) {
    float px[8];
    memcpy(px, k, sizeof px);
    ck_assert_int_eq(op.fn(f, px, 2, in_left, NULL), 0);
    for (int i = 0; i < 8; i++) {
      const float *fr = in_left ? f : k, *bk = in_left ? k : f;
      const float want = fr[i] + (1.0f - fr[i / 4 * 4 + 3]) * bk[i];
      ck_assert_msg(px[i] == want, "over in_left %d channel %d: %g, want %g", in_left, i,
                    (double)px[i], (double)want);
    }
  }
  /* zbuffer: the nearer wins; a tie goes to the larger rgba bits */
  ck_assert_int_eq(bpc_op_builtin("zbuffer", MPI_FLOAT, &op), BPC_OK);
  ck_assert_int_eq(op.commutative, 1);
  const float zin[15] = {1, 1, 1, 1, 0.5f, 1, 1, 1, 1, 0.9f, 0.5f, 0, 0, 1, 0.3f};
  float zo[15] = {0, 0, 0, 1, 0.6f, 0, 0, 0, 1, 0.8f, 0.25f, 0, 0, 1, 0.3f};
  ck_assert_int_eq(op.fn(zin, zo, 3, 0, NULL), 0);
  ck_assert(zo[0] == 1 && zo[4] == 0.5f);      /* nearer in wins */
  ck_assert(zo[5] == 0 && zo[9] == 0.8f);      /* nearer inout stays */
  ck_assert(zo[10] == 0.5f && zo[14] == 0.3f); /* tie: larger bits */

  /* errors: op cleared */
  ck_assert_int_eq(bpc_op_builtin(NULL, MPI_FLOAT, &op), BPC_ENULL);
  ck_assert_int_eq(bpc_op_builtin("sum", MPI_FLOAT, NULL), BPC_ENULL);
  ck_assert_int_eq(bpc_op_builtin("nope", MPI_FLOAT, &op), BPC_EINVAL);
  ck_assert(op.fn == NULL);
  ck_assert_int_eq(bpc_op_builtin("sum", MPI_BYTE, &op), BPC_ETYPE);
  ck_assert(op.fn == NULL);
  ck_assert_int_eq(bpc_op_builtin("over", MPI_DOUBLE, &op), BPC_ETYPE);
  ck_assert_int_eq(bpc_op_builtin("zbuffer", MPI_INT, &op), BPC_ETYPE);
}
END_TEST

static Suite *datatype_suite(void)
{
  Suite *s = suite_create("datatype");
  TCase *tc = tcase_create("datatype");
  tcase_add_test(tc, test_particles_roundtrip);
  tcase_add_test(tc, test_particles_split);
  tcase_add_test(tc, test_tree_roundtrip);
  tcase_add_test(tc, test_contiguous);
  tcase_add_test(tc, test_contiguous_split);
  tcase_add_test(tc, test_bundle_custom);
  tcase_add_test(tc, test_bundle_contiguous);
  tcase_add_test(tc, test_bad_input);
  tcase_add_test(tc, test_builtin_ops);
  suite_add_tcase(s, tc);
  return s;
}

BPC_T_UNIT_MAIN(datatype_suite)
