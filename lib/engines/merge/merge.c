/*
 * lib/engines/merge/merge.c - merge-reduce: the public entry bpc_merge (the
 * engine frame of doc/design.md: every argument checked on this rank, the
 * algorithm picked by the registry, one argument agreement before any
 * message, the built-in choices, the segment plan of element-wise merges,
 * the run of the chosen row, the outcome agreement), the algorithm rows,
 * the automatic k-vector, and the result queries (roots, absorbed gids,
 * what ran).
 *
 * Collectives besides the schedule's point-to-point messages (all through
 * lib/comm/coll.h): the argument agreement (one reduction), one reduction
 * of the item counts for element-wise merges without params.count (the
 * counts must agree for segments to line up), and the outcome agreement at
 * the end (a callback failure on one rank is BPC_ECALLBACK on every rank,
 * with that rank's message: value, gid, round).
 */
#include "engines/merge/merge_internal.h"

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

_Static_assert(BPC_MERGE_MAX_ROUNDS == BPC__MAX_ROUNDS, "merge: k-vector capacities differ");

/* ------------------------------------------------------------ the rows */

static const bpc__algo_t merge_rows[] = {
    {{BPC_MERGE_DOUBLING, "doubling",
      "distance doubling: groups of adjacent blocks, nearest first; any associative merge "
      "(default)"},
     bpc__merge_doubling_run, &bpc__merge_doubling},
    {{BPC_MERGE_HALVING, "halving",
      "distance halving: strided groups, farthest first; commutative merges only"},
     bpc__merge_halving_run, &bpc__merge_halving},
};

const bpc__engine_t bpc__engine_merge = {"merge", "BPC_MERGE_ALGORITHM", merge_rows,
                                         BPC__NROWS(merge_rows), NULL};

/* A row's schedule (its data: a bpc__merge_variant_t). */
static const bpc__merge_variant_t *variant_of(const bpc__algo_t *row)
{
  return (const bpc__merge_variant_t *)row->data;
}

bpc_merge_params_t bpc_merge_params_default(void)
{
  bpc_merge_params_t p;
  memset(&p, 0, sizeof p);
  p.algorithm = "auto";
  return p;
}

/* ------------------------------------------------------ automatic k */

/* Append the auto k-vector of m (packing primes into rounds of product at
 * most `target`) to k[*nk..]. */
static int append_auto(int m, int target, int *k, int cap, int *nk)
{
  int part[BPC__MAX_ROUNDS], np = 0;
  if (m <= 1)
    return BPC_OK;
  int rc = bpc__kvec_auto(m, target, part, BPC__MAX_ROUNDS, &np);
  if (rc != BPC_OK)
    return rc;
  for (int i = 0; i < np; i++) {
    if (*nk < cap)
      k[*nk] = part[i];
    (*nk)++;
  }
  return BPC_OK;
}

/*
 * The automatic k-vector (measured with bpc-bench merge; see doc/merge.md):
 *  - With b > 1 blocks on every process under a contiguous assignment (or a
 *    round-robin one: "auto" then runs halving for commutative merges), the
 *    first rounds merge the b local blocks, in as few rounds as possible
 *    (k up to 16): a k-ary local merge reads every local item once, with no
 *    message over the network.
 *  - Across processes: k = 2 for items of 64 KiB and more (the final root
 *    receives the least data: one item per round), k up to 4 for small or
 *    unknown sizes (half the rounds, so half the latency).
 */
int bpc_merge_kvec_auto(const bpc_assign_t *a, size_t item_bytes, int *k, int cap, int *nk)
{
  if (a == NULL || nk == NULL || (k == NULL && cap > 0))
    return BPC_ENULL;
  *nk = 0;
  const int n = a->nblocks, P = a->nranks;
  const int target = (item_bytes >= ((size_t)64 << 10)) ? 2 : 4;
  int rc = BPC_OK, cnt = 0;
  if (P > 1 && n > P && n % P == 0 &&
      (a->mode == BPC_ASSIGN_CONTIGUOUS || a->mode == BPC_ASSIGN_ROUND_ROBIN)) {
    rc = append_auto(n / P, 16, k, cap, &cnt);
    if (rc == BPC_OK)
      rc = append_auto(P, target, k, cap, &cnt);
  } else {
    rc = append_auto(n, target, k, cap, &cnt);
  }
  if (rc != BPC_OK)
    return bpc__err(a->ctx, rc, "merge: no automatic k-vector for %d blocks", n);
  if (cnt > cap)
    return bpc__err(a->ctx, BPC_EINVAL, "merge: the automatic k-vector has %d entries, room for %d",
                    cnt, cap);
  *nk = cnt;
  return BPC_OK;
}

