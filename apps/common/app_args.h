/*
 * apps/common/app_args.h - the number parsers of the apps' option parsing
 * (header-only, static). Each takes the whole option value: no leading
 * garbage, nothing left over, no overflow.
 */
#ifndef BPC_APPS_COMMON_APP_ARGS_H
#define BPC_APPS_COMMON_APP_ARGS_H

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* One integer in [lo, hi]: 0, or -1 when s is not one. */
static inline int app_parse_ll(const char *s, long long lo, long long hi, long long *v)
{
  char *end = NULL;
  errno = 0;
  const long long x = strtoll(s, &end, 10);
  if (end == s || *end != '\0' || errno != 0 || x < lo || x > hi)
    return -1;
  *v = x;
  return 0;
}

/* Integers in [lo, hi] separated by one character of seps (e.g. "," or
 * ",x"), at most cap of them into out, *n of them: 0, -1 when s is not such
 * a list, -2 when it has more than cap. */
static inline int app_parse_ll_list(const char *s, const char *seps, long long lo, long long hi,
                                    long long *out, int cap, int *n)
{
  *n = 0;
  for (const char *p = s;;) {
    char *end = NULL;
    errno = 0;
    const long long v = strtoll(p, &end, 10);
    if (end == p || errno != 0 || v < lo || v > hi)
      return -1;
    if (*n >= cap)
      return -2;
    out[(*n)++] = v;
    if (*end == '\0')
      return 0;
    if (strchr(seps, *end) == NULL)
      return -1;
    p = end + 1;
  }
}

/* Finite numbers separated by commas, at most cap into out: 0, -1 when s
 * is not such a list (or has more than cap). */
static inline int app_parse_double_list(const char *s, double *out, int cap, int *n)
{
  *n = 0;
  for (const char *p = s;;) {
    char *end = NULL;
    errno = 0;
    const double v = strtod(p, &end);
    if (end == p || errno != 0 || !isfinite(v) || *n >= cap)
      return -1;
    out[(*n)++] = v;
    if (*end == '\0')
      return 0;
    if (*end != ',')
      return -1;
    p = end + 1;
  }
}

#endif /* BPC_APPS_COMMON_APP_ARGS_H */
