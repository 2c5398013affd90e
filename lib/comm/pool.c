/*
 * lib/comm/pool.c - receive and scratch buffers reused across rounds and
 * calls. Buffers come in power-of-two size classes (64 B .. 2^47 B), are
 * 64-byte aligned, and are kept on a free list per class after use, up to
 * ctx->pool_bytes in all (BPC_POOL_BYTES); beyond that they are freed. A
 * reused buffer has its pages already mapped, so a 16 MiB receive does not
 * pay 4096 page faults again. Thread-safe (an OpenMP critical section).
 * The pool hangs off the context and is freed by bpc_finalize.
 */
#include "comm/comm.h"

#include <stdlib.h>

#define POOL_CLASSES 42
#define POOL_MIN_SHIFT 6

/* A free buffer's list node is the buffer's first bytes; in the simulated
 * build (BPC_SMPI) a node of its own, since a large buffer there may be one
 * memory shared by all simulated ranks (bpc-smpirun --shared), whose first
 * bytes any of them may overwrite. Those nodes are kept on a spare list
 * when their buffer is taken, so a round allocates none once warm. */
typedef struct pool_node {
  struct pool_node *next;
#ifdef BPC_SMPI
  void *buf;
#endif
} pool_node_t;

typedef struct bpc__pool {
  pool_node_t *free[POOL_CLASSES];
  long long cached; /* bytes on the free lists */
  long long limit;
#ifdef BPC_SMPI
  pool_node_t *spare; /* nodes without a buffer */
#endif
} bpc__pool_t;

/* The buffer of node n, taken off its list (in the critical section). */
static void *node_buf(bpc__pool_t *p, pool_node_t *n)
{
#ifdef BPC_SMPI
  void *buf = n->buf;
  n->next = p->spare;
  p->spare = n;
  return buf;
#else
  (void)p;
  return n;
#endif
}

/* A node for buf (in the critical section); NULL when none can be had. */
static pool_node_t *buf_node(bpc__pool_t *p, void *buf)
{
#ifdef BPC_SMPI
  pool_node_t *n = p->spare;
  if (n != NULL)
    p->spare = n->next;
  else
    n = malloc(sizeof *n);
  if (n != NULL)
    n->buf = buf;
  return n;
#else
  (void)p;
  return buf;
#endif
}

static void pool_destroy(void *arg)
{
  bpc__pool_t *p = arg;
  for (int c = 0; c < POOL_CLASSES; c++) {
    while (p->free[c]) {
      pool_node_t *n = p->free[c];
      p->free[c] = n->next;
      free(node_buf(p, n));
    }
  }
#ifdef BPC_SMPI
  while (p->spare) {
    pool_node_t *n = p->spare;
    p->spare = n->next;
    free(n);
  }
#endif
  free(p);
}

static bpc__pool_t *pool_of(bpc_ctx_t *ctx)
{
  bpc__pool_t *p = bpc__cleanup_find(ctx, "pool");
  if (p != NULL)
    return p;
#pragma omp critical(bpc_pool)
  {
    p = bpc__cleanup_find(ctx, "pool");
    if (p == NULL) {
      p = bpc__calloc(1, sizeof *p);
      if (p != NULL) {
        p->limit = ctx->pool_bytes;
        if (bpc__cleanup_add(ctx, "pool", pool_destroy, p) != BPC_OK) {
          free(p);
          p = NULL;
        }
      }
    }
  }
  return p;
}

static int size_class(size_t bytes, size_t *cap)
{
  int c = 0;
  size_t s = (size_t)1 << POOL_MIN_SHIFT;
  while (s < bytes && c < POOL_CLASSES - 1) {
    s <<= 1;
    c++;
  }
  if (s < bytes)
    return -1;
  *cap = s;
  return c;
}

void *bpc__pool_get(bpc_ctx_t *ctx, size_t bytes, size_t *cap)
{
  size_t c_cap = 0;
  int c = size_class(bytes, &c_cap);
  if (c < 0)
    return NULL;
  bpc__pool_t *p = pool_of(ctx);
  void *buf = NULL;
  if (p != NULL) {
#pragma omp critical(bpc_pool)
    {
      if (p->free[c] != NULL) {
        pool_node_t *n = p->free[c];
        p->free[c] = n->next;
        p->cached -= (long long)c_cap;
        buf = node_buf(p, n);
      }
    }
  }
  if (buf == NULL) {
#ifdef BPC_SMPI
    /* smpicc turns malloc into SMPI's, which shares large buffers among
     * the simulated ranks when asked to (bpc-smpirun --shared); its
     * buffers are aligned to 16 bytes, pages when shared. (With
     * aligned_alloc here instead, the charged time of bpc-bench merge's
     * MPI_Reduce baseline rose from 8.4 to 11.2 ms at 8 x 16 MiB: glibc's
     * allocation policy reaches SMPI's own buffers; doc/scale.md's
     * figures were measured with malloc.) */
    buf = malloc(c_cap);
#else
    buf = aligned_alloc(64, c_cap);
#endif
  }
  if (buf != NULL && cap != NULL)
    *cap = c_cap;
  return buf;
}

void bpc__pool_trim(bpc_ctx_t *ctx)
{
  bpc__pool_t *p = bpc__cleanup_find(ctx, "pool");
  if (p == NULL)
    return;
  for (int c = 0; c < POOL_CLASSES; c++) {
    while (p->free[c]) {
      pool_node_t *n = p->free[c];
      p->free[c] = n->next;
      free(node_buf(p, n));
    }
  }
  p->cached = 0;
}

size_t bpc__pool_class(size_t bytes)
{
  size_t cap = 0;
  return size_class(bytes, &cap) < 0 ? 0 : cap;
}

void bpc__pool_reserve(bpc_ctx_t *ctx, size_t bytes, int count)
{
  size_t c_cap = 0;
  const int c = size_class(bytes, &c_cap);
  bpc__pool_t *p = c >= 0 ? pool_of(ctx) : NULL;
  if (p == NULL)
    return;
  int have = 0;
#pragma omp critical(bpc_pool)
  for (pool_node_t *n = p->free[c]; n != NULL && have < count; n = n->next)
    have++;
  for (; have < count && p->cached + (long long)c_cap <= p->limit; have++) {
    size_t cap = 0;
    void *buf = NULL;
#ifdef BPC_SMPI
    buf = malloc(c_cap);
#else
    buf = aligned_alloc(64, c_cap);
#endif
    if (buf == NULL)
      return;
    cap = c_cap;
    bpc__pool_put(ctx, buf, cap);
  }
}

void bpc__pool_put(bpc_ctx_t *ctx, void *buf, size_t cap)
{
  if (buf == NULL)
    return;
  size_t c_cap = 0;
  int c = size_class(cap, &c_cap);
  bpc__pool_t *p = pool_of(ctx);
  int kept = 0;
  if (p != NULL && c >= 0 && c_cap == cap) {
#pragma omp critical(bpc_pool)
    {
      pool_node_t *n = p->cached + (long long)cap <= p->limit ? buf_node(p, buf) : NULL;
      if (n != NULL) {
        n->next = p->free[c];
        p->free[c] = n;
        p->cached += (long long)cap;
        kept = 1;
      }
    }
  }
  if (!kept)
    free(buf);
}
