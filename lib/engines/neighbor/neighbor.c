/*
 * lib/engines/neighbor/neighbor.c - the neighbourhood exchange engine's
 * public entry: options (synchrony, threads, round limit, algorithm by name
 * or BPC_NEIGHBOR_ALGORITHM / BPC_NEIGHBOR_SYNCHRONY from the environment),
 * the algorithm table, creation from a decomposition (bpc_decomp_links) or a
 * user graph (in-neighbour processes found with one MPI_Alltoall), argument
 * checks agreed over ranks before any message, destroy (with the drain that
 * receives every message still in flight), and queries.
 *
 * Algorithm (see neighbor_round.c for the round and its cost): per round
 * every process sends one bundle to every process that owns a block linked
 * from one of its blocks - also when it is empty, so receivers know how many
 * messages a round owes them - and items between blocks of one process are
 * handed over in memory.
 */
#include "engines/neighbor/neighbor.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct nb_algo {
  int id;
  const char *name;
  const char *desc;
} nb_algo_t;

static const nb_algo_t nb_algos[] = {
    {BPC__NB_ALGO_PACKED, "packed",
     "one bundle per process pair and round: block ids, sizes, then payloads (DIY Algorithm 3); "
     "same-process items never touch MPI"},
};
#define NB_NALGOS ((int)(sizeof nb_algos / sizeof nb_algos[0]))

bpc_neighbor_options_t bpc_neighbor_options_default(void)
{
  bpc_neighbor_options_t o;
  memset(&o, 0, sizeof o);
  o.synchrony = -1.0;
  o.nthreads = 1;
  o.max_rounds = 0;
  o.algorithm = NULL;
  return o;
}

static int rank_identity(const void *arg, int gid)
{
  (void)arg;
  return gid;
}

static int cmp_int(const void *a, const void *b)
{
  int x = *(const int *)a, y = *(const int *)b;
  return (x > y) - (x < y);
}

/* Sort and remove duplicates; returns the new count. */
static int sort_unique(int *v, int n)
{
  if (n <= 1)
    return n;
  qsort(v, (size_t)n, sizeof *v, cmp_int);
  int m = 1;
  for (int i = 1; i < n; i++)
    if (v[i] != v[m - 1])
      v[m++] = v[i];
  return m;
}

/* Resolve the options into nb; BPC_OK or a code with a message. The same
 * outcome on every rank given the same arguments and environment. */
static int resolve_options(bpc_ctx_t *ctx, const bpc_neighbor_options_t *opts, bpc_neighbor_t *nb)
{
  bpc_neighbor_options_t o = opts ? *opts : bpc_neighbor_options_default();
  double f = o.synchrony;
  if (f < 0) {
    const char *env = getenv("BPC_NEIGHBOR_SYNCHRONY");
    f = 1.0;
    if (env != NULL && *env != '\0') {
      char *end = NULL;
      errno = 0;
      f = strtod(env, &end);
      if (errno != 0 || end == env || *end != '\0' || !(f > 0.0 && f <= 1.0))
        return bpc__err(ctx, BPC_EINVAL,
                        "BPC_NEIGHBOR_SYNCHRONY='%s': want a fraction in (0, 1], e.g. 0.5", env);
    }
  }
  if (!(f > 0.0 && f <= 1.0))
    return bpc__err(ctx, BPC_EINVAL,
                    "synchrony %g is outside (0, 1] (1.0: wait for every expected arrival)", f);
  if (o.nthreads < 0)
    return bpc__err(ctx, BPC_EINVAL,
                    "nthreads is %d; use 0 (OpenMP default), 1 (serial) or more", o.nthreads);
  if (o.max_rounds < 0)
    return bpc__err(ctx, BPC_EINVAL, "max_rounds is %lld; use 0 (no limit) or a positive count",
                    o.max_rounds);
  const char *name = o.algorithm;
  int from_env = 0;
  if (name == NULL || strcmp(name, "auto") == 0) {
    const char *env = getenv("BPC_NEIGHBOR_ALGORITHM");
    name = "auto";
    if (env != NULL && *env != '\0' && strcmp(env, "auto") != 0) {
      name = env;
      from_env = 1;
    }
  }
  if (strcmp(name, "auto") == 0) {
    nb->algo = BPC__NB_ALGO_PACKED;
  } else {
    int found = -1;
    for (int i = 0; i < NB_NALGOS; i++)
      if (strcmp(nb_algos[i].name, name) == 0)
        found = nb_algos[i].id;
    if (found < 0)
      return bpc__err(ctx, BPC_EALGO, "unknown neighbour-exchange algorithm '%s'%s; known: auto%s%s",
                      name, from_env ? " (from BPC_NEIGHBOR_ALGORITHM)" : "", " ",
                      nb_algos[0].name);
    nb->algo = found;
  }
  nb->synchrony = f;
  nb->nthreads = o.nthreads;
  nb->max_rounds = o.max_rounds;
  return BPC_OK;
}

