/*
 * tests/mpi/test_neighbor.c - the neighbour exchange under MPI, against
 * serial references computed on every rank from the whole graph:
 *  - rounds on regular decompositions (1-D, 2-D, 3-D; with and without
 *    periodic wrap, so faces, edges and corners; a block that is its own
 *    neighbour), 1..4 blocks per process, contiguous and round-robin
 *    assignments, contiguous and custom item types of variable size with
 *    empty items; every source, every item and the order per source;
 *  - rounds through bpc_neighbor_round on random directed user graphs (with
 *    duplicates, self-links, blocks without links, fewer blocks than
 *    processes);
 *  - synchrony 1.0, 0.5 and 0.1 with delayed processes: every item delivered
 *    exactly once, in order per source, never before its round, in its round
 *    at 1.0, all of them after a final round at 1.0;
 *  - items by reference (large ones sent as messages of their own, small
 *    ones copied) mixed in one stream, synchronous and not;
 *  - bpc_neighbor_iterate with tokens that ping-pong between blocks for many
 *    rounds and blocks that stay busy without messages, at the three
 *    synchrony fractions, 1 and 2 threads; reuse of the object afterwards;
 *  - bad input: a neighbour gid out of range (on one rank), an enqueue to a
 *    block that is not linked, from a block that is not local, failing
 *    callbacks in round and iterate (BPC_ECALLBACK on every rank),
 *    undelivered items at destroy;
 *  - the entry frame: every documented argument error of create_decomp,
 *    create_graph, round and iterate, and every field that must match
 *    (block count, item type kind and element size, algorithm, synchrony,
 *    max_rounds, round vs iterate), on rank 0 only, on the last rank only
 *    and on all ranks (tests/mpi/bad_rank.h): the same code on every rank,
 *    never a hang.
 * Every algorithm of bpc_algorithms("neighbor") runs the graph rounds.
 */
#include "mpi_check.h"
#include "bad_rank.h"

#include <unistd.h>

#include "../common/neighbor_items.h"
#include "bpc.h"

static bpc_ctx_t *ctx;

static void setup(void) { ck_assert_int_eq(bpc_init(MPI_COMM_WORLD, NULL, &ctx), BPC_OK); }
static void teardown(void) { bpc_finalize(&ctx); }

/* ------------------------------------------------------- reference graph */

/* The links of every gid: gid g links to tgt[off[g] .. off[g+1]). */
typedef struct ref_graph {
  int n;
  int *off, *tgt;
} ref_graph_t;

static void ref_free(ref_graph_t *g)
{
  free(g->off);
  free(g->tgt);
  memset(g, 0, sizeof *g);
}

static void ref_from_decomp(const bpc_decomp_t *d, ref_graph_t *g)
{
  bpc_decomp_nblocks(d, &g->n);
  g->off = calloc((size_t)g->n + 1, sizeof(int));
  g->tgt = malloc(sizeof(int) * (size_t)g->n * BPC_MAX_LINKS);
  bpc_link_t *l = malloc(sizeof *l * BPC_MAX_LINKS);
  for (int s = 0; s < g->n; s++) {
    int nl = 0;
    bpc_decomp_links(d, s, l, BPC_MAX_LINKS, &nl);
    g->off[s + 1] = g->off[s] + nl;
    for (int j = 0; j < nl; j++)
      g->tgt[g->off[s] + j] = l[j].gid;
  }
  free(l);
}

/* A random directed graph: up to 5 links per gid, duplicates and self-links
 * allowed, some gids without links. The same on every rank. */
static void ref_random(int n, int seed, ref_graph_t *g)
{
  g->n = n;
  g->off = calloc((size_t)n + 1, sizeof(int));
  g->tgt = malloc(sizeof(int) * (size_t)n * 5 + 1);
  for (int s = 0; s < n; s++) {
    int k = (int)(ni_hash((uint64_t)s, (uint64_t)seed, 1, 2) % 6u);
    g->off[s + 1] = g->off[s] + k;
    for (int j = 0; j < k; j++)
      g->tgt[g->off[s] + j] = (int)(ni_hash((uint64_t)s, (uint64_t)j, (uint64_t)seed, 3) %
                                    (uint64_t)n);
  }
}

/* Does this rank's view of gid's links agree with the reference? */
static void check_links(bpc_neighbor_t *nb, const ref_graph_t *g, int gid)
{
  const bpc_link_t *l = NULL;
  int nl = -1;
  int rc = bpc_neighbor_links(nb, gid, &l, &nl);
  T_CHECK(rc == BPC_OK && nl == g->off[gid + 1] - g->off[gid], "links of %d: rc %d, %d links",
          gid, rc, nl);
  for (int j = 0; rc == BPC_OK && j < nl && j < g->off[gid + 1] - g->off[gid]; j++)
    T_CHECK(l[j].gid == g->tgt[g->off[gid] + j], "link %d of %d", j, gid);
}

/* ------------------------------------------------------ one synchronous round */

/* custom: 0 contiguous, 1 custom, 2 contiguous by reference (kept buffers) */
static void enqueue_round(bpc_neighbor_t *nb, const ref_graph_t *g, int custom, int src, int r,
                          int salt)
{
  for (int j = g->off[src]; j < g->off[src + 1]; j++) {
    int lj = j - g->off[src];
    for (int t = 0; t < ni_count(src, lj, r, salt); t++) {
      int rc = custom == 2 ? ni_enqueue_ref(nb, src, g->tgt[j], lj, t, r, salt)
                           : ni_enqueue(nb, custom, src, g->tgt[j], lj, t, r, salt);
      T_CHECK(rc == BPC_OK, "enqueue %d->%d: %s", src, g->tgt[j], bpc_last_error(ctx));
    }
  }
}

/* After round r (synchrony 1): local block dst got exactly its items. */
static void verify_round(bpc_neighbor_t *nb, const bpc_type_t *type, const ref_graph_t *g,
                         int custom, int dst, int r, int salt)
{
  int *exp = malloc(sizeof(int) * (size_t)g->n), nexp = 0;
  for (int s = 0; s < g->n; s++) {
    int any = 0;
    for (int j = g->off[s]; j < g->off[s + 1] && !any; j++)
      any = g->tgt[j] == dst && ni_count(s, j - g->off[s], r, salt) > 0;
    if (any)
      exp[nexp++] = s;
  }
  const int *srcs = NULL;
  int ns = -1;
  int rc = bpc_neighbor_incoming(nb, dst, &srcs, &ns);
  T_CHECK(rc == BPC_OK && ns == nexp, "round %d: block %d has %d sources, expected %d", r, dst,
          ns, nexp);
  for (int i = 0; rc == BPC_OK && i < ns && i < nexp; i++)
    T_CHECK(srcs[i] == exp[i], "round %d: block %d source %d is %d, expected %d", r, dst, i,
            srcs[i], exp[i]);
  for (int i = 0; i < nexp; i++) {
    int s = exp[i], cnt = -1;
    for (int j = g->off[s]; j < g->off[s + 1]; j++) {
      if (g->tgt[j] != dst)
        continue;
      int lj = j - g->off[s];
      for (int t = 0; t < ni_count(s, lj, r, salt); t++) {
        void *item = NULL;
        int got = 0;
        rc = bpc_neighbor_dequeue(nb, dst, s, &item, &got);
        T_CHECK(rc == BPC_OK && got, "round %d: %d<-%d item (%d,%d) missing: %s", r, dst, s, lj,
                t, bpc_last_error(ctx));
        if (got)
          T_CHECK(ni_check(type, custom, item, s, lj, t, r, salt) == 0,
                  "round %d: %d<-%d item (%d,%d) wrong or out of order", r, dst, s, lj, t);
      }
    }
    void *item = NULL;
    int got = 0;
    bpc_neighbor_dequeue(nb, dst, s, &item, &got);
    T_CHECK(!got, "round %d: %d<-%d has an extra item", r, dst, s);
    if (got && custom)
      bpc_type_item_destroy(type, item);
    bpc_neighbor_count(nb, dst, s, &cnt);
    T_CHECK(cnt == 0, "count after draining %d<-%d is %d", dst, s, cnt);
  }
  free(exp);
}

