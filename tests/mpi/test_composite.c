/*
 * tests/mpi/test_composite.c - the compositing plug-in under MPI at every
 * process count of tests/testlist: every strategy x operator (over,
 * z-buffer) x (full, sparse, empty) images x 1..4 blocks per process, with
 * identity / reversed / random / view-derived visibility orders rotated so
 * that every strategy and operator meets each order, against a serial
 * reference composite computed on every rank; sparse images with and
 * without active pixels (identical results, fewer bytes); empty images
 * (almost no bytes); odd sizes (1x1, 3x7, 1000x1), images smaller than the
 * number of blocks, row splits, gather to rank 0; the gather's bytes in
 * bpc_stats_last_call; every documented argument error and every field
 * that must match across ranks, bad on rank 0 only, on the last rank only
 * and on all ranks: the same code on every rank, never a hang. Strategies
 * come from the table (bpc_algorithms("composite")).
 */
#include "mpi_check.h"
#include "bad_rank.h"

#include <stdio.h>
#include <string.h>

#include "../common/composite_run.h"

static bpc_ctx_t *ctx;

/* the strategy table, read in setup */
static bpc_algo_info_t table[16];
static int nstrats;
static const char *strats[16];

static void setup(void)
{
  ck_assert_int_eq(bpc_init(MPI_COMM_WORLD, NULL, &ctx), BPC_OK);
  ck_assert_int_eq(bpc_algorithms("composite", table, 16, &nstrats), BPC_OK);
  ck_assert_int_ge(nstrats, 5);
  for (int i = 0; i < nstrats; i++)
    strats[i] = table[i].name;
}
static void teardown(void) { bpc_finalize(&ctx); }

static bpc_assign_t *make_assign(int n, int rr)
{
  bpc_assign_t *a = NULL;
  int rc = bpc_assign_create(ctx, n, rr ? BPC_ASSIGN_ROUND_ROBIN : BPC_ASSIGN_CONTIGUOUS, NULL, &a);
  T_CHECK(rc == BPC_OK, "assign %d: %s", n, bpc_last_error(ctx));
  return a;
}

static int run_case(bpc_assign_t *a, cr_case_t *c, const char *what, cr_out_t *out)
{
  char tag[256];
  int n = 0;
  bpc_assign_nblocks(a, &n);
  snprintf(tag, sizeof tag, "[rank %d/%d] %s n=%d %dx%d %s op=%d split=%d strat=%s ap=%d",
           t_rank, t_size, what, n, c->W, c->H, cr_kind_names[c->kind], c->op, c->split,
           c->P.algorithm, c->P.active_pixels);
  memset(out, 0, sizeof *out);
  int f = cr_run(ctx, a, c, tag, out);
  T_CHECK(f == 0, "%s: %d failure(s)", tag, f);
  return f;
}

