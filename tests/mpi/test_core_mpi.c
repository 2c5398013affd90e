/*
 * tests/mpi/test_core_mpi.c - the context under MPI: communicator
 * duplication and error handler, rank/size, error agreement (a failure on one
 * rank reaches all ranks, no hang), bad input answered alike on every rank,
 * tag epochs in step across ranks. Re-entrancy: collective calls on the
 * context from inside callbacks of a running call (neighbour exchange,
 * round and finalize in a round callback, merge in a merge operator, scan
 * in a scan operator) return BPC_EBUSY there and the running call
 * BPC_ECALLBACK on every rank; local queries and a nested call on another
 * context work. A successful call of each engine leaves bpc_last_error as
 * the test set it.
 */
#include "mpi_check.h"

#include <stdlib.h>
#include <string.h>

#include "bpc.h"
#include "../common/merge_items.h"
#include "comm/coll.h"
#include "core/core.h"

START_TEST(test_init_dup)
{
  bpc_ctx_t *ctx = NULL;
  int rc = bpc_init(MPI_COMM_WORLD, NULL, &ctx);
  T_CHECK(rc == BPC_OK, "bpc_init: %d", rc);
  MPI_Comm c = MPI_COMM_NULL;
  bpc_ctx_comm(ctx, &c);
  int cmp = MPI_UNEQUAL;
  MPI_Comm_compare(c, MPI_COMM_WORLD, &cmp);
  T_CHECK(cmp == MPI_CONGRUENT, "the context's communicator is a duplicate (cmp %d)", cmp);
  MPI_Errhandler eh;
  MPI_Comm_get_errhandler(c, &eh);
  T_CHECK(eh == MPI_ERRORS_RETURN, "MPI_ERRORS_RETURN is set");
  MPI_Errhandler_free(&eh);
  int r = -1, s = -1;
  bpc_ctx_rank(ctx, &r);
  bpc_ctx_size(ctx, &s);
  T_CHECK(r == t_rank && s == t_size, "rank %d size %d", r, s);
  bpc_ctx_t *bad = ctx;
  T_CHECK(bpc_init(MPI_COMM_NULL, NULL, &bad) == BPC_EINVAL && bad == NULL,
          "MPI_COMM_NULL refused");
  T_CHECK(bpc_init(MPI_COMM_WORLD, NULL, NULL) == BPC_ENULL, "NULL out refused");
  /* NULL out on the last rank only: refused everywhere (the others do not
   * wait in the duplication, nor get a context) */
  bpc_ctx_t *some = NULL;
  rc = bpc_init(MPI_COMM_WORLD, NULL, t_rank == t_size - 1 ? NULL : &some);
  T_CHECK(rc == BPC_ENULL && some == NULL, "NULL out on rank %d only: %s", t_size - 1,
          bpc_err_name(rc));
  bpc_finalize(&some);
  T_CHECK(bpc_finalize(&ctx) == BPC_OK && ctx == NULL, "finalize");
  T_SYNC();
}
END_TEST

START_TEST(test_agree)
{
  bpc_ctx_t *ctx = NULL;
  ck_assert_int_eq(bpc_init(MPI_COMM_WORLD, NULL, &ctx), BPC_OK);
  /* nobody fails */
  T_CHECK(bpc__agree(ctx, BPC_OK) == BPC_OK, "all ok");
  /* the last rank fails: every rank returns its code, with that rank's own
   * message */
  int failing = t_size - 1;
  int mine = BPC_OK;
  if (t_rank == failing)
    mine = bpc__err(ctx, BPC_ECALLBACK, "merge callback returned %d (root gid 4)", 7);
  int rc = bpc__agree(ctx, mine);
  T_CHECK(rc == BPC_ECALLBACK, "rank %d got %d", t_rank, rc);
  char want[96];
  if (t_rank != failing)
    snprintf(want, sizeof want, "BPC_ECALLBACK: on rank %d: merge callback returned 7 (root gid 4)",
             failing);
  else
    snprintf(want, sizeof want, "BPC_ECALLBACK: merge callback returned 7 (root gid 4)");
  T_CHECK(strcmp(bpc_last_error(ctx), want) == 0, "message '%s', expected '%s'",
          bpc_last_error(ctx), want);
  /* two ranks fail differently: the most negative code wins elsewhere, each
   * failing rank keeps its own */
  mine = t_rank == 0 ? BPC_EINVAL : (t_rank == failing ? BPC_ENOMEM : BPC_OK);
  rc = bpc__agree(ctx, mine);
  if (t_rank == 0)
    T_CHECK(rc == BPC_EINVAL, "rank 0 keeps its own code");
  else
    T_CHECK(rc == BPC_ENOMEM, "got %d", rc);
  bpc_finalize(&ctx);
  T_SYNC();
}
END_TEST

