/*
 * lib/engines/bcast/bcast_br_xy_source.c - br_xy_source: on the mesh view
 * (rows x cols, gid = row * cols + col), br_lin inside every row at the
 * same time, then inside every column (or columns first). The order
 * follows the sources: with mr the largest number of sources in one row
 * and mc in one column, rows go first when mr <= mc (sources sitting in
 * few columns: after the row phase every block already holds the items
 * of its row, and the column phase starts from the most sources), else
 * columns first. Every rank computes the same choice from the agreed
 * source list.
 *
 * Non-square meshes and lines of any length: br_lin's odd-length rule
 * (see br_lin.c) in each line. A 1 x p or p x 1 mesh (prime block
 * counts) is br_lin over the line.
 *
 * Cost (one block per process, L bytes per item): ceil(log2 cols) +
 * ceil(log2 rows) steps; first phase carries at most mr (or mc) items per
 * message, the second at most s, so T ~ (ceil(log2 c) + ceil(log2 r))
 * alpha + (m_first L + s L) beta for well spread sources; messages per
 * block <= steps + 2.
 */
#include "engines/bcast/bcast_internal.h"

#include <stdlib.h>

int bpc__bcast_br_xy_source(void *call)
{
  bpc__bcast_call_t *C = call;
  int *rc_ = calloc((size_t)(C->rows + C->cols), sizeof(int));
  if (rc_ == NULL)
    return bpc__err(C->ctx, BPC_ENOMEM, "bpc_bcast: out of memory");
  int mr = 0, mc = 0;
  for (int i = 0; i < C->s; i++) {
    rc_[C->sources[i] / C->cols]++;
    rc_[C->rows + C->sources[i] % C->cols]++;
  }
  for (int r = 0; r < C->rows; r++)
    mr = rc_[r] > mr ? rc_[r] : mr;
  for (int c = 0; c < C->cols; c++)
    mc = rc_[C->rows + c] > mc ? rc_[C->rows + c] : mc;
  free(rc_);
  int rc = bpc__bcast_xy(C, mr <= mc);
  if (rc != BPC_OK)
    return bpc__err(C->ctx, rc, "bpc_bcast: out of memory");
  return bpc__bcast_exec(C);
}
