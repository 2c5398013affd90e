/*
 * apps/bench/bench_neighbor.c - `bpc-bench neighbor`: the neighbour exchange
 * (lib/engines/neighbor, one synchronous round) against
 * MPI_Neighbor_alltoallv on the equivalent distributed-graph communicator.
 *
 * Pattern: a periodic 2-D and/or 3-D decomposition (--dim) of
 * n = p * blocks-per-proc blocks; every block sends B bytes (default 64 KiB)
 * over each of its links (faces, edges and corners: 8 in 2-D, 26 in 3-D; with
 * 1 or 2 blocks in a dimension the same neighbour appears under several
 * directions, and each direction is a separate B-byte message).
 *  - bpc ("copy"): for every local block and link, bpc_neighbor_enqueue of
 *    the link's B bytes (contiguous item, copied into the bundle), then
 *    bpc_neighbor_exchange, then bpc_neighbor_dequeue of every item (views
 *    into the received bundles, no copy) - all timed. The object is created
 *    once per configuration (untimed).
 *  - baseline: MPI_Neighbor_alltoallv from one send buffer (the same B-byte
 *    segments) into one receive buffer, on a communicator made once with
 *    MPI_Dist_graph_create_adjacent whose edges are the links (a process
 *    lists each link of each of its blocks, itself included when both blocks
 *    are local; edges between one pair of processes are ordered by (sending
 *    gid, link index) on both sides, so the k-th send matches the k-th
 *    receive).
 * Payloads: a hash of (sending gid, link, word), with the first and last word
 * stamped per repetition. After every repetition each rank checks the
 * baseline's receive buffer against the pattern and every bpc item (source,
 * order, size, bytes) against the baseline's.
 * Model lower bound per rank: the bytes of its links that lead to another
 * process, and one message per other process it sends to.
 */
#include "bench.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct nbh_edge {
  int src_gid, src_link; /* the sending block and its link index */
  int dst_gid;
  int rank; /* the other process (destination of a send edge, source of a receive edge) */
} nbh_edge_t;

typedef struct nbh_state {
  bench_env_t *env;
  int dim, n;
  int by_ref; /* the "ref" variant: bpc_neighbor_enqueue_ref */
  size_t bytes;
  bpc_decomp_t *d;
  bpc_neighbor_t *nb;
  const int *gids;
  int nlocal;
  /* send edges in (src gid, link) order; receive edges in the same order
   * per source process */
  nbh_edge_t *sedge, *redge;
  int nsend, nrecv;
  unsigned char *sbuf, *rbuf; /* nsend / nrecv segments of `bytes` */
  int *scount, *sdispl, *rcount, *rdispl;
  MPI_Comm graph;
#ifdef BPC_SMPI
  int *src_ranks, *dst_ranks; /* the graph's edges (baseline written out) */
  MPI_Request *reqs;
#endif
  /* per local block: its receive edges (index into redge), in the order bpc
   * delivers them: by source gid, then the source's link index */
  int *rb_first, *rb_count, *rb_order;
  const void **got; /* the bpc run's items, in rb_order */
  size_t *got_bytes;
  int *got_src;
  int stamped_rep;
} nbh_state_t;

/* ---------------------------------------------------------------- payloads */

/* The payload key of the item gid sends on its link `link`. */
static uint64_t key_of(int gid, int link)
{
  return ((uint64_t)(uint32_t)gid << 32) | (uint32_t)link;
}

/* --------------------------------------------------------------- callbacks */

static int nbh_prepare(void *st, int rep, int is_bpc)
{
  nbh_state_t *s = st;
  (void)is_bpc;
  if (rep == s->stamped_rep)
    return 0;
  const size_t nwords = (s->bytes + 7) / 8;
  for (int e = 0; e < s->nsend && nwords > 0; e++) {
    unsigned char *b = s->sbuf + (size_t)e * s->bytes;
    uint64_t key = key_of(s->sedge[e].src_gid, s->sedge[e].src_link);
    bench_pattern_fill(b, s->bytes, key, rep, 0, 1);
    bench_pattern_fill(b, s->bytes, key, rep, nwords - 1, nwords);
  }
  s->stamped_rep = rep;
  return 0;
}