/* ----------------------------------------------------------- result */

struct bpc_merge_result {
  /* the schedule that ran: n, R (k-vector), rounds and variant; the
   * queries walk the variant's roles, as the executor did */
  bpc__merge_plan_t shape;
  bpc_algo_source_t source;
  int *order;  /* NULL: identity */
  int *pos_of; /* NULL: identity */
};

int bpc_merge_result_destroy(bpc_merge_result_t **r)
{
  if (r == NULL || *r == NULL)
    return BPC_OK;
  free((*r)->order);
  free((*r)->pos_of);
  free(*r);
  *r = NULL;
  return BPC_OK;
}

static int res_pos(const bpc_merge_result_t *r, int gid) { return r->pos_of ? r->pos_of[gid] : gid; }
static int res_gid(const bpc_merge_result_t *r, int pos) { return r->order ? r->order[pos] : pos; }

int bpc__merge_shape_root(const bpc__merge_plan_t *P, int p)
{
  bpc__merge_role_t role;
  for (;;) { /* each step a later round: at most P->rounds steps */
    P->variant->role(P, p, &role);
    if (role.send_round < 0)
      return p;
    p = role.parent;
  }
}

int bpc__merge_shape_absorbed(const bpc__merge_plan_t *P, int p, int *out, int cap)
{
  /* the root's groups, smallest stride first: positions p + sum d_r s_r
   * (d_r < k_r), in ascending order when the digits advance like an
   * odometer, fastest (smallest stride) first */
  bpc__merge_role_t role;
  P->variant->role(P, p, &role);
  int ks[BPC__MAX_ROUNDS], ss[BPC__MAX_ROUNDS], dg[BPC__MAX_ROUNDS];
  int count = 1;
  for (int r = 0; r < role.m; r++) {
    int i = r;
    while (i > 0 && ss[i - 1] > role.stride[r]) { /* insertion by stride */
      ss[i] = ss[i - 1];
      ks[i] = ks[i - 1];
      i--;
    }
    ss[i] = role.stride[r];
    ks[i] = P->R.k[r];
    dg[r] = 0;
    count *= P->R.k[r];
  }
  if (out == NULL || cap <= 0)
    return count;
  int pos = p;
  const int lim = cap < count ? cap : count;
  for (int w = 0; w < lim; w++) {
    out[w] = pos;
    for (int i = 0; i < role.m; i++) {
      if (++dg[i] < ks[i]) {
        pos += ss[i];
        break;
      }
      pos -= (ks[i] - 1) * ss[i];
      dg[i] = 0;
    }
  }
  return count;
}

int bpc_merge_is_root(const bpc_merge_result_t *r, int gid, int *is_root)
{
  if (r == NULL || is_root == NULL)
    return BPC_ENULL;
  if (gid < 0 || gid >= r->shape.n)
    return BPC_ERANGE;
  int p = res_pos(r, gid);
  *is_root = bpc__merge_shape_root(&r->shape, p) == p;
  return BPC_OK;
}

int bpc_merge_root_of(const bpc_merge_result_t *r, int gid, int *root)
{
  if (r == NULL || root == NULL)
    return BPC_ENULL;
  if (gid < 0 || gid >= r->shape.n)
    return BPC_ERANGE;
  *root = res_gid(r, bpc__merge_shape_root(&r->shape, res_pos(r, gid)));
  return BPC_OK;
}

int bpc_merge_absorbed(const bpc_merge_result_t *r, int gid, int *gids, int cap, int *n)
{
  if (r == NULL || n == NULL || (gids == NULL && cap > 0))
    return BPC_ENULL;
  *n = 0;
  if (gid < 0 || gid >= r->shape.n)
    return BPC_ERANGE;
  int p = res_pos(r, gid);
  if (bpc__merge_shape_root(&r->shape, p) != p)
    return BPC_OK;
  const int total = bpc__merge_shape_absorbed(&r->shape, p, gids, cap > 0 ? cap : 0);
  int w = cap < total ? cap : total;
  for (int i = 0; i < w; i++)
    gids[i] = res_gid(r, gids[i]);
  *n = total;
  if (gids == NULL && cap == 0) /* a size query */
    return BPC_OK;
  return cap < total ? BPC_ERANGE : BPC_OK;
}

