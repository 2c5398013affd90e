/*
 * lib/engines/merge/merge.c - merge-reduce: the public entry bpc_merge
 * (argument checks on every rank alike before any message, the choice of
 * algorithm and k-vector, the segment plan of element-wise merges, the
 * collective error agreement after the schedule), the algorithm table, the
 * automatic k-vector, and the result queries (roots, absorbed gids).
 *
 * Collectives besides the schedule's point-to-point messages: bpc__agree at
 * the end of every call (one MPI_Allreduce; a callback failure on one rank
 * is BPC_ECALLBACK on every rank, with that rank's message: value, gid,
 * round), and one MPI_Allreduce before the schedule for element-wise merges
 * without params.count (the item counts, which must agree for segments to
 * line up). Serial contexts make no MPI call.
 */
#include "engines/merge/merge.h"

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

/* ----------------------------------------------------------- the table */

static const bpc_merge_algo_t merge_algos[] = {
    {BPC_MERGE_DOUBLING, "doubling",
     "distance doubling: groups of adjacent blocks, nearest first; any associative merge "
     "(default)"},
    {BPC_MERGE_HALVING, "halving",
     "distance halving: strided groups, farthest first; commutative merges only"},
};
#define NALGOS ((int)(sizeof merge_algos / sizeof merge_algos[0]))

int bpc_merge_algorithms(const bpc_merge_algo_t **table, int *n)
{
  if (table == NULL || n == NULL)
    return BPC_ENULL;
  *table = merge_algos;
  *n = NALGOS;
  return BPC_OK;
}

static const char *algo_name(int id)
{
  for (int i = 0; i < NALGOS; i++)
    if (merge_algos[i].id == id)
      return merge_algos[i].name;
  return "?";
}

