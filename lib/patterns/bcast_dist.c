/*
 * lib/patterns/bcast_dist.c - source distributions for the s-to-p
 * broadcast (row, column, equal, diagonals, band, cross, square block,
 * random): pure functions, see patterns.h.
 */
#include "patterns/patterns.h"

#include "bpc/core.h"

#include <stdlib.h>

static const char *const bd_names[BPC__BDIST_COUNT] = {
    "row", "col", "equal", "rdiag", "ldiag", "band", "cross", "block", "random"};

const char *bpc__bcast_dist_name(int kind)
{
  return kind >= 0 && kind < BPC__BDIST_COUNT ? bd_names[kind] : "?";
}

typedef struct bd {
  unsigned char *mark;
  int got, s;
} bd_t;

static void bd_take(bd_t *B, int gid)
{
  if (B->got < B->s && !B->mark[gid]) {
    B->mark[gid] = 1;
    B->got++;
  }
}

static int ceil_div(int a, int b) { return (a + b - 1) / b; }

int bpc__bcast_dist(int kind, int rows, int cols, int s, unsigned seed, int *out)
{
  if (rows < 1 || cols < 1 || (long long)rows * cols > (1 << 30) || kind < 0 ||
      kind >= BPC__BDIST_COUNT)
    return BPC_EINVAL;
  const int p = rows * cols;
  if (s < 0 || s > p)
    return BPC_EINVAL;
  if (out == NULL && s > 0)
    return BPC_ENULL;
  bd_t B = {calloc((size_t)p, 1), 0, s};
  if (B.mark == NULL)
    return BPC_ENOMEM;
  switch (kind) {
  case BPC__BDIST_ROW:
  case BPC__BDIST_COL: {
    const int len = kind == BPC__BDIST_ROW ? cols : rows, nl = kind == BPC__BDIST_ROW ? rows : cols;
    const int need = s > 0 ? ceil_div(s, len) : 0;
    for (int k = 0; k < need; k++) {
      const int l = (int)((long long)k * nl / need);
      for (int j = 0; j < len; j++)
        bd_take(&B, kind == BPC__BDIST_ROW ? l * cols + j : j * cols + l);
    }
    break;
  }
  case BPC__BDIST_EQUAL:
    for (int k = 0; k < s; k++)
      bd_take(&B, (int)((long long)k * p / s));
    break;
  case BPC__BDIST_RDIAG:
  case BPC__BDIST_LDIAG:
  case BPC__BDIST_BAND: {
    const int nd = s > 0 ? ceil_div(s, rows) : 0;
    int w = 1;
    if (kind == BPC__BDIST_BAND)
      while (w * w < nd)
        w++;
    const int nb = nd > 0 ? ceil_div(nd, w) : 0;
    for (int b = 0; b < nb; b++) {
      const int d0 = (int)((long long)b * cols / nb);
      for (int j = 0; j < w; j++)
        for (int i = 0; i < rows; i++) {
          const int c = kind == BPC__BDIST_LDIAG ? ((cols - 1 - i - d0 - j) % cols + cols) % cols
                                                 : (i + d0 + j) % cols;
          bd_take(&B, i * cols + c);
        }
    }
    break;
  }
  case BPC__BDIST_CROSS: {
    const int half = ceil_div(s, 2);
    const int nr = half > 0 ? ceil_div(half, cols) : 0, nc = half > 0 ? ceil_div(half, rows) : 0;
    const int m = nr * cols > nc * rows ? nr * cols : nc * rows;
    for (int k = 0; k < m && B.got < s; k++) {
      if (k < nr * cols) {
        const int l = (int)((long long)(k / cols) * rows / nr + rows / (2 * nr));
        bd_take(&B, (l < rows ? l : rows - 1) * cols + k % cols);
      }
      if (k < nc * rows) {
        const int l = (int)((long long)(k / rows) * cols / nc + cols / (2 * nc));
        bd_take(&B, (k % rows) * cols + (l < cols ? l : cols - 1));
      }
    }
    break;
  }
  case BPC__BDIST_BLOCK: {
    int e = 0;
    while (e * e < s)
      e++;
    const int er = e < rows ? e : rows, ec = e < cols ? e : cols;
    for (int i = 0; i < er; i++)
      for (int j = 0; j < ec; j++)
        bd_take(&B, i * cols + j);
    break;
  }
  case BPC__BDIST_RANDOM: {
    unsigned x = seed * 2654435761u + 0x9e3779b9u;
    if (x == 0)
      x = 1;
    while (B.got < s) {
      x ^= x << 13;
      x ^= x >> 17;
      x ^= x << 5;
      bd_take(&B, (int)(x % (unsigned)p));
    }
    break;
  }
  }
  for (int g = 0; g < p && B.got < s; g++)
    bd_take(&B, g);
  int n = 0;
  for (int g = 0; g < p; g++)
    if (B.mark[g])
      out[n++] = g;
  free(B.mark);
  return BPC_OK;
}