int bpc_merge_info(const bpc_merge_result_t *r, bpc_merge_info_t *info)
{
  if (r == NULL || info == NULL)
    return BPC_ENULL;
  memset(info, 0, sizeof *info);
  info->algorithm = r->shape.variant->id;
  snprintf(info->name, sizeof info->name, "%s",
           bpc__algo_name(&bpc__engine_merge, r->shape.variant->id));
  info->source = r->source;
  info->nk = r->shape.R.nrounds;
  for (int i = 0; i < r->shape.R.nrounds; i++)
    info->k[i] = r->shape.R.k[i];
  info->rounds = r->shape.rounds;
  return BPC_OK;
}

static int make_result(const bpc__merge_plan_t *P, bpc_algo_source_t source,
                       bpc_merge_result_t **out)
{
  bpc_merge_result_t *r = bpc__calloc(1, sizeof *r);
  if (r == NULL)
    return BPC_ENOMEM;
  r->shape.n = P->n;
  r->shape.R = P->R;
  r->shape.rounds = P->rounds;
  r->shape.variant = P->variant;
  r->source = source;
  if (P->order != NULL) {
    r->order = bpc__malloc(sizeof(int) * (size_t)P->n);
    r->pos_of = bpc__malloc(sizeof(int) * (size_t)P->n);
    if (r->order == NULL || r->pos_of == NULL) {
      bpc_merge_result_destroy(&r);
      return BPC_ENOMEM;
    }
    memcpy(r->order, P->order, sizeof(int) * (size_t)P->n);
    memcpy(r->pos_of, P->pos_of, sizeof(int) * (size_t)P->n);
  }
  *out = r;
  return BPC_OK;
}

/* ------------------------------------------------------------- entry */

/* Keep the first argument error of this rank (and its message). */
#define FIRST_ERR(rc, ...)                                                                         \
  do {                                                                                             \
    if ((rc) == BPC_OK)                                                                            \
      (rc) = bpc__err(__VA_ARGS__);                                                                \
  } while (0)

/* Rounds beyond the full reduction of R: BPC_ERANGE. */
static int check_rounds(bpc_ctx_t *ctx, const bpc__rounds_t *R, int rounds)
{
  if (rounds <= R->nrounds)
    return BPC_OK;
  char kv[256];
  bpc__kvec_format(R->k, R->nrounds, kv, sizeof kv);
  return bpc__err(ctx, BPC_ERANGE,
                  "merge: %d rounds requested, but the k-vector %s has %d (a full reduction)",
                  rounds, kv, R->nrounds);
}

/* The automatic k-vector for items of `bytes` bytes (0: unknown) into
 * P->R, and the rounds check against it. */
static int auto_kvec(bpc__merge_plan_t *P, size_t bytes, int rounds)
{
  int k[BPC__MAX_ROUNDS], nk = 0;
  char msg[BPC__ERRMSG_LEN];
  int rc = bpc_merge_kvec_auto(P->a, bytes, k, BPC__MAX_ROUNDS, &nk);
  if (rc == BPC_OK && bpc__rounds_init(&P->R, P->n, k, nk, msg, sizeof msg) != BPC_OK)
    rc = bpc__err(P->ctx, BPC_EKVEC, "merge: automatic k-vector: %s", msg);
  return rc == BPC_OK ? check_rounds(P->ctx, &P->R, rounds) : rc;
}

/* This rank's contiguous items: data NULL, counts (element-wise: one count,
 * params->count if given). Range of counts to *minc, *maxc. */
static int check_items(bpc_ctx_t *ctx, const bpc_buf_t *b, const int *gids, int nl, int ew,
                       size_t count, long long *minc, long long *maxc)
{
  for (int i = 0; i < nl; i++) {
    if (b[i].count > 0 && b[i].data == NULL)
      return bpc__err(ctx, BPC_ENULL,
                      "bpc_merge: the item of gid %d has %zu elements but data NULL", gids[i],
                      b[i].count);
    if (ew && count > 0 && b[i].count != count)
      return bpc__err(ctx, BPC_EINVAL,
                      "merge: op->elementwise with params->count %zu (or the count a plan was "
                      "made with), but the item of gid %d has %zu elements",
                      count, gids[i], b[i].count);
    if (ew && b[i].count != b[0].count)
      return bpc__err(ctx, BPC_EINVAL,
                      "merge: op->elementwise needs items of one count, but gid %d has %zu "
                      "elements and gid %d %zu", gids[0], b[0].count, gids[i], b[i].count);
    if ((long long)b[i].count < *minc)
      *minc = (long long)b[i].count;
    if ((long long)b[i].count > *maxc)
      *maxc = (long long)b[i].count;
  }
  return BPC_OK;
}

