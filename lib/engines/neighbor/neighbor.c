/*
 * lib/engines/neighbor/neighbor.c - the neighbourhood exchange engine's
 * public entry: parameters (synchrony, threads, round limit, algorithm by
 * name or BPC_NEIGHBOR_ALGORITHM, BPC_NEIGHBOR_SYNCHRONY from the
 * environment), the algorithm table (bpc__engine_neighbor), the entry frame
 * (every argument checked on each rank, then one bpc__agree_args before any
 * message), creation from a decomposition (bpc_decomp_links) or a user graph
 * (in-neighbour processes found with one all-to-all of one int,
 * bpc__alltoall_int), destroy (with the drain that receives every message
 * still in flight), and queries.
 *
 * Algorithm (see neighbor_round.c for the round and its cost): per round
 * every process sends one bundle to every process that owns a block linked
 * from one of its blocks - also when it is empty, so receivers know how many
 * messages a round owes them - and items between blocks of one process are
 * handed over in memory.
 */
#include "engines/neighbor/neighbor_internal.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const bpc__algo_t neighbor_rows[] = {
    {{BPC__NB_ALGO_PACKED, "packed",
      "one bundle per process pair and round: block ids, sizes, then payloads (DIY Algorithm 3); "
      "same-process items never touch MPI"},
     bpc__neighbor_run_packed,
     NULL},
};

const bpc__engine_t bpc__engine_neighbor = {"neighbor", "BPC_NEIGHBOR_ALGORITHM", neighbor_rows,
                                            BPC__NROWS(neighbor_rows), NULL};

bpc_neighbor_params_t bpc_neighbor_params_default(void)
{
  bpc_neighbor_params_t p;
  memset(&p, 0, sizeof p);
  p.algorithm = "auto";
  p.synchrony = -1.0;
  p.nthreads = 0;
  p.max_rounds = 0;
  return p;
}