static void run_decomp_case(int dim, int wrap, int bpp, int mode_items, bpc_assign_mode_t mode)
{
  const int custom = mode_items == 1, by_ref = mode_items == 2;
  bpc_decomp_params_t p = bpc_decomp_params_default();
  p.dim = dim;
  p.nblocks = bpp * t_size;
  for (int i = 0; i < dim; i++) {
    p.domain_max[i] = 64;
    p.wrap[i] = wrap;
  }
  p.assign = mode;
  bpc_decomp_t *d = NULL;
  bpc_neighbor_t *nb = NULL;
  ref_graph_t g;
  memset(&g, 0, sizeof g);
  bpc_type_t type = ni_type(custom);
  int rc = bpc_decomp_create(ctx, &p, &d);
  T_CHECK(rc == BPC_OK, "decomp: %s", bpc_last_error(ctx));
  if (rc == BPC_OK)
    rc = bpc_neighbor_create_decomp(ctx, d, &type, NULL, &nb);
  T_CHECK(rc == BPC_OK, "create: %s", bpc_last_error(ctx));
  if (rc != BPC_OK) {
    bpc_decomp_destroy(&d);
    return;
  }
  ref_from_decomp(d, &g);
  const int *gids;
  int nl;
  bpc_assign_local(bpc_decomp_assign(d), &gids, &nl);
  for (int i = 0; i < nl; i++)
    check_links(nb, &g, gids[i]);
  const int salt = dim * 100 + wrap * 10 + bpp + custom * 1000;
  for (int r = 0; r < 3; r++) {
    for (int i = 0; i < nl; i++)
      enqueue_round(nb, &g, by_ref ? 2 : custom, gids[i], r, salt);
    rc = bpc_neighbor_exchange(nb);
    T_CHECK(rc == BPC_OK, "exchange: %s", bpc_last_error(ctx));
    ni_free_kept(); /* referenced data may change once the exchange returned */
    for (int i = 0; i < nl; i++)
      verify_round(nb, &type, &g, custom, gids[i], r, salt);
  }
  bpc_neighbor_stats_t st;
  bpc_neighbor_stats(nb, &st);
  T_CHECK(st.rounds == 3 && st.bundles_late == 0, "stats: %lld rounds, %lld late", st.rounds,
          st.bundles_late);
  rc = bpc_neighbor_destroy(&nb);
  T_CHECK(rc == BPC_OK && nb == NULL, "destroy: %s", bpc_last_error(ctx));
  ref_free(&g);
  bpc_decomp_destroy(&d);
}

START_TEST(test_decomp_rounds)
{
  for (int bpp = 1; bpp <= 4; bpp++)
    for (int dim = 1; dim <= 3; dim++)
      for (int wrap = 0; wrap <= 1; wrap++) {
        if (dim == 1 && bpp > 2)
          continue;
        run_decomp_case(dim, wrap, bpp, (bpp + dim + wrap) % 3,
                        bpp == 3 ? BPC_ASSIGN_ROUND_ROBIN : BPC_ASSIGN_CONTIGUOUS);
      }
  T_SYNC();
}
END_TEST

/* 3-D periodic, 27 blocks (3x3x3): every block has 26 distinct neighbours
 * (faces, edges, corners), and each must have sent to it. */
/* A decomposition and a neighbourhood over it (default parameters); on a
 * failure (checked) neither is left. */
static int nb_setup(const bpc_decomp_params_t *p, const bpc_type_t *type, bpc_decomp_t **d,
                    bpc_neighbor_t **nb)
{
  int rc = bpc_decomp_create(ctx, p, d);
  if (rc == BPC_OK)
    rc = bpc_neighbor_create_decomp(ctx, *d, type, NULL, nb);
  T_CHECK(rc == BPC_OK, "setup: %s", bpc_last_error(ctx));
  if (rc != BPC_OK)
    bpc_decomp_destroy(d);
  return rc;
}

START_TEST(test_corners)
{
  bpc_decomp_params_t p = bpc_decomp_params_default();
  p.nblocks = 27;
  for (int i = 0; i < 3; i++) {
    p.domain_max[i] = 9;
    p.wrap[i] = 1;
  }
  bpc_decomp_t *d = NULL;
  bpc_neighbor_t *nb = NULL;
  bpc_type_t type = bpc_type_contiguous(sizeof(int), MPI_INT);
  int rc = nb_setup(&p, &type, &d, &nb);
  const int *gids;
  int nl = 0;
  if (rc == BPC_OK)
    bpc_assign_local(bpc_decomp_assign(d), &gids, &nl);
  for (int i = 0; i < nl; i++) {
    const bpc_link_t *l;
    int n;
    bpc_neighbor_links(nb, gids[i], &l, &n);
    T_CHECK(n == 26, "block %d has %d links", gids[i], n);
    for (int j = 0; j < n; j++) {
      int v[2] = {gids[i], l[j].nonzero};
      bpc_buf_t b = {v, 2};
      rc = bpc_neighbor_enqueue(nb, gids[i], l[j].gid, &b);
      T_CHECK(rc == BPC_OK, "enqueue: %s", bpc_last_error(ctx));
    }
  }
  if (nb != NULL)
    T_CHECK(bpc_neighbor_exchange(nb) == BPC_OK, "exchange: %s", bpc_last_error(ctx));
  for (int i = 0; i < nl; i++) {
    const int *srcs;
    int ns = 0, kinds[4] = {0, 0, 0, 0};
    bpc_neighbor_incoming(nb, gids[i], &srcs, &ns);
    T_CHECK(ns == 26, "block %d heard from %d blocks", gids[i], ns);
    for (int k = 0; k < ns; k++) {
      void *it;
      int got;
      bpc_neighbor_dequeue(nb, gids[i], srcs[k], &it, &got);
      const bpc_buf_t *b = it;
      T_CHECK(got && b->count == 2 && ((int *)b->data)[0] == srcs[k], "item from %d", srcs[k]);
      if (got && b->count == 2 && ((int *)b->data)[1] >= 1 && ((int *)b->data)[1] <= 3)
        kinds[((int *)b->data)[1]]++;
    }
    T_CHECK(kinds[1] == 6 && kinds[2] == 12 && kinds[3] == 8,
            "block %d: %d faces, %d edges, %d corners", gids[i], kinds[1], kinds[2], kinds[3]);
  }
  T_CHECK(bpc_neighbor_destroy(&nb) == BPC_OK, "destroy");
  bpc_decomp_destroy(&d);
  T_SYNC();
}
END_TEST

/* ------------------------------------------------- user graph, callbacks */

typedef struct graph_round {
  const ref_graph_t *g;
  const bpc_type_t *type;
  int custom, r, salt;
} graph_round_t;

static int graph_cb(void *block, int gid, bpc_neighbor_t *nb, void *user, int *more)
{
  graph_round_t *gr = user;
  (void)block;
  (void)more;
  if (gr->r > 0)
    verify_round(nb, gr->type, gr->g, gr->custom, gid, gr->r - 1, gr->salt);
  enqueue_round(nb, gr->g, gr->custom, gid, gr->r, gr->salt);
  return 0;
}

START_TEST(test_graph_rounds)
{
  const int counts[] = {t_size, 2 * t_size, 3 * t_size, 4 * t_size, t_size > 1 ? t_size - 1 : 1};
  bpc_algo_info_t algos[8];
  int nalgos = 0;
  T_CHECK(bpc_algorithms("neighbor", algos, 8, &nalgos) == BPC_OK && nalgos >= 1,
          "bpc_algorithms(neighbor): %d rows", nalgos);
  for (int c = 0; c < 5 * nalgos; c++) {
    const bpc_algo_info_t *al = &algos[c / 5];
    const int n = counts[c % 5];
    const int custom = c % 2;
    bpc_assign_t *a = NULL;
    bpc_neighbor_t *nb = NULL;
    /* graph_cb checks with T_CHECK, which is not thread-safe */
    bpc_neighbor_params_t prm = bpc_neighbor_params_default();
    prm.nthreads = 1;
    prm.algorithm = al->name;
    ref_graph_t g;
    bpc_type_t type = ni_type(custom);
    ref_random(n, 77 + c, &g);
    int rc = bpc_assign_create(ctx, n, c % 5 == 2 ? BPC_ASSIGN_ROUND_ROBIN : BPC_ASSIGN_CONTIGUOUS,
                               NULL, &a);
    const int *gids;
    int nl = 0;
    bpc_assign_local(a, &gids, &nl);
    int *off = calloc((size_t)nl + 1, sizeof(int));
    int *tgt = malloc(sizeof(int) * ((size_t)n * 5 + 1));
    for (int i = 0; i < nl; i++) {
      int s = gids[i];
      off[i + 1] = off[i] + g.off[s + 1] - g.off[s];
      memcpy(tgt + off[i], g.tgt + g.off[s], sizeof(int) * (size_t)(g.off[s + 1] - g.off[s]));
    }
    if (rc == BPC_OK)
      rc = bpc_neighbor_create_graph(ctx, a, off, tgt, &type, &prm, &nb);
    T_CHECK(rc == BPC_OK, "create graph of %d (%s): %s", n, al->name, bpc_last_error(ctx));
    bpc_neighbor_info_t info = {0, "", BPC_SOURCE_BUILTIN};
    if (rc == BPC_OK)
      T_CHECK(bpc_neighbor_info(nb, &info) == BPC_OK && strcmp(info.name, al->name) == 0,
              "algorithm %s, asked for %s", info.name, al->name);
    for (int i = 0; rc == BPC_OK && i < nl; i++)
      check_links(nb, &g, gids[i]);
    graph_round_t gr = {&g, &type, custom, 0, 500 + c};
    for (int r = 0; rc == BPC_OK && r < 4; r++) {
      gr.r = r;
      int rrc = bpc_neighbor_round(nb, NULL, graph_cb, &gr);
      T_CHECK(rrc == BPC_OK, "round %d: %s", r, bpc_last_error(ctx));
    }
    for (int i = 0; rc == BPC_OK && i < nl; i++)
      verify_round(nb, &type, &g, custom, gids[i], 3, 500 + c);
    T_CHECK(bpc_neighbor_destroy(&nb) == BPC_OK, "destroy: %s", bpc_last_error(ctx));
    free(off);
    free(tgt);
    ref_free(&g);
    bpc_assign_destroy(&a);
  }
  T_SYNC();
}
END_TEST

