/*
 * lib/core/registry.c - the algorithm registry (see registry.h): lookup by
 * name or id, the one picker, and the public bpc_algorithms.
 */
#include "core/registry.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Algorithm names match case-insensitively with '-' and '_' alike, so
 * "br-lin" finds br_lin and "kogge_stone" kogge-stone (the broadcast rows
 * keep the s-to-p paper's spelling; see doc/design.md). */
static int name_eq(const char *a, const char *b)
{
  for (;; a++, b++) {
    int x = tolower((unsigned char)*a), y = tolower((unsigned char)*b);
    x = x == '_' ? '-' : x;
    y = y == '_' ? '-' : y;
    if (x != y)
      return 0;
    if (x == '\0')
      return 1;
  }
}

const bpc__algo_t *bpc__algo_find(const bpc__engine_t *e, const char *name)
{
  if (e == NULL || name == NULL)
    return NULL;
  for (int i = 0; i < e->nrows; i++)
    if (name_eq(e->rows[i].info.name, name))
      return &e->rows[i];
  return NULL;
}

const bpc__algo_t *bpc__algo_by_id(const bpc__engine_t *e, int id)
{
  if (e == NULL)
    return NULL;
  for (int i = 0; i < e->nrows; i++)
    if (e->rows[i].info.id == id)
      return &e->rows[i];
  return NULL;
}

const char *bpc__algo_name(const bpc__engine_t *e, int id)
{
  const bpc__algo_t *r = bpc__algo_by_id(e, id);
  return r != NULL ? r->info.name : "?";
}

static int is_auto(const char *s) { return s == NULL || s[0] == '\0' || strcasecmp(s, "auto") == 0; }

static int unknown(bpc_ctx_t *ctx, const bpc__engine_t *e, const char *name, const char *from)
{
  char known[256];
  size_t n = (size_t)snprintf(known, sizeof known, "auto");
  for (int i = 0; i < e->nrows && n < sizeof known; i++)
    n += (size_t)snprintf(known + n, sizeof known - n, " %s", e->rows[i].info.name);
  return bpc__err(ctx, BPC_EALGO, "%s: unknown algorithm '%s' (%s); known: %s", e->name, name,
                  from, known);
}

int bpc__algo_pick(bpc_ctx_t *ctx, const bpc__engine_t *e, const char *arg, void *tune_arg,
                   const bpc__algo_t **row, bpc_algo_source_t *source)
{
  *row = NULL;
  *source = BPC_SOURCE_BUILTIN;
  if (!is_auto(arg)) {
    *row = bpc__algo_find(e, arg);
    *source = BPC_SOURCE_ARGUMENT;
    return *row != NULL ? BPC_OK : unknown(ctx, e, arg, "argument");
  }
  const char *env = e->env != NULL ? getenv(e->env) : NULL;
  if (!is_auto(env)) {
    *row = bpc__algo_find(e, env);
    *source = BPC_SOURCE_ENV;
    return *row != NULL ? BPC_OK : unknown(ctx, e, env, e->env);
  }
  int id = 0;
  if (e->tune != NULL && e->tune(ctx, tune_arg, &id)) {
    *row = bpc__algo_by_id(e, id);
    if (*row != NULL) {
      *source = BPC_SOURCE_TUNING;
      return BPC_OK;
    }
  }
  return BPC_OK;
}

int bpc__algo_table(const bpc__engine_t *e, bpc_algo_info_t *table, int cap, int *n)
{
  if (n == NULL || (table == NULL && cap > 0))
    return BPC_ENULL;
  *n = e->nrows;
  for (int i = 0; i < cap && i < e->nrows; i++)
    table[i] = e->rows[i].info;
  if (table == NULL && cap == 0)
    return BPC_OK;
  return cap < e->nrows ? BPC_ERANGE : BPC_OK;
}

int bpc_algorithms(const char *engine, bpc_algo_info_t *table, int cap, int *n)
{
  if (engine == NULL || n == NULL || (table == NULL && cap > 0))
    return BPC_ENULL;
  for (int i = 0; i < bpc__nengines; i++)
    if (strcasecmp(bpc__engines[i]->name, engine) == 0)
      return bpc__algo_table(bpc__engines[i], table, cap, n);
  *n = 0;
  return BPC_ENOTFOUND;
}
