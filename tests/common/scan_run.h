/*
 * tests/common/scan_run.h - the scan engine's test problems, shared by the
 * serial and MPI suites: non-commutative operators (2x2 integer matrix
 * products mod 2^32, affine maps of floats, a variable-size custom type:
 * lists of labels under concatenation), per-block sequences of 0..5 items,
 * a serial reference over the whole item sequence in position order, the
 * operator counts of the global algorithms and where "mpi" applies.
 */
#ifndef BPC_TESTS_COMMON_SCAN_RUN_H
#define BPC_TESTS_COMMON_SCAN_RUN_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bpc.h"

/* ------------------------------------------------------------ operators */

typedef struct sr_mat {
  uint32_t m[4]; /* row-major 2x2 */
} sr_mat_t;

/* Fails (returns 7) when the right operand is the marked item (m[0] = 99). */
static int sr_mat_mul(const void *l, const void *r, void *res, void *user)
{
  (void)user;
  const sr_mat_t *a = l, *b = r;
  sr_mat_t *c = res;
  if (b->m[0] == 99u && b->m[1] == 99u)
    return 7;
  c->m[0] = a->m[0] * b->m[0] + a->m[1] * b->m[2];
  c->m[1] = a->m[0] * b->m[1] + a->m[1] * b->m[3];
  c->m[2] = a->m[2] * b->m[0] + a->m[3] * b->m[2];
  c->m[3] = a->m[2] * b->m[1] + a->m[3] * b->m[3];
  return 0;
}

static sr_mat_t sr_mat_item(int g, int i)
{
  sr_mat_t x = {{1u + (uint32_t)(g * 31 + i * 7) % 5u, (uint32_t)(g + i) % 3u,
                 (uint32_t)(g * 5 + i) % 4u, 1u + (uint32_t)(i * 3 + g) % 2u}};
  return x;
}

/* Affine map x -> a x + b; "left then right": (ra la, ra lb + rb). */
typedef struct sr_aff {
  float a, b;
} sr_aff_t;

static int sr_aff_compose(const void *l, const void *r, void *res, void *user)
{
  (void)user;
  const sr_aff_t *x = l, *y = r;
  sr_aff_t *z = res;
  z->a = y->a * x->a;
  z->b = y->a * x->b + y->b;
  return 0;
}

static sr_aff_t sr_aff_item(int g, int i)
{
  sr_aff_t x = {1.0f + 0.013f * (float)((g * 7 + i * 3) % 11) - 0.06f,
                0.1f * (float)((g * 13 + i * 5) % 17) - 0.77f};
  return x;
}

/* Variable-size custom type: a list of labels; concatenation. */
/* The values live apart from the item, so an item can grow in place (the
 * binary operator form, sr_list_cat_bin). */
typedef struct sr_list {
  uint32_t n;
  uint32_t *v;
} sr_list_t;

static sr_list_t *sr_list_new(uint32_t n)
{
  sr_list_t *L = malloc(sizeof *L);
  if (L == NULL)
    return NULL;
  L->n = n;
  L->v = malloc(sizeof(uint32_t) * (n ? n : 1));
  if (L->v == NULL) {
    free(L);
    return NULL;
  }
  return L;
}
static int sr_list_size(const void *item, size_t *bytes, void *user)
{
  (void)user;
  const sr_list_t *L = item;
  *bytes = sizeof(uint32_t) * (1 + (L != NULL ? L->n : 0));
  return 0;
}
static int sr_list_pack(const void *item, void *buf, size_t bytes, void *user)
{
  (void)user;
  const sr_list_t *L = item;
  uint32_t n = L != NULL ? L->n : 0;
  memcpy(buf, &n, sizeof n);
  if (n)
    memcpy((char *)buf + sizeof n, L->v, bytes - sizeof n);
  return 0;
}
static int sr_list_unpack(const void *buf, size_t bytes, void **item, void *user)
{
  (void)user;
  uint32_t n;
  if (bytes < sizeof n)
    return 1;
  memcpy(&n, buf, sizeof n);
  if (bytes != sizeof n * (1 + (size_t)n))
    return 2;
  sr_list_t *L = sr_list_new(n);
  if (L == NULL)
    return 3;
  memcpy(L->v, (const char *)buf + sizeof n, sizeof(uint32_t) * n);
  *item = L;
  return 0;
}
static void sr_list_destroy(void *item, void *user)
{
  (void)user;
  if (item != NULL)
    free(((sr_list_t *)item)->v);
  free(item);
}
static int sr_list_cat(const void *l, const void *r, void *res, void *user)
{
  (void)user;
  const sr_list_t *a = l, *b = r;
  sr_list_t *c = sr_list_new(a->n + b->n);
  if (c == NULL)
    return 1;
  memcpy(c->v, a->v, sizeof(uint32_t) * a->n);
  memcpy(c->v + a->n, b->v, sizeof(uint32_t) * b->n);
  *(void **)res = c;
  return 0;
}
/* The same operators as bpc_op_t (op.binary): result = in o inout, written
 * into inout (the engine passes in_left = 1 and a copy of the right
 * operand); the matrix one fails on the marked item as sr_mat_mul does. */