/* ---------------------------------------------------------------- synchrony */

/* Position in the concatenated sequence of items src sends dst over rounds. */
typedef struct seq_pos {
  int r, j, t;
} seq_pos_t;

/* Advance *p to the next expected item (src -> dst) at or after it; 0 when
 * the sequence (rounds < R) is exhausted. */
static int seq_next(const ref_graph_t *g, int src, int dst, int R, int salt, seq_pos_t *p)
{
  int nl = g->off[src + 1] - g->off[src];
  while (p->r < R) {
    while (p->j < nl) {
      if (g->tgt[g->off[src] + p->j] == dst && p->t < ni_count(src, p->j, p->r, salt))
        return 1;
      p->j++;
      p->t = 0;
    }
    p->r++;
    p->j = 0;
    p->t = 0;
  }
  return 0;
}

/* custom: 0 contiguous, 1 custom, 2 contiguous by reference */
static void run_synchrony(double f, int items)
{
  const int custom = items == 1;
  const int R = 6;
  bpc_decomp_params_t p = bpc_decomp_params_default();
  p.dim = 2;
  p.nblocks = 2 * t_size;
  p.domain_max[0] = p.domain_max[1] = 64;
  p.wrap[0] = p.wrap[1] = 1;
  bpc_decomp_t *d = NULL;
  bpc_neighbor_t *nb = NULL;
  bpc_neighbor_params_t o = bpc_neighbor_params_default();
  o.synchrony = f;
  bpc_type_t type = ni_type(custom);
  ref_graph_t g;
  int rc = bpc_decomp_create(ctx, &p, &d);
  if (rc == BPC_OK)
    rc = bpc_neighbor_create_decomp(ctx, d, &type, &o, &nb);
  T_CHECK(rc == BPC_OK, "setup: %s", bpc_last_error(ctx));
  if (rc != BPC_OK)
    return;
  ref_from_decomp(d, &g);
  const int *gids;
  int nl;
  bpc_assign_local(bpc_decomp_assign(d), &gids, &nl);
  const int salt = 900 + (int)(f * 10) + items;
  seq_pos_t *pos = calloc((size_t)nl * (size_t)g.n, sizeof *pos);
  for (int r = 0; r <= R; r++) {
    if (r == R)
      T_CHECK(bpc_neighbor_set_synchrony(nb, 1.0) == BPC_OK, "set synchrony");
    else
      for (int i = 0; i < nl; i++)
        enqueue_round(nb, &g, items, gids[i], r, salt);
    if (r < R && r % t_size == t_rank)
      usleep(4000); /* this process is late: others may go on without it */
    rc = bpc_neighbor_exchange(nb);
    T_CHECK(rc == BPC_OK, "exchange %d: %s", r, bpc_last_error(ctx));
    ni_free_kept();
    for (int i = 0; i < nl; i++) {
      const int dst = gids[i];
      const int *srcs;
      int ns = 0;
      bpc_neighbor_incoming(nb, dst, &srcs, &ns);
      for (int k = 0; k < ns; k++) {
        const int s = srcs[k];
        T_CHECK(k == 0 || srcs[k - 1] < s, "sources not ascending");
        seq_pos_t *ps = &pos[(size_t)i * (size_t)g.n + (size_t)s];
        for (;;) {
          void *item = NULL;
          int got = 0;
          bpc_neighbor_dequeue(nb, dst, s, &item, &got);
          if (!got)
            break;
          if (!seq_next(&g, s, dst, R, salt, ps)) {
            T_CHECK(0, "f=%g: %d<-%d: an item too many in round %d", f, dst, s, r);
            if (custom)
              bpc_type_item_destroy(&type, item);
            break;
          }
          T_CHECK(ps->r <= r, "f=%g: %d<-%d: item of round %d delivered early in round %d", f,
                  dst, s, ps->r, r);
          if (f >= 1.0)
            T_CHECK(ps->r == r, "f=1: %d<-%d: item of round %d delivered in round %d", dst, s,
                    ps->r, r);
          T_CHECK(ni_check(&type, custom, item, s, ps->j, ps->t, ps->r, salt) == 0,
                  "f=%g: %d<-%d: item (%d,%d,%d) wrong or out of order", f, dst, s, ps->r, ps->j,
                  ps->t);
          ps->t++;
        }
      }
    }
  }
  /* after the final synchronous round nothing is missing */
  for (int i = 0; i < nl; i++)
    for (int s = 0; s < g.n; s++) {
      seq_pos_t *ps = &pos[(size_t)i * (size_t)g.n + (size_t)s];
      T_CHECK(!seq_next(&g, s, gids[i], R, salt, ps), "f=%g: %d<-%d: item (%d,%d,%d) never came",
              f, gids[i], s, ps->r, ps->j, ps->t);
    }
  bpc_neighbor_stats_t st;
  bpc_neighbor_stats(nb, &st);
  if (f >= 1.0)
    T_CHECK(st.bundles_late == 0, "f=1 but %lld late messages", st.bundles_late);
  rc = bpc_neighbor_destroy(&nb);
  T_CHECK(rc == BPC_OK, "destroy: %s", bpc_last_error(ctx));
  free(pos);
  ref_free(&g);
  bpc_decomp_destroy(&d);
}

START_TEST(test_synchrony)
{
  run_synchrony(1.0, 0);
  run_synchrony(0.5, 1);
  run_synchrony(0.1, 0);
  run_synchrony(0.5, 2);
  T_SYNC();
}
END_TEST

/* Items by reference of 0..180 KiB (those of 16 KiB and more travel as
 * messages of their own, the others are copied), mixed in one stream per
 * source: rounds on decompositions, and synchrony 1.0 and 0.5. */
/* One block a process on a periodic ring, items of int64_t. */
static int ring_setup(bpc_decomp_t **d, bpc_neighbor_t **nb)
{
  bpc_decomp_params_t p = bpc_decomp_params_default();
  p.dim = 1;
  p.nblocks = t_size;
  p.domain_max[0] = 64 * t_size;
  p.wrap[0] = 1;
  bpc_type_t type = bpc_type_contiguous(sizeof(int64_t), MPI_INT64_T);
  return nb_setup(&p, &type, d, nb);
}

/* Items by reference and partial synchrony: lowering the synchrony while
 * such items wait for the exchange is refused (BPC_ESTATE); below 1 they
 * are copied at the enqueue, so the caller may overwrite its data before
 * the exchange (a round that does not wait for all its messages cannot
 * wait for its sends to be taken). */