/* Custom items with a binary operator: the fold combines into the root's
 * item in place, so none may be NULL. */
static int check_binary_items(bpc_ctx_t *ctx, const bpc_merge_op_t *op, void *const *items,
                              const int *gids, int nl)
{
  for (int i = 0; op->fn == NULL && i < nl; i++)
    if (items[i] == NULL)
      return bpc__err(ctx, BPC_ENULL,
                      "bpc_merge: the item of gid %d is NULL, but op->binary combines custom "
                      "items in place",
                      gids[i]);
  return BPC_OK;
}

/* Element-wise merges without params->count: agree on the item count (a
 * rank without blocks adds the neutral element). Same outcome everywhere. */
static int agree_count(bpc_ctx_t *ctx, long long minc, long long maxc, size_t *count)
{
  long long c[2] = {minc, maxc == LLONG_MIN ? LLONG_MAX : -maxc};
  int rc = bpc__allreduce_ll(ctx, c, c, 2, BPC__RED_MIN);
  if (rc != BPC_OK)
    return rc;
  *count = c[0] == LLONG_MAX ? 0 : (size_t)c[0];
  if (c[0] != LLONG_MAX && c[0] != -c[1])
    return bpc__err(ctx, BPC_EINVAL,
                    "merge: op->elementwise needs items of one count, but counts range from %lld "
                    "to %lld elements", c[0], -c[1]);
  return BPC_OK;
}

/* The built-in choice: the table's first row (doubling: local-first for a
 * contiguous assignment), unless for a full reduction (a partial one keeps
 * the first row's contiguous regions) with another assignment another row
 * the op allows (halving, for commutative merges) crosses processes less.
 * Messages are counted (O(n rounds) a row, so up to 16384 blocks). */
static const bpc__merge_variant_t *builtin_variant(const bpc__merge_plan_t *P)
{
  const bpc__merge_variant_t *best = variant_of(&bpc__engine_merge.rows[0]);
  if (!(P->R.nrounds > 0 && P->rounds == P->R.nrounds && P->a->mode != BPC_ASSIGN_CONTIGUOUS &&
        P->n <= (1 << 14) && P->a->nranks > 1))
    return best;
  long long fewest = -1; /* counted once another row is a candidate */
  for (int i = 1; i < bpc__engine_merge.nrows; i++) {
    const bpc__merge_variant_t *v = variant_of(&bpc__engine_merge.rows[i]);
    if (v->commutative_only && !P->op.commutative)
      continue;
    if (fewest < 0)
      fewest = bpc__merge_remote_msgs(P, best);
    const long long m = bpc__merge_remote_msgs(P, v);
    if (m < fewest) {
      fewest = m;
      best = v;
    }
  }
  return best;
}

/* Segments of element-wise merges of P->count elements, `sb` bytes each. */
static void plan_segments(bpc__merge_plan_t *P, size_t sb)
{
  P->nseg = 1;
  P->seg_elems = P->count;
  if (!P->op.elementwise || P->rounds == 0 || sb == SIZE_MAX)
    return;
  size_t se = sb / P->type->elem_size;
  if (se < 1)
    se = 1;
  if (P->count / se >= (size_t)BPC__MERGE_MAX_SEGMENTS)
    se = P->count / (size_t)(BPC__MERGE_MAX_SEGMENTS - 1) + 1;
  if (P->count > se) {
    P->segmented = 1;
    P->seg_elems = se;
    P->nseg = (int)((P->count + se - 1) / se);
  }
}

/* What merge_setup prepares: the plan of the executor, ready to run on
 * an open exchange, the chosen row and where the choice came from, and the
 * memory it owns (merge_setup_free). */
typedef struct merge_setup {
  bpc__merge_plan_t P;
  const bpc__algo_t *row;
  bpc_algo_source_t source;
  int *pos_of;   /* gid -> position, for params->order (a call's: the
                  * context's scratch; a plan's: its own) */
  int *order;    /* a copy of params->order (plans only) */
  int own;       /* pos_of and order are this setup's (a plan's) */
} merge_setup_t;

static void merge_setup_free(merge_setup_t *M)
{
  if (M->own) {
    free(M->pos_of);
    free(M->order);
  }
  M->pos_of = M->order = NULL;
}

