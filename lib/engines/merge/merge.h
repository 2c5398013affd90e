/*
 * lib/engines/merge/merge.h - internal view of the merge-reduce engine.
 * Not installed.
 *
 *  - merge.c: the public entry (argument checks, the algorithm table, the
 *    automatic choices, the collective error agreement) and the result
 *    queries; it fills a bpc__merge_plan_t and calls one variant.
 *  - merge_doubling.c, merge_halving.c: the variants (group structure from
 *    lib/patterns); both run the shared executor.
 *  - merge_exec.c: the executor: per local block a sequence of merge tasks
 *    (segment, round), driven by message arrival, merges in parallel with
 *    OpenMP, sends on the master thread.
 */
#ifndef BPC_LIB_ENGINES_MERGE_H
#define BPC_LIB_ENGINES_MERGE_H

#include "bpc/merge.h"
#include "comm/coll.h"
#include "core/core.h"
#include "datatype/datatype.h"
#include "decomp/decomp.h"
#include "patterns/patterns.h"

/* Default segment size of element-wise merges (BPC_MERGE_SEGMENT_BYTES). */
#define BPC__MERGE_SEGMENT_DEFAULT ((size_t)1 << 20)
/* Most segments per item (message seq numbers are segment indices). */
#define BPC__MERGE_MAX_SEGMENTS (1 << 24)

/* Where a callback failure happened (for the message on every rank). */
enum { BPC__MERGE_CB_MERGE = 0, BPC__MERGE_CB_UNPACK = 1 };

typedef struct bpc__merge_plan {
  bpc_ctx_t *ctx;
  const bpc_assign_t *a;
  const bpc_type_t *type;
  bpc_merge_fn merge;
  void *user;
  unsigned flags;
  void *items; /* the user's array (bpc_buf_t[] or void *[]); NULL: empty items */
  int n;       /* blocks */
  bpc__rounds_t R;
  int rounds;          /* rounds to run, 0..R.nrounds */
  const int *order;    /* pos -> gid (NULL: identity) */
  const int *pos_of;   /* gid -> pos (NULL: identity) */
  int algo;            /* BPC_MERGE_DOUBLING / HALVING */
  int nthreads;        /* >= 1 */
  int local_bad;       /* this rank's arguments are bad: take part without merging */
  /* segments (element-wise contiguous items of one agreed count) */
  int segmented;
  size_t count;     /* agreed element count (element-wise only) */
  size_t seg_elems; /* elements per segment (count when not segmented) */
  int nseg;         /* segments per item (1 when not segmented) */
} bpc__merge_plan_t;

/* Position of gid / gid at position. */
static inline int bpc__merge_pos(const bpc__merge_plan_t *P, int gid)
{
  if (P->pos_of != NULL)
    return P->pos_of[gid];
  if (P->order != NULL) /* no inverse (out of memory): search, same answer */
    for (int p = 0; p < P->n; p++)
      if (P->order[p] == gid)
        return p;
  return gid;
}
static inline int bpc__merge_gid(const bpc__merge_plan_t *P, int pos)
{
  return P->order ? P->order[pos] : pos;
}

/* The variants (P->R is filled with the k-vector; they set R.halving). */
int bpc__merge_doubling(bpc__merge_plan_t *P);
int bpc__merge_halving(bpc__merge_plan_t *P);

/* Run the schedule of P->R for P->rounds rounds (merge_exec.c). Returns
 * this rank's first error; every message of the schedule has been sent and
 * received when it returns. */
int bpc__merge_execute(bpc__merge_plan_t *P);

/* Messages a rank sends to other processes under the schedule of R for
 * `rounds` rounds (for the automatic choice of algorithm); summed over all
 * ranks. */
long long bpc__merge_remote_msgs(const bpc__merge_plan_t *P, const bpc__rounds_t *R);

#endif /* BPC_LIB_ENGINES_MERGE_H */