static void run_ref_synchrony(void)
{
  enum { N = 4096 }; /* 32 KiB: above the size that is always copied */
  bpc_decomp_t *d = NULL;
  bpc_neighbor_t *nb = NULL;
  if (ring_setup(&d, &nb) != BPC_OK)
    return;
  int rc = BPC_OK;
  const int gid = t_rank, dst = (t_rank + 1) % t_size, src = (t_rank + t_size - 1) % t_size;
  int64_t *v = malloc(sizeof(int64_t) * N);
  for (int round = 0; round < 2; round++) {
    for (int i = 0; i < N; i++)
      v[i] = (int64_t)gid * 1000003 + round * 7 + i;
    bpc_buf_t b = {v, N};
    T_CHECK(bpc_neighbor_enqueue_ref(nb, gid, dst, &b) == BPC_OK, "enqueue_ref: %s",
            bpc_last_error(ctx));
    if (round == 0) {
      rc = bpc_neighbor_set_synchrony(nb, 0.5);
      T_CHECK(rc == (t_size > 1 ? BPC_ESTATE : BPC_OK),
              "lowering the synchrony with an item by reference waiting: %s",
              bpc_err_name(rc));
      T_CHECK(bpc_neighbor_set_synchrony(nb, 1.0) == BPC_OK, "raising it");
    } else {
      memset(v, 0xff, sizeof(int64_t) * N); /* copied at the enqueue: not sent */
    }
    long got_items = 0;
    for (int x = 0; x < 1 + round; x++) { /* at 0.5 the item may come a round later */
      if (x == 1)
        T_CHECK(bpc_neighbor_set_synchrony(nb, 1.0) == BPC_OK, "back to 1");
      T_CHECK(bpc_neighbor_exchange(nb) == BPC_OK, "exchange: %s", bpc_last_error(ctx));
      for (;;) {
        void *it = NULL;
        int got = 0;
        if (bpc_neighbor_dequeue(nb, gid, src, &it, &got) != BPC_OK || !got)
          break;
        const bpc_buf_t *y = it;
        int bad = y->count != N;
        for (int i = 0; i < N && !bad; i++)
          bad = ((const int64_t *)y->data)[i] != (int64_t)src * 1000003 + round * 7 + i;
        T_CHECK(!bad, "round %d: the item from block %d is wrong", round, src);
        got_items++;
      }
    }
    T_CHECK(got_items == 1, "round %d: %ld items from block %d", round, got_items, src);
    if (round == 0)
      T_CHECK(bpc_neighbor_set_synchrony(nb, 0.5) == BPC_OK, "lowering it after the exchange");
  }
  free(v);
  T_CHECK(bpc_neighbor_destroy(&nb) == BPC_OK, "destroy: %s", bpc_last_error(ctx));
  bpc_decomp_destroy(&d);
}

/* Mixed synchrony with items by reference through bpc_neighbor_round: the
 * even ranks (synchrony 1) send 32 KiB items by reference and are late now
 * and then, the odd ones (0.5) may leave a round without them and wait in
 * the round's closing agreement, which must keep taking messages (the
 * senders flush their items by reference before they agree). */
typedef struct mx_state {
  int round;
  int64_t *buf[2]; /* this rank's block's items by reference, per link */
  long got, bad;
} mx_state_t;

enum { MX_N = 4096, MX_R = 6 };

static int64_t mx_val(int src, int dst, int r, int i) { return ((int64_t)src * 131 + dst) * 977 + r * 7 + i; }

static int mx_cb(void *block, int gid, bpc_neighbor_t *nb, void *user, int *more)
{
  (void)block;
  (void)more;
  mx_state_t *S = user;
  const int *srcs = NULL;
  int ns = 0;
  bpc_neighbor_incoming(nb, gid, &srcs, &ns);
  for (int k = 0; k < ns; k++)
    for (;;) {
      void *it = NULL;
      int got = 0;
      if (bpc_neighbor_dequeue(nb, gid, srcs[k], &it, &got) != BPC_OK || !got)
        break;
      const bpc_buf_t *x = it;
      const int64_t *v = x->data;
      int bad = x->count != MX_N || v[0] < 0 || v[0] >= MX_R;
      for (int i = 1; !bad && i < MX_N; i++)
        bad = v[i] != mx_val(srcs[k], gid, (int)v[0], i);
      S->bad += bad;
      S->got++;
    }
  const bpc_link_t *l = NULL;
  int nl = 0;
  bpc_neighbor_links(nb, gid, &l, &nl);
  for (int j = 0; j < nl && j < 2 && S->round < MX_R; j++) {
    int64_t *v = S->buf[j];
    v[0] = S->round;
    for (int i = 1; i < MX_N; i++)
      v[i] = mx_val(gid, l[j].gid, S->round, i);
    bpc_buf_t b = {v, MX_N};
    if (bpc_neighbor_enqueue_ref(nb, gid, l[j].gid, &b) != BPC_OK)
      return 1;
  }
  return 0;
}

static void run_mixed_synchrony(void)
{
  if (t_size < 3)
    return; /* a receiver needs two senders to go on without one */
  bpc_decomp_t *d = NULL;
  bpc_neighbor_t *nb = NULL;
  if (ring_setup(&d, &nb) != BPC_OK)
    return;
  mx_state_t S;
  memset(&S, 0, sizeof S);
  S.buf[0] = malloc(sizeof(int64_t) * MX_N);
  S.buf[1] = malloc(sizeof(int64_t) * MX_N);
  if (t_rank % 2)
    T_CHECK(bpc_neighbor_set_synchrony(nb, 0.5) == BPC_OK, "synchrony 0.5");
  for (S.round = 0; S.round < MX_R + 2; S.round++) {
    if (S.round == MX_R)
      T_CHECK(bpc_neighbor_set_synchrony(nb, 1.0) == BPC_OK, "back to 1");
    if (t_rank % 2 == 0 && S.round % 2 == 0 && S.round < MX_R)
      usleep(3000); /* late: receivers at 0.5 may go on without this one */
    int rc = bpc_neighbor_round(nb, NULL, mx_cb, &S);
    T_CHECK(rc == BPC_OK, "round %d: %s", S.round, bpc_last_error(ctx));
  }
  T_CHECK(S.bad == 0 && S.got == 2L * MX_R, "block %d: %ld items (%ld wrong), want %d", t_rank,
          S.got, S.bad, 2 * MX_R);
  free(S.buf[0]);
  free(S.buf[1]);
  T_CHECK(bpc_neighbor_destroy(&nb) == BPC_OK, "destroy: %s", bpc_last_error(ctx));
  bpc_decomp_destroy(&d);
}

START_TEST(test_by_reference)
{
  ni_scale = 1000;
  run_decomp_case(2, 1, 1, 2, BPC_ASSIGN_CONTIGUOUS);
  run_decomp_case(3, 0, 2, 2, BPC_ASSIGN_ROUND_ROBIN);
  run_synchrony(1.0, 2);
  run_synchrony(0.5, 2);
  ni_scale = 1;
  run_ref_synchrony();
  run_mixed_synchrony();
  T_SYNC();
}
END_TEST

/* --------------------------------------------------- iterate: ping-pong */

typedef struct token {
  int64_t id, left, hop;
} token_t;

typedef struct pp_block {
  int started, countdown;
  int64_t *ids, *hops;
  int n, cap;
} pp_block_t;

typedef struct pp_ctx {
  int n; /* blocks */
  bpc_type_t type;
  int fail_gid; /* callback of this gid fails in round fail_round (-1: never) */
  int fail_round, round_seen;
} pp_ctx_t;

static int64_t pp_hops(int64_t id, int n) { return id < n ? 10 + (int64_t)(ni_hash((uint64_t)id, 5, 5, 5) % 30u) : 5 + (int64_t)(ni_hash((uint64_t)id, 6, 6, 6) % 10u); }
static int pp_countdown(int gid) { return gid % 3 == 0 ? 25 : 0; }

static int pp_pick(int64_t id, int64_t hop, int nlinks)
{
  return (int)(ni_hash((uint64_t)id, (uint64_t)hop, 9, 9) % (uint64_t)nlinks);
}

static void *pp_create(int gid, void *user)
{
  (void)user;
  pp_block_t *b = calloc(1, sizeof *b);
  if (b)
    b->countdown = pp_countdown(gid);
  return b;
}

static void pp_destroy(void *blk, int gid, void *user)
{
  (void)gid;
  (void)user;
  pp_block_t *b = blk;
  free(b->ids);
  free(b->hops);
  free(b);
}

static int pp_handle(pp_block_t *b, int gid, bpc_neighbor_t *nb, token_t t)
{
  if (t.left == 0) {
    if (b->n == b->cap) {
      b->cap = b->cap ? 2 * b->cap : 8;
      b->ids = realloc(b->ids, sizeof(int64_t) * (size_t)b->cap);
      b->hops = realloc(b->hops, sizeof(int64_t) * (size_t)b->cap);
    }
    b->ids[b->n] = t.id;
    b->hops[b->n] = t.hop;
    b->n++;
    return 0;
  }
  const bpc_link_t *l;
  int nl;
  bpc_neighbor_links(nb, gid, &l, &nl);
  int dst = l[pp_pick(t.id, t.hop, nl)].gid;
  t.left--;
  t.hop++;
  bpc_buf_t buf = {&t, 1};
  return bpc_neighbor_enqueue(nb, gid, dst, &buf);
}