/*
 * Steps 1-4 of the frame and the decisions from agreed values: every
 * argument checked on this rank, the algorithm picked, one argument
 * agreement (with `plan_id`, -1 for a call that is not a plan's making, so
 * that bpc_merge on some ranks and bpc_merge_init on others disagree), the
 * item count of element-wise merges, the k-vector, the variant and the
 * segments. `copy_order`: keep a copy of params->order (a plan outlives
 * the params). `rc`: this rank's error so far (BPC_OK: none), agreed on
 * with the others. Returns the code every rank has; on failure M owns
 * nothing.
 */
static int merge_setup(bpc_ctx_t *ctx, const bpc_assign_t *assign, const bpc_type_t *type,
                       void *items, const bpc_merge_op_t *op, const bpc_merge_params_t *params,
                       long long plan_id, int copy_order, int rc, merge_setup_t *M)
{
  const bpc_merge_params_t defaults = bpc_merge_params_default();
  const bpc_merge_params_t *prm = params != NULL ? params : &defaults;
  const bpc__algo_t *row = NULL;
  bpc__merge_plan_t *const Pp = &M->P;
  char msg[BPC__ERRMSG_LEN];

  memset(M, 0, sizeof *M);
  M->source = BPC_SOURCE_BUILTIN;
  M->own = copy_order;
#define P (*Pp)
  P.ctx = ctx;
  P.a = assign;
  P.type = type;
  P.items = items;
  if (op != NULL)
    P.op = *op;
  const int contig = type != NULL && type->kind == BPC_TYPE_CONTIGUOUS;
  if (P.op.fn == NULL && P.op.binary.fn != NULL) { /* the engine folds with binary */
    P.op.commutative = P.op.binary.commutative;
    P.op.elementwise = contig;
  }
  const int ew = P.op.elementwise != 0;

  /* --- 1. every argument on this rank; the first error is the rank's code */
  if (assign == NULL)
    FIRST_ERR(rc, ctx, BPC_ENULL, "bpc_merge: assign is NULL");
  else if (bpc_assign_ctx(assign) != ctx)
    FIRST_ERR(rc, ctx, BPC_EINVAL, "bpc_merge: the assignment belongs to another context");
  P.n = assign != NULL ? assign->nblocks : 0;
  if (type == NULL)
    FIRST_ERR(rc, ctx, BPC_ENULL, "bpc_merge: type is NULL");
  else if (rc == BPC_OK)
    rc = bpc_type_check(ctx, type);
  if (op == NULL)
    FIRST_ERR(rc, ctx, BPC_ENULL, "bpc_merge: op is NULL");
  else if (op->fn == NULL && op->binary.fn == NULL)
    FIRST_ERR(rc, ctx, BPC_ENULL,
              "bpc_merge: op->fn (the merge callback) and op->binary.fn are both NULL");
  else if (op->fn != NULL && op->binary.fn != NULL)
    FIRST_ERR(rc, ctx, BPC_EINVAL,
              "bpc_merge: op->fn and op->binary.fn are both set (give one of them)");
  if (ew && type != NULL && !contig)
    FIRST_ERR(rc, ctx, BPC_EINVAL, "merge: op->elementwise applies to contiguous item types only");
  /* --- 2. the algorithm (NULL row: the built-in choice, after agreement) */
  if (rc == BPC_OK)
    rc = bpc__algo_pick(ctx, &bpc__engine_merge, prm->algorithm, NULL, &row, &M->source);
  if (row != NULL && variant_of(row)->commutative_only && !P.op.commutative)
    FIRST_ERR(rc, ctx, BPC_EINVAL,
              "merge: %s forms strided groups and needs a commutative merge (set "
              "op->commutative, or use \"doubling\")", row->info.name);
  const int user_k = prm->k != NULL || prm->nk != 0;
  if (user_k && assign != NULL) {
    int krc = bpc__rounds_init(&P.R, P.n, prm->k, prm->nk, msg, sizeof msg);
    if (krc != BPC_OK)
      FIRST_ERR(rc, ctx, krc, "merge: %s", msg);
    else if (rc == BPC_OK)
      rc = check_rounds(ctx, &P.R, prm->rounds);
  }
  if (prm->rounds < 0)
    FIRST_ERR(rc, ctx, BPC_ERANGE, "merge: %d rounds requested; want 0 (all) or more",
              prm->rounds);
  /* The automatic k-vector depends on the item size when it is known on
   * every rank: choose it now, unless the size is still to be agreed
   * (element-wise without params->count: after the agreement, where a
   * rounds value beyond it fails alike on every rank, rounds being agreed) */
  const int auto_now = !user_k && (!ew || prm->count > 0);
  if (auto_now && rc == BPC_OK)
    rc = auto_kvec(&P, ew ? prm->count * type->elem_size : 0, prm->rounds);
  if (prm->order != NULL && assign != NULL) {
    int orc = bpc__perm_check(prm->order, P.n, msg, sizeof msg);
    if (orc != BPC_OK)
      FIRST_ERR(rc, ctx, orc, "merge: params->order: %s", msg);
    else if ((M->pos_of = copy_order ? bpc__malloc(sizeof(int) * (size_t)P.n)
                                     : bpc__scratch(ctx, BPC__SCR_MERGE_ORDER,
                                                    sizeof(int) * (size_t)P.n)) == NULL ||
             (copy_order && (M->order = bpc__malloc(sizeof(int) * (size_t)P.n)) == NULL))
      FIRST_ERR(rc, ctx, BPC_ENOMEM, "merge: out of memory for the order of %d blocks", P.n);
    else {
      bpc__perm_invert(prm->order, P.n, M->pos_of);
      if (copy_order)
        memcpy(M->order, prm->order, sizeof(int) * (size_t)P.n);
      P.order = copy_order ? M->order : prm->order;
      P.pos_of = M->pos_of;
    }
  }
  const int *gids = NULL;
  int nl = 0;
  long long minc = LLONG_MAX, maxc = LLONG_MIN;
  if (assign != NULL)
    bpc_assign_local(assign, &gids, &nl);
  if (nl > 0 && items == NULL)
    FIRST_ERR(rc, ctx, BPC_ENULL, "bpc_merge: items is NULL but this rank has %d block(s)", nl);
  else if (contig && rc == BPC_OK)
    rc = check_items(ctx, items, gids, nl, ew, prm->count, &minc, &maxc);
  else if (type != NULL && !contig && rc == BPC_OK)
    rc = check_binary_items(ctx, &P.op, items, gids, nl);
  size_t sb = prm->segment_bytes;
  if (sb == 0)
    sb = (size_t)bpc__env_ll("BPC_MERGE_SEGMENT_BYTES", (long long)BPC__MERGE_SEGMENT_DEFAULT);

  /* --- 3, 4. what must match, and one agreement before any message */
  bpc__sig_t sig;
  bpc__sig_init(&sig);
  bpc__sig_int(&sig, "block count", P.n);
  bpc__sig_assign(&sig, assign);
  bpc__sig_bytes(&sig, "k-vector", prm->k, sizeof(int) * (size_t)(prm->nk > 0 ? prm->nk : 0));
  bpc__sig_int(&sig, "rounds", prm->rounds);
  bpc__sig_bytes(&sig, "order", prm->order, sizeof(int) * (size_t)P.n);
  bpc__sig_int(&sig, "algorithm", row != NULL ? row->info.id : 0);
  bpc__sig_int(&sig, "op->commutative", P.op.commutative != 0);
  bpc__sig_int(&sig, "op->elementwise", ew);
  bpc__sig_type(&sig, type);
  bpc__sig_int(&sig, "segment bytes", ew ? (long long)sb : 0);
  bpc__sig_int(&sig, "params->count", (long long)prm->count);
  bpc__sig_int(&sig, "persistent plan", plan_id);
  rc = bpc__agree_args(ctx, "merge", rc, &sig);

  /* From here every decision is made from agreed values: the same on every
   * rank, so an error returns at once on every rank alike. */
  if (rc == BPC_OK && ew && prm->count > 0)
    P.count = prm->count;
  else if (rc == BPC_OK && ew)
    rc = agree_count(ctx, minc, maxc, &P.count);
  if (rc == BPC_OK && !user_k && !auto_now)
    rc = auto_kvec(&P, P.count * type->elem_size, prm->rounds);
  if (rc != BPC_OK) {
    merge_setup_free(M);
    return rc;
  }
  P.rounds = prm->rounds == 0 ? P.R.nrounds : prm->rounds;
  P.variant = row != NULL ? variant_of(row) : builtin_variant(&P);
  if (row == NULL)
    row = bpc__algo_by_id(&bpc__engine_merge, P.variant->id);
  plan_segments(&P, sb);
  P.nthreads = prm->nthreads;
#ifdef _OPENMP
  if (P.nthreads <= 0)
    P.nthreads = omp_get_max_threads();
#else
  P.nthreads = 1;
#endif
  if (P.nthreads < 1)
    P.nthreads = 1;
#undef P
  M->row = row;
  return BPC_OK;
}