START_TEST(test_agree_args)
{
  bpc_ctx_t *ctx = NULL;
  ck_assert_int_eq(bpc_init(MPI_COMM_WORLD, NULL, &ctx), BPC_OK);
  const int last = t_size - 1;
  int kv[3] = {2, 3, 4};
  for (int mode = 0; mode < 3; mode++) {
    /* mode 0: all agree; 1: the last rank's count differs; 2: the last
     * rank's k-vector (a hashed field) differs */
    bpc__sig_t sig;
    bpc__sig_init(&sig);
    bpc__sig_int(&sig, "block count", 12);
    bpc__sig_int(&sig, "count", (mode == 1 && t_rank == last) ? 13 : 10);
    if (mode == 2 && t_rank == last)
      kv[2] = 5;
    bpc__sig_bytes(&sig, "k-vector", kv, sizeof kv);
    kv[2] = 4;
    int rc = bpc__agree_args(ctx, "test", BPC_OK, &sig);
    int want = (mode == 0 || t_size == 1) ? BPC_OK : BPC_EMISMATCH;
    T_CHECK(rc == want, "mode %d: rc %d, expected %d (%s)", mode, rc, want, bpc_last_error(ctx));
    if (want == BPC_EMISMATCH) {
      char exp[160];
      if (mode == 1)
        snprintf(exp, sizeof exp,
                 "BPC_EMISMATCH: test: ranks disagree on count (10 on rank 0, 13 on rank %d)", last);
      else
        snprintf(exp, sizeof exp,
                 "BPC_EMISMATCH: test: ranks disagree on k-vector (rank %d differs from rank 0)",
                 last);
      T_CHECK(strncmp(bpc_last_error(ctx), exp, strlen(exp)) == 0, "message '%s', expected '%s'",
              bpc_last_error(ctx), exp);
    }
  }
  /* an argument error on rank 0 only wins over a mismatch, on every rank */
  bpc__sig_t sig;
  bpc__sig_init(&sig);
  bpc__sig_int(&sig, "rounds", t_rank);
  int mine = t_rank == 0 ? bpc__err(ctx, BPC_EKVEC, "k-vector 4x3 multiplies to 12") : BPC_OK;
  int rc = bpc__agree_args(ctx, "test", mine, &sig);
  T_CHECK(rc == BPC_EKVEC, "rank %d: %d (%s)", t_rank, rc, bpc_last_error(ctx));
  T_CHECK(strstr(bpc_last_error(ctx), "k-vector 4x3 multiplies to 12") != NULL, "message '%s'",
          bpc_last_error(ctx));
  bpc_finalize(&ctx);
  T_SYNC();
}
END_TEST

