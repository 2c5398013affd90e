/*
 * lib/engines/bcast/bcast_cache.c - auto's decision cache on the context
 * and the auto pick that consults it before the cost model.
 */
#include "engines/bcast/bcast_internal.h"

#include <stdlib.h>
#include <string.h>

#include "comm/coll.h"

/*
 * auto's decision cache (doc/bcast.md "Choosing"): the last BC_CACHE_N
 * decisions of the cost model on this context, least recently used out.
 * The key is the call's agreed signature (every field: algorithm, block
 * count, assignment, mesh, flags, number of sources and their list's
 * hash, type, alpha, beta, and the largest item rounded as the model
 * takes it, bpc__bcast_model_L) with the process count and a copy of the
 * source list, so every rank hits or misses alike and a hit returns what
 * the model would return.
 */

/* Empty every entry (all ranks at once: after an agreed failure). */
void bpc__bcast_cache_clear(bcast_cache_t *c)
{
  for (int i = 0; c != NULL && i < BC_CACHE_N; i++) {
    free(c->e[i].sources);
    bpc__bcast_plan_free(&c->e[i].plan);
    memset(&c->e[i], 0, sizeof c->e[i]);
  }
}

static void bcast_cache_free(void *arg)
{
  bpc__bcast_cache_clear(arg);
  free(arg);
}

/* The context's cache, made on first use (NULL when out of memory: an
 * error of the call, agreed before auto looks at it, so that every rank
 * has one and hits and misses alike). */
bcast_cache_t *bpc__bcast_cache_get(bpc_ctx_t *ctx)
{
  bcast_cache_t *c = bpc__cleanup_find(ctx, "bcast_auto");
  if (c == NULL) {
    c = bpc__calloc(1, sizeof *c);
    if (c != NULL && bpc__cleanup_add(ctx, "bcast_auto", bcast_cache_free, c) != BPC_OK) {
      free(c);
      c = NULL;
    }
  }
  return c;
}

/* The key of a call: the agreed signature values, the process count. */
static int bcast_key(const bpc_ctx_t *ctx, const bpc__sig_t *sig, const long long *vals,
                     long long Lq, long long *key)
{
  int n = 0;
  for (int i = 0; i < sig->n; i++)
    key[n++] = sig->kind[i] == BPC__SIG_MAXED ? Lq : vals[i];
  key[n++] = ctx->size;
  return n;
}

static bcast_choice_t *bcast_lookup(bcast_cache_t *c, const long long *key, int nk,
                                    const int *sources, int s)
{
  for (int i = 0; i < BC_CACHE_N; i++) {
    bcast_choice_t *e = &c->e[i];
    if (e->used != 0 && e->nk == nk && e->s == s &&
        memcmp(e->key, key, sizeof(long long) * (size_t)nk) == 0 &&
        (s == 0 || memcmp(e->sources, sources, sizeof(int) * (size_t)s) == 0))
      return e;
  }
  return NULL;
}

static bcast_choice_t *bcast_store(bcast_cache_t *c, const long long *key, int nk,
                                   const int *sources, int s, int row, int rep, int part)
{
  bcast_choice_t *e = &c->e[0];
  for (int i = 1; i < BC_CACHE_N; i++)
    if (c->e[i].used < e->used)
      e = &c->e[i];
  int *copy = malloc(sizeof(int) * (size_t)(s > 0 ? s : 1));
  if (copy == NULL)
    return NULL; /* not cached: the next call runs the model again */
  if (s > 0)
    memcpy(copy, sources, sizeof(int) * (size_t)s);
  free(e->sources);
  bpc__bcast_plan_free(&e->plan);
  e->nsteps = 0;
  e->sources = copy;
  e->s = s;
  e->nk = nk;
  memcpy(e->key, key, sizeof(long long) * (size_t)nk);
  e->row = row;
  e->reposition = rep;
  e->partition = part;
  e->used = ++c->tick;
  return e;
}

int bpc__bcast_cache(bpc_ctx_t *ctx, int off, long long *hits, long long *misses)
{
  bcast_cache_t *c = bpc__bcast_cache_get(ctx);
  if (c == NULL)
    return BPC_ENOMEM;
  if (off >= 0)
    c->off = off != 0;
  if (hits != NULL)
    *hits = c->hits;
  if (misses != NULL)
    *misses = c->misses;
  return BPC_OK;
}

/* auto: the cheapest row and flags by the model, from the cache when the
 * same agreed inputs were seen; *ce: the cache entry (NULL: cache off). */
int bpc__bcast_auto(bpc__bcast_call_t *C, const bpc__sig_t *sig, const long long *vals, long long L,
                    const bpc__algo_t **row, bcast_choice_t **ce)
{
  *ce = NULL;
  const long long Lq = bpc__bcast_model_L(L);
  long long key[BPC__SIG_MAX + 1];
  const int nk = bcast_key(C->ctx, sig, vals, Lq, key);
  bcast_cache_t *c = bpc__bcast_cache_get(C->ctx); /* made before the call's agreement */
  bcast_choice_t *e = !c->off ? bcast_lookup(c, key, nk, C->ids, C->s) : NULL;
  if (e != NULL) {
    c->hits++;
    e->used = ++c->tick;
    *row = &bpc__engine_bcast.rows[e->row];
    C->reposition = e->reposition;
    C->partition = e->partition;
    *ce = e;
    return BPC_OK;
  }
  /* a miss (the same on every rank: the caches hold the same entries, see
   * bcast_entry) */
  int rep = 0, part = 0;
  int rc = bpc__bcast_ranks(C);
  if (rc == BPC_OK)
    rc = bpc__bcast_choose(C, (double)Lq, row, &rep, &part, NULL);
  if (rc != BPC_OK)
    rc = bpc__err(C->ctx, rc, "bpc_bcast: out of memory in auto's cost model");
  /* agreed: a rank whose model failed knows no row, while the others' may
   * be "mpi", whose collectives no abort message can stop */
  rc = bpc__agree(C->ctx, rc);
  if (rc != BPC_OK) {
    *row = NULL;
    return rc;
  }
  C->reposition = rep;
  C->partition = part;
  c->misses++;
  if (!c->off) {
    *ce = bcast_store(c, key, nk, C->ids, C->s, (int)(*row - bpc__engine_bcast.rows), rep, part);
    if (*ce == NULL) /* the row is known: the call fails as any other would */
      return bpc__err(C->ctx, BPC_ENOMEM, "bpc_bcast: no memory to cache auto's choice");
  }
  return BPC_OK;
}