/* A fresh object with its blocks array (links not yet set). */
static int nb_new(bpc_ctx_t *ctx, const bpc_assign_t *a, const bpc_type_t *type,
                  const bpc_neighbor_options_t *opts, bpc_neighbor_t **out)
{
  *out = NULL;
  int rc = bpc_type_check(ctx, type);
  if (rc != BPC_OK)
    return rc;
  bpc_neighbor_t *nb = bpc__calloc(1, sizeof *nb);
  if (nb == NULL)
    return bpc__err(ctx, BPC_ENOMEM, "neighbour exchange: out of memory");
  nb->ctx = ctx;
  nb->assign = a;
  nb->type = *type;
  nb->local.rank = -1;
  *out = nb;
  rc = resolve_options(ctx, opts, nb);
  if (rc != BPC_OK)
    return rc;
  nb->nlocal = a->nlocal;
  if (nb->nlocal > 0) {
    nb->blocks = bpc__calloc((size_t)nb->nlocal, sizeof *nb->blocks);
    nb->cb_rc = bpc__calloc((size_t)nb->nlocal, sizeof *nb->cb_rc);
    nb->cb_more = bpc__calloc((size_t)nb->nlocal, sizeof *nb->cb_more);
    if (nb->blocks == NULL || nb->cb_rc == NULL || nb->cb_more == NULL)
      return bpc__err(ctx, BPC_ENOMEM, "neighbour exchange: out of memory for %d blocks",
                      nb->nlocal);
  }
  for (int i = 0; i < nb->nlocal; i++)
    nb->blocks[i].gid = a->local[i];
  return BPC_OK;
}

/* Free everything the object holds (no communication). */
static void nb_free(bpc_neighbor_t *nb)
{
  if (nb == NULL)
    return;
  bpc__nb_release_incoming(nb);
  for (int i = 0; i < nb->nlocal && nb->blocks; i++) {
    bpc__nb_block_t *b = &nb->blocks[i];
    free(b->links);
    free(b->out);
    free(b->srcs);
    free(b->src_first);
    free(b->src_count);
    free(b->src_next);
  }
  free(nb->blocks);
  free(nb->cb_rc);
  free(nb->cb_more);
  for (int i = 0; i < nb->nout && nb->chans; i++)
    bpc__nb_chan_free(nb->ctx, &nb->chans[i]);
  free(nb->chans);
  if (nb->local.rank >= 0)
    bpc__nb_chan_free(nb->ctx, &nb->local);
  bpc__nb_reclaim(nb, 1);
  free(nb->retired);
  free(nb->in_ranks);
  free(nb->next_seq);
  free(nb->ext_next);
  free(nb->ref_left);
  free(nb->ref_slot);
  free(nb->msgs);
  free(nb->ents);
  free(nb->lrefs);
  free(nb);
}

/* From each block's links: the sorted unique out-gids, and the channels
 * (processes owning a linked block, ascending, this one apart). */
static int build_out(bpc_neighbor_t *nb)
{
  bpc_ctx_t *ctx = nb->ctx;
  const bpc_assign_t *a = nb->assign;
  int total = 0, rc = BPC_OK;
  int *ranks = NULL;
  for (int i = 0; i < nb->nlocal; i++) {
    bpc__nb_block_t *b = &nb->blocks[i];
    if (b->nlinks > 0) {
      b->out = bpc__malloc(sizeof(int) * (size_t)b->nlinks);
      if (b->out == NULL)
        return bpc__err(ctx, BPC_ENOMEM, "neighbour exchange: out of memory for links");
    }
    for (int j = 0; j < b->nlinks; j++)
      b->out[j] = b->links[j].gid;
    b->nout = sort_unique(b->out, b->nlinks);
    total += b->nout;
  }
  ranks = bpc__malloc(sizeof(int) * (size_t)(total > 0 ? total : 1));
  if (ranks == NULL)
    return bpc__err(ctx, BPC_ENOMEM, "neighbour exchange: out of memory for links");
  int nr = 0;
  for (int i = 0; i < nb->nlocal; i++)
    for (int j = 0; j < nb->blocks[i].nout; j++) {
      int r = bpc__assign_rank(a, nb->blocks[i].out[j]);
      if (r != ctx->rank)
        ranks[nr++] = r;
    }
  nr = sort_unique(ranks, nr);
  if (nr > 0) {
    nb->chans = bpc__calloc((size_t)nr, sizeof *nb->chans);
    if (nb->chans == NULL) {
      rc = bpc__err(ctx, BPC_ENOMEM, "neighbour exchange: out of memory for %d channels", nr);
      goto cleanup;
    }
  }
  for (int i = 0; i < nr; i++) {
    bpc__nb_chan_init(&nb->chans[i], ranks[i]);
    nb->nout = i + 1;
  }
  bpc__nb_chan_init(&nb->local, ctx->rank);
cleanup:
  free(ranks);
  return rc;
}