static int sr_mat_mul_bin(const void *in, void *inout, size_t count, int in_left, void *user)
{
  if (count != 1 || !in_left)
    return 8;
  sr_mat_t r;
  int rc = sr_mat_mul(in, inout, &r, user);
  if (rc == 0)
    memcpy(inout, &r, sizeof r);
  return rc;
}
static int sr_list_cat_bin(const void *in, void *inout, size_t count, int in_left, void *user)
{
  (void)user;
  const sr_list_t *a = in;
  sr_list_t *c = inout;
  if (count != 1 || !in_left)
    return 8;
  uint32_t *v = malloc(sizeof(uint32_t) * ((size_t)a->n + c->n + 1));
  if (v == NULL)
    return 1;
  memcpy(v, a->v, sizeof(uint32_t) * a->n);
  memcpy(v + a->n, c->v, sizeof(uint32_t) * c->n);
  free(c->v);
  c->v = v;
  c->n += a->n;
  return 0;
}

static bpc_type_t sr_list_type(void)
{
  bpc_type_ops_t ops;
  memset(&ops, 0, sizeof ops);
  ops.packed_size = sr_list_size;
  ops.pack = sr_list_pack;
  ops.unpack = sr_list_unpack;
  ops.destroy = sr_list_destroy;
  return bpc_type_custom(&ops, NULL);
}
static uint32_t sr_label(int g, int i)
{
  return (uint32_t)(g * 100 + i);
}

/* ------------------------------------------------------------ problems */

enum { SR_MAT = 0, SR_AFF = 1, SR_LIST = 2 };

/* Items of block g (0..5; `ones` 1: exactly 1; `ones` 2: very uneven,
 * 9..16 on every third block, else 0..2). */
static int sr_count(int g, int seed, int ones)
{
  if (ones == 2)
    return g % 3 == 0 ? 9 + (g * 5 + seed) % 8 : (g * 7 + seed) % 3;
  return ones ? 1 : (g * 7 + seed * 3 + 3) % 6;
}

/* A whole problem on this process's blocks: inputs and outputs. */
typedef struct sr_prob {
  int kind, nlocal;
  const int *gids;
  bpc_type_t type;
  bpc_buf_t *in, *out;
} sr_prob_t;

static size_t sr_esize(int kind)
{
  return kind == SR_MAT ? sizeof(sr_mat_t) : kind == SR_AFF ? sizeof(sr_aff_t) : sizeof(void *);
}

