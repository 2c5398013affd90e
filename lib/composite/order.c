/*
 * lib/composite/order.c - visibility orders of a regular block grid from a
 * view (bpc_composite_order_view): blocks sorted by their distance in
 * blocks from the eye's slab (perspective) or along the viewing direction
 * (orthographic), ties by gid.
 */
#include "composite/composite_internal.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>

typedef struct {
  long long key;
  int gid;
} okey_t;

static int okey_cmp(const void *x, const void *y)
{
  const okey_t *a = x, *b = y;
  if (a->key != b->key)
    return a->key < b->key ? -1 : 1;
  return a->gid < b->gid ? -1 : (a->gid > b->gid);
}

int bpc_composite_order_view(int dim, const int *divs, const double *dir, const double *eye,
                             int back_to_front, int *order)
{
  if (divs == NULL || order == NULL || (dir == NULL && eye == NULL))
    return BPC_ENULL;
  if (dim < 1 || dim > BPC_MAX_DIM)
    return BPC_EINVAL;
  long long n = 1;
  for (int a = 0; a < dim; a++) {
    if (divs[a] < 1)
      return BPC_EINVAL;
    n *= divs[a];
    if (n > INT_MAX)
      return BPC_EINVAL;
  }
  okey_t *k = malloc(sizeof *k * (size_t)n);
  if (k == NULL)
    return BPC_ENOMEM;
  for (int g = 0; g < (int)n; g++) {
    int rest = g;
    long long key = 0;
    for (int a = 0; a < dim; a++) {
      const int c = rest % divs[a];
      rest /= divs[a];
      if (eye != NULL) {
        /* the eye's slab along this axis (may lie outside the grid) */
        const double e = floor(eye[a]);
        const double d = fabs((double)c - (e < -1.0 ? -1.0 : e > divs[a] ? divs[a] : e));
        key += (long long)d;
      } else if (dir[a] > 0.0) {
        key += c;
      } else if (dir[a] < 0.0) {
        key += divs[a] - 1 - c;
      }
    }
    k[g].key = key;
    k[g].gid = g;
  }
  qsort(k, (size_t)n, sizeof *k, okey_cmp);
  for (int i = 0; i < (int)n; i++)
    order[back_to_front ? (int)n - 1 - i : i] = k[i].gid;
  free(k);
  return BPC_OK;
}