START_TEST(test_agree_args_vals)
{
  /* open fields match anything and learn the others' value; max fields are
   * not compared but reduced; a mismatch names the lowest stating rank */
  bpc_ctx_t *ctx = NULL;
  ck_assert_int_eq(bpc_init(MPI_COMM_WORLD, NULL, &ctx), BPC_OK);
  const int last = t_size - 1;
  for (int mode = 0; mode < 3; mode++) {
    bpc__sig_t sig;
    long long vals[3] = {0, 0, 0};
    bpc__sig_init(&sig);
    if (t_rank == 0) /* mode 0: only rank 0 leaves it open */
      bpc__sig_open(&sig, "width");
    else
      bpc__sig_int(&sig, "width", mode == 1 && t_rank == last ? 8 : 7);
    bpc__sig_max(&sig, "flag", t_rank == last ? 5 : t_rank);
    if (mode == 2) /* every rank leaves it open */
      bpc__sig_open(&sig, "height");
    else
      bpc__sig_int(&sig, "height", 3);
    int rc = bpc__agree_args_vals(ctx, "test", BPC_OK, &sig, vals);
    const int want = mode == 1 && t_size > 2 ? BPC_EMISMATCH : BPC_OK;
    T_CHECK(rc == want, "mode %d: %d (%s)", mode, rc, bpc_last_error(ctx));
    if (rc == BPC_OK) {
      const long long w = t_size == 1 ? BPC__SIG_NONE : mode == 1 ? 8 : 7;
      T_CHECK(vals[0] == w, "mode %d: width %lld, expected %lld", mode, vals[0], w);
      T_CHECK(vals[1] == (last > 5 ? last - 1 : 5), "mode %d: flag %lld", mode, vals[1]);
      T_CHECK(vals[2] == (mode == 2 ? BPC__SIG_NONE : 3), "mode %d: height %lld", mode, vals[2]);
    } else {
      char exp[160];
      snprintf(exp, sizeof exp,
               "BPC_EMISMATCH: test: ranks disagree on width (7 on rank 1, 8 on rank %d)", last);
      T_CHECK(strncmp(bpc_last_error(ctx), exp, strlen(exp)) == 0, "message '%s', expected '%s'",
              bpc_last_error(ctx), exp);
    }
  }
  bpc_finalize(&ctx);
  T_SYNC();
}
END_TEST