/* Steps 5 and 6: one exchange, the row's run, the outcome agreement (a
 * failure anywhere stops the others' waits). `result`: made before the
 * agreement (so that running out of memory for it is agreed on too). */
static int merge_run(merge_setup_t *M, bpc__merge_plan_t *P, bpc_merge_result_t **result)
{
  bpc_ctx_t *ctx = P->ctx;
  int rc = bpc__exch_open(ctx, "merge", bpc__assign_rank_cb, P->a, &P->ex);
  if (rc == BPC_OK) {
    /* with many blocks per process (round-robin assignments above all) a
     * round sends many small items between the same two processes: one
     * MPI message per pair and push (lib/comm/comm.h) */
    bpc__exch_bundle(P->ex, 1);
    rc = M->row->run(P);
  }
  if (rc == BPC_OK && result != NULL && make_result(P, M->source, result) != BPC_OK)
    rc = bpc__err(ctx, BPC_ENOMEM, "merge: out of memory for the result");
  rc = bpc__exch_end(ctx, &P->ex, rc);
  if (rc != BPC_OK && result != NULL)
    bpc_merge_result_destroy(result);
  return rc;
}

static int merge_entry(bpc_ctx_t *ctx, const bpc_assign_t *assign, const bpc_type_t *type,
                       void *items, const bpc_merge_op_t *op, const bpc_merge_params_t *params,
                       bpc_merge_result_t **result)
{
  merge_setup_t M;
  if (result != NULL)
    *result = NULL;
  if (ctx == NULL)
    return BPC_ENULL;
  int rc = merge_setup(ctx, assign, type, items, op, params, -1, 0, BPC_OK, &M);
  if (rc == BPC_OK)
    rc = merge_run(&M, &M.P, result);
  merge_setup_free(&M);
  return rc;
}