static int nbh_run_bpc(void *st)
{
  nbh_state_t *s = st;
  int rc = BPC_OK;
  for (int e = 0; e < s->nsend && rc == BPC_OK; e++) {
    bpc_buf_t item = {s->sbuf + (size_t)e * s->bytes, s->bytes};
    if (s->by_ref)
      rc = bpc_neighbor_enqueue_ref(s->nb, s->sedge[e].src_gid, s->sedge[e].dst_gid, &item);
    else
      rc = bpc_neighbor_enqueue(s->nb, s->sedge[e].src_gid, s->sedge[e].dst_gid, &item);
  }
  if (rc == BPC_OK)
    rc = bpc_neighbor_exchange(s->nb);
  for (int i = 0; i < s->nlocal && rc == BPC_OK; i++) {
    const int *srcs;
    int ns, k = s->rb_first[i];
    rc = bpc_neighbor_incoming(s->nb, s->gids[i], &srcs, &ns);
    for (int j = 0; j < ns && rc == BPC_OK; j++) {
      for (;;) {
        void *item;
        int got = 0;
        rc = bpc_neighbor_dequeue(s->nb, s->gids[i], srcs[j], &item, &got);
        if (rc != BPC_OK || !got)
          break;
        if (k < s->rb_first[i] + s->rb_count[i]) {
          const bpc_buf_t *b = item;
          s->got[k] = b->data;
          s->got_bytes[k] = b->count;
          s->got_src[k] = srcs[j];
        }
        k++;
      }
    }
    if (k != s->rb_first[i] + s->rb_count[i])
      rc = BPC_ESTATE; /* reported by check through the counts */
  }
  return rc;
}

#ifdef BPC_SMPI
/* SMPI (3.32) has neither MPI_Dist_graph_create_adjacent nor the
 * neighbourhood collectives: the baseline is what Open MPI's coll/basic
 * MPI_Neighbor_alltoallv does, written out on a duplicate of the world: a
 * receive per incoming edge, then a send per outgoing edge, in edge order
 * (edges between the same two ranks match in that order), and a Waitall. */
static int nbh_run_baseline(void *st)
{
  nbh_state_t *s = st;
  int rc = MPI_SUCCESS, n = 0;
  for (int r = 0; r < s->nrecv && rc == MPI_SUCCESS; r++)
    rc = MPI_Irecv(s->rbuf + s->rdispl[r], s->rcount[r], MPI_BYTE, s->src_ranks[r], 1, s->graph,
                   &s->reqs[n++]);
  for (int e = 0; e < s->nsend && rc == MPI_SUCCESS; e++)
    rc = MPI_Isend(s->sbuf + s->sdispl[e], s->scount[e], MPI_BYTE, s->dst_ranks[e], 1, s->graph,
                   &s->reqs[n++]);
  if (rc == MPI_SUCCESS)
    rc = MPI_Waitall(n, s->reqs, MPI_STATUSES_IGNORE);
  return rc == MPI_SUCCESS ? 0 : BPC_EMPI;
}
#else
static int nbh_run_baseline(void *st)
{
  nbh_state_t *s = st;
  int rc = MPI_Neighbor_alltoallv(s->sbuf, s->scount, s->sdispl, MPI_BYTE, s->rbuf, s->rcount,
                                  s->rdispl, MPI_BYTE, s->graph);
  return rc == MPI_SUCCESS ? 0 : BPC_EMPI;
}
#endif

