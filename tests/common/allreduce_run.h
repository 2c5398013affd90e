/*
 * tests/common/allreduce_run.h - shared by the all-reduce suites (serial
 * and MPI): one case runs bpc_allreduce on this rank's blocks and checks
 * every block's item against a serial reference made here in position
 * order: 2x2 uint32 matrix products (not commutative, exact), float sums
 * with bpc's built-in "sum" (every block must get the same bits), and
 * custom lists concatenated in place (not commutative; every item
 * non-NULL, some empty). Uses the item makers of merge_items.h.
 */
#ifndef BPC_TESTS_ALLREDUCE_RUN_H
#define BPC_TESTS_ALLREDUCE_RUN_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bpc.h"
#ifndef MI_CHECK /* merge_items.h's order maker sits in its checked part */
#define MI_CHECK(cond, ...) ((void)(cond))
#endif
#include "merge_items.h"

enum { AR_MAT = 0, AR_SUM = 1, AR_CAT = 2, AR_NKINDS = 3 };
static const char *const ar_kind_name[AR_NKINDS] __attribute__((unused)) = {"mat", "sum", "cat"};

typedef struct ar_case {
  int n;                  /* blocks */
  bpc_assign_mode_t mode; /* contiguous or round-robin */
  int kind;               /* AR_MAT, AR_SUM, AR_CAT */
  size_t count;           /* elements (mat, sum) */
  const char *algo;       /* NULL: auto */
  int order;              /* 0 identity, 1 reversed, 2 shuffled (mi_make_order) */
  int nthreads;
} ar_case_t;

/* Run one case; returns the number of wrong blocks (the first described in
 * why) or -1 with *rc set when the call failed; info out. */
static inline int ar_run(bpc_ctx_t *ctx, const ar_case_t *c, int *rc, bpc_allreduce_info_t *info,
                         char *why, size_t wlen)
{
  bpc_assign_t *a = NULL;
  *rc = bpc_assign_create(ctx, c->n, c->mode, NULL, &a);
  if (*rc != BPC_OK) {
    snprintf(why, wlen, "assign: %s", bpc_last_error(ctx));
    return -1;
  }
  const int *gids = NULL;
  int nl = 0;
  bpc_assign_local(a, &gids, &nl);
  int *order = malloc(sizeof(int) * (size_t)c->n);
  mi_make_order(c->n, c->order, order);
  const int custom = c->kind == AR_CAT;
  mi_no_null = custom;
  void *items = mi_make_items(c->kind == AR_MAT   ? MI_MAT
                              : c->kind == AR_SUM ? MI_SUM
                                                  : MI_CAT,
                              gids, nl, c->count);
  mi_user_t u;
  memset(&u, 0, sizeof u);
  u.fail_gid = -1;
  bpc_type_t ft = bpc_type_contiguous(sizeof(float), MPI_FLOAT);
  bpc_type_t mt = bpc_type_contiguous(sizeof(mi_mat_t), MPI_BYTE);
  bpc_type_t lt = mi_list_type(&u);
  const bpc_type_t *type = c->kind == AR_MAT ? &mt : c->kind == AR_SUM ? &ft : &lt;
  bpc_op_t op = {NULL, 0, NULL};
  if (c->kind == AR_SUM)
    bpc_op_builtin("sum", MPI_FLOAT, &op);
  else
    op.fn = c->kind == AR_MAT ? mi_op_mat : mi_op_cat;
  bpc_allreduce_params_t p = bpc_allreduce_params_default();
  p.algorithm = c->algo;
  p.order = c->order ? order : NULL;
  p.nthreads = c->nthreads;
  *rc = bpc_allreduce(ctx, a, type, items, &op, &p, info);
  int bad = 0;
  if (*rc != BPC_OK) {
    snprintf(why, wlen, "%s", bpc_last_error(ctx));
    bad = -1;
  }
  for (int i = 0; i < nl && bad >= 0; i++) {
    int ok = 1;
    if (c->kind == AR_MAT) {
      const bpc_buf_t *b = &((const bpc_buf_t *)items)[i];
      for (size_t e = 0; e < c->count && ok; e++) {
        mi_mat_t ref = mi_mval(order[0], e);
        for (int q = 1; q < c->n; q++)
          ref = mi_mmul(ref, mi_mval(c->order ? order[q] : q, e));
        ok = memcmp(&((const mi_mat_t *)b->data)[e], &ref, sizeof ref) == 0;
      }
    } else if (c->kind == AR_SUM) {
      /* small integers: exact in any association; every block the same */
      const bpc_buf_t *b = &((const bpc_buf_t *)items)[i];
      for (size_t e = 0; e < c->count && ok; e++) {
        float ref = 0.0f;
        for (int g = 0; g < c->n; g++)
          ref += mi_fval(g, e);
        ok = ((const float *)b->data)[e] == ref;
      }
    } else {
      const mi_list_t *l = ((void *const *)items)[i];
      size_t w = 0;
      for (int q = 0; q < c->n && ok; q++) {
        const int g = c->order ? order[q] : q;
        for (long j = 0; j < mi_llen(g) && ok; j++, w++)
          ok = l != NULL && w < l->n && l->v[w] == mi_lval(g, (size_t)j);
      }
      ok = ok && l != NULL && l->n == w;
    }
    if (!ok && bad++ == 0)
      snprintf(why, wlen, "gid %d holds a wrong result", gids[i]);
  }
  mi_free_items(c->kind == AR_MAT ? MI_MAT : c->kind == AR_SUM ? MI_SUM : MI_CAT, items, nl);
  mi_no_null = 0;
  free(order);
  bpc_assign_destroy(&a);
  return bad;
}

#endif /* BPC_TESTS_ALLREDUCE_RUN_H */
