/*
 * tests/common/bcast_run.h - one s-to-p broadcast call checked against
 * its serial reference, for the serial and the MPI suites: source g's item
 * is item_len(g, salt) ints g * 1000 + i (contiguous) or the same length of
 * letters (custom: strings with their own pack/unpack, a variable-size
 * type); lengths include 0 (empty items). Every local block must get
 * exactly the s items, in ascending source order, with their content.
 */
#ifndef BPC_TESTS_COMMON_BCAST_RUN_H
#define BPC_TESTS_COMMON_BCAST_RUN_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bpc.h"
#include "str_type.h"

static inline int br_item_len(int g, int salt)
{
  uint32_t h = (uint32_t)g * 2654435761u ^ (uint32_t)salt * 40503u;
  h ^= h >> 13;
  h *= 0x5bd1e995u;
  h ^= h >> 15;
  if (h % 5u == 0)
    return 0;
  return (int)(h % 97u);
}

typedef struct br_ud {
  int salt, custom, s, fail_rank_local; /* fail_rank_local: this rank's recv fails */
  const int *sources;
  const int *gids;
  int nl;
  int *pos;  /* per local block: next expected source index */
  int bad;
  char why[256];
  bpc_buf_t *bufs; /* per gid (sources only) */
  char **strs;
} br_ud_t;

static inline void br_bad(br_ud_t *u, const char *what, int dst, int src)
{
  if (u->bad++ == 0)
    snprintf(u->why, sizeof u->why, "%s (block %d, source %d)", what, dst, src);
}

static int br_item(int src, const void **item, void *user)
{
  br_ud_t *u = user;
  *item = u->custom ? (const void *)u->strs[src] : (const void *)&u->bufs[src];
  return 0;
}

static int br_recv(int dst, int src, void *item, void *user)
{
  br_ud_t *u = user;
  if (u->fail_rank_local)
    return 3;
  int l = -1;
  for (int i = 0; i < u->nl; i++)
    if (u->gids[i] == dst)
      l = i;
  if (l < 0) {
    br_bad(u, "not a local block", dst, src);
    return 0;
  }
  if (u->pos[l] >= u->s || u->sources[u->pos[l]] != src) {
    br_bad(u, "unexpected source or order", dst, src);
    return 0;
  }
  u->pos[l]++;
  const int len = br_item_len(src, u->salt);
  if (u->custom) {
    const char *s = item;
    if ((int)strlen(s) != len)
      br_bad(u, "string length", dst, src);
    else
      for (int i = 0; i < len; i++)
        if (s[i] != 'a' + (src + i) % 26) {
          br_bad(u, "string content", dst, src);
          break;
        }
  } else {
    const bpc_buf_t *b = item;
    if (b->count != (size_t)len)
      br_bad(u, "item count", dst, src);
    else
      for (int i = 0; i < len; i++)
        if (((const int *)b->data)[i] != src * 1000 + i) {
          br_bad(u, "item content", dst, src);
          break;
        }
  }
  return 0;
}

/*
 * Run bpc_bcast on `a` with the given sources, algorithm and mesh
 * (rows = cols = 0: automatic), repositioning or not, and check every delivery. Returns the call's
 * code; *bad gets the number of wrong deliveries (and missing ones), why a
 * description of the first.
 */
static inline int br_run(bpc_ctx_t *ctx, const bpc_assign_t *a, const int *sources, int s,
                         const char *algo, int rows, int cols, int custom, int salt, int fail_here,
                         int reposition,
                         int *bad, char *why, size_t whylen, bpc_bcast_info_t *info)
{
  int n = 0;
  bpc_assign_nblocks(a, &n);
  br_ud_t u;
  memset(&u, 0, sizeof u);
  u.salt = salt;
  u.custom = custom;
  u.s = s;
  u.sources = sources;
  u.fail_rank_local = fail_here;
  bpc_assign_local(a, &u.gids, &u.nl);
  u.pos = calloc((size_t)u.nl + 1, sizeof(int));
  u.bufs = calloc((size_t)n + 1, sizeof *u.bufs);
  u.strs = calloc((size_t)n + 1, sizeof *u.strs);
  for (int i = 0; i < s; i++) {
    const int g = sources[i], len = br_item_len(g, salt);
    int *v = malloc(sizeof(int) * (size_t)(len + 1));
    char *str = malloc((size_t)len + 1);
    for (int e = 0; e < len; e++) {
      v[e] = g * 1000 + e;
      str[e] = (char)('a' + (g + e) % 26);
    }
    str[len] = '\0';
    u.bufs[g].data = v;
    u.bufs[g].count = (size_t)len;
    u.strs[g] = str;
  }
  bpc_type_ops_t ops = str_ops();
  bpc_type_t t = custom ? bpc_type_custom(&ops, NULL) : bpc_type_contiguous(sizeof(int), MPI_INT);
  bpc_bcast_params_t P = bpc_bcast_params_default();
  P.algorithm = algo;
  P.rows = rows;
  P.cols = cols;
  P.reposition = reposition & 1; /* bit 0: reposition, bit 1: partition */
  P.partition = (reposition >> 1) & 1;
  int rc = bpc_bcast(ctx, a, &t, sources, s, br_item, br_recv, &u, &P, info);
  if (rc == BPC_OK)
    for (int l = 0; l < u.nl; l++)
      if (u.pos[l] != s) {
        char w[64];
        snprintf(w, sizeof w, "got %d of %d items", u.pos[l], s);
        br_bad(&u, w, u.gids[l], -1);
      }
  *bad = u.bad;
  snprintf(why, whylen, "%s", u.why);
  for (int g = 0; g < n; g++) {
    free(u.bufs[g].data);
    free(u.strs[g]);
  }
  free(u.bufs);
  free(u.strs);
  free(u.pos);
  return rc;
}

#endif /* BPC_TESTS_COMMON_BCAST_RUN_H */