/* In-neighbour processes: for a decomposition (symmetric links) the same
 * as the out-processes; for a graph, one MPI_Alltoall of flags. */
static int build_in(bpc_neighbor_t *nb)
{
  bpc_ctx_t *ctx = nb->ctx;
  int rc = BPC_OK, *sflag = NULL, *rflag = NULL;
  if (nb->is_decomp || ctx->serial || ctx->size == 1) {
    nb->nin = nb->nout;
    if (nb->nin > 0) {
      nb->in_ranks = bpc__malloc(sizeof(int) * (size_t)nb->nin);
      if (nb->in_ranks == NULL)
        return bpc__err(ctx, BPC_ENOMEM, "neighbour exchange: out of memory");
      for (int i = 0; i < nb->nin; i++)
        nb->in_ranks[i] = nb->chans[i].rank;
    }
  } else {
    sflag = bpc__calloc((size_t)ctx->size, sizeof(int));
    rflag = bpc__calloc((size_t)ctx->size, sizeof(int));
    if (sflag == NULL || rflag == NULL) {
      rc = bpc__err(ctx, BPC_ENOMEM, "neighbour exchange: out of memory for %d flags", ctx->size);
      goto cleanup;
    }
    for (int i = 0; i < nb->nout; i++)
      sflag[nb->chans[i].rank] = 1;
    int mrc = MPI_Alltoall(sflag, 1, MPI_INT, rflag, 1, MPI_INT, ctx->comm);
    if (mrc != MPI_SUCCESS) {
      rc = bpc__err_mpi(ctx, mrc, "MPI_Alltoall (in-neighbour processes)");
      goto cleanup;
    }
    int n = 0;
    for (int r = 0; r < ctx->size; r++)
      n += (rflag[r] != 0 && r != ctx->rank);
    if (n > 0) {
      nb->in_ranks = bpc__malloc(sizeof(int) * (size_t)n);
      if (nb->in_ranks == NULL) {
        rc = bpc__err(ctx, BPC_ENOMEM, "neighbour exchange: out of memory");
        goto cleanup;
      }
    }
    for (int r = 0; r < ctx->size; r++)
      if (rflag[r] != 0 && r != ctx->rank)
        nb->in_ranks[nb->nin++] = r;
  }
  if (nb->nin > 0) {
    nb->next_seq = bpc__calloc((size_t)nb->nin, sizeof(int));
    nb->ext_next = bpc__calloc((size_t)nb->nin, sizeof(unsigned));
    nb->ref_left = bpc__calloc((size_t)nb->nin, sizeof(int));
    nb->ref_slot = bpc__calloc((size_t)nb->nin, sizeof(int));
    if (nb->next_seq == NULL || nb->ext_next == NULL || nb->ref_left == NULL ||
        nb->ref_slot == NULL)
      rc = bpc__err(ctx, BPC_ENOMEM, "neighbour exchange: out of memory");
  }
cleanup:
  free(sflag);
  free(rflag);
  return rc;
}

/* The collective tail of both creators: agree on the local result, build
 * the in-processes, open the exchange (out NULL: only agree, and free). */
static int nb_finish_create(bpc_ctx_t *ctx, bpc_neighbor_t *nb, int rc, bpc_neighbor_t **out)
{
  if (out == NULL) {
    bpc__agree(ctx, rc);
    nb_free(nb);
    return rc;
  }
  rc = bpc__agree(ctx, rc);
  if (rc == BPC_OK) {
    rc = build_in(nb);
    rc = bpc__agree(ctx, rc);
  }
  if (rc == BPC_OK) {
    rc = bpc__exch_open(ctx, NULL, rank_identity, NULL, &nb->ex);
    rc = bpc__agree(ctx, rc);
  }
  if (rc != BPC_OK) {
    if (nb != NULL && nb->ex != NULL)
      bpc__exch_close(&nb->ex);
    nb_free(nb);
    return rc;
  }
  *out = nb;
  return BPC_OK;
}

