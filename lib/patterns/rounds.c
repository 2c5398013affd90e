/*
 * lib/patterns/rounds.c - rounds over a k-vector: the mixed-radix digit of a
 * position per round, strides and groups (distance doubling: swap's radix-k
 * and the all-to-all rounds). The merge variants, halving among them, make
 * their own groups (lib/engines/merge/merge_internal.h: roles).
 *
 * A position p in 0..n-1 is written in mixed radix with one digit per round:
 * digit(r, p) = (p / stride(r)) % k[r] with stride(r) = k[0]*...*k[r-1]
 * (round 0 is the least significant digit). Every partial product divides
 * n, so all arithmetic
 * fits in int. Functions are O(R) (R <= 30 for a valid k-vector and n < 2^31).
 */
#include "patterns/patterns.h"

#include "bpc/core.h"

int bpc__rounds_init(bpc__rounds_t *R, int n, const int *k, int nrounds, char *msg, size_t msglen)
{
  if (R == NULL)
    return BPC_ENULL;
  int rc = bpc__kvec_check(n, k, nrounds, msg, msglen);
  if (rc != BPC_OK)
    return rc;
  R->n = n;
  R->nrounds = nrounds;
  for (int r = 0; r < BPC__MAX_ROUNDS; r++)
    R->k[r] = r < nrounds ? k[r] : 0;
  return BPC_OK;
}

/* Stride of round r without argument checks. */
static int stride_of(const bpc__rounds_t *R, int r)
{
  int s = 1;
  for (int j = 0; j < r; j++)
    s *= R->k[j];
  return s;
}

static int valid_rp(const bpc__rounds_t *R, int r, int p)
{
  return R != NULL && r >= 0 && r < R->nrounds && p >= 0 && p < R->n;
}

int bpc__round_stride(const bpc__rounds_t *R, int r)
{
  if (R == NULL || r < 0 || r >= R->nrounds)
    return -1;
  return stride_of(R, r);
}

int bpc__round_index(const bpc__rounds_t *R, int r, int p)
{
  if (!valid_rp(R, r, p))
    return -1;
  return (p / stride_of(R, r)) % R->k[r];
}

void bpc__round_group(const bpc__rounds_t *R, int r, int p, int *members)
{
  if (!valid_rp(R, r, p) || members == NULL)
    return;
  int s = stride_of(R, r);
  int base = p - ((p / s) % R->k[r]) * s;
  for (int j = 0; j < R->k[r]; j++)
    members[j] = base + j * s;
}

