/*
 * lib/engines/bcast/bcast_br_xy_dim.c - br_xy_dim: as br_xy_source (br_lin in
 * every row, then in every column, or the reverse) but the order follows
 * the mesh, not the sources: the longer lines go first (rows when cols >=
 * rows). The paper keeps it to show what choosing the wrong first
 * dimension costs (its row distribution on a mesh with long rows).
 *
 * Non-square meshes, prime block counts: as br_xy_source.c.
 *
 * Cost (one block per process, L bytes per item): ceil(log2 cols) +
 * ceil(log2 rows) steps; T ~ steps alpha + (m_first L + s L) beta, with
 * m_first the largest number of sources in one line of the first
 * dimension (up to s when the sources lie along those lines).
 */
#include "engines/bcast/bcast_internal.h"

int bpc__bcast_br_xy_dim(void *call)
{
  bpc__bcast_call_t *C = call;
  int rc = bpc__bcast_xy(C, C->cols >= C->rows);
  if (rc != BPC_OK)
    return bpc__err(C->ctx, rc, "bpc_bcast: out of memory");
  return bpc__bcast_exec(C);
}