/* The first checks of both creators: NULL arguments, and the blocks'
 * context (`base_ctx`, from `base`, named `base_name`) being ctx. */
static int create_args(bpc_ctx_t *ctx, const char *fn, bpc_neighbor_t **out, const void *base,
                       const char *base_name, bpc_ctx_t *base_ctx, const bpc_type_t *type)
{
  if (out == NULL || base == NULL || type == NULL)
    return bpc__err(ctx, BPC_ENULL, "%s: %s is NULL", fn,
                    out == NULL ? "out" : (base == NULL ? base_name : "the item type"));
  *out = NULL;
  if (base_ctx != ctx)
    return bpc__err(ctx, BPC_EINVAL, "%s: %s was made on another context", fn, base_name);
  return BPC_OK;
}

int bpc_neighbor_create_decomp(bpc_ctx_t *ctx, const bpc_decomp_t *d, const bpc_type_t *type,
                               const bpc_neighbor_options_t *opts, bpc_neighbor_t **out)
{
  bpc_neighbor_t *nb = NULL;
  int rc = BPC_OK;
  if (ctx == NULL)
    return BPC_ENULL;
  rc = create_args(ctx, "bpc_neighbor_create_decomp", out, d, "the decomposition",
                   d ? d->ctx : NULL, type);
  if (rc != BPC_OK)
    goto agree;
  rc = nb_new(ctx, d->assign, type, opts, &nb);
  if (rc != BPC_OK)
    goto agree;
  nb->is_decomp = 1;
  for (int i = 0; i < nb->nlocal && rc == BPC_OK; i++) {
    bpc__nb_block_t *b = &nb->blocks[i];
    int n = 0;
    bpc_decomp_links(d, b->gid, NULL, 0, &n);
    if (n > 0) {
      b->links = bpc__malloc(sizeof(bpc_link_t) * (size_t)n);
      if (b->links == NULL) {
        rc = bpc__err(ctx, BPC_ENOMEM, "neighbour exchange: out of memory for %d links", n);
        break;
      }
      rc = bpc_decomp_links(d, b->gid, b->links, n, &b->nlinks);
    }
  }
  if (rc == BPC_OK)
    rc = build_out(nb);
agree:
  return nb_finish_create(ctx, nb, rc, out);
}

int bpc_neighbor_create_graph(bpc_ctx_t *ctx, const bpc_assign_t *a, const int *offsets,
                              const int *targets, const bpc_type_t *type,
                              const bpc_neighbor_options_t *opts, bpc_neighbor_t **out)
{
  bpc_neighbor_t *nb = NULL;
  int rc = BPC_OK;
  if (ctx == NULL)
    return BPC_ENULL;
  rc = create_args(ctx, "bpc_neighbor_create_graph", out, a, "the assignment",
                   a ? a->ctx : NULL, type);
  if (rc != BPC_OK)
    goto agree;
  if (offsets == NULL) {
    rc = bpc__err(ctx, BPC_ENULL, "bpc_neighbor_create_graph: offsets is NULL (rank %d has %d "
                                  "blocks; it needs %d entries)", ctx->rank, a->nlocal,
                  a->nlocal + 1);
    goto agree;
  }
  if (offsets[0] != 0) {
    rc = bpc__err(ctx, BPC_EINVAL, "bpc_neighbor_create_graph: offsets[0] is %d on rank %d "
                                   "(must be 0)", offsets[0], ctx->rank);
    goto agree;
  }
  for (int i = 0; i < a->nlocal; i++) {
    if (offsets[i + 1] < offsets[i]) {
      rc = bpc__err(ctx, BPC_EINVAL, "bpc_neighbor_create_graph: offsets decrease at block %d "
                                     "(gid %d) on rank %d: %d then %d", i, a->local[i],
                    ctx->rank, offsets[i], offsets[i + 1]);
      goto agree;
    }
  }
  if (offsets[a->nlocal] > 0 && targets == NULL) {
    rc = bpc__err(ctx, BPC_ENULL, "bpc_neighbor_create_graph: targets is NULL but rank %d gives "
                                  "%d links", ctx->rank, offsets[a->nlocal]);
    goto agree;
  }
  for (int i = 0; i < a->nlocal; i++)
    for (int j = offsets[i]; j < offsets[i + 1]; j++)
      if (targets[j] < 0 || targets[j] >= a->nblocks) {
        rc = bpc__err(ctx, BPC_ERANGE, "bpc_neighbor_create_graph: block %d (rank %d) links to "
                                       "gid %d, outside [0, %d)", a->local[i], ctx->rank,
                      targets[j], a->nblocks);
        goto agree;
      }
  rc = nb_new(ctx, a, type, opts, &nb);
  if (rc != BPC_OK)
    goto agree;
  for (int i = 0; i < nb->nlocal && rc == BPC_OK; i++) {
    bpc__nb_block_t *b = &nb->blocks[i];
    int n = offsets[i + 1] - offsets[i];
    if (n == 0)
      continue;
    b->links = bpc__calloc((size_t)n, sizeof(bpc_link_t));
    if (b->links == NULL) {
      rc = bpc__err(ctx, BPC_ENOMEM, "neighbour exchange: out of memory for %d links", n);
      break;
    }
    for (int j = 0; j < n; j++)
      b->links[j].gid = targets[offsets[i] + j];
    b->nlinks = n;
  }
  if (rc == BPC_OK)
    rc = build_out(nb);
agree:
  return nb_finish_create(ctx, nb, rc, out);
}