bpc_merge_params_t bpc_merge_params_default(void)
{
  bpc_merge_params_t p;
  memset(&p, 0, sizeof p);
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

/* --------------------------------------------------------- agreement */

/* Element-wise merges: agree on the item count (and on local argument
 * errors) before any message. Returns the same code on every rank. */
static int agree_counts(bpc__merge_plan_t *P, int local_rc, long long minc, long long maxc)
{
  bpc_ctx_t *ctx = P->ctx;
  /* a rank without blocks contributes the neutral element to both */
  long long in[4] = {minc, maxc == LLONG_MIN ? LLONG_MAX : -maxc, local_rc != BPC_OK ? 0 : 1,
                     local_rc != BPC_OK ? (long long)ctx->rank : LLONG_MAX};
  long long out[4] = {in[0], in[1], in[2], in[3]};
  if (!ctx->serial && ctx->size > 1) {
    int mrc = MPI_Allreduce(in, out, 4, MPI_LONG_LONG, MPI_MIN, ctx->comm);
    if (mrc != MPI_SUCCESS)
      return bpc__err_mpi(ctx, mrc, "MPI_Allreduce (merge item counts)");
  }
  if (out[2] == 0) {
    if (local_rc != BPC_OK)
      return local_rc;
    return bpc__err(ctx, BPC_ENULL, "merge: rank %lld passed bad items (NULL); no rank started",
                    out[3]);
  }
  if (out[0] == LLONG_MAX) { /* no blocks anywhere: cannot happen (n >= 1) */
    P->count = 0;
    return BPC_OK;
  }
  if (out[0] != -out[1])
    return bpc__err(ctx, BPC_EINVAL,
                    "merge: BPC_MERGE_ELEMENTWISE needs items of one count, but counts range "
                    "from %lld to %lld elements",
                    out[0], -out[1]);
  P->count = (size_t)out[0];
  return BPC_OK;
}

/* ----------------------------------------------------------- result */

struct bpc_merge_result {
  int n;
  bpc__rounds_t R;
  int rounds;
  int algo;
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

int bpc_merge_is_root(const bpc_merge_result_t *r, int gid, int *is_root)
{
  if (r == NULL || is_root == NULL)
    return BPC_ENULL;
  if (gid < 0 || gid >= r->n)
    return BPC_ERANGE;
  int p = res_pos(r, gid);
  *is_root = bpc__merge_root(&r->R, r->rounds, p) == p;
  return BPC_OK;
}

int bpc_merge_root_of(const bpc_merge_result_t *r, int gid, int *root)
{
  if (r == NULL || root == NULL)
    return BPC_ENULL;
  if (gid < 0 || gid >= r->n)
    return BPC_ERANGE;
  *root = res_gid(r, bpc__merge_root(&r->R, r->rounds, res_pos(r, gid)));
  return BPC_OK;
}

int bpc_merge_absorbed(const bpc_merge_result_t *r, int gid, int *gids, int cap, int *n)
{
  if (r == NULL || n == NULL || (gids == NULL && cap > 0))
    return BPC_ENULL;
  *n = 0;
  if (gid < 0 || gid >= r->n)
    return BPC_ERANGE;
  int p = res_pos(r, gid);
  if (bpc__merge_root(&r->R, r->rounds, p) != p)
    return BPC_OK;
  int total = bpc__merge_absorbed(&r->R, r->rounds, p, gids, cap > 0 ? cap : 0);
  if (total < 0)
    return BPC_ERANGE;
  int w = cap < total ? cap : total;
  for (int i = 0; i < w; i++)
    gids[i] = res_gid(r, gids[i]);
  *n = total;
  if (gids == NULL && cap == 0) /* a size query */
    return BPC_OK;
  return cap < total ? BPC_ERANGE : BPC_OK;
}

int bpc_merge_schedule(const bpc_merge_result_t *r, const char **algorithm, int *k, int cap,
                       int *nk, int *rounds)
{
  if (r == NULL || (k == NULL && cap > 0))
    return BPC_ENULL;
  if (algorithm)
    *algorithm = algo_name(r->algo);
  if (nk)
    *nk = r->R.nrounds;
  if (rounds)
    *rounds = r->rounds;
  for (int i = 0; i < cap && i < r->R.nrounds; i++)
    k[i] = r->R.k[i];
  return cap < r->R.nrounds && k != NULL ? BPC_ERANGE : BPC_OK;
}

static int make_result(const bpc__merge_plan_t *P, bpc_merge_result_t **out)
{
  bpc_merge_result_t *r = bpc__calloc(1, sizeof *r);
  if (r == NULL)
    return BPC_ENOMEM;
  r->n = P->n;
  r->R = P->R;
  r->rounds = P->rounds;
  r->algo = P->algo;
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

/* Resolve the algorithm name: argument, else BPC_MERGE_ALGORITHM, else
 * auto (0). */
static int pick_algorithm(bpc_ctx_t *ctx, const char *arg, int *id)
{
  const char *name = arg, *from = "argument";
  if (name == NULL || strcmp(name, "auto") == 0) {
    const char *env = getenv("BPC_MERGE_ALGORITHM");
    name = NULL;
    if (env != NULL && env[0] != '\0' && strcmp(env, "auto") != 0) {
      name = env;
      from = "BPC_MERGE_ALGORITHM";
    }
  }
  *id = 0;
  if (name == NULL)
    return BPC_OK;
  for (int i = 0; i < NALGOS; i++)
    if (strcmp(merge_algos[i].name, name) == 0) {
      *id = merge_algos[i].id;
      return BPC_OK;
    }
  return bpc__err(ctx, BPC_EALGO,
                  "merge: unknown algorithm '%s' (%s); known: auto doubling halving", name, from);
}

int bpc_merge(const bpc_assign_t *a, void *items, const bpc_merge_params_t *params,
              bpc_merge_result_t **result)
{
  bpc_ctx_t *ctx = a ? bpc_assign_ctx(a) : NULL;
  bpc__merge_plan_t P;
  int *pos_of = NULL;
  int rc = BPC_OK, local_rc = BPC_OK, algo = 0;
  char msg[BPC__ERRMSG_LEN];

  if (result != NULL)
    *result = NULL;
  if (a == NULL || ctx == NULL)
    return bpc__err(ctx, BPC_ENULL, "bpc_merge: assignment is NULL");
  if (params == NULL)
    return bpc__err(ctx, BPC_ENULL, "bpc_merge: params is NULL");
  if (params->type == NULL)
    return bpc__err(ctx, BPC_ENULL, "bpc_merge: params->type is NULL");
  if (params->merge == NULL)
    return bpc__err(ctx, BPC_ENULL, "bpc_merge: params->merge (the merge callback) is NULL");
  rc = bpc_type_check(ctx, params->type);
  if (rc != BPC_OK)
    return rc;

  memset(&P, 0, sizeof P);
  P.ctx = ctx;
  P.a = a;
  P.type = params->type;
  P.merge = params->merge;
  P.user = params->user;
  P.flags = params->flags;
  P.items = items;
  P.n = a->nblocks;
  const int contig = P.type->kind == BPC_TYPE_CONTIGUOUS;
  const int ew = (P.flags & BPC_MERGE_ELEMENTWISE) != 0;

  /* --- checks that come out the same on every rank: return at once */
  if (ew && !contig)
    return bpc__err(ctx, BPC_EINVAL,
                    "merge: BPC_MERGE_ELEMENTWISE applies to contiguous item types only");
  rc = pick_algorithm(ctx, params->algorithm, &algo);
  if (rc != BPC_OK)
    return rc;
  if (algo == BPC_MERGE_HALVING && !(P.flags & BPC_MERGE_COMMUTATIVE))
    return bpc__err(ctx, BPC_EINVAL,
                    "merge: distance halving forms strided groups and needs a commutative merge "
                    "(set BPC_MERGE_COMMUTATIVE, or use \"doubling\")");
  if (params->k != NULL || params->nk != 0) {
    rc = bpc__rounds_init(&P.R, P.n, params->k, params->nk, 0, msg, sizeof msg);
    if (rc != BPC_OK)
      return bpc__err(ctx, rc, "merge: %s", msg);
  }
  if (params->order != NULL) {
    rc = bpc__perm_check(params->order, P.n, msg, sizeof msg);
    if (rc != BPC_OK)
      return bpc__err(ctx, rc, "merge: params->order: %s", msg);
  }
  if (params->rounds < 0)
    return bpc__err(ctx, BPC_ERANGE, "merge: %d rounds requested; want 0 (all) or more",
                    params->rounds);

  /* --- this rank's items (a bad one fails the call everywhere) */
  const int *gids = NULL;
  int nl = 0;
  bpc_assign_local(a, &gids, &nl);
  long long minc = LLONG_MAX, maxc = LLONG_MIN;
  if (nl > 0 && items == NULL) {
    local_rc = bpc__err(ctx, BPC_ENULL, "bpc_merge: items is NULL but this rank has %d block(s)",
                        nl);
  } else if (contig) {
    const bpc_buf_t *b = items;
    for (int i = 0; i < nl && local_rc == BPC_OK; i++) {
      if (b[i].count > 0 && b[i].data == NULL)
        local_rc = bpc__err(ctx, BPC_ENULL, "bpc_merge: the item of gid %d has %zu elements but "
                                            "data NULL", gids[i], b[i].count);
      else if (ew && params->count > 0 && b[i].count != params->count)
        local_rc = bpc__err(ctx, BPC_EINVAL,
                            "merge: BPC_MERGE_ELEMENTWISE with params->count %zu, but the item of "
                            "gid %d has %zu elements", params->count, gids[i], b[i].count);
      if ((long long)b[i].count < minc)
        minc = (long long)b[i].count;
      if ((long long)b[i].count > maxc)
        maxc = (long long)b[i].count;
    }
  }
  if (ew && params->count > 0) {
    P.count = params->count; /* declared: no collective; a bad rank sends zeros */
  } else if (ew) {
    rc = agree_counts(&P, local_rc, minc, maxc);
    if (rc != BPC_OK)
      return rc;
  }
  P.local_bad = local_rc != BPC_OK;

  /* --- k-vector, rounds, algorithm */
  if (params->k == NULL && params->nk == 0) {
    int k[BPC__MAX_ROUNDS], nk = 0;
    size_t bytes = ew ? P.count * P.type->elem_size : 0;
    rc = bpc_merge_kvec_auto(a, bytes, k, BPC__MAX_ROUNDS, &nk);
    if (rc == BPC_OK)
      rc = bpc__rounds_init(&P.R, P.n, k, nk, 0, msg, sizeof msg);
    if (rc != BPC_OK) {
      rc = bpc__err(ctx, rc, "merge: automatic k-vector: %s", msg);
      goto finish;
    }
  }
  if (params->rounds > P.R.nrounds) {
    char kv[256];
    bpc__kvec_format(P.R.k, P.R.nrounds, kv, sizeof kv);
    rc = bpc__err(ctx, BPC_ERANGE,
                  "merge: %d rounds requested, but the k-vector %s has %d (a full reduction)",
                  params->rounds, kv, P.R.nrounds);
    goto finish;
  }
  P.rounds = params->rounds == 0 ? P.R.nrounds : params->rounds;
  if (params->order != NULL) {
    pos_of = bpc__malloc(sizeof(int) * (size_t)P.n);
    if (pos_of == NULL) {
      /* take part without merging; positions are then found by search */
      local_rc = bpc__err(ctx, BPC_ENOMEM, "merge: out of memory for the order of %d blocks", P.n);
      P.local_bad = 1;
      P.order = params->order;
    } else {
      bpc__perm_invert(params->order, P.n, pos_of);
      P.order = params->order;
      P.pos_of = pos_of;
    }
  }
  if (algo == 0) {
    /* auto: halving only for full reductions (a partial one keeps the
     * contiguous regions of doubling) of commutative merges, when it
     * crosses processes less. Doubling is local-first for a contiguous
     * assignment; others are counted (O(n rounds), so up to 16384 blocks). */
    algo = BPC_MERGE_DOUBLING;
    if ((P.flags & BPC_MERGE_COMMUTATIVE) && P.R.nrounds > 0 && P.rounds == P.R.nrounds &&
        a->mode != BPC_ASSIGN_CONTIGUOUS && P.n <= (1 << 14) && a->nranks > 1) {
      bpc__rounds_t H = P.R;
      H.halving = 1;
      if (bpc__merge_remote_msgs(&P, &H) < bpc__merge_remote_msgs(&P, &P.R))
        algo = BPC_MERGE_HALVING;
    }
  }

  /* --- segments, threads */
  P.nseg = 1;
  P.seg_elems = P.count;
  if (ew && P.rounds > 0 && params->segment_bytes != SIZE_MAX) {
    size_t sb = params->segment_bytes;
    if (sb == 0)
      sb = (size_t)bpc__env_ll("BPC_MERGE_SEGMENT_BYTES", (long long)BPC__MERGE_SEGMENT_DEFAULT);
    size_t se = sb / P.type->elem_size;
    if (se < 1)
      se = 1;
    if (P.count / se >= (size_t)BPC__MERGE_MAX_SEGMENTS)
      se = P.count / (size_t)(BPC__MERGE_MAX_SEGMENTS - 1) + 1;
    if (P.count > se) {
      P.segmented = 1;
      P.seg_elems = se;
      P.nseg = (int)((P.count + se - 1) / se);
    }
  }
  P.nthreads = params->nthreads;
#ifdef _OPENMP
  if (P.nthreads <= 0)
    P.nthreads = omp_get_max_threads();
#else
  P.nthreads = 1;
#endif
  if (P.nthreads < 1)
    P.nthreads = 1;

  /* --- run */
  rc = algo == BPC_MERGE_HALVING ? bpc__merge_halving(&P) : bpc__merge_doubling(&P);
  if (rc == BPC_OK && local_rc != BPC_OK)
    rc = local_rc;
  if (rc == BPC_OK && result != NULL && make_result(&P, result) != BPC_OK)
    rc = bpc__err(ctx, BPC_ENOMEM, "merge: out of memory for the result");

finish:
  if (rc == BPC_OK && local_rc != BPC_OK)
    rc = local_rc;
  rc = bpc__agree(ctx, rc);
  if (rc != BPC_OK && result != NULL)
    bpc_merge_result_destroy(result);
  free(pos_of);
  return rc;
}
