/*
 * lib/patterns/rounds.c - rounds over a k-vector: the mixed-radix digit of a
 * position per round, strides and groups for distance doubling and halving,
 * and the merge view (which positions are active in a round, which root a
 * position's item reaches after some rounds, what a root has absorbed).
 *
 * A position p in 0..n-1 is written in mixed radix with one digit per round:
 * digit(r, p) = (p / stride(r)) % k[r]. Distance doubling uses
 * stride(r) = k[0]*...*k[r-1] (round 0 is the least significant digit);
 * distance halving uses stride(r) = k[r+1]*...*k[R-1] (round 0 is the most
 * significant digit). Every partial product divides n, so all arithmetic
 * fits in int. Functions are O(R) (R <= 30 for a valid k-vector and n < 2^31).
 */
#include "patterns/patterns.h"

#include "bpc/core.h"

int bpc__rounds_init(bpc__rounds_t *R, int n, const int *k, int nrounds, int halving, char *msg,
                     size_t msglen)
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
  R->halving = halving ? 1 : 0;
  return BPC_OK;
}

/* Stride of round r without argument checks. */
static int stride_of(const bpc__rounds_t *R, int r)
{
  int s = 1;
  if (R->halving) {
    for (int j = r + 1; j < R->nrounds; j++)
      s *= R->k[j];
  } else {
    for (int j = 0; j < r; j++)
      s *= R->k[j];
  }
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

/* p with the digits of rounds 0..rounds-1 set to 0. O(rounds): the stride
 * is carried from round to round (doubling: multiply by k[r] after round r;
 * halving: stride(r) = n / (k[0]*...*k[r])). */
static int clear_digits(const bpc__rounds_t *R, int rounds, int p)
{
  int s = R->halving ? R->n : 1;
  for (int r = 0; r < rounds; r++) {
    if (R->halving)
      s /= R->k[r];
    p -= ((p / s) % R->k[r]) * s;
    if (!R->halving)
      s *= R->k[r];
  }
  return p;
}

int bpc__merge_active(const bpc__rounds_t *R, int r, int p)
{
  if (R == NULL || r < 0 || r > R->nrounds || p < 0 || p >= R->n)
    return 0;
  return clear_digits(R, r, p) == p;
}

int bpc__merge_root(const bpc__rounds_t *R, int rounds, int p)
{
  if (R == NULL || rounds < 0 || rounds > R->nrounds || p < 0 || p >= R->n)
    return -1;
  return clear_digits(R, rounds, p);
}

int bpc__merge_absorbed(const bpc__rounds_t *R, int rounds, int root, int *out, int cap)
{
  if (R == NULL || rounds < 0 || rounds > R->nrounds || root < 0 || root >= R->n)
    return -1;
  /* The digits of rounds < `rounds`, ordered by increasing stride: the
   * odometer below then runs through the set in ascending position order. */
  int ks[BPC__MAX_ROUNDS], ss[BPC__MAX_ROUNDS], dg[BPC__MAX_ROUNDS];
  int count = 1;
  for (int i = 0; i < rounds; i++) {
    int r = R->halving ? rounds - 1 - i : i; /* halving: later rounds are finer */
    ks[i] = R->k[r];
    ss[i] = i == 0 ? stride_of(R, r) : ss[i - 1] * ks[i - 1];
    dg[i] = 0;
    count *= ks[i];
  }
  if (out == NULL || cap <= 0)
    return count;
  int pos = clear_digits(R, rounds, root);
  int lim = cap < count ? cap : count;
  for (int w = 0; w < lim; w++) {
    out[w] = pos;
    /* advance the odometer, fastest (smallest stride) digit first */
    for (int i = 0; i < rounds; i++) {
      if (++dg[i] < ks[i]) {
        pos += ss[i];
        break;
      }
      dg[i] = 0;
      pos -= (ks[i] - 1) * ss[i];
    }
  }
  return count;
}