int bpc_neighbor_destroy(bpc_neighbor_t **pnb)
{
  if (pnb == NULL || *pnb == NULL)
    return BPC_OK;
  bpc_neighbor_t *nb = *pnb;
  bpc_ctx_t *ctx = nb->ctx;
  long long undelivered = 0;
  bpc__nb_release_incoming(nb);
  int rc = bpc__nb_drain(nb, &undelivered);
  int rc2 = bpc__exch_close(&nb->ex);
  if (rc == BPC_OK)
    rc = rc2;
  if (rc == BPC_OK && undelivered > 0)
    rc = bpc__err(ctx, BPC_ESTATE,
                  "bpc_neighbor_destroy: %lld item(s) arrived after the last round and were never "
                  "delivered (end partially synchronous rounds with one at synchrony 1.0)",
                  undelivered);
  nb_free(nb);
  *pnb = NULL;
  return rc;
}

const char *bpc_neighbor_algorithm(const bpc_neighbor_t *nb)
{
  if (nb == NULL)
    return "";
  for (int i = 0; i < NB_NALGOS; i++)
    if (nb_algos[i].id == nb->algo)
      return nb_algos[i].name;
  return "";
}

int bpc_neighbor_links(const bpc_neighbor_t *nb, int gid, const bpc_link_t **links, int *n)
{
  if (nb == NULL || links == NULL || n == NULL)
    return bpc__err(nb ? nb->ctx : NULL, BPC_ENULL, "bpc_neighbor_links: NULL argument");
  int li = bpc__nb_local_index(nb, gid);
  if (li < 0)
    return bpc__err(nb->ctx, BPC_ENOTFOUND, "bpc_neighbor_links: gid %d is not a block of rank %d",
                    gid, nb->ctx->rank);
  *links = nb->blocks[li].links;
  *n = nb->blocks[li].nlinks;
  return BPC_OK;
}

int bpc_neighbor_set_synchrony(bpc_neighbor_t *nb, double synchrony)
{
  if (nb == NULL)
    return BPC_ENULL;
  if (!(synchrony > 0.0 && synchrony <= 1.0))
    return bpc__err(nb->ctx, BPC_EINVAL, "synchrony %g is outside (0, 1]", synchrony);
  nb->synchrony = synchrony;
  return BPC_OK;
}

int bpc_neighbor_stats(const bpc_neighbor_t *nb, bpc_neighbor_stats_t *out)
{
  if (nb == NULL || out == NULL)
    return bpc__err(nb ? nb->ctx : NULL, BPC_ENULL, "bpc_neighbor_stats: NULL argument");
  memset(out, 0, sizeof *out);
  out->rounds = nb->rounds_total;
  long long s;
#pragma omp atomic read
  s = nb->items_sent;
  out->items_sent = s;
  out->items_recv = nb->items_recv;
  out->bundles_sent = nb->bundles_sent;
  out->bundles_recv = nb->bundles_recv;
  out->bundles_late = nb->bundles_late;
  out->waves = nb->waves;
  return BPC_OK;
}
