/*
 * tests/mpi/bad_case.h - table-driven "bad argument on some ranks" cases
 * (bad_rank.h's modes) for engines whose tests list every documented
 * argument error and every field that must match across ranks:
 *
 *   static const bad_case_t cases[] = {
 *       {"k < 2", BPC_EKVEC, 0, NULL},             an argument error
 *       {"count differs", BPC_EMISMATCH, 1, "count"}, valid but differing
 *   };
 *   for each case, for (m = 0; m < BAD_NMODES; m++): spoil the arguments
 *   where bad_here(m), call, then bad_check(ctx, &cases[i], m, rc).
 *
 * An argument error must give its code on every rank in every mode. A
 * must-match case differs only when some ranks are bad and others are not
 * (not BAD_ALL, more than one process): then BPC_EMISMATCH on every rank
 * with a message naming the field; else the call succeeds.
 */
#ifndef BPC_TESTS_BAD_CASE_H
#define BPC_TESTS_BAD_CASE_H

#include <string.h>

#include "bad_rank.h"
#include "bpc.h"

typedef struct bad_case {
  const char *what;  /* for messages */
  int expect;        /* the code when some rank is bad */
  int mismatch;      /* 1: valid values that differ (BPC_OK when all agree) */
  const char *field; /* the signature field the mismatch message names */
} bad_case_t;

/* Do the ranks' values differ in mode m (must-match cases only)? */
static inline int bad_differ(const bad_case_t *C, int m)
{
  return C->mismatch && m != BAD_ALL && t_size > 1;
}

/* Check this rank's code (and the mismatch message) for case C in mode m. */
static inline void bad_check(bpc_ctx_t *ctx, const bad_case_t *C, int m, int rc)
{
  const int expect = C->mismatch && !bad_differ(C, m) ? BPC_OK : C->expect;
  T_CHECK(rc == expect, "%s, %s: got %s (%s), want %s", C->what, bad_mode_name(m),
          bpc_err_name(rc), bpc_last_error(ctx), bpc_err_name(expect));
  if (bad_differ(C, m) && rc == BPC_EMISMATCH)
    T_CHECK(strstr(bpc_last_error(ctx), C->field) != NULL,
            "%s, %s: message '%s' does not name %s", C->what, bad_mode_name(m),
            bpc_last_error(ctx), C->field);
}

#endif /* BPC_TESTS_BAD_CASE_H */
