/*
 * lib/patterns/kvec.c - k-vectors: validation with a specific message
 * (bpc__kvec_check), automatic choice from a prime factorisation
 * (bpc__kvec_auto) and formatting as "4x4x2" (bpc__kvec_format).
 *
 * Automatic choice (bpc__kvec_auto), deterministic for given (n, target):
 *  1. n is factored into primes by trial division (n < 2^31, so at most
 *     ~46341 trial divisors; microseconds).
 *  2. The primes, largest first, are packed first-fit into rounds: a prime
 *     joins the first existing round whose product times the prime stays
 *     <= target; otherwise it opens a new round. A prime above target always
 *     opens a round of its own (nothing can join it either, since its product
 *     already exceeds target).
 *  3. The rounds are listed by decreasing k (ties are equal values, so the
 *     order is unique). With distance doubling this puts the largest groups
 *     at the smallest strides (nearest positions) and the smallest group in
 *     the last round, e.g. n = 12, target 4 -> 4x3; n = 576, target 4 ->
 *     4x4x4x3x3; n = 509 (prime) -> 509; n = 1 -> no rounds.
 */
#include "patterns/patterns.h"

#include <stdint.h>
#include <stdio.h>

#include "bpc/core.h"

/* snprintf into msg if the caller wants a message. */
#define KV_MSG(msg, msglen, ...)                 \
  do {                                           \
    if ((msg) != NULL && (msglen) > 0)           \
      snprintf((msg), (msglen), __VA_ARGS__);    \
  } while (0)

void bpc__kvec_format(const int *k, int nrounds, char *buf, size_t len)
{
  if (buf == NULL || len == 0)
    return;
  buf[0] = '\0';
  if (nrounds <= 0 || k == NULL) {
    snprintf(buf, len, "1");
    return;
  }
  size_t used = 0;
  for (int r = 0; r < nrounds; r++) {
    int w = snprintf(buf + used, len - used, r == 0 ? "%d" : "x%d", k[r]);
    if (w < 0 || (size_t)w >= len - used) {
      /* Truncated: end with "..." when there is room for it. */
      if (len >= 4)
        snprintf(buf + len - 4, 4, "...");
      return;
    }
    used += (size_t)w;
  }
}

int bpc__kvec_check(int n, const int *k, int nrounds, char *msg, size_t msglen)
{
  char kv[512];
  if (msg != NULL && msglen > 0)
    msg[0] = '\0';
  if (n < 1) {
    KV_MSG(msg, msglen, "block count %d is invalid; there must be at least one block", n);
    return BPC_EKVEC;
  }
  if (nrounds < 0) {
    KV_MSG(msg, msglen, "k-vector has a negative number of rounds (%d)", nrounds);
    return BPC_EKVEC;
  }
  if (nrounds > BPC__MAX_ROUNDS) {
    KV_MSG(msg, msglen, "k-vector has %d rounds; at most %d are allowed", nrounds,
           BPC__MAX_ROUNDS);
    return BPC_EKVEC;
  }
  if (nrounds > 0 && k == NULL) {
    KV_MSG(msg, msglen, "k-vector is NULL but %d rounds were requested", nrounds);
    return BPC_EKVEC;
  }
  if (nrounds == 0) {
    if (n != 1) {
      KV_MSG(msg, msglen,
             "k-vector is empty (no rounds), but there are %d blocks; only 1 block needs no rounds",
             n);
      return BPC_EKVEC;
    }
    return BPC_OK;
  }
  for (int r = 0; r < nrounds; r++) {
    if (k[r] < 2) {
      KV_MSG(msg, msglen, "k-vector entry %d is %d; every k must be at least 2", r, k[r]);
      return BPC_EKVEC;
    }
  }
  /* Product, saturating above INT32_MAX (n never exceeds it). */
  int64_t prod = 1;
  int over = 0;
  for (int r = 0; r < nrounds && !over; r++) {
    prod *= k[r]; /* prod <= INT32_MAX and k[r] <= INT32_MAX: no overflow */
    if (prod > INT32_MAX)
      over = 1;
  }
  if (over || prod != n) {
    bpc__kvec_format(k, nrounds, kv, sizeof kv);
    const char *are = n == 1 ? "is" : "are", *blocks = n == 1 ? "block" : "blocks";
    if (over)
      KV_MSG(msg, msglen, "k-vector %s multiplies to more than %d, but there %s %d %s", kv,
             INT32_MAX, are, n, blocks);
    else
      KV_MSG(msg, msglen, "k-vector %s multiplies to %lld, but there %s %d %s", kv,
             (long long)prod, are, n, blocks);
    return BPC_EKVEC;
  }
  return BPC_OK;
}

/* The prime factors of n >= 1, ascending, into primes (room for 30: n <
 * 2^31); returns how many (trial division; d*d computed in 64 bits). */
static int prime_factors(int n, int *primes)
{
  int np = 0, m = n;
  for (int d = 2; (int64_t)d * d <= m; d += (d == 2 ? 1 : 2)) {
    while (m % d == 0) {
      primes[np++] = d;
      m /= d;
    }
  }
  if (m > 1)
    primes[np++] = m;
  return np;
}

int bpc__kvec_primes(int n, int *k, int cap, int *nrounds)
{
  int primes[BPC__MAX_ROUNDS];
  if (nrounds == NULL)
    return BPC_ENULL;
  *nrounds = 0;
  if (n < 1 || cap < 0)
    return BPC_EINVAL;
  if (k == NULL && cap > 0)
    return BPC_ENULL;
  const int np = prime_factors(n, primes);
  if (np > cap)
    return BPC_EINVAL;
  for (int i = 0; i < np; i++)
    k[i] = primes[i];
  *nrounds = np;
  return BPC_OK;
}

int bpc__kvec_auto(int n, int target, int *k, int cap, int *nrounds)
{
  int primes[BPC__MAX_ROUNDS]; /* n < 2^31 has at most 30 prime factors */
  int rounds[BPC__MAX_ROUNDS];
  int nr = 0;

  if (nrounds == NULL)
    return BPC_ENULL;
  *nrounds = 0;
  if (n < 1 || target < 2 || cap < 0)
    return BPC_EINVAL;
  if (k == NULL && cap > 0)
    return BPC_ENULL;

  /* 1. prime factors, ascending */
  const int np = prime_factors(n, primes);

  /* 2. first-fit packing, largest prime first */
  for (int i = np - 1; i >= 0; i--) {
    int p = primes[i];
    int placed = 0;
    for (int j = 0; j < nr && !placed; j++) {
      if ((int64_t)rounds[j] * p <= target) {
        rounds[j] *= p;
        placed = 1;
      }
    }
    if (!placed)
      rounds[nr++] = p;
  }

  /* 3. decreasing k (insertion sort; at most 30 entries) */
  for (int i = 1; i < nr; i++) {
    int v = rounds[i], j = i - 1;
    while (j >= 0 && rounds[j] < v) {
      rounds[j + 1] = rounds[j];
      j--;
    }
    rounds[j + 1] = v;
  }

  if (nr > cap)
    return BPC_EINVAL;
  for (int i = 0; i < nr; i++)
    k[i] = rounds[i];
  *nrounds = nr;
  return BPC_OK;
}