/* mark: make item 1 of block `mark` (given >= 2 items) fail the operator. */
static void sr_prob_make(sr_prob_t *P, const bpc_assign_t *A, int kind, int seed, int ones,
                         int mark)
{
  memset(P, 0, sizeof *P);
  P->kind = kind;
  bpc_assign_local(A, &P->gids, &P->nlocal);
  P->type = kind == SR_MAT   ? bpc_type_contiguous(sizeof(sr_mat_t), MPI_BYTE)
            : kind == SR_AFF ? bpc_type_contiguous(sizeof(sr_aff_t), MPI_BYTE)
                             : sr_list_type();
  P->in = calloc((size_t)P->nlocal + 1, sizeof *P->in);
  P->out = calloc((size_t)P->nlocal + 1, sizeof *P->out);
  for (int l = 0; l < P->nlocal; l++) {
    int g = P->gids[l];
    int c = g == mark ? 3 : sr_count(g, seed, ones);
    P->in[l].count = (size_t)c;
    P->in[l].data = c ? malloc(sr_esize(kind) * (size_t)c) : NULL;
    P->out[l].data = c ? malloc(sr_esize(kind) * (size_t)c) : NULL;
    if (c) /* a sentinel; NULL slots for lists (freed even when a call fails early) */
      memset(P->out[l].data, kind == SR_LIST ? 0 : 0xAB, sr_esize(kind) * (size_t)c);
    for (int i = 0; i < c; i++) {
      if (kind == SR_MAT) {
        sr_mat_t x = sr_mat_item(g, i);
        if (g == mark && i == 1)
          x.m[0] = x.m[1] = 99u;
        ((sr_mat_t *)P->in[l].data)[i] = x;
      } else if (kind == SR_AFF) {
        ((sr_aff_t *)P->in[l].data)[i] = sr_aff_item(g, i);
      } else {
        sr_list_t *L = sr_list_new(1);
        L->v[0] = sr_label(g, i);
        ((void **)P->in[l].data)[i] = L;
      }
    }
  }
}

static void sr_prob_free(sr_prob_t *P)
{
  for (int l = 0; l < P->nlocal; l++) {
    if (P->kind == SR_LIST) {
      for (size_t i = 0; i < P->in[l].count; i++) {
        sr_list_destroy(((void **)P->in[l].data)[i], NULL);
        if (P->out[l].data != NULL)
          sr_list_destroy(((void **)P->out[l].data)[i], NULL);
      }
    }
    free(P->in[l].data);
    free(P->out[l].data);
  }
  free(P->in);
  free(P->out);
  memset(P, 0, sizeof *P);
}

/* The op of a kind; with SR_BINARY or'd into kind: the binary form
 * (op.binary; matrices and lists). */
#define SR_BINARY 0x100
static bpc_scan_op_t sr_op(int kind, int with_identity)
{
  const int binary = (kind & SR_BINARY) != 0;
  kind &= ~SR_BINARY;
  static const sr_mat_t mat_id = {{1u, 0u, 0u, 1u}};
  static const sr_aff_t aff_id = {1.0f, 0.0f};
  static sr_list_t list_id = {0, NULL};
  bpc_scan_op_t op;
  memset(&op, 0, sizeof op);
  op.fn = kind == SR_MAT ? sr_mat_mul : kind == SR_AFF ? sr_aff_compose : sr_list_cat;
  if (binary) {
    op.fn = NULL;
    op.binary.fn = kind == SR_MAT ? sr_mat_mul_bin : sr_list_cat_bin;
  }
  if (with_identity)
    op.identity = kind == SR_MAT ? (const void *)&mat_id
                  : kind == SR_AFF ? (const void *)&aff_id
                                   : (const void *)&list_id;
  return op;
}

/*
 * Check this process's outputs against the serial reference (matrices
 * and lists: exact; the whole sequence in position order). Returns the
 * number of wrong results; the first is described in msg.
 */
