/*
 * lib/engines/merge/merge_internal.h - internal view of the merge-reduce engine.
 * Not installed.
 *
 *  - merge.c: the public entry (the engine frame: argument checks, the
 *    algorithm registry rows, the built-in choices, one argument
 *    agreement, the run, the outcome agreement) and the result queries; it
 *    fills a bpc__merge_plan_t and calls the chosen row's run.
 *  - merge_doubling.c, merge_halving.c: the variants: each defines its
 *    schedule (bpc__merge_variant_t: which group a position joins in each
 *    round, who its root is and when it sends) and its row's run.
 *  - merge_executor.c: the task executor, the same for every variant: per
 *    local block a sequence of merge tasks (segment, round), driven by
 *    message arrival, merges in parallel with OpenMP, sends on the master
 *    thread; and the message count the built-in choice compares.
 */
#ifndef BPC_LIB_ENGINES_MERGE_INTERNAL_H
#define BPC_LIB_ENGINES_MERGE_INTERNAL_H

#include "bpc/merge.h"
#include "comm/coll.h"
#include "comm/comm.h"
#include "core/core.h"
#include "core/registry.h"
#include "datatype/datatype.h"
#include "decomp/decomp.h"
#include "patterns/patterns.h"

/* Default segment size of element-wise merges (BPC_MERGE_SEGMENT_BYTES). */
#define BPC__MERGE_SEGMENT_DEFAULT ((size_t)1 << 20)
/* Most segments per item (message seq numbers are segment indices). */
#define BPC__MERGE_MAX_SEGMENTS (1 << 24)

/* Where a callback failure happened (for the message on every rank). */
enum { BPC__MERGE_CB_MERGE = 0, BPC__MERGE_CB_UNPACK = 1 };

/* The engine's registry entry (lib/engines/engines.c lists it). */
extern const bpc__engine_t bpc__engine_merge;

struct bpc__merge_plan;

/*
 * The part a position plays in the first `rounds` rounds of a schedule: it
 * is the root of its group in rounds 0..m-1 (the group of round r is the
 * k[r] positions p + j * stride[r], j = 0..k[r]-1, by increasing position),
 * then, unless it is a root of the result (send_round -1), it sends its
 * item in round m (= send_round) to the root at position `parent`.
 */
typedef struct bpc__merge_role {
  int m;
  int send_round;
  int parent;
  int stride[BPC__MAX_ROUNDS];
} bpc__merge_role_t;

/* A variant's schedule (merge_doubling.c, merge_halving.c). */
typedef struct bpc__merge_variant {
  bpc_merge_algorithm_t id;
  /* Groups are strided: only a commutative op has a defined result. */
  int commutative_only;
  /* The role of position p (0..n-1) in the first P->rounds rounds: what
   * the executor runs and what the result queries (roots, absorbed gids)
   * walk, so a variant is described once. Groups must nest: a member that
   * joins a root's group in round r has, in rounds 0..r-1, been the root
   * of groups with the root's strides of those rounds, and the strides
   * grow (or shrink) as mixed-radix digits, so a root's set is an
   * odometer over its strides (the merge suites check it for every row). */
  void (*role)(const struct bpc__merge_plan *P, int p, bpc__merge_role_t *role);
} bpc__merge_variant_t;

extern const bpc__merge_variant_t bpc__merge_doubling;
extern const bpc__merge_variant_t bpc__merge_halving;

/* The rows' runs (call is a bpc__merge_plan_t). */
int bpc__merge_doubling_run(void *call);
int bpc__merge_halving_run(void *call);

typedef struct bpc__merge_plan {
  bpc_ctx_t *ctx;
  const bpc_assign_t *a;
  const bpc_type_t *type;
  bpc_merge_op_t op;
  void *items; /* the user's array (bpc_buf_t[] or void *[]); NULL: empty items */
  int n;       /* blocks */
  bpc__rounds_t R;
  int rounds;       /* rounds to run, 0..R.nrounds */
  const int *order; /* pos -> gid (NULL: identity) */
  const int *pos_of; /* gid -> pos (NULL: identity) */
  const bpc__merge_variant_t *variant;
  int nthreads; /* >= 1 */
  bpc__exch_t *ex; /* the call's exchange (opened by the entry) */
  /* segments (element-wise contiguous items of one agreed count) */
  int segmented;
  size_t count;     /* agreed element count (element-wise only) */
  size_t seg_elems; /* elements per segment (count when not segmented) */
  int nseg;         /* segments per item (1 when not segmented) */
} bpc__merge_plan_t;

/* Position of gid / gid at position. */
static inline int bpc__merge_pos(const bpc__merge_plan_t *P, int gid)
{
  return P->pos_of != NULL ? P->pos_of[gid] : gid;
}
static inline int bpc__merge_gid(const bpc__merge_plan_t *P, int pos)
{
  return P->order ? P->order[pos] : pos;
}

/* Start a role walk: a root of nothing yet, sending nowhere. */
static inline void bpc__merge_role_init(bpc__merge_role_t *role)
{
  role->m = 0;
  role->send_round = -1;
  role->parent = -1;
}

/*
 * One round of a role walk, for the variants' role functions: position p,
 * still holding an item at round r, sits in a group of stride s. Records
 * the stride and, when p is not the group's root (its digit is not 0), the
 * send to the root. Returns 1 while p stays a root (the walk goes on).
 */
static inline int bpc__merge_role_step(const bpc__merge_plan_t *P, bpc__merge_role_t *role, int r,
                                       int p, int s)
{
  const int d = (p / s) % P->R.k[r];
  if (d != 0) {
    role->send_round = r;
    role->parent = p - d * s;
    return 0;
  }
  role->stride[r] = s;
  role->m++;
  return 1;
}

/* Run P->variant's schedule for P->rounds rounds on the exchange P->ex
 * (merge_executor.c). Returns this rank's first error; every message of the
 * schedule has been sent and received when it returns. */
int bpc__merge_execute(bpc__merge_plan_t *P);

/* After P->rounds rounds of P->variant's schedule (P needs n, R, rounds
 * and variant only): the position whose item holds p's, walking the
 * roles' parents. O(rounds^2). */
int bpc__merge_shape_root(const bpc__merge_plan_t *P, int p);
/* The positions whose items root p's holds (p included), ascending, at most
 * cap of them into out; returns how many there are (out NULL or cap 0: the
 * count only). p must be a root (bpc__merge_shape_root(P, p) == p). Reads
 * only p's role: the set is p + sum over its rounds r of d_r * stride[r]
 * (d_r < k[r]), which holds when groups nest (see the role contract).
 * O(rounds^2 + cap), no allocation. */
int bpc__merge_shape_absorbed(const bpc__merge_plan_t *P, int p, int *out, int cap);

/* Messages that cross processes (summed over all ranks) under `v`'s
 * schedule for P->rounds rounds: what the built-in choice compares. */
long long bpc__merge_remote_msgs(const bpc__merge_plan_t *P, const bpc__merge_variant_t *v);

#endif /* BPC_LIB_ENGINES_MERGE_INTERNAL_H */