START_TEST(test_tags_in_step)
{
  bpc_ctx_t *ctx = NULL;
  ck_assert_int_eq(bpc_init(MPI_COMM_WORLD, NULL, &ctx), BPC_OK);
  for (int i = 0; i < 5; i++) {
    int t = bpc__next_tag(ctx), tmin = 0, tmax = 0;
    MPI_Allreduce(&t, &tmin, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(&t, &tmax, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    T_CHECK(tmin == tmax, "tag epochs differ: %d..%d", tmin, tmax);
  }
  bpc_finalize(&ctx);
  T_SYNC();
}
END_TEST

START_TEST(test_two_contexts)
{
  /* two contexts on the same communicator are independent */
  bpc_ctx_t *a = NULL, *b = NULL;
  ck_assert_int_eq(bpc_init(MPI_COMM_WORLD, NULL, &a), BPC_OK);
  ck_assert_int_eq(bpc_init(MPI_COMM_WORLD, NULL, &b), BPC_OK);
  MPI_Comm ca, cb;
  bpc_ctx_comm(a, &ca);
  bpc_ctx_comm(b, &cb);
  T_CHECK(ca != cb, "distinct communicators");
  bpc__err(a, BPC_EINVAL, "only a");
  T_CHECK(strcmp(bpc_last_error(b), "") == 0, "b has no error");
  bpc_finalize(&b);
  bpc_finalize(&a);
  T_SYNC();
}
END_TEST

/* ------------------------------------------------------------ re-entrancy */

/* What the callbacks below saw (counted atomically: they may run on
 * several OpenMP threads). */
typedef struct nest {
  bpc_ctx_t *ctx;         /* the context of the running call */
  const bpc_assign_t *a;  /* its assignment (local queries) */
  bpc_ctx_t *other;       /* another (serial) context, or NULL */
  const bpc_assign_t *oa; /* an assignment of `other` */
  int busy;               /* nested collective calls that returned BPC_EBUSY */
  int wrong;              /* nested calls that returned anything else */
  int nested_sum;         /* the allowed nested merge's result */
} nest_t;

static void nest_count(nest_t *n, int rc)
{
  if (rc == BPC_EBUSY)
    __atomic_add_fetch(&n->busy, 1, __ATOMIC_RELAXED);
  else
    __atomic_add_fetch(&n->wrong, 1, __ATOMIC_RELAXED);
}

/* Local queries stay allowed inside a callback. */
static void nest_local(nest_t *n, int gid)
{
  int r = -1, nb = 0;
  if (bpc_assign_rank(n->a, gid, &r) != BPC_OK || r != t_rank ||
      bpc_assign_nblocks(n->a, &nb) != BPC_OK || nb < 1)
    __atomic_add_fetch(&n->wrong, 1, __ATOMIC_RELAXED);
}

static int nb_cb(void *block, int gid, bpc_neighbor_t *nb, void *user, int *more)
{
  nest_t *n = user;
  (void)block;
  (void)more;
  nest_local(n, gid);
  nest_count(n, bpc_neighbor_exchange(nb));
  nest_count(n, bpc_neighbor_round(nb, NULL, nb_cb, user));
  bpc_ctx_t *c = n->ctx;
  nest_count(n, bpc_finalize(&c)); /* refused: the context stays */
  return c == n->ctx ? 5 : 0;      /* fail: the round must report it */
}

/* Run a merge of value gid + 1 per block; returns its code, *sum the root's. */
static int run_merge(bpc_ctx_t *ctx, const bpc_assign_t *a, bpc_merge_fn fn, void *user,
                     int nthreads, int *sum)
{
  const int *gids = NULL;
  int nl = 0;
  bpc_assign_local(a, &gids, &nl);
  int *vals = calloc((size_t)nl + 1, sizeof *vals);
  bpc_buf_t *bufs = calloc((size_t)nl + 1, sizeof *bufs);
  for (int i = 0; i < nl; i++) {
    vals[i] = gids[i] + 1;
    bufs[i].data = &vals[i];
    bufs[i].count = 1;
  }
  bpc_type_t ti = bpc_type_contiguous(sizeof(int), MPI_INT);
  bpc_merge_op_t op = {.fn = fn, .commutative = 1, .user = user};
  bpc_merge_params_t prm = bpc_merge_params_default();
  prm.nthreads = nthreads;
  bpc_merge_result_t *res = NULL;
  int rc = bpc_merge(ctx, a, &ti, bufs, &op, &prm, &res);
  *sum = -1;
  for (int i = 0; i < nl; i++)
    if (gids[i] == 0)
      *sum = vals[i];
  bpc_merge_result_destroy(&res);
  free(vals);
  free(bufs);
  return rc;
}

/* A merge operator that first makes a nested merge on the same context
 * (refused) or on another one (allowed; the user's job to make it
 * collective there: here a serial context, called by one thread). */
static int nest_merge(bpc_merge_group_t *g, void *user)
{
  nest_t *n = user;
  nest_local(n, g->gids[g->root]);
  if (n->other != NULL) {
    int s = -1;
    int rc = run_merge(n->other, n->oa, mi_merge_int1, NULL, 1, &s);
    if (rc != BPC_OK)
      __atomic_add_fetch(&n->wrong, 1, __ATOMIC_RELAXED);
    n->nested_sum = s;
    return mi_merge_int1(g, NULL);
  }
  int s = 0;
  nest_count(n, run_merge(n->ctx, n->a, mi_merge_int1, NULL, 1, &s));
  return 9;
}

static int nest_scan(const void *l, const void *r, void *res, void *user)
{
  nest_t *n = user;
  bpc_buf_t in = {NULL, 0}, out = {NULL, 0};
  bpc_type_t ti = bpc_type_contiguous(sizeof(int), MPI_INT);
  bpc_scan_op_t op = {.fn = nest_scan, .user = user};
  nest_count(n, bpc_scan(n->ctx, n->a, &ti, BPC_SCAN_INCLUSIVE, &in, &out, &op, NULL, NULL));
  *(int *)res = *(const int *)l + *(const int *)r;
  return 3;
}

/* Sum the failures over ranks; every rank must report `want`. */
static void check_all(int rc, int want, const char *what, bpc_ctx_t *ctx)
{
  T_CHECK(rc == want, "%s: got %s (%s), want %s", what, bpc_err_name(rc), bpc_last_error(ctx),
          bpc_err_name(want));
}

START_TEST(test_reentry)
{
  bpc_ctx_t *ctx = NULL;
  ck_assert_int_eq(bpc_init(MPI_COMM_WORLD, NULL, &ctx), BPC_OK);
  /* ranks without blocks too once there are 3 processes */
  const int nblocks = t_size > 2 ? t_size - 1 : 2 * t_size;
  bpc_decomp_params_t p = bpc_decomp_params_default();
  p.dim = 1;
  p.domain_max[0] = 64;
  p.nblocks = nblocks;
  p.wrap[0] = 1;
  bpc_decomp_t *d = NULL;
  ck_assert_int_eq(bpc_decomp_create(ctx, &p, &d), BPC_OK);
  const bpc_assign_t *a = bpc_decomp_assign(d);
  const int *gids = NULL;
  int nl = 0;
  bpc_assign_local(a, &gids, &nl);
  bpc_type_t ti = bpc_type_contiguous(sizeof(int), MPI_INT);

  /* 1. neighbour exchange, round and finalize inside a round's callback,
   * with two threads */
  for (int nt = 1; nt <= 2; nt++) {
    nest_t n = {ctx, a, NULL, NULL, 0, 0, 0};
    bpc_neighbor_params_t np = bpc_neighbor_params_default();
    np.nthreads = nt;
    bpc_neighbor_t *nb = NULL;
    int rc = bpc_neighbor_create_decomp(ctx, d, &ti, &np, &nb);
    check_all(rc, BPC_OK, "create", ctx);
    rc = bpc_neighbor_round(nb, NULL, nb_cb, &n);
    check_all(rc, BPC_ECALLBACK, "round with nested calls", ctx);
    T_CHECK(n.busy == 3 * nl && n.wrong == 0, "nt %d: %d BPC_EBUSY, %d other (local %d)", nt,
            n.busy, n.wrong, nl);
    if (nl > 0)
      T_CHECK(strstr(bpc_last_error(ctx), "returned 5") != NULL, "message '%s'",
              bpc_last_error(ctx));
    /* the guard is released: the same calls work outside */
    check_all(bpc_neighbor_exchange(nb), BPC_OK, "exchange after", ctx);
    check_all(bpc_neighbor_destroy(&nb), BPC_OK, "destroy", ctx);
  }

  /* 2. a merge inside a merge operator */
  {
    nest_t n = {ctx, a, NULL, NULL, 0, 0, 0};
    int s = 0;
    int rc = run_merge(ctx, a, nest_merge, &n, 2, &s);
    check_all(rc, BPC_ECALLBACK, "merge in merge", ctx);
    T_CHECK(n.wrong == 0, "%d nested merges were not refused", n.wrong);
    long long busy = n.busy, total = 0;
    MPI_Allreduce(&busy, &total, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    T_CHECK(total >= 1, "no nested merge was refused (%lld)", total);
  }

  /* 3. a scan inside a scan operator */
  {
    nest_t n = {ctx, a, NULL, NULL, 0, 0, 0};
    int *iv = calloc((size_t)nl + 1, sizeof *iv), *ov = calloc((size_t)nl + 1, sizeof *ov);
    bpc_buf_t *in = calloc((size_t)nl + 1, sizeof *in), *out = calloc((size_t)nl + 1, sizeof *out);
    for (int i = 0; i < nl; i++) {
      iv[i] = gids[i];
      in[i].data = &iv[i];
      in[i].count = 1;
      out[i].data = &ov[i];
    }
    bpc_scan_op_t op = {.fn = nest_scan, .user = &n};
    int rc = bpc_scan(ctx, a, &ti, BPC_SCAN_INCLUSIVE, in, out, &op, NULL, NULL);
    check_all(rc, BPC_ECALLBACK, "scan in scan", ctx);
    T_CHECK(n.wrong == 0, "%d nested scans were not refused", n.wrong);
    free(iv);
    free(ov);
    free(in);
    free(out);
  }

  /* 4. allowed: a nested merge on another context; the outer merge still
   * sums correctly (a non-commutative check is not needed: sums of gid+1) */
  {
    bpc_ctx_t *serial = NULL;
    bpc_assign_t *sa = NULL;
    ck_assert_int_eq(bpc_init_serial(NULL, &serial), BPC_OK);
    ck_assert_int_eq(bpc_assign_create(serial, 3, BPC_ASSIGN_CONTIGUOUS, NULL, &sa), BPC_OK);
    nest_t n = {ctx, a, serial, sa, 0, 0, -1};
    int s = 0;
    int rc = run_merge(ctx, a, nest_merge, &n, 1, &s);
    check_all(rc, BPC_OK, "merge with a nested merge on another context", ctx);
    T_CHECK(n.wrong == 0 && n.busy == 0, "nested on another context: %d wrong, %d busy", n.wrong,
            n.busy);
    if (n.nested_sum != -1)
      T_CHECK(n.nested_sum == 6, "nested serial merge gave %d, want 1+2+3", n.nested_sum);
    int has0 = nl > 0 && gids[0] == 0;
    if (has0)
      T_CHECK(s == nblocks * (nblocks + 1) / 2, "outer merge gave %d, want %d", s,
              nblocks * (nblocks + 1) / 2);
    bpc_assign_destroy(&sa);
    bpc_finalize(&serial);
  }
  bpc_decomp_destroy(&d);
  bpc_finalize(&ctx);
  T_SYNC();
}
END_TEST

/* ----------------------------------------------------- bpc_last_error */

static int quiet_nb(void *block, int gid, bpc_neighbor_t *nb, void *user, int *more)
{
  (void)block;
  (void)gid;
  (void)nb;
  (void)user;
  *more = 0;
  return 0;
}

static int sum_scan(const void *l, const void *r, void *res, void *user)
{
  (void)user; /* a - b style operators are covered by the scan suite */
  *(int *)res = *(const int *)l + *(const int *)r;
  return 0;
}

static int swap_sum(const void *in, void *inout, size_t count, int in_first, void *user)
{
  (void)in_first;
  (void)user;
  for (size_t i = 0; i < count; i++)
    ((int *)inout)[i] += ((const int *)in)[i];
  return 0;
}

static int bc_item(int src, const void **item, void *user)
{
  (void)src;
  *item = user; /* a bpc_buf_t */
  return 0;
}

static int bc_recv(int dst, int src, void *item, void *user)
{
  (void)dst;
  (void)src;
  (void)item;
  (void)user;
  return 0;
}

static int a2a_send(int src, int dst, const void **item, void *user)
{
  (void)src;
  (void)dst;
  (void)user;
  *item = NULL;
  return 0;
}

static int a2a_recv(int dst, int src, void *item, void *user)
{
  (void)dst;
  (void)src;
  (void)item;
  (void)user;
  return 0;
}

/* The message a failed local call left must survive a successful call. */
static void same_error(bpc_ctx_t *ctx, const char *before, int rc, const char *what)
{
  T_CHECK(rc == BPC_OK, "%s: %s", what, bpc_last_error(ctx));
  T_CHECK(strcmp(bpc_last_error(ctx), before) == 0, "%s changed bpc_last_error to '%s'", what,
          bpc_last_error(ctx));
}

START_TEST(test_last_error)
{
  bpc_ctx_t *ctx = NULL;
  ck_assert_int_eq(bpc_init(MPI_COMM_WORLD, NULL, &ctx), BPC_OK);
  bpc_decomp_params_t p = bpc_decomp_params_default();
  p.nblocks = 2 * t_size;
  for (int i = 0; i < 3; i++)
    p.domain_max[i] = 8;
  p.wrap[0] = 1;
  bpc_decomp_t *d = NULL;
  ck_assert_int_eq(bpc_decomp_create(ctx, &p, &d), BPC_OK);
  const bpc_assign_t *a = bpc_decomp_assign(d);
  int r = 0;
  T_CHECK(bpc_assign_rank(a, -1, &r) == BPC_ERANGE, "a bad gid is refused");
  char before[512];
  snprintf(before, sizeof before, "%s", bpc_last_error(ctx));
  T_CHECK(strstr(before, "gid -1") != NULL, "message '%s'", before);
  bpc_type_t ti = bpc_type_contiguous(sizeof(int), MPI_INT);

  /* neighbour creation used to leave an internal probe's message */
  bpc_neighbor_t *nb = NULL;
  same_error(ctx, before, bpc_neighbor_create_decomp(ctx, d, &ti, NULL, &nb), "create_decomp");
  same_error(ctx, before, bpc_neighbor_round(nb, NULL, quiet_nb, NULL), "round");
  same_error(ctx, before, bpc_neighbor_exchange(nb), "exchange");
  long long rounds = 0;
  same_error(ctx, before, bpc_neighbor_iterate(nb, NULL, quiet_nb, NULL, &rounds), "iterate");
  same_error(ctx, before, bpc_neighbor_destroy(&nb), "destroy");
  int s = 0;
  same_error(ctx, before, run_merge(ctx, a, mi_merge_int1, NULL, 2, &s), "merge");
  const int *gids = NULL;
  int nl = 0;
  bpc_assign_local(a, &gids, &nl);
  int iv[64], ov[64];
  bpc_buf_t in[64], out[64];
  for (int i = 0; i < nl && i < 64; i++) {
    iv[i] = gids[i];
    in[i].data = &iv[i];
    in[i].count = 1;
    out[i].data = &ov[i];
    out[i].count = 0;
  }
  bpc_scan_op_t sop = {.fn = sum_scan, .commutative = 1};
  same_error(ctx, before, bpc_scan(ctx, a, &ti, BPC_SCAN_INCLUSIVE, in, out, &sop, NULL, NULL),
             "scan");
  same_error(ctx, before, bpc_alltoall(ctx, a, &ti, a2a_send, a2a_recv, NULL, NULL, NULL),
             "alltoall");
  /* swap: 8 ints per block; bcast: one item from block 0 */
  enum { SW = 8 };
  int sv[64][SW];
  void *sb[64];
  bpc_swap_piece_t pc[64];
  for (int i = 0; i < nl && i < 64; i++) {
    for (int j = 0; j < SW; j++)
      sv[i][j] = gids[i] * SW + j;
    sb[i] = sv[i];
  }
  bpc_op_t wop = {swap_sum, 1, NULL};
  same_error(ctx, before, bpc_swap(ctx, a, &ti, sb, SW, &wop, NULL, pc, NULL), "swap");
  int one = 7;
  bpc_buf_t ib = {&one, 1};
  const int src0 = 0;
  same_error(ctx, before, bpc_bcast(ctx, a, &ti, &src0, 1, bc_item, bc_recv, &ib, NULL, NULL),
             "bcast");
  /* composite: a 5 x 3 image per block, over */
  float rgba[64][5 * 3 * 4];
  bpc_image_t img[64];
  bpc_composite_piece_t cp[64];
  for (int i = 0; i < nl && i < 64; i++) {
    for (int j = 0; j < 5 * 3 * 4; j++)
      rgba[i][j] = (float)((gids[i] + j) % 3) * 0.25f;
    img[i].width = 5;
    img[i].height = 3;
    img[i].rgba = rgba[i];
    img[i].depth = NULL;
  }
  same_error(ctx, before, bpc_composite(ctx, a, img, NULL, cp, NULL), "composite");
  /* the creators (collective) */
  bpc_assign_t *a2 = NULL;
  same_error(ctx, before, bpc_assign_create(ctx, 5, BPC_ASSIGN_ROUND_ROBIN, NULL, &a2),
             "assign_create");
  bpc_assign_destroy(&a2);
  bpc_decomp_t *d2 = NULL;
  same_error(ctx, before, bpc_decomp_create(ctx, &p, &d2), "decomp_create");
  bpc_decomp_destroy(&d2);
  bpc_decomp_destroy(&d);
  bpc_finalize(&ctx);
  T_SYNC();
}
END_TEST

static Suite *core_mpi_suite(void)
{
  Suite *s = suite_create("core_mpi");
  TCase *tc = tcase_create("ctx");
  tcase_add_test(tc, test_init_dup);
  tcase_add_test(tc, test_agree);
  tcase_add_test(tc, test_agree_args);
  tcase_add_test(tc, test_agree_args_vals);
  tcase_add_test(tc, test_tags_in_step);
  tcase_add_test(tc, test_two_contexts);
  tcase_add_test(tc, test_reentry);
  tcase_add_test(tc, test_last_error);
  suite_add_tcase(s, tc);
  return s;
}

BPC_T_MPI_MAIN(core_mpi_suite)