static int sr_check(const sr_prob_t *P, int nb, const int *order, int seed, int ones,
                    bpc_scan_mode_t mode, int with_identity, const bpc_scan_info_t *info,
                    char *msg, size_t cap)
{
  int bad = 0;
  msg[0] = 0;
  /* start index of each gid in the global sequence */
  long long *start = calloc((size_t)nb, sizeof *start);
  long long N = 0;
  for (int p = 0; p < nb; p++) {
    int g = order != NULL ? order[p] : p;
    start[g] = N;
    N += sr_count(g, seed, ones);
  }
  /* reference inclusive prefixes (matrices) */
  sr_mat_t *inc = malloc(sizeof *inc * (size_t)(N + 1));
  long long k = 0;
  sr_mat_t acc = {{1u, 0u, 0u, 1u}};
  for (int p = 0; p < nb; p++) {
    int g = order != NULL ? order[p] : p;
    for (int i = 0; i < sr_count(g, seed, ones); i++) {
      sr_mat_t x = sr_mat_item(g, i), t;
      sr_mat_mul(&acc, &x, &t, NULL);
      acc = t;
      inc[k++] = acc;
    }
  }
  uint32_t *labels = malloc(sizeof *labels * (size_t)(N + 1));
  k = 0;
  for (int p = 0; p < nb; p++) {
    int g = order != NULL ? order[p] : p;
    for (int i = 0; i < sr_count(g, seed, ones); i++)
      labels[k++] = sr_label(g, i);
  }
  int want_absent_gid = -1;
  for (int l = 0; l < P->nlocal; l++) {
    int g = P->gids[l];
    if (P->out[l].count != P->in[l].count) {
      if (!bad++)
        snprintf(msg, cap, "block %d: out count %zu, want %zu", g, P->out[l].count,
                 P->in[l].count);
      continue;
    }
    for (size_t i = 0; i < P->in[l].count; i++) {
      long long j = start[g] + (long long)i; /* global index */
      long long upto = mode == BPC_SCAN_INCLUSIVE ? j : j - 1; /* last item included */
      int absent = upto < 0 && !with_identity;
      if (upto < 0 && !with_identity)
        want_absent_gid = g;
      if (P->kind == SR_MAT) {
        sr_mat_t want = upto >= 0 ? inc[upto] : (sr_mat_t){{1u, 0u, 0u, 1u}};
        sr_mat_t got = ((sr_mat_t *)P->out[l].data)[i];
        sr_mat_t sentinel;
        memset(&sentinel, 0xAB, sizeof sentinel);
        if (absent ? memcmp(&got, &sentinel, sizeof got) != 0
                   : memcmp(&got, &want, sizeof got) != 0) {
          if (!bad++)
            snprintf(msg, cap, "block %d item %zu: got [%u %u %u %u], want [%u %u %u %u]%s", g,
                     i, got.m[0], got.m[1], got.m[2], got.m[3], want.m[0], want.m[1], want.m[2],
                     want.m[3], absent ? " (absent: unchanged)" : "");
        }
      } else if (P->kind == SR_LIST) {
        const sr_list_t *L = ((void **)P->out[l].data)[i];
        int ok = absent ? L == NULL
                        : L != NULL && L->n == (uint32_t)(upto + 1) &&
                              memcmp(L->v, labels, sizeof(uint32_t) * (size_t)(upto + 1)) == 0;
        if (!ok && !bad++)
          snprintf(msg, cap, "block %d item %zu: list of %d labels, want %lld%s", g, i,
                   L != NULL ? (int)L->n : -1, upto + 1, absent ? " (absent: NULL)" : "");
      }
    }
  }
  (void)want_absent_gid;
  if (info != NULL && mode == BPC_SCAN_EXCLUSIVE && !with_identity && N > 0) {
    int g0 = -1;
    for (int p = 0; p < nb && g0 < 0; p++) {
      int g = order != NULL ? order[p] : p;
      if (sr_count(g, seed, ones) > 0)
        g0 = g;
    }
    if (info->absent_gid != g0 || info->absent_index != 0) {
      if (!bad++)
        snprintf(msg, cap, "absent result at gid %d index %lld, want gid %d index 0",
                 info->absent_gid, info->absent_index, g0);
    }
  } else if (info != NULL && info->absent_gid != -1) {
    if (!bad++)
      snprintf(msg, cap, "absent_gid %d, want -1", info->absent_gid);
  }
  free(start);
  free(inc);
  free(labels);
  return bad;
}

/* Operator calls of a global algorithm's inclusive (or, for Blelloch,
 * exclusive) scan over P totals (doc/scan.md). */