/* The public entry: the re-entrancy guard (bpc__enter) around the call. */
int bpc_merge(bpc_ctx_t *ctx, const bpc_assign_t *assign, const bpc_type_t *type, void *items,
              const bpc_merge_op_t *op, const bpc_merge_params_t *params,
              bpc_merge_result_t **result)
{
  BPC__GUARDED_RETURN(ctx, "bpc_merge", merge_entry(ctx, assign, type, items, op, params, result));
}

/* -------------------------------------------------- persistent plans */

typedef struct merge_pplan {
  bpc_plan_t base; /* first: the plan is a bpc_plan_t */
  merge_setup_t M;
  /* the start agreement: (code, id, -id) reduced with MIN, alongside the
   * schedule (bpc__exch_guard) */
  long long gin[3]; /* (code, id, -id) */
  bpc__minred_t red;
  int own; /* this rank's code from the start's checks */
} merge_pplan_t;

static int merge_plan_red(void *arg)
{
  merge_pplan_t *mp = arg;
  return bpc__minred_start(mp->base.ctx, mp->gin, 3, &mp->red);
}

static int merge_plan_test(void *arg, int *done, int wait)
{
  merge_pplan_t *mp = arg;
  return wait ? bpc__minred_wait_step(mp->base.ctx, &mp->red, done)
              : bpc__minred_test(mp->base.ctx, &mp->red, done);
}

/* The start agreement's verdict: a rank's bad items (its own code here,
 * BPC__EPEER elsewhere: the outcome agreement brings its message), or
 * ranks that started different plans. */
static int merge_plan_verdict(void *arg)
{
  merge_pplan_t *mp = arg;
  const long long *g = mp->red.acc; /* (code, id, -id), reduced */
  if (mp->own != BPC_OK)
    return mp->own;
  if (g[0] != BPC_OK)
    return BPC__EPEER;
  if (g[1] != -g[2])
    return bpc__err(mp->base.ctx, BPC_EMISMATCH,
                    "merge: ranks started different persistent plans (plan ids %lld to %lld; "
                    "this rank's is %lld): start the same plan on every rank",
                    g[1], -g[2], mp->base.id);
  return BPC_OK;
}

/* One start: this rank's items checked as they are now (bpc_merge's
 * checks), then the exchange opened and the start agreement (on the
 * checks and the plan's identity: a bad item on some ranks, or ranks
 * starting different plans, fail on every rank) started without waiting
 * for it: it runs alongside the schedule, whose callbacks wait for it
 * (bpc__exch_guard). A rank with a bad item runs no schedule. Then the
 * outcome agreement, as in bpc_merge. */