/* strategy x op x kind x blocks per process; orders rotate */
START_TEST(test_matrix)
{
  int order[64], idx = 0;
  for (int bpp = 1; bpp <= 4; bpp++) {
    const int n = bpp * t_size;
    bpc_assign_t *a = make_assign(n, bpp == 2);
    for (int s = 0; s < nstrats; s++)
      for (int op = 0; op < 2; op++)
        for (int kind = 0; kind < 3; kind++, idx++) {
          cr_case_t c;
          memset(&c, 0, sizeof c);
          c.W = 19;
          c.H = 11;
          c.kind = kind;
          c.seed = idx;
          c.op = op == 0 ? CR_OVER : CR_ZBUFFER;
          c.split = idx % 5 == 4 ? BPC_COMPOSITE_ROWS : BPC_COMPOSITE_PIXELS;
          c.gather = idx % 3 == 0;
          c.P = bpc_composite_params_default();
          c.P.algorithm = strats[s];
          c.P.nthreads = 1;
          cr_order((idx + bpp) % 4, n, (uint32_t)(77 + idx), order);
          c.P.order = order;
          cr_out_t o1, o2;
          run_case(a, &c, "matrix", &o1);
          if (kind == CR_SPARSE) {
            /* the dense path gives the same pieces (checked against the same
             * reference) and sends more */
            c.P.active_pixels = 0;
            run_case(a, &c, "matrix-dense", &o2);
            unsigned long long l[2] = {o1.info.bytes_sent, o2.info.bytes_sent}, g[2];
            MPI_Allreduce(l, g, 2, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
            /* one process, no depth, no valid rectangles: every piece dense */
            const int one = t_size == 1 && c.op != CR_ZBUFFER;
            if (n > 1 && !one)
              T_CHECK(g[0] < g[1], "sparse %s n=%d: %llu bytes with active pixels, %llu dense",
                      strats[s], n, g[0], g[1]);
            if (one)
              T_CHECK(g[0] == g[1], "one process, %s n=%d: %llu bytes with active pixels, "
                      "%llu dense", strats[s], n, g[0], g[1]);
            T_CHECK(o2.info.bytes_saved == 0, "dense path saved %llu", o2.info.bytes_saved);
          }
          if (kind == CR_EMPTY && (t_size > 1 || c.op == CR_ZBUFFER)) {
            /* a 16-byte header per message, at most n-1 messages per block */
            T_CHECK(o1.info.bytes_sent <= 16ull * (unsigned long long)(n - 1) * (unsigned long long)bpp,
                    "empty %s n=%d: %llu bytes sent", strats[s], n, o1.info.bytes_sent);
          }
        }
    bpc_assign_destroy(&a);
  }
  T_SYNC();
}
END_TEST

/* radixk with a user k-vector; binary swap with non-powers of two; a user op */
START_TEST(test_kvec_user)
{
  int order[64];
  const int n = 2 * t_size;
  bpc_assign_t *a = make_assign(n, 0);
  int k[8], nk = 0, m = n;
  for (int f = 2; m > 1; f++)
    while (m % f == 0) {
      k[nk++] = f;
      m /= f;
    }
  cr_case_t c;
  memset(&c, 0, sizeof c);
  c.W = 23;
  c.H = 5;
  c.kind = CR_FULL;
  c.op = CR_OVER;
  c.gather = 1;
  c.P = bpc_composite_params_default();
  c.P.algorithm = "radixk";
  c.P.k = k;
  c.P.nk = nk;
  cr_order(2, n, 5, order);
  c.P.order = order;
  cr_out_t o;
  run_case(a, &c, "kvec", &o);
  T_CHECK(o.info.swap.nk == nk, "nk %d, want %d", o.info.swap.nk, nk);
  /* binary swap's k-vector: 2s then odd primes */
  c.P.algorithm = "binary-swap";
  c.P.k = NULL;
  c.P.nk = 0;
  run_case(a, &c, "binary-swap", &o);
  int prod = 1;
  for (int r = 0; r < o.info.swap.nk; r++)
    prod *= o.info.swap.k[r];
  T_CHECK(prod == n, "binary swap k-vector multiplies to %d, not %d", prod, n);
  /* a user operator (over, written here) */
  c.op = CR_USER;
  c.P.algorithm = "shift";
  run_case(a, &c, "user-op", &o);
  c.op = CR_OVER;
  /* over with depth (depth follows the front non-transparent pixel) */
  c.depth = 1;
  c.P.algorithm = "direct-send";
  run_case(a, &c, "over-depth", &o);
  T_SYNC();
  bpc_assign_destroy(&a);
}
END_TEST

START_TEST(test_odd_sizes)
{
  const int sizes[][2] = {{1, 1}, {3, 7}, {1000, 1}, {0, 0}, {2, 1}};
  int order[64];
  for (int bpp = 1; bpp <= 3; bpp += 2) {
    const int n = bpp * t_size;
    bpc_assign_t *a = make_assign(n, 0);
    for (int si = 0; si < 5; si++)
      for (int s = 0; s < nstrats; s++) {
        cr_case_t c;
        memset(&c, 0, sizeof c);
        c.W = sizes[si][0];
        c.H = sizes[si][1];
        c.kind = (si + s) % 2 ? CR_SPARSE : CR_FULL;
        c.seed = si * 5 + s;
        c.op = s % 2 ? CR_ZBUFFER : CR_OVER;
        c.split = (si + s) % 3 == 0 ? BPC_COMPOSITE_ROWS : BPC_COMPOSITE_PIXELS;
        c.gather = 1;
        c.P = bpc_composite_params_default();
        c.P.algorithm = strats[s];
        cr_order(1 + s % 3, n, 9, order);
        c.P.order = order;
        cr_out_t o;
        run_case(a, &c, "odd", &o);
      }
    bpc_assign_destroy(&a);
  }
  T_SYNC();
}
END_TEST

/* ranks with no block: fewer blocks than ranks */
START_TEST(test_few_blocks)
{
  const int n = t_size > 2 ? t_size - 2 : 1;
  bpc_assign_t *a = make_assign(n, 0);
  for (int s = 0; s < nstrats; s++) {
    cr_case_t c;
    memset(&c, 0, sizeof c);
    c.W = 9;
    c.H = 4;
    c.kind = CR_SPARSE;
    c.op = CR_OVER;
    c.gather = 1;
    c.P = bpc_composite_params_default();
    c.P.algorithm = strats[s];
    cr_out_t o;
    run_case(a, &c, "few", &o);
    /* with depth, dense and sparse, active pixels on and off: the gather
     * rank (0) may hold no block and must still learn the layout (planar
     * on radix-k) from the others */
    for (int v = 0; v < 4; v++) {
      c.kind = v % 2 ? CR_SPARSE : CR_FULL;
      c.op = v < 2 ? CR_ZBUFFER : CR_OVER;
      c.depth = 1;
      c.P.active_pixels = v != 1;
      run_case(a, &c, "few-depth", &o);
    }
    c.depth = 0;
    c.op = CR_OVER;
    c.P.active_pixels = 1;
  }
  T_SYNC();
  bpc_assign_destroy(&a);
}
END_TEST

/* ---- exact sparse images: the active-pixel paths against the dense one,
 * bit for bit. Every value is a small dyadic fraction (alpha 0, 0.5 or 1,
 * colour alpha * k/8, emissive colour k/8 with alpha 0), so "over" is
 * exactly associative for up to 16 layers and every association gives
 * the same bits: any difference is a wrong pixel, not rounding. Images:
 * two discs with holes, single pixels at and beside the piece borders of
 * every block count up to 16 (where pieces and rounds cut), emissive
 * pixels, and (with depth) pixels with rgba 0 and a depth, which are not
 * empty; four densities from empty to dense. */
enum { EW = 29, EH = 13, ENP = EW * EH };

static int ex_is_border(size_t p)
{
  for (int m = 2; m <= 16; m++)
    for (int j = 1; j < m; j++) {
      const size_t b = (size_t)ENP * (size_t)j / (size_t)m;
      if (p == b || p + 1 == b)
        return 1;
    }
  return 0;
}

/* The density of a case's images: 0 empty, 1 single pixels at the piece
 * borders only, 2 discs with holes and the border pixels, 3 dense (7/8 of
 * the pixels), 4 mixed: even gids every pixel (their pieces travel dense),
 * odd gids a 3 x 2 corner (a tight valid rectangle, into which the dense
 * pieces bring pixels from outside it). */
static int ex_density(int seed) { return (seed / 3) % 5; }

static void ex_pixel(int gid, size_t p, int seed, float ed, float *px, float *d)
{
  const uint32_t g = (uint32_t)gid * 131u + (uint32_t)seed * 7u;
  const int x = (int)(p % EW), y = (int)(p / EW), dens = ex_density(seed);
  int act = dens == 3 && cr_hash(g ^ (uint32_t)p * 2246822519u) % 8u != 0;
  if (dens == 4)
    act = gid % 2 == 0 || (x < 3 && y < 2);
  for (int c = 0; c < 2 && dens == 2; c++) {
    const int cx = (int)(cr_hash(g * 4u + (uint32_t)c) % EW);
    const int cy = (int)(cr_hash(g * 4u + (uint32_t)c + 2u) % EH);
    const int r = 2 + (int)(cr_hash(g + (uint32_t)c * 9u) % 3u);
    if ((x - cx) * (x - cx) + (y - cy) * (y - cy) <= r * r &&
        cr_hash(g ^ (uint32_t)p * 2654435761u) % 8u != 0) /* holes */
      act = 1;
  }
  if (dens > 0 && dens < 4 && ex_is_border(p) && cr_hash(g * 3u + (uint32_t)p) % 2u == 0)
    act = 1;
  px[0] = px[1] = px[2] = px[3] = 0.0f;
  if (d)
    *d = ed;
  if (!act)
    return;
  const uint32_t h = cr_hash(g * 977u + (uint32_t)p);
  const int kind = (int)(h % 16u);
  const float a = kind < 2 ? 0.0f : kind < 9 ? 0.5f : 1.0f;
  for (int c = 0; c < 3; c++) {
    const float k = (float)((h >> (4 + 3 * c)) % 9u) / 8.0f;
    px[c] = kind == 0 ? k : a * k; /* kind 0: emissive (alpha 0, colour k) */
  }
  if (kind == 0 && px[0] == 0.0f)
    px[0] = 0.125f;
  px[3] = a; /* kind 1: rgba 0 with a depth (not empty when it has depth) */
  if (d) {
    const float lv = (float)((h >> 20) % 5u);
    *d = isinf(ed) ? lv : lv * 0.25f * ed;
    if (kind == 1 && *d == ed)
      *d = 0.0f;
  }
}

/* The serial reference of one pixel: front to back in the order. */
static void ex_reference(int n, const int *order, size_t p, int seed, float ed, int op, int hasd,
                         float *acc, float *ad)
{
  ex_pixel(order[0], p, seed, ed, acc, hasd ? ad : NULL);
  for (int pos = 1; pos < n; pos++) {
    float b[4], bd = ed;
    ex_pixel(order[pos], p, seed, ed, b, hasd ? &bd : NULL);
    cr_step(op, acc, ad, b, bd, ed);
  }
}

/* variant: 0 in place, 1 in place with exact valid rectangles, 2 into
 * outputs (inputs checked untouched), 3 the dense path, 4 into outputs with
 * exact valid rectangles (filled on demand), 5 the dense path into outputs
 * (without depth, radix-k sends its first round from the inputs). Outputs
 * start as garbage (cr_garbage): a pixel the call reads before it writes it
 * shows. */
static int ex_case(bpc_assign_t *a, const char *strat, int op, int split, int variant, float ed,
                   int seed, const int *order, unsigned long long *sent)
{
  int n = 0, nl = 0, fails = 0;
  const int *gids = NULL;
  bpc_assign_nblocks(a, &n);
  bpc_assign_local(a, &gids, &nl);
  const int hasd = op == CR_ZBUFFER || (op == CR_OVER && seed % 2 == 0);
  bpc_image_t im[4], out[4];
  bpc_composite_rect_t valid[4];
  bpc_composite_piece_t pc[4];
  static float rgba[4][4 * ENP], dep[4][ENP], orgba[4][4 * ENP], odep[4][ENP];
  for (int i = 0; i < nl; i++) {
    im[i] = (bpc_image_t){EW, EH, rgba[i], hasd ? dep[i] : NULL};
    out[i] = (bpc_image_t){EW, EH, orgba[i], hasd ? odep[i] : NULL};
    for (size_t p = 0; p < ENP; p++)
      ex_pixel(gids[i], p, seed, ed, rgba[i] + 4 * p, hasd ? dep[i] + p : NULL);
    valid[i] = cr_bbox(rgba[i], hasd ? dep[i] : NULL, EW, EH, ed);
  }
  bpc_composite_params_t P = bpc_composite_params_default();
  P.algorithm = strat;
  P.op = cr_op(op, hasd);
  P.split = (bpc_composite_split_t)split;
  P.order = order;
  P.empty_depth = ed;
  P.nthreads = 1 + seed % 2;
  P.valid = variant == 1 || variant == 4 ? valid : NULL;
  P.output = variant == 2 || variant == 4 || variant == 5 ? out : NULL;
  for (int i = 0; P.output != NULL && i < nl; i++)
    cr_garbage(orgba[i], odep[i], ENP);
  P.active_pixels = variant != 3 && variant != 5;
  /* every other case gathers (rgba and depth) to the last rank */
  static float grgba[4 * ENP], gdep[ENP];
  const int gather = (seed + variant) % 2 == 0;
  if (gather) {
    P.gather_rank = t_size - 1;
    P.gather_rgba = grgba;
    P.gather_depth = hasd ? gdep : NULL;
    for (size_t p = 0; p < 4 * ENP; p++)
      grgba[p] = -1.0f;
    for (size_t p = 0; p < ENP; p++)
      gdep[p] = -1.0f;
  }
  bpc_composite_info_t info;
  int rc = bpc_composite(ctx, a, im, &P, pc, &info);
  char tag[200];
  snprintf(tag, sizeof tag, "[rank %d] exact %s op %d split %d variant %d ed %g n %d seed %d%s",
           t_rank, strat, op, split, variant, ed, n, seed,
           getenv("BPC_COMPOSITE_INTERLEAVE") != NULL ? " interleaved" : "");
  T_CHECK(rc == BPC_OK, "%s: %s %s", tag, bpc_err_name(rc), bpc_last_error(ctx));
  if (rc != BPC_OK)
    return 1;
  *sent += info.bytes_sent;
  int *pos_of = malloc(sizeof(int) * (size_t)n);
  for (int p = 0; p < n; p++)
    pos_of[order[p]] = p;
  for (int i = 0; i < nl && fails == 0; i++) {
    const bpc_image_t *res = P.output != NULL ? &out[i] : &im[i];
    for (size_t p = pc[i].offset; p < pc[i].offset + pc[i].count && fails == 0; p++) {
      float acc[4], ad = ed;
      ex_reference(n, order, p, seed, ed, op, hasd, acc, &ad);
      if (memcmp(acc, res->rgba + 4 * p, sizeof acc) != 0 ||
          (hasd && memcmp(&ad, res->depth + p, sizeof ad) != 0)) {
        fprintf(stderr, "%s: block %d pixel %zu: %g %g %g %g d %g, reference %g %g %g %g d %g\n",
                tag, gids[i], p, res->rgba[4 * p], res->rgba[4 * p + 1], res->rgba[4 * p + 2],
                res->rgba[4 * p + 3], hasd ? res->depth[p] : 0.0, acc[0], acc[1], acc[2], acc[3],
                ad);
        fails++;
      }
    }
    if (P.output != NULL) /* the input is untouched */
      for (size_t p = 0; p < ENP && fails == 0; p++) {
        float px[4], d = ed;
        ex_pixel(gids[i], p, seed, ed, px, &d);
        if (memcmp(px, rgba[i] + 4 * p, sizeof px) != 0 || (hasd && memcmp(&d, dep[i] + p, 4) != 0)) {
          fprintf(stderr, "%s: block %d input pixel %zu changed\n", tag, gids[i], p);
          fails++;
        }
      }
  }
  free(pos_of);
  if (gather && t_rank == t_size - 1)
    for (size_t p = 0; p < ENP && fails == 0; p++) {
      float acc[4], ad = ed;
      ex_reference(n, order, p, seed, ed, op, hasd, acc, &ad);
      if (memcmp(acc, grgba + 4 * p, sizeof acc) != 0 || (hasd && memcmp(&ad, gdep + p, 4) != 0)) {
        fprintf(stderr, "%s: gathered pixel %zu: %g %g %g %g d %g, reference %g %g %g %g d %g\n",
                tag, p, grgba[4 * p], grgba[4 * p + 1], grgba[4 * p + 2], grgba[4 * p + 3],
                hasd ? gdep[p] : 0.0, acc[0], acc[1], acc[2], acc[3], ad);
        fails++;
      }
    }
  T_CHECK(fails == 0, "%s: %d wrong pixel(s)", tag, fails);
  return fails;
}

START_TEST(test_sparse_exact)
{
  int order[64], idx = 0;
  /* cut the blends into chunks of a few elements across 2 threads (every
   * other case), so runs straddle chunk borders */
  setenv("BPC_TREE_MIN_CHUNK", "5", 1);
  const int ops[3] = {CR_OVER, CR_ZBUFFER, CR_USER};
  for (int bpp = 1; bpp <= 4; bpp++) {
    const int n = bpp * t_size;
    if (n > 16)
      continue; /* exactness of over holds up to 16 layers */
    bpc_assign_t *a = make_assign(n, bpp == 3);
    for (int s = 0; s < nstrats; s++)
      for (int o = 0; o < 3; o++, idx++) {
        cr_order(2, n, (uint32_t)(991 + idx), order);
        const float ed = idx % 2 ? 1.0f : INFINITY;
        unsigned long long sent[6] = {0, 0, 0, 0, 0, 0}, g[6];
        for (int v = 0; v < 6; v++)
          ex_case(a, strats[s], ops[o], (idx / 2) % 2, v, ed, idx, order, &sent[v]);
        /* depth interleaved (the layout of images over 2^32 pixels), forced
         * by the internal switch: sparse, into outputs, dense, outputs with
         * rectangles (with depth copied whole: interleaved buffers are
         * packed from the input) */
        setenv("BPC_COMPOSITE_INTERLEAVE", "1", 1);
        unsigned long long isent = 0;
        for (int v = 0; v < 4; v += 2)
          ex_case(a, strats[s], ops[o], (idx / 2) % 2, v + (idx % 2), ed, idx, order, &isent);
        ex_case(a, strats[s], ops[o], (idx / 2) % 2, 4, ed, idx, order, &isent);
        unsetenv("BPC_COMPOSITE_INTERLEAVE");
        MPI_Allreduce(sent, g, 6, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
        T_CHECK(g[5] == g[3], "exact %s op %d n %d: dense bytes sent %llu in place, %llu into "
                "outputs", strats[s], ops[o], n, g[3], g[5]);
        const int hasd = ops[o] == CR_ZBUFFER || (ops[o] == CR_OVER && idx % 2 == 0);
        if (t_size == 1 && !hasd) /* one process: dense unless valid rectangles help */
          T_CHECK(g[0] == g[3] && g[1] <= g[3] && g[2] == g[3] && g[4] == g[1],
                  "exact %s op %d n %d, one process: bytes sent %llu (valid rectangles %llu, "
                  "outputs %llu, both %llu), dense %llu", strats[s], ops[o], n, g[0], g[1], g[2],
                  g[4], g[3]);
        else if (n > 1 && ex_density(idx) < 3)
          T_CHECK(g[0] < g[3] && g[1] <= g[0] && g[2] == g[0] && g[4] == g[1],
                  "exact %s op %d n %d: bytes sent %llu (valid rectangles %llu, outputs %llu, "
                  "both %llu), dense %llu", strats[s], ops[o], n, g[0], g[1], g[2], g[4], g[3]);
      }
    bpc_assign_destroy(&a);
  }
  unsetenv("BPC_TREE_MIN_CHUNK");
  T_SYNC();
}
END_TEST

/* Outputs filled on demand, a piece sent dense: 4-pixel rows with one
 * empty column outside the valid rectangle (the last for even gids, the
 * first for odd ones), the other three active (in the top half: the bottom
 * half is empty, so the images are sparse enough to be encoded), so a piece
 * of one or two such rows encodes larger than dense and travels dense from
 * the output, which must hold the empty pattern there, and lands where the
 * receiver's own column is outside its rectangle (outputs start as
 * garbage). Exact values (alpha 0.5, colours k/32): bit for bit. */
static int gap_col(int gid) { return gid % 2 == 0 ? 3 : 0; }

START_TEST(test_output_dense_piece)
{
  enum { DW = 4, DH = 8, DNP = DW * DH };
  int order[32];
  for (int bpp = 1; bpp <= 2; bpp++) {
    const int n = bpp * t_size;
    if (n > 16)
      continue;
    bpc_assign_t *a = make_assign(n, 0);
    const int *gids = NULL;
    int nl = 0, fails = 0;
    bpc_assign_local(a, &gids, &nl);
    static float in[2][4 * DNP], out[2][4 * DNP];
    bpc_image_t im[2], om[2];
    bpc_composite_rect_t valid[2];
    for (int i = 0; i < nl; i++) {
      for (size_t p = 0; p < DNP; p++) {
        const int x = (int)(p % DW), y = (int)(p / DW);
        const float c = (float)((gids[i] * 5 + (int)p) % 16) / 32.0f;
        const float v[4] = {c, c / 2, 0.25f, 0.5f};
        for (int k = 0; k < 4; k++)
          in[i][4 * p + k] = x == gap_col(gids[i]) || y >= DH / 2 ? 0.0f : v[k];
      }
      im[i] = (bpc_image_t){DW, DH, in[i], NULL};
      om[i] = (bpc_image_t){DW, DH, out[i], NULL};
      valid[i] = (bpc_composite_rect_t){gap_col(gids[i]) == 0, 0, DW - 1, DH / 2};
    }
    for (int s = 0; s < nstrats; s++) {
      cr_order(1, n, (uint32_t)(17 + s), order);
      for (int i = 0; i < nl; i++)
        cr_garbage(out[i], NULL, DNP);
      bpc_composite_params_t P = bpc_composite_params_default();
      P.algorithm = strats[s];
      P.order = order;
      P.split = BPC_COMPOSITE_ROWS;
      P.valid = valid;
      P.output = om;
      bpc_composite_piece_t pc[2];
      bpc_composite_info_t info;
      int rc = bpc_composite(ctx, a, nl > 0 ? im : NULL, &P, pc, &info);
      T_CHECK(rc == BPC_OK, "dense piece %s n %d: %s", strats[s], n, bpc_last_error(ctx));
      for (int i = 0; i < nl && rc == BPC_OK; i++)
        for (size_t p = pc[i].offset; p < pc[i].offset + pc[i].count; p++) {
          float acc[4] = {0, 0, 0, 0}, ad = INFINITY;
          for (int q = 0; q < n; q++) { /* front to back */
            const int x = (int)(p % DW), y = (int)(p / DW);
            const float c = (float)((order[q] * 5 + (int)p) % 16) / 32.0f;
            const float v[4] = {c, c / 2, 0.25f, 0.5f}, e[4] = {0, 0, 0, 0};
            cr_step(CR_OVER, acc, &ad, x == gap_col(order[q]) || y >= DH / 2 ? e : v, INFINITY,
                    INFINITY);
          }
          fails += memcmp(acc, out[i] + 4 * p, sizeof acc) != 0;
        }
    }
    T_CHECK(fails == 0, "[rank %d] dense pieces from outputs on demand, n %d: %d wrong pixel(s)",
            t_rank, n, fails);
    bpc_assign_destroy(&a);
  }
  T_SYNC();
}
END_TEST

/* Everything one bad-argument call needs: 2 blocks per rank, 4 x 3 images. */
enum { BW = 4, BH = 3, BNP = BW * BH };
typedef struct bad_state {
  bpc_assign_t *a;
  const bpc_assign_t *pa;
  bpc_image_t im[2], *pim;
  float rgba[2][4 * BNP], depth[2][BNP], gat[4 * BNP], gatd[BNP];
  bpc_composite_params_t P;
  int k[2], order[64];
  bpc_composite_rect_t valid[2];
  bpc_image_t out[2];
  float orgba[2][4 * BNP];
} bad_state_t;

static void bad_reset(bad_state_t *b, int n)
{
  b->pa = b->a;
  b->pim = b->im;
  for (int i = 0; i < 2; i++) {
    b->im[i].width = BW;
    b->im[i].height = BH;
    b->im[i].rgba = b->rgba[i];
    b->im[i].depth = NULL;
    for (int p = 0; p < BNP; p++) {
      b->rgba[i][4 * p] = b->rgba[i][4 * p + 3] = 0.5f;
      b->rgba[i][4 * p + 1] = b->rgba[i][4 * p + 2] = 0.0f;
      b->depth[i][p] = (float)p;
    }
  }
  b->P = bpc_composite_params_default();
  for (int i = 0; i < 2; i++) {
    b->valid[i] = (bpc_composite_rect_t){0, 0, BW, BH};
    b->out[i] = b->im[i];
    b->out[i].rgba = b->orgba[i];
  }
  b->k[0] = n;
  b->k[1] = 2;
  for (int i = 0; i < n; i++)
    b->order[i] = n - 1 - i;
}

/* The argument errors of bpc_composite's header: each case makes the
 * arguments bad on this rank when `bad`; code: what every rank must get. */
static const struct {
  const char *what;
  int code;
} arg_cases[] = {
    {"assign NULL", BPC_ENULL},
    {"images NULL", BPC_ENULL},
    {"rgba NULL", BPC_ENULL},
    {"negative width", BPC_EINVAL},
    {"local images differ", BPC_EINVAL},
    {"z-buffer without depth", BPC_EINVAL},
    {"op.fn NULL", BPC_ENULL},
    {"op cleared by bpc_op_builtin (unknown name)", BPC_ENULL},
    {"unknown split", BPC_EINVAL},
    {"gather_rank out of range", BPC_EINVAL},
    {"gather_rgba NULL on the gather rank", BPC_ENULL},
    {"unknown algorithm", BPC_EALGO},
    {"unknown algorithm in BPC_COMPOSITE_ALGORITHM", BPC_EALGO},
    {"k-vector does not multiply to n", BPC_EKVEC},
    {"order not a permutation", BPC_EPERM},
    {"nthreads < 0", BPC_EINVAL},
    {"valid rectangle outside the image", BPC_EINVAL},
    {"valid rectangle of negative width", BPC_EINVAL},
    {"output of another size", BPC_EINVAL},
    {"output rgba NULL", BPC_ENULL},
    {"output is the input", BPC_EINVAL},
};

static void arg_case(bad_state_t *b, int c, int bad, int mode)
{
  if (!bad)
    return;
  switch (c) {
  case 0: b->pa = NULL; break;
  case 1: b->pim = NULL; break;
  case 2: b->im[1].rgba = NULL; break;
  case 3: b->im[0].width = b->im[1].width = -1; break;
  case 4: b->im[1].height = BH - 1; break;
  case 5:
    b->P.op = cr_op(CR_ZBUFFER, 0);
    break;
  case 6:
    b->P.op.fn = NULL;
    break;
  case 7:
    bpc_op_builtin("nope", MPI_FLOAT, &b->P.op);
    break;
  case 8: b->P.split = (bpc_composite_split_t)5; break;
  case 9: b->P.gather_rank = t_size; break;
  case 10: /* the bad rank is the gather rank, without a buffer */
    b->P.gather_rank = mode == BAD_LAST ? t_size - 1 : 0;
    b->P.gather_rgba = NULL;
    break;
  case 11: b->P.algorithm = "binary-swop"; break;
  case 12: setenv("BPC_COMPOSITE_ALGORITHM", "binary-swop", 1); break;
  case 13:
    b->P.algorithm = "radixk";
    b->P.k = b->k;
    b->k[0] = 2 * t_size + 1;
    b->P.nk = 1;
    break;
  case 14:
    b->P.order = b->order;
    b->order[0] = b->order[1];
    break;
  case 15: b->P.nthreads = -1; break;
  case 16:
    b->P.valid = b->valid;
    b->valid[1].x = 1; /* 1 + BW > BW */
    break;
  case 17:
    b->P.valid = b->valid;
    b->valid[0].width = -1;
    break;
  case 18:
    b->P.output = b->out;
    b->out[1].height = BH + 1;
    break;
  case 19:
    b->P.output = b->out;
    b->out[0].rgba = NULL;
    break;
  case 20:
    b->P.output = b->out;
    b->out[1].rgba = b->im[1].rgba;
    break;
  }
}

/* Fields that must match across ranks: valid everywhere, different on the
 * bad ranks (so bad on all ranks is a valid call). */
static const char *const match_cases[] = {
    "image width",
    "image height",
    "depth presence",
    "op",
    "split",
    "strategy",
    "k-vector",
    "order",
    "gather_rank",
    "active_pixels",
    "op.commutative",
    "empty_depth",
    "BPC_COMPOSITE_INTERLEAVE",
};

static void match_case(bad_state_t *b, int c, int bad)
{
  int n = 0;
  bpc_assign_nblocks(b->a, &n);
  /* what every rank passes for this case */
  if (c == 3) /* op: everyone has depth */
    b->im[0].depth = b->depth[0], b->im[1].depth = b->depth[1];
  if (c == 6) /* k-vector: radixk everywhere */
    b->P.algorithm = "radixk";
  if (c == 7) /* order */
    b->P.order = b->order;
  if (c == 8) { /* gather: buffers on both candidate roots */
    b->P.gather_rank = 0;
    b->P.gather_rgba = b->gat;
  }
  if (c == 10)
    b->P.op = cr_op(CR_USER, 0);
  if (!bad)
    return;
  switch (c) {
  case 0: b->im[0].width = b->im[1].width = BW - 1; break;
  case 1: b->im[0].height = b->im[1].height = BH + 1; break;
  case 2: b->im[0].depth = b->depth[0], b->im[1].depth = b->depth[1]; break;
  case 3:
    b->P.op = cr_op(CR_ZBUFFER, 1);
    break;
  case 4: b->P.split = BPC_COMPOSITE_ROWS; break;
  case 5: b->P.algorithm = "shift"; break;
  case 6:
    b->k[0] = n;
    b->P.k = b->k;
    b->P.nk = 1;
    break;
  case 7:
    for (int i = 0; i < n; i++)
      b->order[i] = i;
    break;
  case 8: b->P.gather_rank = t_size - 1; break;
  case 9: b->P.active_pixels = 0; break;
  case 10:
    b->P.op.commutative = 1;
    break;
  case 11: b->P.empty_depth = 1.0f; break;
  case 12: setenv("BPC_COMPOSITE_INTERLEAVE", "1", 1); break; /* the internal layout switch */
  }
}

START_TEST(test_bad_args)
{
  const int n = 2 * t_size;
  bad_state_t b;
  memset(&b, 0, sizeof b);
  b.a = make_assign(n, 0);
  const int nargs = (int)(sizeof arg_cases / sizeof arg_cases[0]);
  const int nmatch = (int)(sizeof match_cases / sizeof match_cases[0]);
  for (int mode = 0; mode < BAD_NMODES; mode++) {
    const int bad = bad_here(mode);
    for (int c = 0; c < nargs; c++) {
      bad_reset(&b, n);
      arg_case(&b, c, bad, mode);
      int rc = bpc_composite(ctx, b.pa, b.pim, &b.P, NULL, NULL);
      unsetenv("BPC_COMPOSITE_ALGORITHM");
      T_CHECK(rc == arg_cases[c].code, "%s, %s: %s (%s), expected %s", arg_cases[c].what,
              bad_mode_name(mode), bpc_err_name(rc), bpc_last_error(ctx),
              bpc_err_name(arg_cases[c].code));
    }
    for (int c = 0; c < nmatch; c++) {
      bad_reset(&b, n);
      match_case(&b, c, bad);
      int rc = bpc_composite(ctx, b.pa, b.pim, &b.P, NULL, NULL);
      unsetenv("BPC_COMPOSITE_INTERLEAVE");
      const int want = mode == BAD_ALL || t_size == 1 ? BPC_OK : BPC_EMISMATCH;
      T_CHECK(rc == want, "%s differs, %s: %s (%s), expected %s", match_cases[c],
              bad_mode_name(mode), bpc_err_name(rc), bpc_last_error(ctx), bpc_err_name(want));
      if (want == BPC_EMISMATCH)
        T_CHECK(strstr(bpc_last_error(ctx), match_cases[c]) != NULL, "%s: message '%s'",
                match_cases[c], bpc_last_error(ctx));
    }
  }
  /* and the call still works afterwards */
  bad_reset(&b, n);
  int rc = bpc_composite(ctx, b.a, b.im, &b.P, NULL, NULL);
  T_CHECK(rc == BPC_OK, "good call after errors: %s %s", bpc_err_name(rc), bpc_last_error(ctx));
  T_SYNC();
  bpc_assign_destroy(&b.a);
}
END_TEST

/* The gather travels through the exchange: its bytes are in the last call's
 * statistics, as the last round (remote pieces received on the gather rank,
 * sent by the others; the gather rank's own pieces as local copies). */
START_TEST(test_gather_stats)
{
  const int bpp = 2, n = bpp * t_size, root = t_size - 1;
  bpc_assign_t *a = make_assign(n, 1);
  const int *gids = NULL;
  int nl = 0;
  bpc_assign_local(a, &gids, &nl);
  const int W = 33, H = 7;
  const size_t np = (size_t)W * H;
  bpc_image_t im[2];
  float *gat = malloc(np * 4 * sizeof(float));
  for (int i = 0; i < nl; i++) {
    im[i].width = W;
    im[i].height = H;
    im[i].rgba = malloc(np * 4 * sizeof(float));
    im[i].depth = NULL;
    cr_image(gids[i], W, H, CR_FULL, 1, im[i].rgba, NULL);
  }
  for (int s = 0; s < nstrats; s++) {
    bpc_composite_params_t P = bpc_composite_params_default();
    P.algorithm = strats[s];
    P.active_pixels = 0;
    P.gather_rank = root;
    P.gather_rgba = t_rank == root ? gat : NULL;
    bpc_composite_piece_t pc[2];
    int rc = bpc_composite(ctx, a, im, &P, pc, NULL);
    T_CHECK(rc == BPC_OK, "%s: %s", strats[s], bpc_last_error(ctx));
    bpc_call_stats_t st;
    bpc_stats_last_call(ctx, &st);
    unsigned long long mine = 0, nmine = 0;
    for (int i = 0; i < nl; i++) {
      mine += pc[i].count * 16;
      nmine += pc[i].count > 0;
    }
    /* one record for the whole call: the argument agreement, the swap
     * plan's, the schedule's outcome and the gather's outcome (no
     * collective at all on one process) */
    T_CHECK(strcmp(st.engine, "composite") == 0, "%s: the record is '%s'", strats[s], st.engine);
    T_CHECK(st.total.colls == (t_size > 1 ? 4u : 0u), "%s: %llu collectives, expected %d",
            strats[s], (unsigned long long)st.total.colls, t_size > 1 ? 4 : 0);
    const bpc_counters_t *g = &st.round[st.nrounds - 1];
    if (t_rank == root) {
      T_CHECK(g->local_bytes == mine && g->local_msgs == nmine,
              "%s: gather rank's own pieces: %llu bytes in %llu copies, expected %llu in %llu",
              strats[s], (unsigned long long)g->local_bytes,
              (unsigned long long)g->local_msgs, mine, nmine);
      T_CHECK(g->bytes_recv == np * 16 - mine,
              "%s: gather rank received %llu bytes in the gather round, expected %llu",
              strats[s], (unsigned long long)g->bytes_recv, (unsigned long long)(np * 16 - mine));
      T_CHECK(g->bytes_sent == 0, "%s: the gather rank sent %llu bytes", strats[s],
              (unsigned long long)g->bytes_sent);
    } else {
      T_CHECK(g->bytes_sent == mine && g->msgs_sent == nmine,
              "%s: rank %d sent %llu bytes in %llu messages in the gather round, expected %llu "
              "in %llu", strats[s], t_rank, (unsigned long long)g->bytes_sent,
              (unsigned long long)g->msgs_sent, mine, nmine);
    }
  }
  for (int i = 0; i < nl; i++)
    free(im[i].rgba);
  free(gat);
  T_SYNC();
  bpc_assign_destroy(&a);
}
END_TEST

static Suite *suite(void)
{
  Suite *s = suite_create("composite");
  TCase *tc = tcase_create("composite");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_matrix);
  tcase_add_test(tc, test_kvec_user);
  tcase_add_test(tc, test_odd_sizes);
  tcase_add_test(tc, test_few_blocks);
  tcase_add_test(tc, test_sparse_exact);
  tcase_add_test(tc, test_output_dense_piece);
  tcase_add_test(tc, test_bad_args);
  tcase_add_test(tc, test_gather_stats);
  suite_add_tcase(s, tc);
  return s;
}

BPC_T_MPI_MAIN(suite)