static long long sr_global_ops(const char *name, int P)
{
  int K = 0;
  while ((1 << K) < P)
    K++;
  long long c = 0;
  if (strcmp(name, "serial") == 0)
    return P - 1;
  if (strcmp(name, "kogge-stone") == 0) {
    for (int r = 0; r < K; r++)
      c += P - (1 << r);
    return c;
  }
  if (strcmp(name, "sklansky") == 0) {
    for (int r = 0; r < K; r++)
      for (int p = 0; p < P; p++)
        c += (p >> r) & 1;
    return c;
  }
  if (strcmp(name, "brent-kung") == 0) {
    c = P - 1;
    for (int d = 0; d + 2 <= K; d++)
      for (int q = 0; q < P - 1; q++)
        c += (q + 1) % (2 << d) == (1 << d) && q >= 3 * (1 << d) - 1;
    return c;
  }
  if (strcmp(name, "blelloch") == 0)
    return 2ll * (P - 1) - K;
  if (strcmp(name, "mpi") == 0) /* one process only: the chain of its totals */
    return P - 1;
  return -1;
}

/* The code bpc_scan gives for global algorithm `name` on this problem:
 * "mpi" needs a contiguous type (BPC_ETYPE) and every rank's blocks at one
 * run of positions, the runs ascending with rank (BPC_EINVAL); the others
 * always apply. */
static inline int sr_expect(const char *name, const bpc_assign_t *A, int nb, const int *order,
                            int kind)
{
  if (strcmp(name, "mpi") != 0)
    return BPC_OK;
  if (kind == SR_LIST)
    return BPC_ETYPE;
  int prev = -1;
  for (int p = 0; p < nb; p++) {
    int r = 0;
    bpc_assign_rank(A, order != NULL ? order[p] : p, &r);
    if (r < prev)
      return BPC_EINVAL;
    prev = r;
  }
  return BPC_OK;
}

/* Table 3.1 (powers of two only; Blelloch without its log2 P identity
 * steps, see doc/scan.md). */
static long long sr_table31(const char *name, int P)
{
  int L = 0;
  while ((1 << L) < P)
    L++;
  if (strcmp(name, "serial") == 0)
    return P - 1;
  if (strcmp(name, "blelloch") == 0)
    return 2ll * (P - 1) - L;
  if (strcmp(name, "brent-kung") == 0)
    return 2ll * P - L - 2;
  if (strcmp(name, "kogge-stone") == 0)
    return (long long)P * L - P + 1;
  if (strcmp(name, "sklansky") == 0)
    return (long long)(P / 2) * L;
  return -1;
}

/* ------------------------------------------------------------ overlap */

/* The operators with a nap of 0, 40, 80 or 120 us per call, chosen by the
 * left operand's bytes (lists: by the block of its first label), so that
 * calls and blocks differ and blocks finish their local stage out of
 * order. */
static inline void sr_nap(const void *p, size_t n)
{
  uint32_t h = 2166136261u;
  for (size_t i = 0; i < n; i++)
    h = (h ^ ((const unsigned char *)p)[i]) * 16777619u;
  struct timespec ts = {0, (long)(h % 4u) * 40000L};
  nanosleep(&ts, NULL);
}

static inline int sr_slow_mat(const void *l, const void *r, void *res, void *user)
{
  sr_nap(l, sizeof(sr_mat_t));
  return sr_mat_mul(l, r, res, user);
}

static inline int sr_slow_aff(const void *l, const void *r, void *res, void *user)
{
  sr_nap(l, sizeof(sr_aff_t));
  return sr_aff_compose(l, r, res, user);
}

static inline int sr_slow_cat(const void *l, const void *r, void *res, void *user)
{
  const sr_list_t *L = l;
  uint32_t b = L->n > 0 ? L->v[0] / 100u : 0u;
  sr_nap(&b, sizeof b);
  return sr_list_cat(l, r, res, user);
}

/* Outputs of two runs of one problem bit for bit (lists: label by label):
 * the number of differing results (msg: the first). */
