/*
 * tests/mpi/test_decomp_mpi.c - decompositions and block stores across ranks.
 * Contiguous, round-robin and user-map assignments with 1..4 blocks per
 * process and with fewer blocks than processes: every gid is local on
 * exactly one rank (MPI_Allreduce of per-gid counts), that rank is the one
 * bpc_assign_rank names and the one an independent formula gives, local
 * gids ascend. Bad input gets the same code on every rank without a hang.
 * A block store and foreach run on every rank, including ranks with none.
 * Creators are local (no message), so decompositions and assignments that
 * differ between ranks (rank 0 only, the last rank only, all ranks) are
 * caught by the first collective that uses them: bpc_neighbor_create_decomp
 * names the differing field, bpc_merge names the assignment, on every rank.
 */
#include "bad_case.h"
#include "mpi_check.h"

#include <stdlib.h>
#include <string.h>

#include "bpc.h"
#include "../common/merge_items.h"

static bpc_ctx_t *world_ctx(void)
{
  bpc_ctx_t *ctx = NULL;
  int rc = bpc_init(MPI_COMM_WORLD, NULL, &ctx);
  ck_assert_int_eq(rc, BPC_OK); /* same on every rank */
  return ctx;
}

/* Independent owner of gid g: the formulas of bpc/decomp.h. */
static int ref_owner(bpc_assign_mode_t mode, const int *map, int g, int n, int P)
{
  if (mode == BPC_ASSIGN_ROUND_ROBIN)
    return g % P;
  if (mode == BPC_ASSIGN_USER)
    return map[g];
  for (int r = 0; r < P; r++) {
    long long lo = (long long)r * n / P, hi = (long long)(r + 1) * n / P;
    if (g >= lo && g < hi)
      return r;
  }
  return -1;
}

static bpc_decomp_params_t cube_params(int nblocks)
{
  bpc_decomp_params_t p = bpc_decomp_params_default();
  p.nblocks = nblocks;
  for (int d = 0; d < 3; d++) {
    p.domain_min[d] = -10;
    p.domain_max[d] = 30 + 3 * d;
  }
  return p;
}