static int nbh_check(void *st, int *correct)
{
  nbh_state_t *s = st;
  int ok = 1;
  for (int r = 0; r < s->nrecv; r++) {
    const nbh_edge_t *e = &s->redge[r];
    if (!bench_pattern_ok(s->rbuf + (size_t)r * s->bytes, s->bytes,
                          key_of(e->src_gid, e->src_link), s->stamped_rep)) {
      bench_error(s->env, "neighbor: baseline data from gid %d link %d to gid %d is wrong",
                  e->src_gid, e->src_link, e->dst_gid);
      ok = 0;
    }
  }
  for (int i = 0; i < s->nlocal; i++) {
    for (int k = s->rb_first[i]; k < s->rb_first[i] + s->rb_count[i]; k++) {
      const nbh_edge_t *e = &s->redge[s->rb_order[k]];
      if (s->got[k] != NULL && s->got_src[k] != e->src_gid) {
        bench_error(s->env, "neighbor: gid %d got an item from gid %d where gid %d's was due",
                    s->gids[i], s->got_src[k], e->src_gid);
        ok = 0;
      } else if (s->got[k] == NULL || s->got_bytes[k] != s->bytes ||
                 memcmp(s->got[k], s->rbuf + (size_t)s->rb_order[k] * s->bytes, s->bytes) != 0) {
        bench_error(s->env, "neighbor: bpc item from gid %d link %d to gid %d differs from "
                            "the baseline's",
                    e->src_gid, e->src_link, e->dst_gid);
        ok = 0;
      }
      s->got[k] = NULL;
    }
  }
  *correct = ok;
  return 0;
}

/* ------------------------------------------------------------------- setup */

static int cmp_edge(const void *a, const void *b)
{
  const nbh_edge_t *x = a, *y = b;
  if (x->rank != y->rank)
    return x->rank < y->rank ? -1 : 1;
  if (x->src_gid != y->src_gid)
    return x->src_gid < y->src_gid ? -1 : 1;
  return (x->src_link > y->src_link) - (x->src_link < y->src_link);
}

static void nbh_free(nbh_state_t *s)
{
  bpc_neighbor_destroy(&s->nb);
  bpc_decomp_destroy(&s->d);
  if (s->graph != MPI_COMM_NULL)
    MPI_Comm_free(&s->graph);
#ifdef BPC_SMPI
  free(s->src_ranks);
  free(s->dst_ranks);
  free(s->reqs);
  s->src_ranks = s->dst_ranks = NULL;
  s->reqs = NULL;
#endif
  free(s->sedge);
  free(s->redge);
  free(s->sbuf);
  free(s->rbuf);
  free(s->scount);
  free(s->sdispl);
  free(s->rcount);
  free(s->rdispl);
  free(s->rb_first);
  free(s->rb_count);
  free(s->rb_order);
  free(s->got);
  free(s->got_bytes);
  free(s->got_src);
  bench_env_t *env = s->env;
  memset(s, 0, sizeof *s);
  s->env = env;
  s->graph = MPI_COMM_NULL;
}

/* Build the decomposition, the edges, the graph communicator and the bpc
 * object for dimension `dim`; 0 or a bpc code. */