static int pp_cb(void *blk, int gid, bpc_neighbor_t *nb, void *user, int *more)
{
  pp_block_t *b = blk;
  pp_ctx_t *c = user;
  int rc = 0;
  if (gid == c->fail_gid && b->started++ == c->fail_round)
    return 42;
  if (!b->started) {
    b->started = 1;
    token_t t = {gid, pp_hops(gid, c->n), 0};
    rc = pp_handle(b, gid, nb, t);
  }
  const int *srcs;
  int ns;
  bpc_neighbor_incoming(nb, gid, &srcs, &ns);
  for (int k = 0; k < ns && rc == 0; k++) {
    for (;;) {
      void *it;
      int got;
      rc = bpc_neighbor_dequeue(nb, gid, srcs[k], &it, &got);
      if (rc != 0 || !got)
        break;
      const bpc_buf_t *bb = it;
      for (size_t i = 0; i < bb->count && rc == 0; i++)
        rc = pp_handle(b, gid, nb, ((token_t *)bb->data)[i]);
    }
  }
  if (rc == 0 && b->countdown > 0) {
    if (--b->countdown == 0) {
      token_t t = {c->n + gid, pp_hops(c->n + gid, c->n), 0};
      rc = pp_handle(b, gid, nb, t);
    } else {
      *more = 1;
    }
  }
  return rc;
}

/* Reference: where token id (starting at origin) retires. */
static int pp_final(const ref_graph_t *g, int64_t id, int origin)
{
  int cur = origin;
  int64_t h = pp_hops(id, g->n);
  for (int64_t hop = 0; hop < h; hop++) {
    int nl = g->off[cur + 1] - g->off[cur];
    cur = g->tgt[g->off[cur] + pp_pick(id, hop, nl)];
  }
  return cur;
}

static void run_pingpong(double f, int bpp, int nthreads, int dim)
{
  bpc_decomp_params_t p = bpc_decomp_params_default();
  p.dim = dim;
  p.nblocks = bpp * t_size;
  for (int i = 0; i < dim; i++) {
    p.domain_max[i] = 128;
    p.wrap[i] = 1;
  }
  bpc_decomp_t *d = NULL;
  bpc_blocks_t *blocks = NULL;
  bpc_neighbor_t *nb = NULL;
  bpc_neighbor_params_t o = bpc_neighbor_params_default();
  o.synchrony = f;
  o.nthreads = nthreads;
  pp_ctx_t c = {p.nblocks, bpc_type_contiguous(sizeof(token_t), MPI_BYTE), -1, -1, 0};
  ref_graph_t g;
  int rc = bpc_decomp_create(ctx, &p, &d);
  if (rc == BPC_OK)
    rc = bpc_blocks_create(bpc_decomp_assign(d), pp_create, pp_destroy, NULL, &blocks);
  if (rc == BPC_OK)
    rc = bpc_neighbor_create_decomp(ctx, d, &c.type, &o, &nb);
  T_CHECK(rc == BPC_OK, "setup: %s", bpc_last_error(ctx));
  if (rc != BPC_OK)
    return;
  ref_from_decomp(d, &g);
  long long rounds = 0;
  rc = bpc_neighbor_iterate(nb, blocks, pp_cb, &c, &rounds);
  T_CHECK(rc == BPC_OK, "iterate f=%g bpp=%d: %s", f, bpp, bpc_last_error(ctx));
  T_CHECK(rounds >= 10, "only %lld rounds", rounds);
  /* every token retired where the reference says, once, with its hops */
  int n = g.n;
  int nlocal;
  bpc_blocks_count(blocks, &nlocal);
  for (int i = 0; i < nlocal; i++) {
    void *data;
    int gid;
    bpc_blocks_at(blocks, i, &data, &gid);
    pp_block_t *b = data;
    int expect = 0;
    for (int64_t id = 0; id < 2 * n; id++) {
      int origin = (int)(id < n ? id : id - n);
      if (id >= n && pp_countdown(origin) == 0)
        continue;
      if (pp_final(&g, id, origin) != gid)
        continue;
      expect++;
      int found = 0;
      for (int k = 0; k < b->n; k++)
        if (b->ids[k] == id) {
          found++;
          T_CHECK(b->hops[k] == pp_hops(id, n), "token %lld: %lld hops", (long long)id,
                  (long long)b->hops[k]);
        }
      T_CHECK(found == 1, "f=%g: token %lld retired %d times at block %d", f, (long long)id,
              found, gid);
    }
    T_CHECK(b->n == expect, "f=%g: block %d retired %d tokens, expected %d", f, gid, b->n,
            expect);
  }
  /* the object can be used again: a second iterate ends at once */
  rc = bpc_neighbor_iterate(nb, blocks, pp_cb, &c, &rounds);
  T_CHECK(rc == BPC_OK, "second iterate: %s", bpc_last_error(ctx));
  rc = bpc_neighbor_destroy(&nb);
  T_CHECK(rc == BPC_OK, "destroy: %s", bpc_last_error(ctx));
  ref_free(&g);
  bpc_blocks_destroy(&blocks);
  bpc_decomp_destroy(&d);
}

START_TEST(test_iterate_pingpong)
{
  /* Two callback threads per process only where the cores are not already
   * oversubscribed by processes: OpenMP's spinning threads would stall
   * everyone at 12 processes on 2 cores. tests/unit/test_neighbor_serial
   * runs the threaded callbacks on 4 threads as well. */
  const int nt = t_size <= 2 ? 2 : 1;
  run_pingpong(1.0, 1, 1, 2);
  run_pingpong(0.5, 2, 1, 2);
  run_pingpong(0.1, 3, nt, 2);
  run_pingpong(1.0, 4, nt, 3);
  run_pingpong(0.5, 1, 1, 3);
  T_SYNC();
}
END_TEST

/* ------------------------------------------------------------- bad input */

static int bad_enqueue_cb(void *block, int gid, bpc_neighbor_t *nb, void *user, int *more)
{
  (void)block;
  (void)more;
  int *target = user;
  if (gid != *target)
    return 0;
  int rc = bpc_neighbor_enqueue(nb, gid, gid, NULL); /* not linked in this graph */
  return rc == BPC_EINVAL ? 17 : 0;
}