static inline int sr_same(const sr_prob_t *A, const sr_prob_t *B, char *msg, size_t cap)
{
  int bad = 0;
  const size_t es = sr_esize(A->kind);
  for (int l = 0; l < A->nlocal; l++) {
    if (A->out[l].count != B->out[l].count && !bad++)
      snprintf(msg, cap, "block %d: %zu results against %zu", A->gids[l], A->out[l].count,
               B->out[l].count);
    for (size_t i = 0; i < A->in[l].count; i++) {
      int same;
      if (A->kind == SR_LIST) {
        const sr_list_t *x = ((void **)A->out[l].data)[i], *y = ((void **)B->out[l].data)[i];
        same = x == NULL ? y == NULL
                         : y != NULL && x->n == y->n &&
                               memcmp(x->v, y->v, sizeof(uint32_t) * x->n) == 0;
      } else {
        same = memcmp((const char *)A->out[l].data + i * es,
                      (const char *)B->out[l].data + i * es, es) == 0;
      }
      if (!same && !bad++)
        snprintf(msg, cap, "block %d item %zu differs", A->gids[l], i);
    }
  }
  return bad;
}

/*
 * One overlap case: the same scan with the overlapped driver (the default)
 * and with BPC_SCAN_OVERLAP=0 (lock-step rounds), with napping operators
 * and very uneven blocks (sr_count's `ones` 2). The first is checked
 * against the serial reference (matrices, lists), both against each other
 * bit for bit (floats too) with the same operator counts, depth and absent
 * result. Returns the number of problems (msg: the first).
 */
static inline int sr_overlap_case(bpc_ctx_t *ctx, const bpc_assign_t *A, int nb,
                                  const int *order, const char *algo, int strategy, int kind,
                                  bpc_scan_mode_t mode, int with_id, int nthreads, int seed,
                                  char *msg, size_t cap)
{
  sr_prob_t P[2];
  bpc_scan_info_t info[2];
  int bad = 0;
  bpc_scan_op_t op = sr_op(kind, with_id);
  op.fn = kind == SR_MAT ? sr_slow_mat : kind == SR_AFF ? sr_slow_aff : sr_slow_cat;
  memset(info, 0, sizeof info);
  for (int v = 0; v < 2; v++) {
    sr_prob_make(&P[v], A, kind, seed, 2, -1);
    bpc_scan_params_t prm = bpc_scan_params_default();
    prm.algorithm = algo;
    prm.order = order;
    prm.nthreads = nthreads;
    prm.strategy = (bpc_scan_strategy_t)strategy;
    setenv("BPC_SCAN_OVERLAP", v == 0 ? "1" : "0", 1);
    int rc = bpc_scan(ctx, A, &P[v].type, mode, P[v].in, P[v].out, &op, &prm, &info[v]);
    if (rc != BPC_OK && !bad++)
      snprintf(msg, cap, "%s: %s: %s", v == 0 ? "overlapped" : "lock-step", bpc_err_name(rc),
               bpc_last_error(ctx));
  }
  unsetenv("BPC_SCAN_OVERLAP");
  if (!bad && kind != SR_AFF)
    bad += sr_check(&P[0], nb, order, seed, 2, mode, with_id, &info[0], msg, cap);
  if (!bad)
    bad += sr_same(&P[0], &P[1], msg, cap);
  if (!bad && (info[0].ops_total != info[1].ops_total ||
               info[0].ops_global != info[1].ops_global ||
               info[0].ops_local != info[1].ops_local || info[0].depth != info[1].depth ||
               info[0].absent_gid != info[1].absent_gid ||
               info[0].absent_index != info[1].absent_index ||
               info[0].strategy != info[1].strategy)) {
    bad++;
    snprintf(msg, cap, "calls %lld/%lld, global %lld/%lld, depth %lld/%lld differ",
             info[0].ops_total, info[1].ops_total, info[0].ops_global, info[1].ops_global,
             info[0].depth, info[1].depth);
  }
  sr_prob_free(&P[0]);
  sr_prob_free(&P[1]);
  return bad;
}

#endif /* BPC_TESTS_COMMON_SCAN_RUN_H */