static int nbh_setup(nbh_state_t *s, int dim, size_t bytes, int bpp, uint64_t *lb_bytes,
                     uint64_t *lb_msgs)
{
  bench_env_t *env = s->env;
  bpc_link_t *links = NULL, *clinks = NULL;
  int rc = BPC_OK;
  s->dim = dim;
  s->bytes = bytes;
  s->n = bpp * env->size;
  s->stamped_rep = -1;
  bpc_decomp_params_t p = bpc_decomp_params_default();
  p.dim = dim;
  p.nblocks = s->n;
  for (int i = 0; i < dim; i++) {
    p.domain_max[i] = 1 << 12;
    p.wrap[i] = 1;
  }
  rc = bpc_decomp_create(env->ctx, &p, &s->d);
  if (rc != BPC_OK)
    goto cleanup;
  bpc_type_t type = bpc_type_contiguous(1, MPI_BYTE);
  rc = bpc_neighbor_create_decomp(env->ctx, s->d, &type, NULL, &s->nb);
  if (rc != BPC_OK)
    goto cleanup;
  bpc_assign_local(bpc_decomp_assign(s->d), &s->gids, &s->nlocal);
  links = malloc(sizeof *links * BPC_MAX_LINKS);
  clinks = malloc(sizeof *clinks * BPC_MAX_LINKS);
  int maxl = 1;
  for (int i = 0; i < dim; i++)
    maxl *= 3;
  size_t m = (size_t)(s->nlocal > 0 ? s->nlocal : 1) * (size_t)maxl;
  s->sedge = calloc(m, sizeof *s->sedge);
  s->redge = calloc(m, sizeof *s->redge);
  s->rb_first = calloc((size_t)s->nlocal + 1, sizeof(int));
  s->rb_count = calloc((size_t)s->nlocal + 1, sizeof(int));
  s->rb_order = calloc(m, sizeof(int));
  s->got = calloc(m, sizeof *s->got);
  s->got_bytes = calloc(m, sizeof *s->got_bytes);
  s->got_src = calloc(m, sizeof *s->got_src);
  if (!links || !clinks || !s->sedge || !s->redge || !s->rb_first || !s->rb_count ||
      !s->rb_order || !s->got || !s->got_bytes || !s->got_src) {
    rc = BPC_ENOMEM;
    goto cleanup;
  }
  const bpc_assign_t *a = bpc_decomp_assign(s->d);
  uint64_t cross = 0;
  for (int i = 0; i < s->nlocal && rc == BPC_OK; i++) {
    int nl = 0;
    const int g = s->gids[i];
    rc = bpc_decomp_links(s->d, g, links, BPC_MAX_LINKS, &nl);
    for (int j = 0; j < nl && rc == BPC_OK; j++) {
      nbh_edge_t *e = &s->sedge[s->nsend++];
      e->src_gid = g;
      e->src_link = j;
      e->dst_gid = links[j].gid;
      bpc_assign_rank(a, e->dst_gid, &e->rank);
      cross += e->rank != env->rank;
      /* the receive edge of this link: block c = links[j].gid sends to g over
       * its link in the opposite direction */
      int c = links[j].gid, ncl = 0, jc = -1;
      rc = bpc_decomp_links(s->d, c, clinks, BPC_MAX_LINKS, &ncl);
      for (int k = 0; k < ncl && jc < 0; k++) {
        int opposite = clinks[k].gid == g;
        for (int t = 0; t < dim && opposite; t++)
          opposite = clinks[k].dir[t] == -links[j].dir[t];
        if (opposite)
          jc = k;
      }
      if (jc < 0) {
        rc = BPC_ESTATE;
        break;
      }
      nbh_edge_t *r = &s->redge[s->nrecv++];
      r->src_gid = c;
      r->src_link = jc;
      r->dst_gid = g;
      bpc_assign_rank(a, c, &r->rank);
    }
  }
  if (rc != BPC_OK)
    goto cleanup;
  /* MPI order: edges grouped by the other process, then (src gid, link) */
  qsort(s->sedge, (size_t)s->nsend, sizeof *s->sedge, cmp_edge);
  qsort(s->redge, (size_t)s->nrecv, sizeof *s->redge, cmp_edge);
  /* bpc order per local block: by source gid, then the source's link */
  int k = 0;
  for (int i = 0; i < s->nlocal; i++) {
    s->rb_first[i] = k;
    for (int r = 0; r < s->nrecv; r++)
      if (s->redge[r].dst_gid == s->gids[i])
        s->rb_order[k++] = r;
    s->rb_count[i] = k - s->rb_first[i];
    for (int x = s->rb_first[i] + 1; x < k; x++) { /* insertion sort by (src gid, link) */
      int v = s->rb_order[x], y = x - 1;
      while (y >= s->rb_first[i] &&
             (s->redge[s->rb_order[y]].src_gid > s->redge[v].src_gid ||
              (s->redge[s->rb_order[y]].src_gid == s->redge[v].src_gid &&
               s->redge[s->rb_order[y]].src_link > s->redge[v].src_link))) {
        s->rb_order[y + 1] = s->rb_order[y];
        y--;
      }
      s->rb_order[y + 1] = v;
    }
  }
  if ((size_t)s->nsend * bytes > INT_MAX || (size_t)s->nrecv * bytes > INT_MAX) {
    rc = BPC_ERANGE;
    goto cleanup;
  }
  int *src_ranks = malloc(sizeof(int) * (size_t)(s->nrecv + 1));
  int *dst_ranks = malloc(sizeof(int) * (size_t)(s->nsend + 1));
  s->scount = malloc(sizeof(int) * (size_t)(s->nsend + 1));
  s->sdispl = malloc(sizeof(int) * (size_t)(s->nsend + 1));
  s->rcount = malloc(sizeof(int) * (size_t)(s->nrecv + 1));
  s->rdispl = malloc(sizeof(int) * (size_t)(s->nrecv + 1));
  s->sbuf = malloc((size_t)s->nsend * bytes + 1);
  s->rbuf = malloc((size_t)s->nrecv * bytes + 1);
  if (!src_ranks || !dst_ranks || !s->scount || !s->sdispl || !s->rcount || !s->rdispl ||
      !s->sbuf || !s->rbuf) {
    free(src_ranks);
    free(dst_ranks);
    rc = BPC_ENOMEM;
    goto cleanup;
  }
  uint64_t msgs = 0;
  for (int e = 0; e < s->nsend; e++) {
    dst_ranks[e] = s->sedge[e].rank;
    s->scount[e] = (int)bytes;
    s->sdispl[e] = (int)((size_t)e * bytes);
    bench_pattern_fill(s->sbuf + (size_t)e * bytes, bytes,
                       key_of(s->sedge[e].src_gid, s->sedge[e].src_link), -1, 0, (bytes + 7) / 8);
    if (s->sedge[e].rank != env->rank && (e == 0 || s->sedge[e - 1].rank != s->sedge[e].rank))
      msgs++;
  }
  for (int r = 0; r < s->nrecv; r++) {
    src_ranks[r] = s->redge[r].rank;
    s->rcount[r] = (int)bytes;
    s->rdispl[r] = (int)((size_t)r * bytes);
  }
  memset(s->rbuf, 0, (size_t)s->nrecv * bytes);
  /* weights of 1 rather than MPI_UNWEIGHTED: Open MPI's sentinel pointer
   * trips gcc's -Wstringop-overread */
  int nw = s->nsend > s->nrecv ? s->nsend : s->nrecv;
  int *ones = malloc(sizeof(int) * (size_t)(nw + 1));
  int mrc = MPI_ERR_NO_MEM;
  if (ones != NULL) {
    for (int i = 0; i <= nw; i++)
      ones[i] = 1;
#ifdef BPC_SMPI
    mrc = MPI_ERR_NO_MEM;
    s->reqs = malloc(sizeof *s->reqs * (size_t)(s->nsend + s->nrecv + 1));
    if (s->reqs != NULL)
      mrc = MPI_Comm_dup(env->world, &s->graph);
    s->src_ranks = src_ranks;
    s->dst_ranks = dst_ranks;
    src_ranks = dst_ranks = NULL;
#else
    mrc = MPI_Dist_graph_create_adjacent(env->world, s->nrecv, src_ranks, ones, s->nsend,
                                         dst_ranks, ones, MPI_INFO_NULL, 0, &s->graph);
#endif
  }
  free(ones);
  free(src_ranks);
  free(dst_ranks);
  if (mrc != MPI_SUCCESS) {
    rc = BPC_EMPI;
    goto cleanup;
  }
  uint64_t v[2] = {cross, msgs}, vmax[2];
  MPI_Allreduce(v, vmax, 2, MPI_UINT64_T, MPI_MAX, env->world);
  *lb_bytes = vmax[0] * bytes;
  *lb_msgs = vmax[1];
cleanup:
  free(links);
  free(clinks);
  return rc;
}