static int merge_plan_start(bpc_plan_t *plan)
{
  merge_pplan_t *mp = (merge_pplan_t *)plan;
  bpc__merge_plan_t *T = &mp->M.P;
  bpc_ctx_t *ctx = plan->ctx;
  int rc = BPC_OK;
  const int *gids = NULL;
  int nl = 0;
  bpc_assign_local(T->a, &gids, &nl);
  if (nl > 0 && T->items == NULL)
    rc = bpc__err(ctx, BPC_ENULL, "bpc_merge: items is NULL but this rank has %d block(s)", nl);
  else if (T->type->kind == BPC_TYPE_CONTIGUOUS) {
    long long minc = LLONG_MAX, maxc = LLONG_MIN;
    rc = check_items(ctx, T->items, gids, nl, T->op.elementwise != 0, T->count, &minc, &maxc);
  } else {
    rc = check_binary_items(ctx, &T->op, T->items, gids, nl);
  }
  bpc__merge_plan_t P = *T; /* the run's own copy: it sets P.ex */
  const int orc = bpc__exch_open(ctx, "merge", bpc__assign_rank_cb, P.a, &P.ex);
  if (rc == BPC_OK)
    rc = orc; /* no exchange (out of memory): this rank's failure, agreed on too */
  mp->own = rc;
  /* every rank starts the agreement, also after a failed open (the spare
   * exchange carries the guard) */
  mp->gin[0] = rc;
  mp->gin[1] = plan->id;
  mp->gin[2] = -plan->id;
  bpc__exch_guard(P.ex, merge_plan_red, merge_plan_test, merge_plan_verdict, mp);
  if (rc == BPC_OK) {
    bpc__exch_bundle(P.ex, 1);
    rc = mp->M.row->run(&P);
  }
  return bpc__exch_end(ctx, &P.ex, rc);
}

static void merge_plan_destroy(bpc_plan_t *plan)
{
  merge_pplan_t *mp = (merge_pplan_t *)plan;
  merge_setup_free(&mp->M);
  free(mp);
}

static int merge_init_entry(bpc_ctx_t *ctx, const bpc_assign_t *assign, const bpc_type_t *type,
                            void *items, const bpc_merge_op_t *op,
                            const bpc_merge_params_t *params, bpc_plan_t **plan)
{
  if (plan != NULL)
    *plan = NULL;
  if (ctx == NULL)
    return BPC_ENULL;
  const long long id = ++ctx->plan_seq; /* on every rank alike, whatever follows */
  merge_pplan_t *mp = bpc__calloc(1, sizeof *mp);
  int rc = BPC_OK;
  if (plan == NULL)
    rc = bpc__err(ctx, BPC_ENULL, "bpc_merge_init: plan is NULL");
  else if (mp == NULL)
    rc = bpc__err(ctx, BPC_ENOMEM, "bpc_merge_init: out of memory for the plan");
  merge_setup_t M;
  rc = merge_setup(ctx, assign, type, items, op, params, id, 1, rc, &M);
  if (rc != BPC_OK) {
    free(mp);
    return rc;
  }
  /* the init's statistics record is its own: the first start begins one */
  ctx->stats_agreed = 0;
  mp->M = M;
  mp->base.ctx = ctx;
  mp->base.engine = "merge";
  mp->base.call = "bpc_merge";
  mp->base.id = id;
  mp->base.start = merge_plan_start;
  mp->base.destroy = merge_plan_destroy;
  *plan = &mp->base;
  return BPC_OK;
}

int bpc_merge_init(bpc_ctx_t *ctx, const bpc_assign_t *assign, const bpc_type_t *type,
                   void *items, const bpc_merge_op_t *op, const bpc_merge_params_t *params,
                   bpc_plan_t **plan)
{
  BPC__GUARDED_RETURN(ctx, "bpc_merge_init",
                      merge_init_entry(ctx, assign, type, items, op, params, plan));
}

int bpc_merge_plan_result(const bpc_plan_t *plan, bpc_merge_result_t **result)
{
  if (result != NULL)
    *result = NULL;
  if (plan == NULL || result == NULL)
    return BPC_ENULL;
  if (plan->start != merge_plan_start)
    return bpc__err(plan->ctx, BPC_EINVAL, "bpc_merge_plan_result: a plan of %s, not of merge",
                    plan->engine);
  const merge_pplan_t *mp = (const merge_pplan_t *)plan;
  if (make_result(&mp->M.P, mp->M.source, result) != BPC_OK)
    return bpc__err(plan->ctx, BPC_ENOMEM, "bpc_merge_plan_result: out of memory");
  return BPC_OK;
}
