/*
 * lib/engines/swap/swap_tuning.c - the tuning file read by "auto".
 *
 * BPC_TUNING_FILE names a text file written by apps/bpc-tune (doc/swap.md).
 * Lines starting with '#' and lines of other engines are ignored; a swap
 * line is
 *     swap <nblocks> <nprocs> <bytes> <commutative 0|1> <algorithm> <kvec|-> [seconds]
 * e.g. "swap 8 8 16777216 0 radixk 4x2 0.0213" (algorithm names are
 * matched case-insensitively, as everywhere). For a call with n blocks on
 * P processes, buffers of B bytes and an operator of given commutativity,
 * the entry chosen has the same n and P, the same commutativity if one
 * exists, and among those the bytes nearest to B on a log scale (ties: the
 * earlier line). Malformed lines are skipped (logged at debug level).
 *
 * The file is read once per context and file name (cached on the context).
 * Every rank reads it itself; if ranks end up with different choices (a
 * rank could not read the file), bpc_swap's argument agreement reports
 * BPC_EMISMATCH on every rank instead of hanging. This is the engine's
 * tuning hook (bpc__engine_swap.tune, called by bpc__algo_pick); a NULL
 * argument (the caller gave a k-vector or a partial swap) means no entry.
 */
#include "engines/swap/swap_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct tune_entry {
  int nblocks, nprocs, commutative, algo, nk;
  unsigned long long bytes;
  int k[BPC_SWAP_MAX_K];
} tune_entry_t;

typedef struct tune_table {
  char path[512];
  tune_entry_t *e;
  int n, cap;
} tune_table_t;

static void table_free(void *arg)
{
  tune_table_t *t = arg;
  if (t != NULL)
    free(t->e);
  free(t);
}

static int parse_kvec(const char *s, int *k, int *nk)
{
  *nk = 0;
  if (strcmp(s, "-") == 0 || strcmp(s, "1") == 0)
    return 0;
  while (*s) {
    char *end;
    long v = strtol(s, &end, 10);
    if (end == s || v < 2 || v > 1 << 30 || *nk >= BPC_SWAP_MAX_K)
      return -1;
    k[(*nk)++] = (int)v;
    if (*end == '\0')
      break;
    if (*end != 'x' && *end != 'X' && *end != ',')
      return -1;
    s = end + 1;
  }
  return 0;
}

static void table_load(bpc_ctx_t *ctx, tune_table_t *t, const char *path)
{
  free(t->e);
  t->e = NULL;
  t->n = t->cap = 0;
  snprintf(t->path, sizeof t->path, "%s", path);
  FILE *f = fopen(path, "r");
  if (f == NULL) {
    bpc__log(ctx, BPC_LOG_WARN, "BPC_TUNING_FILE=%s cannot be read; swap 'auto' uses its "
                                "built-in choice", path);
    return;
  }
  char line[1024];
  int lineno = 0;
  while (fgets(line, sizeof line, f) != NULL) {
    lineno++;
    char eng[32], alg[32], kv[512];
    int nb, np, com;
    unsigned long long bytes;
    if (line[0] == '#' || line[0] == '\n')
      continue;
    if (sscanf(line, "%31s", eng) != 1 || strcmp(eng, "swap") != 0)
      continue;
    if (sscanf(line, "%31s %d %d %llu %d %31s %511s", eng, &nb, &np, &bytes, &com, alg, kv) != 7) {
      bpc__log(ctx, BPC_LOG_DEBUG, "%s:%d: malformed swap line skipped", path, lineno);
      continue;
    }
    tune_entry_t e;
    memset(&e, 0, sizeof e);
    e.nblocks = nb;
    e.nprocs = np;
    e.bytes = bytes;
    e.commutative = com != 0;
    const bpc__algo_t *row = bpc__algo_find(&bpc__engine_swap, alg);
    e.algo = row != NULL ? row->info.id : 0;
    if (e.algo == 0 || parse_kvec(kv, e.k, &e.nk) != 0 ||
        (bpc__swap_row(row)->kvec && bpc__kvec_check(nb, e.k, e.nk, NULL, 0) != BPC_OK)) {
      bpc__log(ctx, BPC_LOG_DEBUG, "%s:%d: bad algorithm or k-vector, line skipped", path,
               lineno);
      continue;
    }
    if (t->n == t->cap) {
      int nc = t->cap ? 2 * t->cap : 16;
      tune_entry_t *ne = realloc(t->e, sizeof *ne * (size_t)nc);
      if (ne == NULL)
        break;
      t->e = ne;
      t->cap = nc;
    }
    t->e[t->n++] = e;
  }
  fclose(f);
}

int bpc__swap_tune(bpc_ctx_t *ctx, void *arg, int *id)
{
  bpc__swap_tune_t *q = arg;
  if (q == NULL)
    return 0;
  const int nblocks = q->nblocks, nprocs = q->nprocs, commutative = q->commutative;
  const size_t bytes = q->bytes;
  const char *path = getenv("BPC_TUNING_FILE");
  if (path == NULL || path[0] == '\0')
    return 0;
  tune_table_t *t = bpc__cleanup_find(ctx, "swap_tuning");
  if (t == NULL) {
    t = bpc__calloc(1, sizeof *t);
    if (t == NULL)
      return 0;
    if (bpc__cleanup_add(ctx, "swap_tuning", table_free, t) != BPC_OK) {
      free(t);
      return 0;
    }
    table_load(ctx, t, path);
  } else if (strcmp(t->path, path) != 0) {
    table_load(ctx, t, path);
  }
  const double b = (double)(bytes > 0 ? bytes : 1);
  int best = -1, best_com = 0;
  double best_d = 0;
  for (int i = 0; i < t->n; i++) {
    const tune_entry_t *e = &t->e[i];
    if (e->nblocks != nblocks || e->nprocs != nprocs)
      continue;
    const int com = e->commutative == (commutative != 0);
    /* distance on a log scale: the ratio of the larger to the smaller */
    const double eb = (double)(e->bytes > 0 ? e->bytes : 1);
    const double d = eb > b ? eb / b : b / eb;
    if (best < 0 || (com && !best_com) || (com == best_com && d < best_d)) {
      best = i;
      best_com = com;
      best_d = d;
    }
  }
  if (best < 0)
    return 0;
  *id = t->e[best].algo;
  q->nk = t->e[best].nk;
  memcpy(q->k, t->e[best].k, sizeof(int) * (size_t)t->e[best].nk);
  return 1;
}