static void check_assignment(bpc_ctx_t *ctx, int nblocks, bpc_assign_mode_t mode)
{
  int *map = NULL;
  if (mode == BPC_ASSIGN_USER) {
    map = malloc(sizeof(int) * (size_t)nblocks);
    ck_assert_ptr_nonnull(map);
    for (int g = 0; g < nblocks; g++) /* scattered, with ranks left empty */
      map[g] = (int)(((long long)g * 7 + 3) % (t_size > 2 ? t_size - 1 : t_size));
  }
  bpc_decomp_params_t p = cube_params(nblocks);
  p.assign = mode;
  p.map = map;
  bpc_decomp_t *d = NULL;
  int rc = bpc_decomp_create(ctx, &p, &d);
  T_CHECK(rc == BPC_OK, "create (n=%d mode %d): %s", nblocks, (int)mode, bpc_last_error(ctx));
  int *local = calloc((size_t)nblocks, sizeof *local);
  int *owner = calloc((size_t)nblocks, sizeof *owner);
  int *sum_local = calloc((size_t)nblocks, sizeof *sum_local);
  int *sum_owner = calloc((size_t)nblocks, sizeof *sum_owner);
  ck_assert(local && owner && sum_local && sum_owner);
  if (rc == BPC_OK) {
    const bpc_assign_t *a = bpc_decomp_assign(d);
    const int *gids = NULL;
    int n = -1;
    T_CHECK(bpc_assign_local(a, &gids, &n) == BPC_OK, "local");
    for (int i = 0; i < n; i++) {
      T_CHECK(gids[i] >= 0 && gids[i] < nblocks, "gid %d", gids[i]);
      if (gids[i] < 0 || gids[i] >= nblocks)
        continue;
      if (i > 0)
        T_CHECK(gids[i] > gids[i - 1], "local gids not ascending at %d", i);
      local[gids[i]]++;
      owner[gids[i]] = t_rank;
      int idx = -2;
      bpc_assign_local_index(a, gids[i], &idx);
      T_CHECK(idx == i, "local index of gid %d is %d, expected %d", gids[i], idx, i);
    }
    for (int g = 0; g < nblocks; g++) {
      int r = -1;
      T_CHECK(bpc_assign_rank(a, g, &r) == BPC_OK, "rank_of %d", g);
      int exp = ref_owner(mode, map, g, nblocks, t_size);
      T_CHECK(r == exp, "n=%d mode %d: rank_of(%d) = %d, expected %d", nblocks, (int)mode, g, r,
              exp);
      T_CHECK((r == t_rank) == (local[g] == 1), "gid %d: rank_of %d, local here %d", g, r,
              local[g]);
    }
  }
  MPI_Allreduce(local, sum_local, nblocks, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  MPI_Allreduce(owner, sum_owner, nblocks, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rc == BPC_OK) {
    const bpc_assign_t *a = bpc_decomp_assign(d);
    for (int g = 0; g < nblocks; g++) {
      int r = -1;
      bpc_assign_rank(a, g, &r);
      T_CHECK(sum_local[g] == 1, "n=%d mode %d: gid %d is local on %d ranks", nblocks, (int)mode,
              g, sum_local[g]);
      T_CHECK(sum_owner[g] == r, "gid %d is local on rank %d, rank_of says %d", g, sum_owner[g],
              r);
    }
  }
  free(local);
  free(owner);
  free(sum_local);
  free(sum_owner);
  free(map);
  bpc_decomp_destroy(&d);
}

START_TEST(test_assignments)
{
  bpc_ctx_t *ctx = world_ctx();
  const bpc_assign_mode_t modes[] = {BPC_ASSIGN_CONTIGUOUS, BPC_ASSIGN_ROUND_ROBIN,
                                     BPC_ASSIGN_USER};
  for (int m = 0; m < 3; m++) {
    for (int per = 1; per <= 4; per++)
      check_assignment(ctx, per * t_size, modes[m]);
    check_assignment(ctx, 3, modes[m]); /* fewer blocks than ranks at np > 3 */
    check_assignment(ctx, 1, modes[m]);
    check_assignment(ctx, 2 * t_size + 1, modes[m]);
  }
  bpc_finalize(&ctx);
  T_SYNC();
}
END_TEST

/* The same bad call must fail with the same code on every rank. */
static void same_everywhere(int rc, int expect, const char *msg, const char *substr,
                            const char *what)
{
  int lo = 0, hi = 0;
  MPI_Allreduce(&rc, &lo, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(&rc, &hi, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  T_CHECK(rc == expect, "%s: %s, expected %s", what, bpc_err_name(rc), bpc_err_name(expect));
  T_CHECK(lo == hi, "%s: codes differ across ranks (%d..%d)", what, lo, hi);
  T_CHECK(strstr(msg, substr) != NULL, "%s: message '%s' lacks '%s'", what, msg, substr);
}

START_TEST(test_bad_input)
{
  bpc_ctx_t *ctx = world_ctx();
  bpc_decomp_t *d = NULL;
  bpc_decomp_params_t p;
  int rc;

  rc = bpc_decomp_create(ctx, NULL, &d);
  same_everywhere(rc, BPC_ENULL, bpc_last_error(ctx), "params is NULL", "NULL params");
  p = cube_params(8);
  p.dim = 7;
  rc = bpc_decomp_create(ctx, &p, &d);
  same_everywhere(rc, BPC_EDIM, bpc_last_error(ctx), "dim 7 is not in 1..6", "dim 7");
  p = cube_params(0);
  rc = bpc_decomp_create(ctx, &p, &d);
  same_everywhere(rc, BPC_ENBLOCKS, bpc_last_error(ctx), "nblocks is 0", "nblocks 0");
  p = cube_params(64);
  p.divs[0] = 4;
  p.divs[1] = 4;
  p.divs[2] = 2;
  rc = bpc_decomp_create(ctx, &p, &d);
  same_everywhere(rc, BPC_EDIVS, bpc_last_error(ctx),
                  "divisions 4x4x2 multiply to 32, but nblocks is 64", "divs");
  p = cube_params(64);
  p.divs[0] = 64;
  p.divs[1] = 1;
  p.divs[2] = 1;
  rc = bpc_decomp_create(ctx, &p, &d);
  same_everywhere(rc, BPC_EDIVS, bpc_last_error(ctx), "exceed the domain extent 40",
                  "divs > extent");
  p = cube_params(8);
  p.ghost[2] = -1;
  rc = bpc_decomp_create(ctx, &p, &d);
  same_everywhere(rc, BPC_EGHOST, bpc_last_error(ctx), "ghost width -1 in dimension 2",
                  "ghost");
  /* a user map naming rank P (out of range on every rank) */
  int map[4] = {0, 0, t_size, 0};
  p = cube_params(4);
  p.assign = BPC_ASSIGN_USER;
  p.map = map;
  rc = bpc_decomp_create(ctx, &p, &d);
  same_everywhere(rc, BPC_EASSIGN, bpc_last_error(ctx), "map[2]", "map rank P");
  p.map = NULL;
  rc = bpc_decomp_create(ctx, &p, &d);
  same_everywhere(rc, BPC_EASSIGN, bpc_last_error(ctx), "needs a map", "NULL map");
  T_CHECK(d == NULL, "no decomposition after failures");
  /* the context still works: a good call succeeds everywhere */
  p = cube_params(4);
  rc = bpc_decomp_create(ctx, &p, &d);
  same_everywhere(rc, BPC_OK, "", "", "good call");
  bpc_decomp_destroy(&d);
  bpc_finalize(&ctx);
  T_SYNC();
}
END_TEST

typedef struct vol {
  int gid;
  long long points; /* filled by foreach */
  bpc_bounds_t core;
} vol_t;

typedef struct vol_user {
  const bpc_decomp_t *d;
  int created, destroyed;
} vol_user_t;

static void *vol_create(int gid, void *user)
{
  vol_user_t *u = user;
  vol_t *v = calloc(1, sizeof *v);
  if (v == NULL)
    return NULL;
  v->gid = gid;
  bpc_decomp_bounds(u->d, gid, &v->core, NULL);
  u->created++;
  return v;
}

static void vol_destroy(void *block, int gid, void *user)
{
  vol_user_t *u = user;
  (void)gid;
  u->destroyed++;
  free(block);
}

static int vol_count(void *block, int gid, void *user)
{
  (void)user;
  vol_t *v = block;
  if (v->gid != gid)
    return 1;
  long long n = 1;
  for (int i = 0; i < v->core.dim; i++)
    n *= v->core.max[i] - v->core.min[i];
  v->points = n;
  return gid == 2 ? 42 : 0; /* gid 2 fails wherever it lives */
}

START_TEST(test_store_foreach)
{
  bpc_ctx_t *ctx = world_ctx();
  const int counts[] = {3, 1, t_size, 2 * t_size + 1, 4 * t_size};
  for (int k = 0; k < 5; k++) {
    int nb = counts[k];
    bpc_decomp_params_t p = cube_params(nb);
    p.assign = k % 2 ? BPC_ASSIGN_ROUND_ROBIN : BPC_ASSIGN_CONTIGUOUS;
    bpc_decomp_t *d = NULL;
    int rc = bpc_decomp_create(ctx, &p, &d);
    T_CHECK(rc == BPC_OK, "create: %s", bpc_last_error(ctx));
    if (rc != BPC_OK)
      continue; /* same on every rank: validation uses only arguments */
    vol_user_t u = {d, 0, 0};
    bpc_blocks_t *b = NULL;
    rc = bpc_blocks_create(bpc_decomp_assign(d), vol_create, vol_destroy, &u, &b);
    T_CHECK(rc == BPC_OK, "blocks_create: %s", bpc_last_error(ctx));
    int n = -1;
    const int *gids = NULL;
    int nlocal = 0;
    bpc_assign_local(bpc_decomp_assign(d), &gids, &nlocal);
    bpc_blocks_count(b, &n);
    T_CHECK(n == nlocal && u.created == nlocal, "count %d, created %d, local %d", n, u.created,
            nlocal);
    int has2 = 0;
    for (int i = 0; i < nlocal; i++)
      has2 |= gids[i] == 2;
    long long mine = 0, total = 0;
    for (int nt = 1; nt <= 2; nt++) {
      rc = bpc_blocks_foreach(b, vol_count, NULL, nt);
      T_CHECK(rc == (has2 ? BPC_ECALLBACK : BPC_OK), "foreach nt=%d: %s", nt,
              bpc_last_error(ctx));
      if (has2)
        T_CHECK(strstr(bpc_last_error(ctx), "returned 42 for gid 2") != NULL, "message '%s'",
                bpc_last_error(ctx));
    }
    for (int i = 0; i < n; i++) {
      void *q = NULL;
      bpc_blocks_at(b, i, &q, NULL);
      mine += ((vol_t *)q)->points;
    }
    MPI_Allreduce(&mine, &total, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    long long expect = 1;
    for (int i = 0; i < 3; i++)
      expect *= p.domain_max[i] - p.domain_min[i];
    T_CHECK(total == expect, "nb %d: foreach counted %lld points, domain has %lld", nb, total,
            expect);
    bpc_blocks_destroy(&b);
    T_CHECK(u.destroyed == nlocal, "destroyed %d of %d", u.destroyed, nlocal);
    bpc_decomp_destroy(&d);
  }
  bpc_finalize(&ctx);
  T_SYNC();
}
END_TEST

/* ----------------------------------------- ranks that made different ones */

/* Spoil one field of the decomposition parameters (valid either way). */
static void spoil(bpc_decomp_params_t *p, int which, int *map)
{
  switch (which) {
  case 0: p->domain_max[1] += 1; break;
  case 1: p->divs[0] = 2; p->divs[1] = 1; p->divs[2] = 2; break;
  case 2: p->share_face[2] = 1; break;
  case 3: p->wrap[0] = 1; break;
  case 4: p->ghost[1] = 2; break;
  case 5: p->assign = BPC_ASSIGN_ROUND_ROBIN; break;
  case 6: /* a user map that differs from the contiguous one */
    for (int g = 0; g < p->nblocks; g++)
      map[g] = (p->nblocks - 1 - g) % t_size;
    p->assign = BPC_ASSIGN_USER;
    p->map = map;
    break;
  case 7: p->dim = 2; p->nblocks = 4; break;
  default: break;
  }
}

/* Spoil the parameters with an argument error (invalid on the bad ranks). */
static void spoil_invalid(bpc_decomp_params_t *p, int which, int *map)
{
  switch (which) {
  case 0: p->dim = 7; break;
  case 1: p->nblocks = 0; break;
  case 2: p->ghost[2] = -1; break;
  case 3: p->divs[0] = 3; break; /* 3 does not divide 4 */
  case 4: p->assign = BPC_ASSIGN_USER; p->map = NULL; break;
  case 5: /* a user map naming rank P */
    for (int g = 0; g < p->nblocks; g++)
      map[g] = g == 1 ? t_size : 0;
    p->assign = BPC_ASSIGN_USER;
    p->map = map;
    break;
  default: break;
  }
}

/* Merge one int per block over assignment a (the engine's own check). */
static int merge_over(bpc_ctx_t *ctx, const bpc_assign_t *a)
{
  bpc_type_t ti = bpc_type_contiguous(sizeof(int), MPI_INT);
  const int *gids = NULL;
  int nl = 0;
  bpc_assign_local(a, &gids, &nl);
  int vals[4];
  bpc_buf_t bufs[4];
  for (int i = 0; i < nl && i < 4; i++) {
    vals[i] = gids[i] + 1;
    bufs[i].data = &vals[i];
    bufs[i].count = 1;
  }
  bpc_merge_op_t op = {.fn = mi_merge_int1, .commutative = 1};
  bpc_merge_result_t *res = NULL;
  int rc = bpc_merge(ctx, a, &ti, bufs, &op, NULL, &res);
  bpc_merge_result_destroy(&res);
  return rc;
}

/* The creators are collective: a field that differs between ranks, or an
 * argument error on some ranks only, is the same error on every rank, and
 * no rank keeps an object. */
/* What *out holds before a creator runs: a failure must replace it with
 * NULL (a caller's cleanup is then safe), a success with the object. */
static char out_sentinel;
#define OUT_SENTINEL ((void *)&out_sentinel)

START_TEST(test_creators_differ)
{
  bpc_ctx_t *ctx = world_ctx();
  static const bad_case_t cases[] = {
      {"domain differs", BPC_EMISMATCH, 1, "domain"},
      {"divisions differ", BPC_EMISMATCH, 1, "divisions"},
      {"share_face differs", BPC_EMISMATCH, 1, "share_face"},
      {"wrap differs", BPC_EMISMATCH, 1, "wrap"},
      {"ghost differs", BPC_EMISMATCH, 1, "ghost"},
      {"assignment mode differs", BPC_EMISMATCH, 1, "assignment mode"},
      {"user map differs", BPC_EMISMATCH, 1, "assignment"},
      {"dim differs", BPC_EMISMATCH, 1, "dim"},
  };
  static const bad_case_t invalid[] = {
      {"dim 7", BPC_EDIM, 0, NULL},
      {"nblocks 0", BPC_ENBLOCKS, 0, NULL},
      {"ghost -1", BPC_EGHOST, 0, NULL},
      {"divisions do not divide", BPC_EDIVS, 0, NULL},
      {"user mode without a map", BPC_EASSIGN, 0, NULL},
      {"map names rank P", BPC_EASSIGN, 0, NULL},
  };
  const int nb = 4;
  int map[4];
  for (int c = 0; c < (int)(sizeof cases / sizeof cases[0]); c++) {
    for (int m = 0; m < BAD_NMODES; m++) {
      bpc_decomp_params_t p = cube_params(nb);
      if (bad_here(m))
        spoil(&p, c, map);
      bpc_decomp_t *d = OUT_SENTINEL;
      int rc = bpc_decomp_create(ctx, &p, &d);
      bad_check(ctx, &cases[c], m, rc);
      T_CHECK(d != OUT_SENTINEL, "%s, %s: *out left unset", cases[c].what, bad_mode_name(m));
      if (d == OUT_SENTINEL)
        d = NULL;
      T_CHECK((rc == BPC_OK) == (d != NULL), "%s, %s: object %p with %s", cases[c].what,
              bad_mode_name(m), (void *)d, bpc_err_name(rc));
      bpc_decomp_destroy(&d);
    }
  }
  for (int c = 0; c < (int)(sizeof invalid / sizeof invalid[0]); c++) {
    for (int m = 0; m < BAD_NMODES; m++) {
      bpc_decomp_params_t p = cube_params(nb);
      if (bad_here(m))
        spoil_invalid(&p, c, map);
      bpc_decomp_t *d = OUT_SENTINEL;
      int rc = bpc_decomp_create(ctx, &p, &d);
      bad_check(ctx, &invalid[c], m, rc);
      T_CHECK(d == NULL, "%s, %s: %s after a failure", invalid[c].what, bad_mode_name(m),
              d == OUT_SENTINEL ? "*out left unset" : "an object");
      if (d == OUT_SENTINEL)
        d = NULL;
      bpc_decomp_destroy(&d);
    }
  }
  /* bpc_assign_create: block count, mode, map, an argument error, NULL out */
  static const bad_case_t acases[] = {
      {"nblocks differs", BPC_EMISMATCH, 1, "nblocks"},
      {"mode differs", BPC_EMISMATCH, 1, "assignment mode"},
      {"map differs", BPC_EMISMATCH, 1, "assignment map"},
      {"nblocks -1", BPC_ENBLOCKS, 0, NULL},
      {"out NULL", BPC_ENULL, 0, NULL},
  };
  int umap[4] = {0, 0, 0, 0}, umap2[4];
  for (int g = 0; g < nb; g++)
    umap2[g] = (nb - 1 - g) % t_size;
  if (t_size > 1)
    umap2[0] = 1; /* differs from umap at every count > 1 */
  for (int c = 0; c < (int)(sizeof acases / sizeof acases[0]); c++) {
    for (int m = 0; m < BAD_NMODES; m++) {
      int n = nb;
      bpc_assign_mode_t mode = c == 2 ? BPC_ASSIGN_USER : BPC_ASSIGN_CONTIGUOUS;
      const int *mp = c == 2 ? umap : NULL;
      int want_out = 1;
      if (bad_here(m)) {
        if (c == 0)
          n = nb + 1;
        else if (c == 1)
          mode = BPC_ASSIGN_ROUND_ROBIN;
        else if (c == 2)
          mp = umap2;
        else if (c == 3)
          n = -1;
        else
          want_out = 0;
      }
      bpc_assign_t *a = OUT_SENTINEL;
      int rc = bpc_assign_create(ctx, n, mode, mp, want_out ? &a : NULL);
      bad_check(ctx, &acases[c], m, rc);
      T_CHECK(!want_out || a != OUT_SENTINEL, "%s, %s: *out left unset", acases[c].what,
              bad_mode_name(m));
      if (a == OUT_SENTINEL)
        a = NULL;
      T_CHECK((rc == BPC_OK) == (a != NULL), "%s, %s: object %p with %s", acases[c].what,
              bad_mode_name(m), (void *)a, bpc_err_name(rc));
      bpc_assign_destroy(&a);
    }
  }
  /* objects from different (each agreed) calls: the engine finds out */
  bpc_assign_t *ac = NULL, *ar = NULL;
  int rc = bpc_assign_create(ctx, nb, BPC_ASSIGN_CONTIGUOUS, NULL, &ac);
  T_CHECK(rc == BPC_OK, "contiguous assignment: %s", bpc_last_error(ctx));
  rc = bpc_assign_create(ctx, nb, BPC_ASSIGN_ROUND_ROBIN, NULL, &ar);
  T_CHECK(rc == BPC_OK, "round-robin assignment: %s", bpc_last_error(ctx));
  if (ac != NULL && ar != NULL) {
    const bad_case_t eng = {"engine given different assignments", BPC_EMISMATCH, 1,
                            "assignment"};
    for (int m = 0; m < BAD_NMODES; m++) {
      rc = merge_over(ctx, bad_here(m) ? ar : ac);
      bad_check(ctx, &eng, m, rc);
    }
  }
  bpc_assign_destroy(&ac);
  bpc_assign_destroy(&ar);
  bpc_finalize(&ctx);
  T_SYNC();
}
END_TEST

static Suite *decomp_mpi_suite(void)
{
  Suite *s = suite_create("decomp_mpi");
  TCase *tc = tcase_create("decomp_mpi");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_assignments);
  tcase_add_test(tc, test_bad_input);
  tcase_add_test(tc, test_store_foreach);
  tcase_add_test(tc, test_creators_differ);
  suite_add_tcase(s, tc);
  return s;
}

BPC_T_MPI_MAIN(decomp_mpi_suite)
