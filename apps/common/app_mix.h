/*
 * apps/common/app_mix.h - the random numbers the apps make their synthetic
 * data and colours from (header-only, static): splitmix64 (Steele, Lea and
 * Flood, "Fast splittable pseudorandom number generators", OOPSLA 2014)
 * and its 64-bit finalizer as a hash of one word. Deterministic: the same inputs give the same numbers on
 * every rank and every run, which is what lets an app check a parallel run
 * against a serial one.
 */
#ifndef BPC_APPS_COMMON_APP_MIX_H
#define BPC_APPS_COMMON_APP_MIX_H

#include <stdint.h>

/* splitmix64's finalizer: a bijection of 64-bit words that spreads every
 * input bit over the output. */
static inline uint64_t app_mix64(uint64_t x)
{
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

/* The next number of the splitmix64 sequence with state *s. */
static inline uint64_t app_splitmix(uint64_t *s)
{
  return app_mix64(*s += 0x9e3779b97f4a7c15ull);
}

/* Uniform in [0, 1) with 53 random bits, from a 64-bit hash. */
static inline double app_unit(uint64_t h)
{
  return (double)(h >> 11) * (1.0 / 9007199254740992.0);
}

#endif /* BPC_APPS_COMMON_APP_MIX_H */