START_TEST(test_bad_input)
{
  const int n = 2 * t_size;
  bpc_assign_t *a = NULL;
  bpc_neighbor_t *nb = NULL;
  bpc_type_t type = bpc_type_contiguous(sizeof(int), MPI_INT);
  int rc = bpc_assign_create(ctx, n, BPC_ASSIGN_CONTIGUOUS, NULL, &a);
  T_CHECK(rc == BPC_OK, "assign");
  const int *gids;
  int nl;
  bpc_assign_local(a, &gids, &nl);
  /* ring: gid -> gid + 1 */
  int off[3] = {0, 1, 2}, tgt[2];
  for (int i = 0; i < nl; i++)
    tgt[i] = (gids[i] + 1) % n;

  /* a neighbour gid out of range on the last rank only: fails everywhere */
  int save = tgt[0];
  if (t_rank == t_size - 1)
    tgt[0] = n + 3;
  rc = bpc_neighbor_create_graph(ctx, a, off, tgt, &type, NULL, &nb);
  T_CHECK(rc == BPC_ERANGE && nb == NULL, "out-of-range gid: rc %d (%s)", rc,
          bpc_last_error(ctx));
  if (t_rank == t_size - 1)
    T_CHECK(strstr(bpc_last_error(ctx), "outside") != NULL, "message: %s", bpc_last_error(ctx));
  tgt[0] = -1;
  rc = bpc_neighbor_create_graph(ctx, a, off, tgt, &type, NULL, &nb);
  T_CHECK(rc == BPC_ERANGE, "negative gid: rc %d", rc);
  tgt[0] = save;

  bpc_neighbor_params_t o = bpc_neighbor_params_default();
  o.algorithm = "PACKED"; /* names are case-insensitive */
  rc = bpc_neighbor_create_graph(ctx, a, off, tgt, &type, &o, &nb);
  T_CHECK(rc == BPC_OK, "create: %s", bpc_last_error(ctx));
  if (rc == BPC_OK) {
    bpc_neighbor_info_t info = {0, "", BPC_SOURCE_BUILTIN};
    T_CHECK(bpc_neighbor_info(nb, &info) == BPC_OK && strcmp(info.name, "packed") == 0,
            "algorithm name");
    /* enqueue to a block not in the link, and from a block not local */
    for (int i = 0; i < nl; i++) {
      int v = 5;
      bpc_buf_t b = {&v, 1};
      int not_linked = (gids[i] + 2) % n;
      if (not_linked != tgt[i]) {
        rc = bpc_neighbor_enqueue(nb, gids[i], not_linked, &b);
        T_CHECK(rc == BPC_EINVAL, "enqueue %d->%d: rc %d", gids[i], not_linked, rc);
        T_CHECK(strstr(bpc_last_error(ctx), "not one of its") != NULL, "message: %s",
                bpc_last_error(ctx));
      }
    }
    int v = 1;
    bpc_buf_t b = {&v, 1};
    int foreign = n; /* a gid of another rank, or (one rank) no gid at all */
    for (int g2 = 0; g2 < n && foreign == n; g2++) {
      int loc = 0;
      for (int i = 0; i < nl; i++)
        loc |= gids[i] == g2;
      if (!loc)
        foreign = g2;
    }
    rc = bpc_neighbor_enqueue(nb, foreign, 0, &b);
    T_CHECK(rc == BPC_ENOTFOUND, "enqueue from non-local %d: rc %d", foreign, rc);
    /* nothing was queued by the failures: an exchange delivers nothing */
    rc = bpc_neighbor_exchange(nb);
    T_CHECK(rc == BPC_OK, "exchange: %s", bpc_last_error(ctx));
    for (int i = 0; i < nl; i++) {
      const int *srcs;
      int ns = -1;
      bpc_neighbor_incoming(nb, gids[i], &srcs, &ns);
      T_CHECK(ns == 0, "block %d got %d sources after failed enqueues", gids[i], ns);
    }
    /* a failing callback (a bad enqueue inside) on one block: every rank sees it */
    int target = n - 1;
    rc = bpc_neighbor_round(nb, NULL, bad_enqueue_cb, &target);
    T_CHECK(rc == BPC_ECALLBACK, "round with a failing callback: rc %d", rc);
    /* a failing callback in iterate, on one block in its third round */
    bpc_blocks_t *blocks = NULL;
    bpc_blocks_create(a, pp_create, pp_destroy, NULL, &blocks);
    bpc_neighbor_destroy(&nb);
    bpc_type_t tt = bpc_type_contiguous(sizeof(token_t), MPI_BYTE);
    rc = bpc_neighbor_create_graph(ctx, a, off, tgt, &tt, NULL, &nb);
    pp_ctx_t c2 = {n, tt, n / 2, 2, 0};
    long long rounds = 0;
    rc = bpc_neighbor_iterate(nb, blocks, pp_cb, &c2, &rounds);
    T_CHECK(rc == BPC_ECALLBACK, "iterate with a failing callback: rc %d (%s)", rc,
            bpc_last_error(ctx));
    /* blocks of another assignment are refused everywhere */
    bpc_assign_t *a2 = NULL;
    bpc_blocks_t *b2 = NULL;
    bpc_assign_create(ctx, n + 1, BPC_ASSIGN_ROUND_ROBIN, NULL, &a2);
    bpc_blocks_create(a2, pp_create, pp_destroy, NULL, &b2);
    rc = bpc_neighbor_iterate(nb, b2, pp_cb, &c2, &rounds);
    T_CHECK(rc == BPC_EINVAL, "iterate with foreign blocks: rc %d", rc);
    bpc_blocks_destroy(&b2);
    bpc_assign_destroy(&a2);
    bpc_blocks_destroy(&blocks);
    /* items never exchanged, on the last rank with blocks only: destroy
     * reports them on every rank, naming that rank */
    int holder = nl > 0 ? t_rank : -1;
    MPI_Allreduce(MPI_IN_PLACE, &holder, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    for (int i = 0; i < nl && t_rank == holder; i++) {
      token_t t = {0, 0, 0};
      bpc_buf_t tb = {&t, 1};
      bpc_neighbor_enqueue(nb, gids[i], tgt[i], &tb);
    }
    rc = bpc_neighbor_destroy(&nb);
    char named[32];
    snprintf(named, sizeof named, "on rank %d", holder);
    T_CHECK(holder < 0 ? rc == BPC_OK
                       : rc == BPC_ESTATE && strstr(bpc_last_error(ctx), named) != NULL,
            "destroy with undelivered items on rank %d: rc %d (%s)", holder, rc,
            bpc_last_error(ctx));
    T_CHECK(nb == NULL, "destroy sets NULL");
  }
  T_CHECK(bpc_neighbor_set_synchrony(NULL, 0.5) == BPC_ENULL, "NULL object");
  T_CHECK(bpc_neighbor_exchange(NULL) == BPC_ENULL, "NULL exchange");
  bpc_assign_destroy(&a);
  T_SYNC();
}
END_TEST

/* ------------------------------------------------ entry frame: bad ranks */

/* Objects every bad-argument test uses, made on every rank alike: two
 * decompositions and assignments (2 and 3 blocks per process), a ring graph
 * over each assignment (gid -> gid + 1), and a decomposition on a second
 * context. */
typedef struct frame_world {
  bpc_ctx_t *ctx2;
  bpc_decomp_t *d, *d3, *dother;
  bpc_assign_t *a, *a3;
  int off[4], tgt[3], off3[4], tgt3[3];
} frame_world_t;

static void ring_links(const bpc_assign_t *a, int *off, int *tgt)
{
  const int *gids;
  int nl = 0, n = 0;
  bpc_assign_local(a, &gids, &nl);
  bpc_assign_nblocks(a, &n);
  off[0] = 0;
  for (int i = 0; i < nl; i++) {
    tgt[i] = (gids[i] + 1) % n;
    off[i + 1] = i + 1;
  }
}

static int frame_open(frame_world_t *w)
{
  memset(w, 0, sizeof *w);
  bpc_decomp_params_t p = bpc_decomp_params_default();
  p.dim = 2;
  p.domain_max[0] = p.domain_max[1] = 64;
  p.wrap[0] = p.wrap[1] = 1;
  p.nblocks = 2 * t_size;
  int rc = bpc_decomp_create(ctx, &p, &w->d);
  p.nblocks = 3 * t_size;
  if (rc == BPC_OK)
    rc = bpc_decomp_create(ctx, &p, &w->d3);
  if (rc == BPC_OK)
    rc = bpc_init(MPI_COMM_WORLD, NULL, &w->ctx2);
  p.nblocks = 2 * t_size;
  if (rc == BPC_OK)
    rc = bpc_decomp_create(w->ctx2, &p, &w->dother);
  if (rc == BPC_OK)
    rc = bpc_assign_create(ctx, 2 * t_size, BPC_ASSIGN_CONTIGUOUS, NULL, &w->a);
  if (rc == BPC_OK)
    rc = bpc_assign_create(ctx, 3 * t_size, BPC_ASSIGN_CONTIGUOUS, NULL, &w->a3);
  T_CHECK(rc == BPC_OK, "frame setup: %s", bpc_last_error(ctx));
  if (rc == BPC_OK) {
    ring_links(w->a, w->off, w->tgt);
    ring_links(w->a3, w->off3, w->tgt3);
  }
  return rc;
}

static void frame_close(frame_world_t *w)
{
  bpc_decomp_destroy(&w->d);
  bpc_decomp_destroy(&w->d3);
  bpc_decomp_destroy(&w->dother);
  bpc_assign_destroy(&w->a);
  bpc_assign_destroy(&w->a3);
  bpc_finalize(&w->ctx2);
}

/* The bad-argument cases of the creators. Each changes one argument on the
 * ranks that are "bad"; `code` is what every rank must get (mismatch cases:
 * BPC_EMISMATCH when only some ranks differ, BPC_OK when all do or there is
 * one rank); `msg` must be in the message. */
enum {
  CR_OUT_NULL, CR_BASE_NULL, CR_TYPE_NULL, CR_TYPE_BAD, CR_SYNC_HIGH, CR_SYNC_ZERO,
  CR_NTHREADS, CR_MAXROUNDS, CR_ALGO, CR_OTHER_CTX, CR_OFF_NULL, CR_OFF0, CR_OFF_DOWN,
  CR_TGT_NULL, CR_TGT_RANGE, CR_TGT_NEG,
  /* must match */
  CR_M_BLOCKS, CR_M_KIND, CR_M_ELEM, CR_M_ALGO, CR_M_SYNC, CR_M_MAXROUNDS, CR_M_ENTRY, CR_NCASES
};

typedef struct cr_case {
  int graph_only; /* 1: create_graph only, 0: both */
  int code;
  const char *name, *msg;
} cr_case_t;

static const cr_case_t cr_cases[CR_NCASES] = {
    [CR_OUT_NULL] = {0, BPC_ENULL, "out NULL", "out is NULL"},
    [CR_BASE_NULL] = {0, BPC_ENULL, "d / a NULL", "is NULL"},
    [CR_TYPE_NULL] = {0, BPC_ENULL, "type NULL", "item type is NULL"},
    [CR_TYPE_BAD] = {0, BPC_ETYPE, "type elem_size 0", ""},
    [CR_SYNC_HIGH] = {0, BPC_EINVAL, "synchrony 1.5", "synchrony 1.5"},
    [CR_SYNC_ZERO] = {0, BPC_EINVAL, "synchrony 0", "synchrony 0"},
    [CR_NTHREADS] = {0, BPC_EINVAL, "nthreads -1", "nthreads is -1"},
    [CR_MAXROUNDS] = {0, BPC_EINVAL, "max_rounds -2", "max_rounds is -2"},
    [CR_ALGO] = {0, BPC_EALGO, "algorithm nope", "'nope'"},
    [CR_OTHER_CTX] = {0, BPC_EINVAL, "another context", "another context"},
    [CR_OFF_NULL] = {1, BPC_ENULL, "offsets NULL", "offsets is NULL"},
    [CR_OFF0] = {1, BPC_EINVAL, "offsets[0] 1", "offsets[0] is 1"},
    [CR_OFF_DOWN] = {1, BPC_EINVAL, "offsets decrease", "offsets decrease"},
    [CR_TGT_NULL] = {1, BPC_ENULL, "targets NULL", "targets is NULL"},
    [CR_TGT_RANGE] = {1, BPC_ERANGE, "target too large", "outside"},
    [CR_TGT_NEG] = {1, BPC_ERANGE, "target -1", "outside"},
    [CR_M_BLOCKS] = {0, BPC_EMISMATCH, "block count", "block count"},
    [CR_M_KIND] = {0, BPC_EMISMATCH, "item type kind", "type kind"},
    [CR_M_ELEM] = {0, BPC_EMISMATCH, "element size", "element size"},
    [CR_M_ALGO] = {0, BPC_EMISMATCH, "algorithm", "algorithm"},
    [CR_M_SYNC] = {0, BPC_EMISMATCH, "synchrony", "synchrony"},
    [CR_M_MAXROUNDS] = {0, BPC_EMISMATCH, "max_rounds", "max_rounds"},
    [CR_M_ENTRY] = {0, BPC_EMISMATCH, "create_decomp vs create_graph", "entry"},
};

/* One creator call of case k in mode m (graph: create_graph, else
 * create_decomp); returns its code and sets *nb. */
static int cr_call(frame_world_t *w, int k, int m, int graph, bpc_neighbor_t **nb)
{
  const int bad = bad_here(m);
  bpc_type_t type = bpc_type_contiguous(sizeof(int), MPI_INT);
  bpc_type_t type8 = bpc_type_contiguous(8, MPI_BYTE), tbad = bpc_type_contiguous(0, MPI_BYTE);
  bpc_type_t tcustom = ni_type(1);
  bpc_neighbor_params_t prm = bpc_neighbor_params_default();
  prm.nthreads = 1;
  const bpc_type_t *tp = &type;
  const bpc_decomp_t *d = w->d;
  const bpc_assign_t *a = w->a;
  int off[4], tgt[3];
  memcpy(off, w->off, sizeof off);
  memcpy(tgt, w->tgt, sizeof tgt);
  const int *offp = off, *tgtp = tgt;
  bpc_neighbor_t **out = nb;
  bpc_algo_info_t algos[8];
  int nalgos = 0;
  bpc_algorithms("neighbor", algos, 8, &nalgos);
  if (bad) {
    switch (k) {
    case CR_OUT_NULL: out = NULL; break;
    case CR_BASE_NULL: d = NULL; a = NULL; break;
    case CR_TYPE_NULL: tp = NULL; break;
    case CR_TYPE_BAD: tp = &tbad; break;
    case CR_SYNC_HIGH: prm.synchrony = 1.5; break;
    case CR_SYNC_ZERO: prm.synchrony = 0.0; break;
    case CR_NTHREADS: prm.nthreads = -1; break;
    case CR_MAXROUNDS: prm.max_rounds = -2; break;
    case CR_ALGO: prm.algorithm = "nope"; break;
    case CR_OTHER_CTX: d = w->dother; a = bpc_decomp_assign(w->dother); break;
    case CR_OFF_NULL: offp = NULL; break;
    case CR_OFF0: off[0] = 1; break;
    case CR_OFF_DOWN: off[2] = 0; break; /* every rank has 2 blocks: off[1] = 1 */
    case CR_TGT_NULL: tgtp = NULL; break;
    case CR_TGT_RANGE: tgt[1] = 2 * t_size + 5; break;
    case CR_TGT_NEG: tgt[0] = -1; break;
    case CR_M_BLOCKS:
      d = w->d3;
      a = w->a3;
      memcpy(off, w->off3, sizeof off);
      memcpy(tgt, w->tgt3, sizeof tgt);
      break;
    case CR_M_KIND: tp = &tcustom; break;
    case CR_M_ELEM: tp = &type8; break;
    case CR_M_ALGO: prm.algorithm = algos[nalgos - 1].name; break;
    case CR_M_SYNC: prm.synchrony = 0.5; break;
    case CR_M_MAXROUNDS: prm.max_rounds = 7; break;
    case CR_M_ENTRY: graph = !graph; break;
    }
  } else if (k == CR_M_ALGO) {
    prm.algorithm = algos[0].name;
  }
  if (graph)
    return bpc_neighbor_create_graph(ctx, a, offp, tgtp, tp, &prm, out);
  return bpc_neighbor_create_decomp(ctx, d, tp, &prm, out);
}

START_TEST(test_frame_create)
{
  frame_world_t w;
  if (frame_open(&w) != BPC_OK) {
    T_SYNC();
    return;
  }
  int nalgos = 0;
  bpc_algorithms("neighbor", NULL, 0, &nalgos);
  for (int graph = 0; graph <= 1; graph++)
    for (int k = 0; k < CR_NCASES; k++) {
      const cr_case_t *c = &cr_cases[k];
      if (c->graph_only && !graph)
        continue;
      for (int m = 0; m < BAD_NMODES; m++) {
        int want = c->code;
        /* a must-match field differs only when some ranks are bad and some not;
         * the algorithm only when the table has two rows */
        if (want == BPC_EMISMATCH && (m == BAD_ALL || t_size == 1 || (k == CR_M_ALGO && nalgos < 2)))
          want = BPC_OK;
        bpc_neighbor_t *nb = (bpc_neighbor_t *)&w; /* must come back NULL on failure */
        int rc = cr_call(&w, k, m, graph, &nb);
        T_CHECK(rc == want, "%s, %s, %s: rc %s, expected %s (%s)",
                graph ? "create_graph" : "create_decomp", c->name, bad_mode_name(m),
                bpc_err_name(rc), bpc_err_name(want), bpc_last_error(ctx));
        if (rc != BPC_OK && rc == want && c->msg[0] != '\0')
          T_CHECK(strstr(bpc_last_error(ctx), c->msg) != NULL, "%s, %s: message '%s' lacks '%s'",
                  c->name, bad_mode_name(m), bpc_last_error(ctx), c->msg);
        if (rc != BPC_OK && !(k == CR_OUT_NULL && bad_here(m)))
          T_CHECK(nb == NULL, "%s, %s: *out not NULL after a failure", c->name, bad_mode_name(m));
        if (rc == BPC_OK) {
          T_CHECK(nb != NULL && nb != (bpc_neighbor_t *)&w, "%s: no object", c->name);
          T_CHECK(bpc_neighbor_destroy(&nb) == BPC_OK, "destroy: %s", bpc_last_error(ctx));
        }
      }
    }
  /* a NULL context returns at once (there is nobody to agree with): all ranks */
  bpc_neighbor_t *nb = NULL;
  bpc_type_t type = bpc_type_contiguous(sizeof(int), MPI_INT);
  T_CHECK(bpc_neighbor_create_decomp(NULL, w.d, &type, NULL, &nb) == BPC_ENULL, "ctx NULL");
  T_CHECK(bpc_neighbor_create_graph(NULL, w.a, w.off, w.tgt, &type, NULL, &nb) == BPC_ENULL,
          "ctx NULL");
  frame_close(&w);
  T_SYNC();
}
END_TEST

static int frame_cb(void *block, int gid, bpc_neighbor_t *nb, void *user, int *more)
{
  (void)block;
  (void)gid;
  (void)nb;
  (void)more;
  int *calls = user;
#pragma omp atomic
  (*calls)++;
  return 0;
}

enum { RI_FN_NULL, RI_BLOCKS, RI_M_ENTRY, RI_M_BLOCKS, RI_M_MAXROUNDS, RI_M_ELEM, RI_NCASES };

static const cr_case_t ri_cases[RI_NCASES] = {
    [RI_FN_NULL] = {0, BPC_ENULL, "fn NULL", "callback is NULL"},
    [RI_BLOCKS] = {0, BPC_EINVAL, "blocks of another assignment", "another assignment"},
    [RI_M_ENTRY] = {0, BPC_EMISMATCH, "round vs iterate", "entry"},
    [RI_M_BLOCKS] = {0, BPC_EMISMATCH, "object of another block count", "block count"},
    [RI_M_MAXROUNDS] = {0, BPC_EMISMATCH, "object of another max_rounds", "max_rounds"},
    [RI_M_ELEM] = {0, BPC_EMISMATCH, "object of another item type", "element size"},
};

START_TEST(test_frame_round_iterate)
{
  frame_world_t w;
  if (frame_open(&w) != BPC_OK) {
    T_SYNC();
    return;
  }
  /* objects every rank makes alike: the one the good ranks use, and one per
   * must-match field that the bad ranks use instead */
  bpc_neighbor_t *nb = NULL, *nb3 = NULL, *nbmax = NULL, *nb8 = NULL;
  bpc_blocks_t *blocks = NULL, *blocks3 = NULL;
  bpc_type_t type = bpc_type_contiguous(sizeof(int), MPI_INT);
  bpc_type_t type8 = bpc_type_contiguous(8, MPI_BYTE);
  bpc_neighbor_params_t prm = bpc_neighbor_params_default();
  prm.nthreads = 1;
  int rc = bpc_neighbor_create_decomp(ctx, w.d, &type, &prm, &nb);
  if (rc == BPC_OK)
    rc = bpc_neighbor_create_decomp(ctx, w.d3, &type, &prm, &nb3);
  if (rc == BPC_OK)
    rc = bpc_neighbor_create_decomp(ctx, w.d, &type8, &prm, &nb8);
  prm.max_rounds = 50;
  if (rc == BPC_OK)
    rc = bpc_neighbor_create_decomp(ctx, w.d, &type, &prm, &nbmax);
  if (rc == BPC_OK)
    rc = bpc_blocks_create(bpc_decomp_assign(w.d), pp_create, pp_destroy, NULL, &blocks);
  if (rc == BPC_OK)
    rc = bpc_blocks_create(bpc_decomp_assign(w.d3), pp_create, pp_destroy, NULL, &blocks3);
  T_CHECK(rc == BPC_OK, "setup: %s", bpc_last_error(ctx));
  for (int it = 0; rc == BPC_OK && it <= 1; it++)
    for (int k = 0; k < RI_NCASES; k++)
      for (int m = 0; m < BAD_NMODES; m++) {
        const cr_case_t *c = &ri_cases[k];
        const int bad = bad_here(m);
        int want = c->code;
        if (want == BPC_EMISMATCH && (m == BAD_ALL || t_size == 1))
          want = BPC_OK;
        bpc_neighbor_t *use = nb;
        bpc_blocks_t *bl = blocks;
        bpc_neighbor_fn fn = frame_cb;
        int iterate = it;
        if (bad) {
          switch (k) {
          case RI_FN_NULL: fn = NULL; break;
          case RI_BLOCKS: bl = blocks3; break;
          case RI_M_ENTRY: iterate = !iterate; break;
          case RI_M_BLOCKS: use = nb3; bl = blocks3; break;
          case RI_M_MAXROUNDS: use = nbmax; break;
          case RI_M_ELEM: use = nb8; break;
          }
        }
        int calls = 0;
        long long rounds = -1;
        int r = iterate ? bpc_neighbor_iterate(use, bl, fn, &calls, &rounds)
                        : bpc_neighbor_round(use, bl, fn, &calls);
        T_CHECK(r == want, "%s, %s, %s: rc %s, expected %s (%s)",
                it ? "iterate" : "round", c->name, bad_mode_name(m), bpc_err_name(r),
                bpc_err_name(want), bpc_last_error(ctx));
        if (r != BPC_OK && r == want) {
          T_CHECK(strstr(bpc_last_error(ctx), c->msg) != NULL, "%s, %s: message '%s' lacks '%s'",
                  c->name, bad_mode_name(m), bpc_last_error(ctx), c->msg);
          T_CHECK(calls == 0, "%s, %s: %d callbacks ran after a refused call", c->name,
                  bad_mode_name(m), calls);
        }
        if (iterate && r != BPC_OK)
          T_CHECK(rounds == 0, "%s, %s: %lld rounds after a refused call", c->name,
                  bad_mode_name(m), rounds);
      }
  /* a NULL object returns at once (no context to agree on): all ranks */
  T_CHECK(bpc_neighbor_round(NULL, NULL, frame_cb, NULL) == BPC_ENULL, "round(NULL)");
  T_CHECK(bpc_neighbor_iterate(NULL, NULL, frame_cb, NULL, NULL) == BPC_ENULL, "iterate(NULL)");
  /* the objects still work after the refused calls */
  int calls = 0;
  if (rc == BPC_OK) {
    T_CHECK(bpc_neighbor_round(nb, blocks, frame_cb, &calls) == BPC_OK, "round after: %s",
            bpc_last_error(ctx));
    T_CHECK(bpc_neighbor_iterate(nb, NULL, frame_cb, &calls, NULL) == BPC_OK,
            "iterate after: %s", bpc_last_error(ctx));
  }
  bpc_neighbor_destroy(&nb);
  bpc_neighbor_destroy(&nb3);
  bpc_neighbor_destroy(&nb8);
  bpc_neighbor_destroy(&nbmax);
  bpc_blocks_destroy(&blocks);
  bpc_blocks_destroy(&blocks3);
  frame_close(&w);
  T_SYNC();
}
END_TEST

/* bpc_last_error is untouched by a successful creation (no internal probe
 * writes it), and the table lists "packed". */
START_TEST(test_frame_quiet)
{
  frame_world_t w;
  if (frame_open(&w) != BPC_OK) {
    T_SYNC();
    return;
  }
  bpc_neighbor_t *nb = NULL;
  bpc_type_t type = bpc_type_contiguous(sizeof(int), MPI_INT);
  /* a known message first */
  T_CHECK(bpc_neighbor_set_synchrony(NULL, 0.5) == BPC_ENULL, "set_synchrony(NULL)");
  bpc_decomp_links(w.d, -1, NULL, 0, NULL);
  char before[512];
  snprintf(before, sizeof before, "%s", bpc_last_error(ctx));
  int rc = bpc_neighbor_create_decomp(ctx, w.d, &type, NULL, &nb);
  T_CHECK(rc == BPC_OK, "create: %s", bpc_last_error(ctx));
  T_CHECK(strcmp(bpc_last_error(ctx), before) == 0, "last error changed by a success: '%s'",
          bpc_last_error(ctx));
  bpc_neighbor_destroy(&nb);
  rc = bpc_neighbor_create_graph(ctx, w.a, w.off, w.tgt, &type, NULL, &nb);
  T_CHECK(rc == BPC_OK, "create graph: %s", bpc_last_error(ctx));
  T_CHECK(strcmp(bpc_last_error(ctx), before) == 0, "last error changed by a success: '%s'",
          bpc_last_error(ctx));
  bpc_neighbor_destroy(&nb);
  bpc_algo_info_t al[4];
  int n = 0;
  T_CHECK(bpc_algorithms("neighbor", al, 4, &n) == BPC_OK && n >= 1 &&
              strcmp(al[0].name, "packed") == 0,
          "bpc_algorithms(neighbor): %d rows", n);
  frame_close(&w);
  T_SYNC();
}
END_TEST

static Suite *neighbor_suite(void)
{
  Suite *s = suite_create("neighbor");
  TCase *tc = tcase_create("mpi");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 0);
  tcase_add_test(tc, test_decomp_rounds);
  tcase_add_test(tc, test_corners);
  tcase_add_test(tc, test_graph_rounds);
  tcase_add_test(tc, test_synchrony);
  tcase_add_test(tc, test_by_reference);
  tcase_add_test(tc, test_iterate_pingpong);
  tcase_add_test(tc, test_bad_input);
  tcase_add_test(tc, test_frame_create);
  tcase_add_test(tc, test_frame_round_iterate);
  tcase_add_test(tc, test_frame_quiet);
  suite_add_tcase(s, tc);
  return s;
}

BPC_T_MPI_MAIN(neighbor_suite)