void bpc__neighbor_sig(bpc__sig_t *s, const char *who, const bpc_assign_t *a,
                       const bpc_type_t *type, int algo, long long max_rounds)
{
  bpc__sig_init(s);
  bpc__sig_str(s, "entry", who);
  bpc__sig_int(s, "block count", a != NULL ? a->nblocks : -1);
  bpc__sig_assign(s, a);
  bpc__sig_type(s, type);
  bpc__sig_int(s, "algorithm", algo);
  bpc__sig_int(s, "max_rounds", max_rounds);
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

/* The creators' settings, resolved from the parameters. */
typedef struct neighbor_conf {
  const bpc__algo_t *row;
  bpc_algo_source_t source;
  double synchrony;
  int nthreads;
  long long max_rounds;
} neighbor_conf_t;

/* Step 1 of both creators, after their own arguments (rc: the first problem
 * so far): the item type and the parameters, resolved into *cf. Records a
 * message only for the first problem; returns rc or the first new code. The
 * same outcome on every rank given the same arguments and environment. */
static int check_common(bpc_ctx_t *ctx, const char *fn, int rc, const bpc_type_t *type,
                        const bpc_neighbor_params_t *params, neighbor_conf_t *cf)
{
  const bpc_neighbor_params_t p = params ? *params : bpc_neighbor_params_default();
  memset(cf, 0, sizeof *cf);
  cf->row = &neighbor_rows[0];
  if (rc == BPC_OK && type == NULL)
    rc = bpc__err(ctx, BPC_ENULL, "%s: the item type is NULL", fn);
  if (rc == BPC_OK)
    rc = bpc_type_check(ctx, type);
  double f = p.synchrony;
  if (f < 0) {
    const char *env = getenv("BPC_NEIGHBOR_SYNCHRONY");
    f = 1.0;
    if (env != NULL && *env != '\0') {
      char *end = NULL;
      errno = 0;
      f = strtod(env, &end);
      if (rc == BPC_OK &&
          (errno != 0 || end == env || *end != '\0' || !(f > 0.0 && f <= 1.0)))
        rc = bpc__err(ctx, BPC_EINVAL,
                      "BPC_NEIGHBOR_SYNCHRONY='%s': want a fraction in (0, 1], e.g. 0.5", env);
    }
  }
  if (rc == BPC_OK && !(f > 0.0 && f <= 1.0))
    rc = bpc__err(ctx, BPC_EINVAL,
                  "%s: synchrony %g is outside (0, 1] (1.0: wait for every expected arrival)", fn,
                  f);
  if (rc == BPC_OK && p.nthreads < 0)
    rc = bpc__err(ctx, BPC_EINVAL,
                  "%s: nthreads is %d; use 0 (OpenMP default), 1 (no threads) or more", fn,
                  p.nthreads);
  if (rc == BPC_OK && p.max_rounds < 0)
    rc = bpc__err(ctx, BPC_EINVAL, "%s: max_rounds is %lld; use 0 (no limit) or a positive count",
                  fn, p.max_rounds);
  const bpc__algo_t *row = NULL;
  int prc = bpc__algo_pick(rc == BPC_OK ? ctx : NULL, &bpc__engine_neighbor, p.algorithm, NULL,
                           &row, &cf->source);
  if (rc == BPC_OK && prc != BPC_OK)
    rc = prc;
  if (row != NULL)
    cf->row = row; /* else the built-in rule: packed, the only one */
  cf->synchrony = f;
  cf->nthreads = p.nthreads;
  cf->max_rounds = p.max_rounds;
  return rc;
}

/* Steps 3-4 of both creators: agree on each rank's validity and on what
 * must match (bpc__neighbor_sig, the synchrony and the decomposition's geometry:
 * decompositions are made locally, so this is where ranks that made
 * different ones find out) before any message. d is NULL for a graph. */
static int agree_create(bpc_ctx_t *ctx, const char *fn, int rc, const bpc_assign_t *a,
                        const bpc_decomp_t *d, const bpc_type_t *type, const neighbor_conf_t *cf)
{
  bpc__sig_t s;
  bpc__neighbor_sig(&s, fn, a, rc == BPC_OK ? type : NULL, cf->row->info.id, cf->max_rounds);
  bpc__sig_bytes(&s, "synchrony", &cf->synchrony, sizeof cf->synchrony);
  bpc__sig_decomp(&s, d);
  return bpc__agree_args(ctx, "neighbor", rc, &s);
}

/* A fresh object with its blocks array (links not yet set). */
static int neighbor_new(bpc_ctx_t *ctx, const bpc_assign_t *a, const bpc_type_t *type,
                        const neighbor_conf_t *cf, bpc_neighbor_t **out)
{
  *out = NULL;
  bpc_neighbor_t *nb = bpc__calloc(1, sizeof *nb);
  if (nb == NULL)
    return bpc__err(ctx, BPC_ENOMEM, "neighbour exchange: out of memory");
  nb->ctx = ctx;
  nb->assign = a;
  nb->type = *type;
  nb->local.rank = -1;
  nb->row = cf->row;
  nb->source = cf->source;
  nb->synchrony = cf->synchrony;
  nb->nthreads = cf->nthreads;
  nb->max_rounds = cf->max_rounds;
  *out = nb;
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
static void neighbor_free(bpc_neighbor_t *nb)
{
  if (nb == NULL)
    return;
  bpc__neighbor_release_incoming(nb);
  for (int i = 0; i < nb->nlocal && nb->blocks; i++) {
    bpc__neighbor_block_t *b = &nb->blocks[i];
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
    bpc__neighbor_chan_free(nb->ctx, &nb->chans[i]);
  free(nb->chans);
  if (nb->local.rank >= 0)
    bpc__neighbor_chan_free(nb->ctx, &nb->local);
  bpc__neighbor_reclaim(nb, 1);
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
    bpc__neighbor_block_t *b = &nb->blocks[i];
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
    bpc__neighbor_chan_init(&nb->chans[i], ranks[i]);
    nb->nout = i + 1;
  }
  bpc__neighbor_chan_init(&nb->local, ctx->rank);
cleanup:
  free(ranks);
  return rc;
}

/* In-neighbour processes: for a decomposition (symmetric links) the same
 * as the out-processes; for a graph, one all-to-all of flags (`flags`: 2 P
 * ints, allocated before the agreement so that every rank gets here).
 * Collective for graphs: a rank whose setup failed (rc) still takes part,
 * with no flags, and returns rc. */
static int build_in(bpc_ctx_t *ctx, bpc_neighbor_t *nb, int *flags, int rc)
{
  if (flags != NULL) {
    int *sflag = flags, *rflag = flags + ctx->size;
    for (int i = 0; rc == BPC_OK && i < nb->nout; i++)
      sflag[nb->chans[i].rank] = 1;
    int arc = bpc__alltoall_int(ctx, sflag, rflag);
    if (rc == BPC_OK)
      rc = arc;
    if (rc != BPC_OK)
      return rc;
    int n = 0;
    for (int r = 0; r < ctx->size; r++)
      n += (rflag[r] != 0 && r != ctx->rank);
    if (n > 0) {
      nb->in_ranks = bpc__malloc(sizeof(int) * (size_t)n);
      if (nb->in_ranks == NULL)
        return bpc__err(ctx, BPC_ENOMEM, "neighbour exchange: out of memory");
    }
    for (int r = 0; r < ctx->size; r++)
      if (rflag[r] != 0 && r != ctx->rank)
        nb->in_ranks[nb->nin++] = r;
  } else {
    if (rc != BPC_OK)
      return rc;
    nb->nin = nb->nout;
    if (nb->nin > 0) {
      nb->in_ranks = bpc__malloc(sizeof(int) * (size_t)nb->nin);
      if (nb->in_ranks == NULL)
        return bpc__err(ctx, BPC_ENOMEM, "neighbour exchange: out of memory");
      for (int i = 0; i < nb->nin; i++)
        nb->in_ranks[i] = nb->chans[i].rank;
    }
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
  return rc;
}

/* Step 5 of both creators, after the agreement and the local setup (rc):
 * the in-processes (collective for graphs: flags given), agree, open the
 * exchange, agree. Frees nb and flags. */
static int finish_create(bpc_ctx_t *ctx, bpc_neighbor_t *nb, int *flags, int rc,
                         bpc_neighbor_t **out)
{
  rc = build_in(ctx, nb, flags, rc);
  free(flags);
  rc = bpc__agree(ctx, rc);
  if (rc == BPC_OK) {
    rc = bpc__exch_open(ctx, NULL, rank_identity, NULL, &nb->ex);
    rc = bpc__agree(ctx, rc);
  }
  if (rc != BPC_OK) {
    if (nb != NULL && nb->ex != NULL)
      bpc__exch_close(&nb->ex);
    neighbor_free(nb);
    return rc;
  }
  nb->is_decomp = flags == NULL;
  *out = nb;
  return BPC_OK;
}

/* Step 1 of both creators: out, the blocks' owner (`base`, named
 * `base_name`, made on `base_ctx`) and its context. */
static int check_base(bpc_ctx_t *ctx, const char *fn, bpc_neighbor_t **out, const void *base,
                      const char *base_name, bpc_ctx_t *base_ctx)
{
  if (out != NULL)
    *out = NULL;
  if (out == NULL || base == NULL)
    return bpc__err(ctx, BPC_ENULL, "%s: %s is NULL", fn, out == NULL ? "out" : base_name);
  if (base_ctx != ctx)
    return bpc__err(ctx, BPC_EINVAL, "%s: %s was made on another context", fn, base_name);
  return BPC_OK;
}

static int neighbor_create_decomp_entry(bpc_ctx_t *ctx, const bpc_decomp_t *d, const bpc_type_t *type,
                                        const bpc_neighbor_params_t *params, bpc_neighbor_t **out)
{
  static const char fn[] = "bpc_neighbor_create_decomp";
  bpc_neighbor_t *nb = NULL;
  bpc_link_t *scratch = NULL;
  neighbor_conf_t cf;
  if (ctx == NULL)
    return BPC_ENULL;
  int rc = check_base(ctx, fn, out, d, "the decomposition", d ? d->ctx : NULL);
  const bpc_assign_t *a = rc == BPC_OK ? d->assign : NULL;
  rc = check_common(ctx, fn, rc, type, params, &cf);
  rc = agree_create(ctx, fn, rc, a, a != NULL ? d : NULL, type, &cf);
  if (rc != BPC_OK)
    return rc;
  rc = neighbor_new(ctx, a, type, &cf, &nb);
  /* every block has at most 3^dim - 1 links: one scratch array of that size
   * (asking bpc_decomp_links for the count alone would record an error) */
  int maxl = 1;
  for (int i = 0; i < d->dim; i++)
    maxl *= 3;
  maxl -= 1;
  if (rc == BPC_OK && nb->nlocal > 0 && maxl > 0) {
    scratch = bpc__malloc(sizeof *scratch * (size_t)maxl);
    if (scratch == NULL)
      rc = bpc__err(ctx, BPC_ENOMEM, "neighbour exchange: out of memory for %d links", maxl);
  }
  for (int i = 0; rc == BPC_OK && i < nb->nlocal && maxl > 0; i++) {
    bpc__neighbor_block_t *b = &nb->blocks[i];
    int n = 0;
    rc = bpc_decomp_links(d, b->gid, scratch, maxl, &n);
    if (rc != BPC_OK || n == 0)
      continue;
    b->links = bpc__malloc(sizeof(bpc_link_t) * (size_t)n);
    if (b->links == NULL) {
      rc = bpc__err(ctx, BPC_ENOMEM, "neighbour exchange: out of memory for %d links", n);
      break;
    }
    memcpy(b->links, scratch, sizeof(bpc_link_t) * (size_t)n);
    b->nlinks = n;
  }
  free(scratch);
  if (rc == BPC_OK)
    rc = build_out(nb);
  return finish_create(ctx, nb, NULL, rc, out);
}

/* The graph's own arguments on this rank (a checked): offsets and targets. */
static int check_graph(bpc_ctx_t *ctx, const char *fn, const bpc_assign_t *a, const int *offsets,
                       const int *targets)
{
  if (offsets == NULL)
    return bpc__err(ctx, BPC_ENULL, "%s: offsets is NULL (rank %d has %d blocks; it needs %d "
                                    "entries)", fn, ctx->rank, a->nlocal, a->nlocal + 1);
  if (offsets[0] != 0)
    return bpc__err(ctx, BPC_EINVAL, "%s: offsets[0] is %d on rank %d (must be 0)", fn,
                    offsets[0], ctx->rank);
  for (int i = 0; i < a->nlocal; i++)
    if (offsets[i + 1] < offsets[i])
      return bpc__err(ctx, BPC_EINVAL, "%s: offsets decrease at block %d (gid %d) on rank %d: "
                                       "%d then %d", fn, i, a->local[i], ctx->rank, offsets[i],
                      offsets[i + 1]);
  if (offsets[a->nlocal] > 0 && targets == NULL)
    return bpc__err(ctx, BPC_ENULL, "%s: targets is NULL but rank %d gives %d links", fn,
                    ctx->rank, offsets[a->nlocal]);
  for (int i = 0; i < a->nlocal; i++)
    for (int j = offsets[i]; j < offsets[i + 1]; j++)
      if (targets[j] < 0 || targets[j] >= a->nblocks)
        return bpc__err(ctx, BPC_ERANGE, "%s: block %d (rank %d) links to gid %d, outside "
                                         "[0, %d)", fn, a->local[i], ctx->rank, targets[j],
                        a->nblocks);
  return BPC_OK;
}

static int neighbor_create_graph_entry(bpc_ctx_t *ctx, const bpc_assign_t *a, const int *offsets,
                                       const int *targets, const bpc_type_t *type,
                                       const bpc_neighbor_params_t *params, bpc_neighbor_t **out)
{
  static const char fn[] = "bpc_neighbor_create_graph";
  bpc_neighbor_t *nb = NULL;
  neighbor_conf_t cf;
  if (ctx == NULL)
    return BPC_ENULL;
  int rc = check_base(ctx, fn, out, a, "the assignment", a ? a->ctx : NULL);
  if (rc == BPC_OK)
    rc = check_graph(ctx, fn, a, offsets, targets);
  rc = check_common(ctx, fn, rc, type, params, &cf);
  /* the in-process all-to-all's flags: allocated now, so that a failure is
   * agreed and every rank takes part in the all-to-all */
  int *flags = bpc__calloc(2 * (size_t)ctx->size, sizeof(int));
  if (flags == NULL && rc == BPC_OK)
    rc = bpc__err(ctx, BPC_ENOMEM, "neighbour exchange: out of memory for %d flags", ctx->size);
  rc = agree_create(ctx, fn, rc, a, NULL, type, &cf);
  if (rc != BPC_OK) {
    free(flags);
    return rc;
  }
  rc = neighbor_new(ctx, a, type, &cf, &nb);
  for (int i = 0; rc == BPC_OK && i < nb->nlocal; i++) {
    bpc__neighbor_block_t *b = &nb->blocks[i];
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
  return finish_create(ctx, nb, flags, rc, out);
}

int bpc_neighbor_destroy(bpc_neighbor_t **pnb)
{
  if (pnb == NULL || *pnb == NULL)
    return BPC_OK;
  bpc_neighbor_t *nb = *pnb;
  bpc_ctx_t *ctx = nb->ctx;
  if (bpc__busy_check(ctx, "bpc_neighbor_destroy") != BPC_OK)
    return BPC_EBUSY; /* from inside a callback: the running call uses it */
  long long undelivered = 0;
  bpc__neighbor_release_incoming(nb);
  int rc = bpc__neighbor_drain(nb, &undelivered);
  if (nb->failed != BPC_OK) /* the agreed message is the failure's */
    memcpy(ctx->errmsg, nb->failmsg, sizeof ctx->errmsg);
  /* items never delivered are this rank's error, agreed with the rest in
   * the exchange's end (every message has arrived: the drain's markers) */
  if (rc == BPC_OK && undelivered > 0)
    rc = bpc__err(ctx, BPC_ESTATE,
                  "bpc_neighbor_destroy: %lld item(s) on rank %d arrived after the last round "
                  "or were enqueued after it and were never delivered (end partially "
                  "synchronous rounds with one at synchrony 1.0)",
                  undelivered, ctx->rank);
  /* agreed: after a failure anywhere every rank drops what is still on its
   * way (its sends complete), then the exchange goes */
  rc = bpc__exch_end(ctx, &nb->ex, rc);
  neighbor_free(nb);
  *pnb = NULL;
  return rc;
}

int bpc_neighbor_info(const bpc_neighbor_t *nb, bpc_neighbor_info_t *info)
{
  if (nb == NULL || info == NULL)
    return bpc__err(nb ? nb->ctx : NULL, BPC_ENULL, "bpc_neighbor_info: NULL argument");
  info->algorithm = nb->row->info.id;
  info->name = nb->row->info.name;
  info->source = nb->source;
  return BPC_OK;
}

int bpc_neighbor_links(const bpc_neighbor_t *nb, int gid, const bpc_link_t **links, int *n)
{
  if (nb == NULL || links == NULL || n == NULL)
    return bpc__err(nb ? nb->ctx : NULL, BPC_ENULL, "bpc_neighbor_links: NULL argument");
  int li = bpc__neighbor_local_index(nb, gid);
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
  for (int i = 0; i < nb->nout && synchrony < 1.0; i++)
    if (nb->chans[i].next > 0)
      return bpc__err(nb->ctx, BPC_ESTATE,
                      "bpc_neighbor_set_synchrony: items enqueued by reference for rank %d wait "
                      "for the next exchange; lower the synchrony after it (a partially "
                      "synchronous round copies every item)",
                      nb->chans[i].rank);
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

/* The public entry: the re-entrancy guard (bpc__enter) around the call. */
int bpc_neighbor_create_decomp(bpc_ctx_t *ctx, const bpc_decomp_t *d, const bpc_type_t *type,
                               const bpc_neighbor_params_t *params, bpc_neighbor_t **out)
{
  if (out != NULL) /* a caller's cleanup after any failure is safe */
    *out = NULL;
  BPC__GUARDED_RETURN(ctx, "bpc_neighbor_create_decomp",
      neighbor_create_decomp_entry(ctx, d, type, params, out));
}

/* The public entry: the re-entrancy guard (bpc__enter) around the call. */
int bpc_neighbor_create_graph(bpc_ctx_t *ctx, const bpc_assign_t *a, const int *offsets,
                              const int *targets, const bpc_type_t *type,
                              const bpc_neighbor_params_t *params, bpc_neighbor_t **out)
{
  if (out != NULL) /* a caller's cleanup after any failure is safe */
    *out = NULL;
  BPC__GUARDED_RETURN(ctx, "bpc_neighbor_create_graph",
      neighbor_create_graph_entry(ctx, a, offsets, targets, type, params, out));
}