static const char *const nbh_algorithms[] = {"copy", "ref", NULL};
static const char *const nbh_auto[] = {"copy", "ref", NULL};
static const size_t nbh_default_bytes[] = {64 << 10};
static const bench_eopt_t nbh_options[] = {
    {"dim", "LIST", "dimensions of the periodic decomposition: 2, 3 or 2,3 (default 2,3)"},
    {NULL, NULL, NULL},
};

static int nbh_run(bench_env_t *env)
{
  nbh_state_t s;
  const size_t *sizes;
  const int nsizes = bench_sizes(env, &sizes);
  const int bpp = bench_blocks_per_proc(env);
  const char *algos[BENCH_MAX_ALGOS];
  const int nalgos = bench_algorithms(env, algos, BENCH_MAX_ALGOS);
  int dims[2] = {2, 3}, ndims = 2, ret = BENCH_EXIT_OK;
  const char *dopt = bench_eopt(env, "dim");
  if (dopt != NULL) {
    if (strcmp(dopt, "2") == 0) {
      dims[0] = 2;
      ndims = 1;
    } else if (strcmp(dopt, "3") == 0) {
      dims[0] = 3;
      ndims = 1;
    } else if (strcmp(dopt, "2,3") != 0) {
      if (env->rank == 0)
        bench_error(env, "neighbor: --dim '%s': want 2, 3 or 2,3", dopt);
      return BENCH_EXIT_USAGE;
    }
  }
  if ((long long)bpp * env->size > INT_MAX / 64) {
    if (env->rank == 0)
      bench_error(env, "neighbor: too many blocks");
    return BENCH_EXIT_USAGE;
  }
  memset(&s, 0, sizeof s);
  s.env = env;
  s.graph = MPI_COMM_NULL;
  for (int di = 0; di < ndims && ret == BENCH_EXIT_OK; di++) {
    for (int si = 0; si < nsizes && ret == BENCH_EXIT_OK; si++) {
      uint64_t lbb = 0, lbm = 0;
      int rc = nbh_setup(&s, dims[di], sizes[si], bpp, &lbb, &lbm);
      if (bench_agree(env, rc) != 0) {
        bench_error(env, "neighbor: setup of %d-D, %zu bytes failed: %s (%s)", dims[di],
                    sizes[si], bpc_err_name(rc), bpc_last_error(env->ctx));
        nbh_free(&s);
        ret = BENCH_EXIT_FAIL;
        break;
      }
      for (int ai = 0; ai < nalgos && ret == BENCH_EXIT_OK; ai++) {
        char name[32];
        snprintf(name, sizeof name, "%s-%dd", algos[ai], dims[di]);
        bench_case_t c;
        memset(&c, 0, sizeof c);
        c.algorithm = name;
#ifdef BPC_SMPI
        c.baseline = "Neighbor_alltoallv(p2p)"; /* written out, see nbh_run_baseline */
#else
        c.baseline = "MPI_Neighbor_alltoallv";
#endif
        c.nblocks = s.n;
        c.bytes = sizes[si];
        c.lower_bound_bytes = lbb;
        c.lower_bound_msgs = lbm;
        c.state = &s;
        c.prepare = nbh_prepare;
        c.run_bpc = nbh_run_bpc;
        c.run_baseline = nbh_run_baseline;
        c.check = nbh_check;
        s.by_ref = strcmp(algos[ai], "ref") == 0;
        s.stamped_rep = -1;
        ret = bench_run_case(env, &c);
      }
      nbh_free(&s);
    }
  }
  return ret;
}

const bench_engine_t bench_engine_neighbor = {
    .name = "neighbor",
    .desc = "neighbour exchange (one round) vs MPI_Neighbor_alltoallv, periodic 2-D/3-D",
    .algorithms = nbh_algorithms,
    .auto_algorithms = nbh_auto,
    .uses_k = 0,
    .default_bytes = nbh_default_bytes,
    .n_default_bytes = 1,
    .default_blocks_per_proc = 1,
    .options = nbh_options,
    .notes = "  Every block of a periodic decomposition sends B bytes over each link (8 in\n"
             "  2-D, 26 in 3-D). bpc: enqueue every link's item (copy: bpc_neighbor_enqueue,\n"
             "  packed into one bundle per process; ref: bpc_neighbor_enqueue_ref, sent from\n"
             "  the user's buffer), bpc_neighbor_exchange, dequeue every item (views) -\n"
             "  timed; the object is made once. Baseline: MPI_Neighbor_alltoallv on an\n"
             "  MPI_Dist_graph_create_adjacent communicator with the same edges, made once.\n"
             "  Result lines are named <algorithm>-2d, <algorithm>-3d.\n",
    .run = nbh_run,
};
