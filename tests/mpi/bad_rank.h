/*
 * tests/mpi/bad_rank.h - the "bad argument on some ranks only" pattern every
 * engine's test uses: a collective call gets a bad argument on rank 0 only,
 * on the last rank only, or on every rank, and must return the same error
 * code on every rank (never hang, never BPC_OK somewhere).
 *
 *   for (int m = 0; m < BAD_NMODES; m++) {
 *     int bad = bad_here(m);
 *     int rc = bpc_swap(ctx, a, bad ? NULL : &type, ...);
 *     T_CHECK(rc == BPC_ENULL, "%s: %s", bad_mode_name(m), bpc_last_error(ctx));
 *   }
 *   T_SYNC();
 */
#ifndef BPC_TESTS_BAD_RANK_H
#define BPC_TESTS_BAD_RANK_H

#include "mpi_check.h"

enum { BAD_FIRST = 0, BAD_LAST = 1, BAD_ALL = 2, BAD_NMODES = 3 };

/* Does this rank get the bad argument in mode m? */
static inline int bad_here(int m)
{
  return m == BAD_ALL || (m == BAD_FIRST && t_rank == 0) || (m == BAD_LAST && t_rank == t_size - 1);
}

static inline const char *bad_mode_name(int m)
{
  return m == BAD_FIRST ? "bad on rank 0" : m == BAD_LAST ? "bad on the last rank" : "bad on all";
}

#endif /* BPC_TESTS_BAD_RANK_H */
