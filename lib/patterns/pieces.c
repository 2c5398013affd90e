/*
 * lib/patterns/pieces.c - piece ranges of a divisible buffer (flat and
 * radix-k nested splits), ring partners, and permutation (order) checks.
 *
 * Piece i of k over `count` elements is [floor(i*count/k),
 * floor((i+1)*count/k)). With q = count / k and m = count % k,
 * floor(i*count/k) = i*q + floor(i*m/k), and i*m < k*k < 2^62, so the
 * boundaries are exact for every count in [0, INT64_MAX] without 128-bit
 * arithmetic. Piece sizes are q or q+1.
 */
#include "patterns/patterns.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bpc/core.h"

/* floor(i*count/k) for 0 <= i <= k, count >= 0, k >= 1. */
static int64_t piece_start(int64_t count, int k, int64_t i)
{
  int64_t q = count / k, m = count % k;
  return i * q + (i * m) / k;
}

void bpc__piece_range(int64_t count, int k, int i, int64_t *off, int64_t *len)
{
  int64_t a = 0, b = 0;
  if (count >= 0 && k >= 1 && i >= 0 && i < k) {
    a = piece_start(count, k, i);
    b = piece_start(count, k, (int64_t)i + 1);
  }
  if (off != NULL)
    *off = a;
  if (len != NULL)
    *len = b - a;
}

int bpc__piece_of(int64_t count, int k, int64_t e)
{
  if (count <= 0 || k < 1 || e < 0 || e >= count)
    return -1;
  /* Largest i in [0, k) with piece_start(i) <= e; piece_start is
   * nondecreasing and piece_start(0) = 0 <= e. That piece is nonempty. */
  int lo = 0, hi = k - 1;
  while (lo < hi) {
    int mid = lo + (hi - lo + 1) / 2;
    if (piece_start(count, k, mid) <= e)
      lo = mid;
    else
      hi = mid - 1;
  }
  return lo;
}

void bpc__flat_piece(size_t count, int n, int p, size_t *off, size_t *len)
{
  int64_t o = 0, l = 0;
  bpc__piece_range(count > (size_t)INT64_MAX ? -1 : (int64_t)count, n, p, &o, &l);
  *off = (size_t)o;
  *len = (size_t)l;
}

void bpc__radixk_piece(const bpc__rounds_t *R, int rounds, size_t count, int p, size_t *off,
                       size_t *len)
{
  size_t lo = 0, n = count;
  if (R == NULL || rounds < 0 || rounds > R->nrounds || p < 0 || p >= R->n) {
    *off = *len = 0;
    return;
  }
  for (int r = 0; r < rounds; r++) {
    size_t o = 0, l = 0;
    bpc__flat_piece(n, R->k[r], bpc__round_index(R, r, p), &o, &l);
    lo += o;
    n = l;
  }
  *off = lo;
  *len = n;
}

int bpc__ring_pos(int n, int p, int d)
{
  if (n < 1 || p < 0 || p >= n)
    return -1;
  const long long q = ((long long)p + d) % n;
  return (int)(q < 0 ? q + n : q);
}

#define PERM_MSG(msg, msglen, ...)               \
  do {                                           \
    if ((msg) != NULL && (msglen) > 0)           \
      snprintf((msg), (msglen), __VA_ARGS__);    \
  } while (0)

/* Bitmaps up to this many bits live on the stack; larger ones are malloc'd
 * for the duration of the call. */
#define PERM_STACK_BITS 65536

int bpc__perm_check(const int *order, int n, char *msg, size_t msglen)
{
  unsigned char stackbits[PERM_STACK_BITS / 8];
  unsigned char *seen = NULL;
  int rc = BPC_OK;

  if (msg != NULL && msglen > 0)
    msg[0] = '\0';
  if (n < 0) {
    PERM_MSG(msg, msglen, "order has negative length %d", n);
    rc = BPC_EINVAL;
    goto cleanup;
  }
  if (n == 0)
    goto cleanup;
  if (order == NULL) {
    PERM_MSG(msg, msglen, "order is NULL but has %d entries", n);
    rc = BPC_ENULL;
    goto cleanup;
  }
  size_t nbytes = ((size_t)n + 7) / 8;
  if (n <= PERM_STACK_BITS) {
    seen = stackbits;
  } else {
    seen = malloc(nbytes);
    if (seen == NULL) {
      PERM_MSG(msg, msglen, "cannot allocate %zu bytes to check an order of %d entries", nbytes,
               n);
      rc = BPC_ENOMEM;
      goto cleanup;
    }
  }
  memset(seen, 0, nbytes);
  for (int pos = 0; pos < n; pos++) {
    int g = order[pos];
    if (g < 0 || g >= n) {
      PERM_MSG(msg, msglen, "order[%d] = %d is outside the gid range 0..%d", pos, g, n - 1);
      rc = BPC_EPERM;
      goto cleanup;
    }
    if (seen[g / 8] & (1u << (g % 8))) {
      int first = 0;
      while (first < pos && order[first] != g)
        first++;
      PERM_MSG(msg, msglen, "order[%d] = %d repeats order[%d]; every gid 0..%d must appear once",
               pos, g, first, n - 1);
      rc = BPC_EPERM;
      goto cleanup;
    }
    seen[g / 8] |= (unsigned char)(1u << (g % 8));
  }

cleanup:
  if (seen != NULL && seen != stackbits)
    free(seen);
  return rc;
}

void bpc__perm_invert(const int *order, int n, int *pos_of)
{
  if (order == NULL || pos_of == NULL)
    return;
  for (int pos = 0; pos < n; pos++)
    pos_of[order[pos]] = pos;
}
