/*
 * lib/engines/scan/scan.c - the scan engine: its table and registry entry,
 * params, the public entry bpc_scan, and the scan-then-propagate strategy
 * every row runs with its own global schedule (bpc__scan_run).
 *
 * One call (the engine frame of doc/design.md): check every argument on
 * this rank, pick the global algorithm (argument, BPC_SCAN_ALGORITHM,
 * built-in rule), ONE bpc__agree_args on the rank's code and the signature
 * (algorithm, block count, mode, order, identity presence, commutative
 * flag, type), open one exchange, run the row, close, agree on the outcome.
 *
 * Strategy (the thesis' general strategy, Algorithm 7), per block of n
 * items: (1) local inclusive scan s_0 = x_0, s_i = s_{i-1} op x_i (n - 1
 * calls; blocks of this process in parallel);
 * (2) the global stage: the blocks' totals s_{n-1} are scanned over the
 * positions with the row's schedule, every position being one participant
 * (blocks of one process exchange through the in-process path), so the
 * association depends on the blocks only; the runner gives each position
 * its exclusive prefix E (absent for position 0 and after empty blocks
 * only); (3) propagate: inclusive r_i = E op s_i (n calls), exclusive r_0 =
 * E, r_i = E op s_{i-1} (n - 1 calls); with E absent the s values are the
 * results. An absent operand is never passed to the operator (empty blocks
 * and the empty prefix cost no call). Strategy reduce-then-scan
 * (Algorithm 8): (1) keeps no local values, (3) scans each block afresh
 * from E (one more call per block with E). Strategy inclusive-global
 * (Algorithm 9, inclusive scans with an inclusive global stage): the
 * global inclusive prefix, kept before the shift round, is the block's last
 * result (one call less per block). Strategy successor (Algorithm 10 in a
 * deterministic form, inclusive scans): after the global stage every
 * position sends its exclusive prefix to its predecessor, which always
 * waits for it and takes it as its last result (one call less per block
 * but the last, for every algorithm; one more message round). A failing operator stops further
 * calls on this rank; the schedule's messages still flow (no hang), and the
 * outcome agreement makes it BPC_ECALLBACK everywhere.
 * Drivers: the scheduled rows run the dataflow driver (run_flow: each block
 * goes through the three steps on its own, overlapping operator work with
 * messages; doc/scan.md "Overlap"), or with BPC_SCAN_OVERLAP=0 lock-step
 * rounds (run_lockstep: every local scan, then round by round over all
 * blocks, then every propagation); the same messages and results.
 */
#include "engines/scan/scan_internal.h"

#include <omp.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/coll.h"
#include "datatype/datatype.h"
#include "decomp/decomp.h"
#include "threads/threads.h"

static const bpc__algo_t scan_rows[] = {
    {{BPC_SCAN_SERIAL, "serial", "chain: P-1 rounds, P-1 calls (inclusive) + shift"},
     bpc__scan_serial, &(const bpc__scan_row_t){bpc__scan_model_serial, 4, 0, NULL, NULL}},
    {{BPC_SCAN_KOGGE_STONE, "kogge-stone",
      "shift form: round r from p-2^r; depth log2 P, P log2 P - P + 1 calls"},
     bpc__scan_kogge_stone,
     &(const bpc__scan_row_t){bpc__scan_model_kogge_stone, 1, 0, NULL, NULL}},
    {{BPC_SCAN_SKLANSKY, "sklansky", "fan-out halves; depth log2 P, (P/2) log2 P calls"},
     bpc__scan_sklansky, &(const bpc__scan_row_t){bpc__scan_model_sklansky, 0, 0, NULL, NULL}},
    {{BPC_SCAN_BRENT_KUNG, "brent-kung",
      "up-sweep + inclusive down-sweep; depth 2 log2 P - 1, 2P - log2 P - 2 calls"},
     bpc__scan_brent_kung,
     &(const bpc__scan_row_t){bpc__scan_model_brent_kung, 2, 0, NULL, NULL}},
    {{BPC_SCAN_BLELLOCH, "blelloch",
      "up-sweep + exclusive down-sweep; depth 2 log2 P, 2(P-1) - log2 P calls"},
     bpc__scan_blelloch, &(const bpc__scan_row_t){bpc__scan_model_blelloch, 3, 1, NULL, NULL}},
    {{BPC_SCAN_MPI, "mpi",
      "MPI_Exscan over ranks with a user MPI_Op; contiguous types, rank-ordered blocks"},
     bpc__scan_mpi,
     &(const bpc__scan_row_t){NULL, 0, 0, bpc__scan_mpi_check, bpc__scan_mpi_join}},
};

const bpc__engine_t bpc__engine_scan = {"scan", "BPC_SCAN_ALGORITHM", scan_rows,
                                        BPC__NROWS(scan_rows), NULL};

bpc_scan_params_t bpc_scan_params_default(void)
{
  bpc_scan_params_t p;
  memset(&p, 0, sizeof p);
  p.algorithm = "auto";
  return p;
}

int bpc__scan_log2up(int P)
{
  int k = 0;
  while ((1ll << k) < P)
    k++;
  return k;
}

/* ------------------------------------------------------------- values */

/* Message header before the packed value. */
typedef struct scan_hdr {
  int64_t present;
  int64_t depth;
} scan_hdr_t;

typedef struct scan_flow scan_flow_t;

typedef struct scan_state {
  bpc__scan_call_t *C;
  void **sendbufs; /* packed messages, freed after the flush */
  int nsend, capsend;
  /* per local block l: s[l] its local inclusive scan (reduce-then-scan:
   * s[l][0] as scratch only), tot[l] its global-stage value, got[l] the
   * value received in the current round and kinds[l] what to do with it,
   * incl[l] the last item's result when a strategy provides it */
  bpc__scan_val_t **s, *tot, *got, *incl;
  int *kinds;
  int rts, shortcut, succ; /* the strategy (see bpc__scan_run) */
  scan_flow_t *flow;       /* the dataflow driver while it runs, else NULL */
} scan_state_t;

void bpc__scan_fail_msg(bpc__scan_call_t *C, int code, const char *msg)
{
#pragma omp critical(bpc_scan_fail)
  {
    if (!C->failed) {
      C->failed = 1;
      C->fail_code = code;
      if (msg != NULL)
        bpc__err(C->ctx, code, "%s", msg);
      else if (code == BPC_ENOMEM)
        bpc__err(C->ctx, code, "bpc_scan: out of memory on rank %d", C->ctx->rank);
    }
  }
}

void bpc__scan_fail(bpc__scan_call_t *C, int code) { bpc__scan_fail_msg(C, code, NULL); }

int bpc__scan_failed(bpc__scan_call_t *C)
{
  int f;
#pragma omp atomic read
  f = C->failed;
  return f;
}

static void st_fail(scan_state_t *S, int code)
{
  bpc__scan_fail(S->C, code);
}

static int st_failed(scan_state_t *S)
{
  return bpc__scan_failed(S->C);
}

void bpc__scan_val_free(const bpc__scan_call_t *C, bpc__scan_val_t *x)
{
  if (x->present && x->v != NULL) {
    if (C->type->kind == BPC_TYPE_CONTIGUOUS)
      free(x->v);
    else
      bpc_type_item_destroy(C->type, x->v);
  }
  x->v = NULL;
  x->present = 0;
  x->depth = 0;
}

/* A new owned copy of an item (contiguous: one element). */
static int item_copy(scan_state_t *S, const void *item, void **out)
{
  bpc__scan_call_t *C = S->C;
  *out = NULL;
  if (C->type->kind == BPC_TYPE_CONTIGUOUS) {
    void *p = malloc(C->type->elem_size);
    if (p == NULL)
      return BPC_ENOMEM;
    memcpy(p, item, C->type->elem_size);
    *out = p;
    return BPC_OK;
  }
  size_t bytes = 0;
  int rc = bpc_type_size(C->ctx, C->type, item, &bytes);
  if (rc != BPC_OK)
    return rc;
  void *buf = bytes ? malloc(bytes) : NULL;
  if (bytes && buf == NULL)
    return BPC_ENOMEM;
  rc = bpc_type_pack(C->ctx, C->type, item, buf, bytes);
  if (rc == BPC_OK)
    rc = bpc_type_unpack(C->ctx, C->type, buf, bytes, out);
  free(buf);
  return rc;
}

static int val_copy(scan_state_t *S, const bpc__scan_val_t *a, bpc__scan_val_t *out)
{
  out->v = NULL;
  out->present = 0;
  out->depth = a->depth;
  if (!a->present)
    return BPC_OK;
  int rc = item_copy(S, a->v, &out->v);
  if (rc == BPC_OK)
    out->present = 1;
  return rc;
}

/* out = a op b; a and b stay the caller's. An absent operand: out is a
 * copy of the other (absent if both are). After a failure on this rank no
 * operator runs: out is absent. */
static void combine_ref(scan_state_t *S, const bpc__scan_val_t *a, const bpc__scan_val_t *b,
                        bpc__scan_val_t *out, int global)
{
  bpc__scan_call_t *C = S->C;
  out->v = NULL;
  out->present = 0;
  out->depth = 0;
  if (st_failed(S))
    return;
  if (!a->present || !b->present) {
    int rc = val_copy(S, a->present ? a : b, out);
    if (rc != BPC_OK)
      st_fail(S, rc);
    return;
  }
  int rc;
  if (C->op->fn == NULL) { /* binary (MPI's order): out = copy of b, then a o out */
    rc = item_copy(S, b->v, &out->v);
    if (rc != BPC_OK) {
      st_fail(S, rc);
      return;
    }
    rc = C->op->binary.fn(a->v, out->v, 1, 1, C->op->binary.user);
  } else if (C->type->kind == BPC_TYPE_CONTIGUOUS) {
    out->v = malloc(C->type->elem_size);
    if (out->v == NULL) {
      st_fail(S, BPC_ENOMEM);
      return;
    }
    rc = C->op->fn(a->v, b->v, out->v, C->op->user);
  } else {
    void *r = NULL;
    rc = C->op->fn(a->v, b->v, &r, C->op->user);
    out->v = r;
  }
#pragma omp atomic
  C->ops_local++;
  if (global) {
#pragma omp atomic
    C->ops_global++;
  }
  bpc__stats_ops(C->ctx, 1);
  if (rc != 0 || (C->type->kind == BPC_TYPE_CUSTOM && out->v == NULL)) {
    if (C->type->kind == BPC_TYPE_CONTIGUOUS)
      free(out->v);
    else if (out->v != NULL)
      bpc_type_item_destroy(C->type, out->v);
    out->v = NULL;
    char msg[96]; /* set with the failure, under its lock: threads may race */
    snprintf(msg, sizeof msg, "bpc_scan: the operator returned %d%s", rc,
             rc == 0 ? " but no result item" : "");
    bpc__scan_fail_msg(C, BPC_ECALLBACK, msg);
    return;
  }
  out->present = 1;
  out->depth = (a->depth > b->depth ? a->depth : b->depth) + 1;
}

void bpc__scan_combine(bpc__scan_call_t *C, const bpc__scan_val_t *a, const bpc__scan_val_t *b,
                       bpc__scan_val_t *out, int global)
{
  scan_state_t S;
  memset(&S, 0, sizeof S);
  S.C = C;
  combine_ref(&S, a, b, out, global);
}

/* Item i of block l's input as a borrowed value. */
static bpc__scan_val_t in_item(const bpc__scan_call_t *C, int l, size_t i)
{
  bpc__scan_val_t x;
  if (C->type->kind == BPC_TYPE_CONTIGUOUS)
    x.v = (char *)C->in[l].data + i * C->type->elem_size;
  else
    x.v = ((void *const *)C->in[l].data)[i];
  x.present = 1;
  x.depth = 0;
  return x;
}

/* ------------------------------------------------------------- messages */

static int send_val(scan_state_t *S, int src_gid, int dst_gid, int seq, const bpc__scan_val_t *x)
{
  bpc__scan_call_t *C = S->C;
  size_t bytes = 0;
  int rc = BPC_OK;
  if (x->present) {
    if (C->type->kind == BPC_TYPE_CONTIGUOUS)
      bytes = C->type->elem_size;
    else
      rc = bpc_type_size(C->ctx, C->type, x->v, &bytes);
  }
  if (rc != BPC_OK) {
    st_fail(S, rc);
    bytes = 0;
  }
  scan_hdr_t h = {rc == BPC_OK && x->present, x->depth};
  char *buf = malloc(sizeof h + bytes);
  if (buf == NULL)
    return BPC_ENOMEM;
  if (h.present) {
    if (C->type->kind == BPC_TYPE_CONTIGUOUS)
      memcpy(buf + sizeof h, x->v, bytes);
    else if ((rc = bpc__type_pack_exact(C->ctx, C->type, x->v, buf + sizeof h, bytes)) !=
             BPC_OK) {
      st_fail(S, rc);
      h.present = 0;
      bytes = 0;
    }
  }
  memcpy(buf, &h, sizeof h);
  if (S->nsend == S->capsend) {
    int nc = S->capsend ? 2 * S->capsend : 64;
    void **nb = realloc(S->sendbufs, sizeof *nb * (size_t)nc);
    if (nb == NULL) {
      free(buf);
      return BPC_ENOMEM;
    }
    S->sendbufs = nb;
    S->capsend = nc;
  }
  S->sendbufs[S->nsend++] = buf;
  return bpc__exch_send(C->ex, src_gid, dst_gid, seq, buf, sizeof h + bytes, 0);
}

/* Decode a taken message into x (a new owned value) and release it. */
static int take_val(scan_state_t *S, bpc__msg_t *m, bpc__scan_val_t *x)
{
  bpc__scan_call_t *C = S->C;
  int rc = BPC_OK;
  x->v = NULL;
  x->present = 0;
  x->depth = 0;
  scan_hdr_t h;
  if (m->bytes < sizeof h) {
    bpc__msg_release(C->ex, m);
    return bpc__err(C->ctx, BPC_ETRUNC, "bpc_scan: a message of %zu bytes is too short",
                    m->bytes);
  }
  memcpy(&h, m->data, sizeof h);
  const char *p = (const char *)m->data + sizeof h;
  size_t bytes = m->bytes - sizeof h;
  x->depth = h.depth;
  if (h.present) {
    if (C->type->kind == BPC_TYPE_CONTIGUOUS) {
      if (bytes != C->type->elem_size) {
        rc = bpc__err(C->ctx, BPC_ETRUNC, "bpc_scan: a value of %zu bytes, expected %zu",
                      bytes, C->type->elem_size);
      } else if ((x->v = malloc(bytes)) == NULL) {
        rc = BPC_ENOMEM;
      } else {
        memcpy(x->v, p, bytes);
        x->present = 1;
      }
    } else {
      rc = bpc_type_unpack(C->ctx, C->type, p, bytes, &x->v);
      x->present = rc == BPC_OK;
    }
  }
  bpc__msg_release(C->ex, m);
  if (rc != BPC_OK && rc != BPC_ENOMEM && rc != BPC_ETRUNC) {
    st_fail(S, rc); /* a callback failed: finish the schedule */
    rc = BPC_OK;
  }
  return rc;
}

static int recv_val(scan_state_t *S, int dst_gid, int src_gid, int seq, bpc__scan_val_t *x)
{
  bpc__msg_t *m = NULL;
  x->v = NULL;
  x->present = 0;
  x->depth = 0;
  int rc = bpc__exch_wait(S->C->ex, dst_gid, src_gid, seq, &m);
  return rc != BPC_OK ? rc : take_val(S, m, x);
}

/* ------------------------------------------------------------- blocks */

static void flow_hook(scan_state_t *S);

/* (1) Block l's local inclusive scan into s[l], its total into tot[l]
 * (reduce-then-scan, Algorithm 8: a reduction, no values kept). */
static void local_block(scan_state_t *S, int l)
{
  bpc__scan_call_t *C = S->C;
  const size_t c = C->in[l].count;
  if (c == 0)
    return;
  bpc__scan_val_t *sl = calloc(S->rts ? 1 : c, sizeof *sl);
  S->s[l] = sl;
  if (sl == NULL) {
    st_fail(S, BPC_ENOMEM);
    return;
  }
  bpc__scan_val_t x0 = in_item(C, l, 0);
  int r = val_copy(S, &x0, &sl[0]);
  if (r != BPC_OK)
    st_fail(S, r);
  for (size_t i = 1; i < c; i++) {
    bpc__scan_val_t xi = in_item(C, l, i);
    if (S->rts) {
      bpc__scan_val_t t;
      combine_ref(S, &sl[0], &xi, &t, 0);
      bpc__scan_val_free(C, &sl[0]);
      sl[0] = t;
    } else {
      combine_ref(S, &sl[i - 1], &xi, &sl[i], 0);
    }
    flow_hook(S);
  }
  if (S->rts) {
    S->tot[l] = sl[0];
    sl[0].v = NULL;
    sl[0].present = 0;
    return;
  }
  r = val_copy(S, &sl[c - 1], &S->tot[l]);
  if (r != BPC_OK)
    st_fail(S, r);
}

/* (3) Propagate block l's exclusive prefix tot[l] into its results. */
static void propagate_block(scan_state_t *S, int l)
{
  bpc__scan_call_t *C = S->C;
  const size_t c = C->in[l].count;
  const size_t es = C->type->elem_size;
  const bpc__scan_val_t *E = &S->tot[l];
  long long dmax = 0;
  bpc__scan_val_t run = {NULL, 0, 0}; /* reduce-then-scan: running value */
  for (size_t i = 0; i < c; i++) {
    bpc__scan_val_t res = {NULL, 0, 0};
    int first = 0; /* the exclusive result of the very first item */
    if (S->rts) {
      /* Algorithm 8: run = E op x_0 op ... op x_i, sequentially */
      const bpc__scan_val_t *prev = i == 0 ? E : &run;
      int r = BPC_OK;
      if (C->mode == BPC_SCAN_EXCLUSIVE) {
        if (prev->present)
          r = val_copy(S, prev, &res);
        else
          first = 1;
      }
      bpc__scan_val_t nxt = {NULL, 0, 0};
      if (C->mode == BPC_SCAN_INCLUSIVE || i + 1 < c) {
        bpc__scan_val_t xi = in_item(C, l, i);
        combine_ref(S, prev, &xi, &nxt, 0);
      }
      if (C->mode == BPC_SCAN_INCLUSIVE)
        r = val_copy(S, &nxt, &res);
      if (r != BPC_OK)
        st_fail(S, r);
      bpc__scan_val_free(C, &run);
      run = nxt;
    } else if ((S->shortcut || S->succ) && i == c - 1 && S->incl[l].present) {
      /* Algorithm 9: the global inclusive prefix; 10: the successor's
       * exclusive one (the same value) */
      res = S->incl[l];
      S->incl[l].v = NULL;
      S->incl[l].present = 0;
    } else if (C->mode == BPC_SCAN_INCLUSIVE) {
      combine_ref(S, E, &S->s[l][i], &res, 0);
    } else if (i > 0) {
      combine_ref(S, E, &S->s[l][i - 1], &res, 0);
    } else if (E->present) {
      int r = val_copy(S, E, &res);
      if (r != BPC_OK)
        st_fail(S, r);
    } else {
      first = 1;
    }
    if (first && C->op->identity != NULL) {
      int r = item_copy(S, C->op->identity, &res.v);
      if (r != BPC_OK)
        st_fail(S, r);
      else
        res.present = 1;
    } else if (first) {
#pragma omp critical(bpc_scan_absent)
      {
        C->absent_gid = C->assign->local[l];
        C->absent_index = 0;
      }
    }
    if (res.depth > dmax)
      dmax = res.depth;
    if (C->type->kind == BPC_TYPE_CONTIGUOUS) {
      if (res.present)
        memcpy((char *)C->out[l].data + i * es, res.v, es);
      free(res.v);
    } else {
      ((void **)C->out[l].data)[i] = res.present ? res.v : NULL;
    }
    flow_hook(S);
  }
  bpc__scan_val_free(C, &run);
  C->out[l].count = c;
#pragma omp critical(bpc_scan_depth)
  if (dmax > C->depth)
    C->depth = dmax;
}

/* Position p's step in round r of the global stage; round nr is the
 * runner's shift round (p takes p - 1's value, position 0 clears). Returns
 * the source position, or -1 when nothing arrives (*k NONE, or CLEAR). */
static int round_src(const bpc__scan_sched_t *sched, int P, int nr, int r, int p,
                     bpc__scan_step_t *k)
{
  int src;
  *k = BPC__SCAN_NONE;
  if (r == nr) {
    src = p - 1;
    *k = p > 0 ? BPC__SCAN_TAKE : BPC__SCAN_CLEAR;
  } else {
    src = sched->step(P, r, p, k);
  }
  if (*k == BPC__SCAN_CLEAR)
    return -1;
  if (src < 0)
    *k = BPC__SCAN_NONE;
  return *k == BPC__SCAN_NONE ? -1 : src;
}

/* The positions that may receive from position s in round r (the shift
 * round nr: s + 1), as up to two ascending, disjoint ranges [c[0], c[1])
 * and [c[2], c[3]) within [0, P): a superset, the caller keeps those whose
 * round_src is s. */
static void round_dests(const bpc__scan_sched_t *sched, int P, int nr, int r, int s, int c[4])
{
  if (r == nr) {
    c[0] = bpc__scan_clamp((long long)s + 1, P);
    c[1] = bpc__scan_clamp((long long)s + 2, P);
    c[2] = c[3] = 0;
  } else if (sched->recvs != NULL) {
    sched->recvs(P, r, s, c);
  } else {
    c[0] = 0;
    c[1] = P;
    c[2] = c[3] = 0;
  }
  /* bounds in [0, P]: the schedules clamp (test_schedule_bounds) */
  if (c[2] >= c[3]) {
    c[2] = c[3] = 0;
  } else if (c[0] >= c[1]) {
    c[0] = c[2];
    c[1] = c[3];
    c[2] = c[3] = 0;
  } else if (c[2] <= c[1] && c[3] >= c[0]) { /* overlapping or touching: one */
    c[0] = c[0] < c[2] ? c[0] : c[2];
    c[1] = c[1] > c[3] ? c[1] : c[3];
    c[2] = c[3] = 0;
  } else if (c[2] < c[0]) { /* ascending */
    int t0 = c[0], t1 = c[1];
    c[0] = c[2];
    c[1] = c[3];
    c[2] = t0;
    c[3] = t1;
  }
}

/* Block l's step of the round with the value got[l] (kinds[l]). */
static void apply_step(scan_state_t *S, int l)
{
  bpc__scan_val_t nv = {NULL, 0, 0};
  switch (S->kinds[l]) {
  case BPC__SCAN_LEFT:
    combine_ref(S, &S->got[l], &S->tot[l], &nv, 1);
    break;
  case BPC__SCAN_RIGHT:
    combine_ref(S, &S->tot[l], &S->got[l], &nv, 1);
    break;
  case BPC__SCAN_TAKE:
    nv = S->got[l];
    S->got[l].v = NULL;
    S->got[l].present = 0;
    break;
  case BPC__SCAN_CLEAR:
    break;
  default:
    return;
  }
  bpc__scan_val_free(S->C, &S->got[l]);
  bpc__scan_val_free(S->C, &S->tot[l]);
  S->tot[l] = nv;
}

/* Before the shift round: keep block l's inclusive prefix (Algorithm 9). */
static void keep_incl(scan_state_t *S, int l)
{
  if (S->C->in[l].count == 0)
    return;
  int r = val_copy(S, &S->tot[l], &S->incl[l]);
  if (r != BPC_OK)
    st_fail(S, r);
}

/* The successor's message into incl[l] (an empty block drops it). */
static int take_succ(scan_state_t *S, int l, bpc__msg_t *m)
{
  int rc = take_val(S, m, &S->incl[l]);
  if (S->C->in[l].count == 0)
    bpc__scan_val_free(S->C, &S->incl[l]);
  return rc;
}

/* ------------------------------------------------------------- lock-step */

/* fn(S, l) for every local block l < n: on C->nthreads threads when `par`
 * and there are threads, else here in order (no team of one: an OpenMP
 * region costs ~0.3 us even with a false if clause). */
static void for_blocks(scan_state_t *S, int n, int par, void (*fn)(scan_state_t *S, int l))
{
  const int nt = S->C->nthreads;
  if (par && nt > 1) {
#pragma omp parallel for schedule(dynamic, 1) num_threads(nt)
    for (int l = 0; l < n; l++)
      fn(S, l);
  } else {
    for (int l = 0; l < n; l++)
      fn(S, l);
  }
}

/* Every local scan, then the global stage round by round over all local
 * blocks (sends, receives, combines), then every propagation. */
static int run_lockstep(scan_state_t *S, const bpc__scan_sched_t *sched)
{
  bpc__scan_call_t *C = S->C;
  const int n = C->assign->nlocal;
  const int *gids = C->assign->local;
  const int P = C->nblocks;
  int rc = BPC_OK;
  /* threads only when there is more than one block: an idle team spins */
  for_blocks(S, n, n > 1, local_block);

  if (sched->stage != NULL)
    rc = sched->stage(C, S->tot, S->shortcut ? S->incl : NULL);
  const int nr = sched->nrounds != NULL ? sched->nrounds(P) : 0;
  const int total_rounds = sched->nrounds == NULL ? 0 : nr + (sched->exclusive_out ? 0 : 1);
  for (int r = 0; r < total_rounds && rc == BPC_OK; r++) {
    if (r == nr && S->shortcut)
      for (int l = 0; l < n; l++)
        keep_incl(S, l);
    /* sends: every position q whose source is one of ours, found from
     * our own positions (round_dests) */
    for (int l = 0; l < n && rc == BPC_OK; l++) {
      const int s = C->pos_of[gids[l]];
      int c[4];
      round_dests(sched, P, nr, r, s, c);
      for (int h = 0; h < 4; h += 2)
        for (int q = c[h]; q < c[h + 1] && rc == BPC_OK; q++) {
          bpc__scan_step_t k;
          if (round_src(sched, P, nr, r, q, &k) == s)
            rc = send_val(S, gids[l], C->order[q], r, &S->tot[l]);
        }
    }
    /* receives */
    int busy = 0;
    for (int l = 0; l < n && rc == BPC_OK; l++) {
      bpc__scan_step_t k;
      int src = round_src(sched, P, nr, r, C->pos_of[gids[l]], &k);
      S->kinds[l] = (int)k;
      busy += k == BPC__SCAN_LEFT || k == BPC__SCAN_RIGHT;
      if (src >= 0)
        rc = recv_val(S, gids[l], C->order[src], r, &S->got[l]);
    }
    if (rc != BPC_OK)
      break;
    /* combines (this process's positions in parallel) */
    for_blocks(S, n, busy > 1, apply_step);
  }
  /* the successor round: position p sends its exclusive prefix to p - 1,
   * which takes it as the inclusive result of its last item (every
   * position but the last receives, also an empty one, which drops it) */
  if (S->succ && rc == BPC_OK) {
    for (int l = 0; l < n && rc == BPC_OK; l++) {
      const int p = C->pos_of[gids[l]];
      if (p > 0)
        rc = send_val(S, gids[l], C->order[p - 1], total_rounds, &S->tot[l]);
    }
    for (int l = 0; l < n && rc == BPC_OK; l++) {
      const int p = C->pos_of[gids[l]];
      bpc__msg_t *m = NULL;
      if (p + 1 < P && (rc = bpc__exch_wait(C->ex, gids[l], C->order[p + 1], total_rounds,
                                            &m)) == BPC_OK)
        rc = take_succ(S, l, m);
    }
  }
  int rc2 = bpc__exch_flush(C->ex);
  if (rc == BPC_OK)
    rc = rc2;

  /* (3) propagate the exclusive prefixes tot[l] into the blocks */
  if (rc == BPC_OK) {
    for_blocks(S, n, n > 1, propagate_block);
  }
  return rc;
}

/* ------------------------------------------------------------- dataflow */

/*
 * The overlapped driver (doc/scan.md "Overlap"). Every block moves on its
 * own: local scan -> global rounds 0.. -> (successor message) ->
 * propagation. The master thread (thread 0, the only one that calls the
 * exchange) keeps each block's round: when a block reaches round r it
 * posts the block's sends of round r (its value before the round), then
 * takes the round's message once it has arrived (bpc__exch_take, never a
 * blocking wait) and applies the step; the operator work (local scans,
 * global combines, propagations) are items that any thread runs, global
 * combines first (they are on the critical path), then local scans, then
 * propagations. A block has at most one item queued or running, so the
 * values it reads are never written meanwhile. The master runs items too
 * and, after each operator call of a local scan or propagation it runs,
 * makes progress on the exchange and runs the queued global combines. The
 * association is the schedule's: what a block combines in round r is the
 * value its source had before round r, whatever the timing.
 */

enum { FQ_COMBINE = 0, FQ_LOCAL = 1, FQ_PROP = 2, FQ_N = 3 };
enum { PH_LOCAL = 0, PH_GLOBAL = 1, PH_PROP = 2, PH_DONE = 3 };

struct scan_flow {
  const bpc__scan_sched_t *sched;
  int n, P, nr, total_rounds;
  /* master thread only */
  int *phase, *round, *sent;
  long *dbeg, *dcur;  /* block l's sends: entries dbeg[l]..dbeg[l+1]-1, next dcur[l] (a
                       * process's sends may pass INT_MAX: about (P/2) log2 P for
                       * sklansky on one process) */
  int *dround, *ddst; /* an entry's round and destination position */
  int *dlocal;        /* an entry's destination block if it is local, else -1 */
  int *wait, nwait;   /* blocks in the global stage with no item */
  int *wpos;          /* a block's place in wait, or -1 */
  int *hot, nhot;     /* local blocks a message was just sent to */
  int *ishot;
  int *drained;
  int ndone, hook_ops, in_hook, rc;
  /* shared: under critical(bpc_scan_flow) */
  int *q[FQ_N];
  long qhead[FQ_N], qtail[FQ_N]; /* FIFOs of capacity n (a block is in one at most once) */
  int *fin, nfin;                 /* blocks whose item finished */
  int stop;
};

static void flow_push(scan_flow_t *F, int which, int l)
{
#pragma omp critical(bpc_scan_flow)
  F->q[which][F->qtail[which]++ % F->n] = l;
}

/* The first queued item among the queues 0..upto: its queue, or -1 (-2
 * once the master stopped). */
static int flow_pop(scan_flow_t *F, int upto, int *l)
{
  int w = -1;
#pragma omp critical(bpc_scan_flow)
  {
    if (F->stop)
      w = -2;
    for (int i = 0; i <= upto && w == -1; i++)
      if (F->qhead[i] < F->qtail[i]) {
        *l = F->q[i][F->qhead[i]++ % F->n];
        w = i;
      }
  }
  return w;
}

static void flow_exec(scan_state_t *S, int which, int l)
{
  scan_flow_t *F = S->flow;
  if (which == FQ_LOCAL)
    local_block(S, l);
  else if (which == FQ_COMBINE)
    apply_step(S, l);
  else
    propagate_block(S, l);
#pragma omp critical(bpc_scan_flow)
  F->fin[F->nfin++] = l;
}

/* Master: move block l as far as it goes without waiting. Returns 1 while
 * it waits for a message, 0 once an item of its is queued. */
static int flow_drive(scan_state_t *S, int l)
{
  bpc__scan_call_t *C = S->C;
  scan_flow_t *F = S->flow;
  const int gid = C->assign->local[l];
  const int p = C->pos_of[gid];
  int rc = BPC_OK;
  while (rc == BPC_OK) {
    int r = F->round[l];
    if (F->sched->sends != NULL && r < F->nr && !F->sent[l]) {
      /* past the rounds in which this position does nothing (up to the
       * shift round, never beyond) */
      int ar[2] = {0, F->nr};
      F->sched->sends(F->P, p, ar);
      const int to = r < ar[0] ? ar[0] : r >= ar[1] ? F->nr : r;
      if (to != r)
        F->round[l] = r = to;
    }
    bpc__msg_t *m = NULL;
    if (r == F->total_rounds) { /* the global stage is done */
      if (S->succ) {
        if (!F->sent[l] && p > 0)
          rc = send_val(S, gid, C->order[p - 1], r, &S->tot[l]);
        F->sent[l] = 1;
        if (rc == BPC_OK && p + 1 < F->P) {
          bpc__exch_take(C->ex, gid, C->order[p + 1], r, &m);
          if (m == NULL)
            return 1;
          rc = take_succ(S, l, m);
        }
      }
      if (rc == BPC_OK) {
        F->phase[l] = PH_PROP;
        flow_push(F, FQ_PROP, l);
        return 0;
      }
      break;
    }
    if (!F->sent[l]) {
      if (r == F->nr && S->shortcut)
        keep_incl(S, l);
      for (; F->dcur[l] < F->dbeg[l + 1] && F->dround[F->dcur[l]] == r && rc == BPC_OK;
           F->dcur[l]++)
      {
        const long e = F->dcur[l];
        const int dl = F->dlocal[e];
        rc = send_val(S, gid, C->order[F->ddst[e]], r, &S->tot[l]);
        if (dl >= 0 && !F->ishot[dl]) { /* arrived: look at it soon */
          F->ishot[dl] = 1;
          F->hot[F->nhot++] = dl;
        }
      }
      F->sent[l] = 1;
      if (rc != BPC_OK)
        break;
    }
    bpc__scan_step_t k;
    const int src = round_src(F->sched, F->P, F->nr, r, p, &k);
    S->kinds[l] = (int)k;
    if (src >= 0) {
      bpc__exch_take(C->ex, gid, C->order[src], r, &m);
      if (m == NULL)
        return 1;
      if ((rc = take_val(S, m, &S->got[l])) != BPC_OK)
        break;
      if (k == BPC__SCAN_LEFT || k == BPC__SCAN_RIGHT) {
        flow_push(F, FQ_COMBINE, l);
        return 0;
      }
    }
    apply_step(S, l); /* TAKE, CLEAR or nothing */
    F->round[l]++;
    F->sent[l] = 0;
  }
  F->rc = rc;
  return 1;
}

/* Master: drive block l and keep the wait list (O(1)). */
static void flow_step(scan_state_t *S, int l)
{
  scan_flow_t *F = S->flow;
  const int waits = flow_drive(S, l);
  if (waits && F->wpos[l] < 0) {
    F->wpos[l] = F->nwait;
    F->wait[F->nwait++] = l;
  } else if (!waits && F->wpos[l] >= 0) {
    const int i = F->wpos[l], last = F->wait[--F->nwait];
    F->wait[i] = last;
    F->wpos[last] = i;
    F->wpos[l] = -1;
  }
}

/* Master: drive the waiting blocks a local message was sent to. */
static void flow_hot(scan_state_t *S)
{
  scan_flow_t *F = S->flow;
  while (F->nhot > 0 && F->rc == BPC_OK) {
    const int l = F->hot[--F->nhot];
    F->ishot[l] = 0;
    if (F->wpos[l] >= 0)
      flow_step(S, l);
  }
}

/* Master: take the finished items (drive those blocks), make progress,
 * drive the blocks a local message was sent to and, when `full`, every
 * waiting block (a remote message may have arrived for any: a sweep costs
 * one bpc__exch_take per waiting block, so callers sweep every
 * 1 + nwait/8 items or operator calls, and whenever idle). */
static void flow_poll(scan_state_t *S, int full)
{
  scan_flow_t *F = S->flow;
  int nd = 0;
#pragma omp critical(bpc_scan_flow)
  {
    nd = F->nfin;
    memcpy(F->drained, F->fin, sizeof(int) * (size_t)nd);
    F->nfin = 0;
  }
  for (int i = 0; i < nd; i++) {
    const int l = F->drained[i];
    if (F->phase[l] == PH_PROP) {
      F->phase[l] = PH_DONE;
      F->ndone++;
      continue;
    }
    if (F->phase[l] == PH_LOCAL) { /* enters round 0 */
      F->phase[l] = PH_GLOBAL;
      F->round[l] = 0;
    } else { /* a combine finished its round */
      F->round[l]++;
    }
    F->sent[l] = 0;
    if (F->rc == BPC_OK)
      flow_step(S, l);
  }
  if (F->rc == BPC_OK)
    F->rc = bpc__exch_progress(S->C->ex);
  flow_hot(S);
  for (int i = 0; full && i < F->nwait && F->rc == BPC_OK;) {
    const int l = F->wait[i];
    flow_step(S, l);
    if (F->wpos[l] >= 0) /* still waiting (else wait[i] is another block) */
      i++;
  }
  flow_hot(S);
  /* what this poll sent leaves now (bundles), not at the next poll */
  if (F->rc == BPC_OK)
    F->rc = bpc__exch_push(S->C->ex);
}

/* Whether the master sweeps all waiting blocks now: once per 1 + nwait/8
 * items or operator calls (counted in hook_ops). */
static int flow_sweep_due(scan_flow_t *F)
{
  if (++F->hook_ops < 1 + F->nwait / 8)
    return 0;
  F->hook_ops = 0;
  return 1;
}

/* After an operator call of a local scan or propagation: on the master,
 * poll and run the queued global combines. */
static void flow_hook(scan_state_t *S)
{
  scan_flow_t *F = S->flow;
  if (F == NULL || omp_get_thread_num() != 0 || F->in_hook)
    return;
  F->in_hook = 1;
  int l;
  flow_poll(S, flow_sweep_due(F));
  while (F->rc == BPC_OK && flow_pop(F, FQ_COMBINE, &l) == FQ_COMBINE) {
    flow_exec(S, FQ_COMBINE, l);
    flow_poll(S, 0);
  }
  F->in_hook = 0;
}

static void flow_master(scan_state_t *S)
{
  scan_flow_t *F = S->flow;
  int idle = 0, full = 1, l;
  while (F->rc == BPC_OK && F->ndone < F->n) {
    flow_poll(S, full);
    if (F->rc != BPC_OK)
      break;
    const int w = flow_pop(F, FQ_N - 1, &l);
    full = w < 0 || flow_sweep_due(F);
    if (w >= 0) {
      flow_exec(S, w, l);
      idle = 0;
    } else if (++idle > 64) { /* let an oversubscribed core go to another rank */
      sched_yield();
      idle = 0;
    }
  }
#pragma omp critical(bpc_scan_flow)
  F->stop = 1;
}

static void flow_worker(scan_state_t *S)
{
  int l, w;
  while ((w = flow_pop(S->flow, FQ_N - 1, &l)) != -2) {
    if (w >= 0)
      flow_exec(S, w, l);
    else
      sched_yield();
  }
}

static int run_flow(scan_state_t *S, const bpc__scan_sched_t *sched)
{
  bpc__scan_call_t *C = S->C;
  scan_flow_t F;
  memset(&F, 0, sizeof F);
  const int n = C->assign->nlocal, P = C->nblocks;
  const int *gids = C->assign->local;
  const size_t nn = (size_t)(n > 0 ? n : 1);
  F.sched = sched;
  F.n = n;
  F.P = P;
  F.nr = sched->nrounds(P);
  F.total_rounds = F.nr + (sched->exclusive_out ? 0 : 1);
  int **arrays[] = {&F.phase, &F.round, &F.sent, &F.wait, &F.wpos, &F.hot,
                    &F.ishot, &F.drained, &F.fin, &F.q[0], &F.q[1], &F.q[2]};
  int rc = BPC_OK;
  for (size_t i = 0; i < sizeof arrays / sizeof *arrays; i++)
    if ((*arrays[i] = calloc(nn, sizeof(int))) == NULL)
      rc = BPC_ENOMEM;
  F.dbeg = calloc(nn + 1, sizeof(long));
  F.dcur = calloc(nn, sizeof(long));
  if (F.dcur == NULL)
    rc = BPC_ENOMEM;
  /* this process's sends, per source block in round order (the same
   * walk over positions as the lock-step rounds) */
  long nsend = 0;
  for (int pass = 0; pass < 2 && rc == BPC_OK && F.dbeg != NULL; pass++) {
    if (pass == 1) {
      for (int l = 0; l < n; l++)
        F.dbeg[l + 1] += F.dbeg[l];
      nsend = F.dbeg[n];
      F.dround = malloc(sizeof(int) * (size_t)(nsend > 0 ? nsend : 1));
      F.ddst = malloc(sizeof(int) * (size_t)(nsend > 0 ? nsend : 1));
      F.dlocal = malloc(sizeof(int) * (size_t)(nsend > 0 ? nsend : 1));
      if (F.dround == NULL || F.ddst == NULL || F.dlocal == NULL)
        break;
      memcpy(F.dcur, F.dbeg, sizeof(long) * (size_t)n);
    }
    for (int li = 0; li < n; li++) {
      const int s = C->pos_of[gids[li]];
      int sr[2] = {0, F.nr};
      if (sched->sends != NULL)
        sched->sends(P, s, sr);
      for (int r = sr[0] > 0 ? sr[0] : 0; r < F.total_rounds;
           r = r + 1 < sr[1] || r >= F.nr ? r + 1 : F.nr) { /* then the shift round, if any */
        int c[4];
        round_dests(sched, P, F.nr, r, s, c);
        for (int h = 0; h < 4; h += 2)
          for (int q = c[h]; q < c[h + 1]; q++) {
            bpc__scan_step_t k;
            if (round_src(sched, P, F.nr, r, q, &k) != s)
              continue;
            if (pass == 0) {
              F.dbeg[li + 1]++;
            } else {
              F.dround[F.dcur[li]] = r;
              F.dlocal[F.dcur[li]] = bpc__assign_local_index(C->assign, C->order[q]);
              F.ddst[F.dcur[li]++] = q;
            }
          }
      }
    }
  }
  if (F.dbeg == NULL ||
      (rc == BPC_OK && (F.dround == NULL || F.ddst == NULL || F.dlocal == NULL)))
    rc = BPC_ENOMEM;
  if (rc == BPC_OK) {
    memcpy(F.dcur, F.dbeg, sizeof(long) * (size_t)n);
    for (int l = 0; l < n; l++) {
      F.q[FQ_LOCAL][l] = l;
      F.wpos[l] = -1;
    }
    F.qtail[FQ_LOCAL] = n;
    S->flow = &F;
    /* one thread when there is a single block: its work is a chain (and
     * then no team at all: the master alone, outside any region) */
    if (n > 1 && C->nthreads > 1) {
#pragma omp parallel num_threads(C->nthreads)
      {
        if (omp_get_thread_num() == 0)
          flow_master(S);
        else
          flow_worker(S);
      }
    } else {
      flow_master(S);
    }
    S->flow = NULL;
    rc = F.rc;
  }
  for (size_t i = 0; i < sizeof arrays / sizeof *arrays; i++)
    free(*arrays[i]);
  free(F.dbeg);
  free(F.dcur);
  free(F.dround);
  free(F.ddst);
  free(F.dlocal);
  int rc2 = bpc__exch_flush(C->ex);
  return rc != BPC_OK ? rc : rc2;
}

/* ------------------------------------------------------------- runner */

int bpc__scan_run(bpc__scan_call_t *C, const bpc__scan_sched_t *sched)
{
  scan_state_t S;
  memset(&S, 0, sizeof S);
  S.C = C;
  const int n = C->assign->nlocal;
  const size_t nn = (size_t)(n > 0 ? n : 1);
  S.s = calloc(nn, sizeof *S.s);
  S.tot = calloc(nn, sizeof *S.tot);
  S.got = calloc(nn, sizeof *S.got);
  S.kinds = calloc(nn, sizeof *S.kinds);
  S.incl = calloc(nn, sizeof *S.incl);
  S.rts = C->strategy == BPC_SCAN_REDUCE_THEN_SCAN;
  S.shortcut = C->strategy == BPC_SCAN_INCLUSIVE_GLOBAL && C->mode == BPC_SCAN_INCLUSIVE &&
               !sched->exclusive_out;
  /* Algorithm 10, deterministic: the last item takes the successor's
   * exclusive prefix, always waited for */
  S.succ = C->strategy == BPC_SCAN_SUCCESSOR && C->mode == BPC_SCAN_INCLUSIVE;
  int rc = BPC_OK;
  if (S.s != NULL && S.tot != NULL && S.got != NULL && S.kinds != NULL && S.incl != NULL) {
    rc = C->overlap && sched->nrounds != NULL && sched->stage == NULL ? run_flow(&S, sched)
                                                                      : run_lockstep(&S, sched);
  } else {
    bpc__scan_fail(C, BPC_ENOMEM);
    rc = C->fail_code;
    if (sched->stage != NULL) /* a stage of collective calls needs every rank */
      sched->stage(C, NULL, NULL);
  }
  for (int i = 0; i < S.nsend; i++)
    free(S.sendbufs[i]);
  free(S.sendbufs);
  for (int l = 0; l < n && S.s != NULL && S.tot != NULL && S.got != NULL && S.incl != NULL;
       l++) {
    if (S.s[l] != NULL)
      for (size_t i = 0; i < (S.rts ? 1 : C->in[l].count); i++)
        bpc__scan_val_free(C, &S.s[l][i]);
    free(S.s[l]);
    bpc__scan_val_free(C, &S.tot[l]);
    bpc__scan_val_free(C, &S.got[l]);
    bpc__scan_val_free(C, &S.incl[l]);
  }
  free(S.incl);
  free(S.s);
  free(S.tot);
  free(S.got);
  free(S.kinds);
  if (rc == BPC_OK && C->failed)
    rc = C->fail_code;
  return rc;
}

/* ------------------------------------------------------------- auto */

/* Message latency of the model: BPC_SCAN_ALPHA (seconds) or 5e-6. */
static double scan_alpha(void)
{
  const char *e = getenv("BPC_SCAN_ALPHA");
  double a = e != NULL ? strtod(e, NULL) : 0.0;
  return a > 0.0 && a < 1.0 ? a : 5e-6;
}

/* The overlapped driver unless BPC_SCAN_OVERLAP is 0 (the same messages and
 * results either way: ranks may differ). */
static int scan_overlap(void)
{
  const char *e = getenv("BPC_SCAN_OVERLAP");
  return e == NULL || strcmp(e, "0") != 0;
}

int bpc__scan_auto(int P, int R, double gamma, double alpha)
{
  if (!(gamma > 0.0))
    gamma = 1e-3;
  if (R < 1)
    R = 1;
  const double cores = R < P ? R : P;
  const bpc__algo_t *best = NULL;
  double tbest = 0;
  for (int i = 0; i < bpc__engine_scan.nrows; i++) {
    const bpc__algo_t *row = &bpc__engine_scan.rows[i];
    const bpc__scan_row_t *tr = bpc__scan_row(row);
    if (tr->model == NULL)
      continue;
    double rounds, depth, calls;
    tr->model(P, &rounds, &depth, &calls);
    const double work = calls / cores;
    const double t = rounds * alpha + gamma * (depth > work ? depth : work);
    /* equal within rounding: the preferred row */
    if (best == NULL || t < tbest * (1 - 1e-12) ||
        (t <= tbest * (1 + 1e-12) && tr->prefer < bpc__scan_row(best)->prefer)) {
      best = row;
      tbest = t;
    }
  }
  return best != NULL ? best->info.id : 0;
}

bpc_scan_strategy_t bpc__scan_strategy_auto(bpc_scan_mode_t mode, int algorithm, double gamma,
                                            double alpha)
{
  if (mode != BPC_SCAN_INCLUSIVE)
    return BPC_SCAN_SCAN_THEN_PROPAGATE; /* the others are the same or cost a call more */
  const bpc__algo_t *row = bpc__algo_by_id(&bpc__engine_scan, algorithm);
  if (row == NULL || !bpc__scan_row(row)->exclusive)
    return BPC_SCAN_INCLUSIVE_GLOBAL; /* a call less per block, no message more */
  if (!(gamma > 0.0))
    gamma = 1e-3;
  /* Blelloch's global stage is exclusive: only the successor's message
   * saves the last item's call, at one more message round */
  return gamma > alpha ? BPC_SCAN_SUCCESSOR : BPC_SCAN_SCAN_THEN_PROPAGATE;
}

/* ------------------------------------------------------------- entry */

static int scan_check(bpc_ctx_t *ctx, const bpc_assign_t *assign, const bpc_type_t *type,
                      bpc_scan_mode_t mode, const bpc_buf_t *in, const bpc_buf_t *out,
                      const bpc_scan_op_t *op, const bpc_scan_params_t *P, int *pos_of,
                      const bpc__algo_t **row, bpc_algo_source_t *source)
{
  if (assign == NULL || type == NULL || op == NULL || (op->fn == NULL && op->binary.fn == NULL))
    return bpc__err(ctx, BPC_ENULL, "bpc_scan: %s is NULL",
                    assign == NULL ? "assign"
                    : type == NULL ? "type"
                    : op == NULL   ? "op"
                                   : "op->fn (and op->binary.fn)");
  if (op->fn != NULL && op->binary.fn != NULL)
    return bpc__err(ctx, BPC_EINVAL, "bpc_scan: op->fn and op->binary.fn are both set (give one)");
  if (assign->ctx != ctx)
    return bpc__err(ctx, BPC_EINVAL, "bpc_scan: the assignment belongs to another context");
  int rc = bpc_type_check(ctx, type);
  if (rc != BPC_OK)
    return rc;
  if (mode != BPC_SCAN_INCLUSIVE && mode != BPC_SCAN_EXCLUSIVE)
    return bpc__err(ctx, BPC_EINVAL, "bpc_scan: mode %d is neither inclusive nor exclusive",
                    (int)mode);
  if (P->nthreads < 0)
    return bpc__err(ctx, BPC_EINVAL, "bpc_scan: nthreads %d is negative", P->nthreads);
  if (P->strategy != BPC_SCAN_SCAN_THEN_PROPAGATE && P->strategy != BPC_SCAN_REDUCE_THEN_SCAN &&
      P->strategy != BPC_SCAN_INCLUSIVE_GLOBAL && P->strategy != BPC_SCAN_SUCCESSOR &&
      P->strategy != BPC_SCAN_STRATEGY_AUTO)
    return bpc__err(ctx, BPC_EINVAL, "bpc_scan: unknown strategy %d", (int)P->strategy);
  if (assign->nlocal > 0 && (in == NULL || out == NULL))
    return bpc__err(ctx, BPC_ENULL, "bpc_scan: %s is NULL on a rank with blocks",
                    in == NULL ? "in" : "out");
  for (int l = 0; l < assign->nlocal; l++)
    if (in[l].count > 0 && (in[l].data == NULL || out[l].data == NULL))
      return bpc__err(ctx, BPC_ENULL, "bpc_scan: block %d has %zu items but %s data is NULL",
                      assign->local[l], in[l].count, in[l].data == NULL ? "in" : "out");
  const int nb = assign->nblocks;
  for (int g = 0; g < nb; g++)
    pos_of[g] = -1;
  for (int p = 0; p < nb; p++) {
    int g = P->order != NULL ? P->order[p] : p;
    if (g < 0 || g >= nb || pos_of[g] >= 0)
      return bpc__err(ctx, BPC_EPERM, "bpc_scan: order is not a permutation of 0..%d "
                                      "(entry %d is %d)", nb - 1, p, g);
    pos_of[g] = p;
  }
  if (!(P->op_seconds >= 0.0) || P->op_seconds > 1e9)
    return bpc__err(ctx, BPC_EINVAL, "bpc_scan: op_seconds %g is not a cost in seconds",
                    P->op_seconds);
  rc = bpc__algo_pick(ctx, &bpc__engine_scan, P->algorithm, NULL, row, source);
  if (rc != BPC_OK)
    return rc;
  if (*row == NULL) {
    int R = 1;
    bpc_ctx_size(ctx, &R);
    *row = bpc__algo_by_id(&bpc__engine_scan, bpc__scan_auto(nb, R, P->op_seconds,
                                                             scan_alpha()));
  }
  if (bpc__scan_row(*row)->check != NULL)
    return bpc__scan_row(*row)->check(ctx, assign, type, pos_of);
  return BPC_OK;
}

static int scan_entry(bpc_ctx_t *ctx, const bpc_assign_t *assign, const bpc_type_t *type,
                      bpc_scan_mode_t mode, const bpc_buf_t *in, bpc_buf_t *out, const bpc_scan_op_t *op,
                      const bpc_scan_params_t *params, bpc_scan_info_t *info)
{
  if (ctx == NULL)
    return BPC_ENULL;
  const bpc_scan_params_t Pm = params != NULL ? *params : bpc_scan_params_default();
  const bpc__algo_t *row = NULL;
  bpc_algo_source_t source = BPC_SOURCE_BUILTIN;
  const int nb = assign != NULL ? assign->nblocks : 0;
  int *pos_of = malloc(sizeof(int) * (size_t)(nb > 0 ? nb : 1));
  int *order = malloc(sizeof(int) * (size_t)(nb > 0 ? nb : 1));
  int rc = (pos_of == NULL || order == NULL)
               ? bpc__err(ctx, BPC_ENOMEM, "bpc_scan: no memory for %d positions", nb)
               : scan_check(ctx, assign, type, mode, in, out, op, &Pm, pos_of, &row, &source);
  if (rc == BPC_OK)
    for (int g = 0; g < nb; g++)
      order[pos_of[g]] = g;
  bpc_scan_strategy_t strategy = Pm.strategy;
  if (rc == BPC_OK && strategy == BPC_SCAN_STRATEGY_AUTO)
    strategy = bpc__scan_strategy_auto(mode, row->info.id, Pm.op_seconds, scan_alpha());

  bpc__sig_t sig;
  bpc__sig_init(&sig);
  bpc__sig_int(&sig, "algorithm", rc == BPC_OK ? row->info.id : 0);
  bpc__sig_int(&sig, "nblocks", rc == BPC_OK ? nb : 0);
  bpc__sig_assign(&sig, rc == BPC_OK ? assign : NULL);
  bpc__sig_int(&sig, "mode", rc == BPC_OK ? (int)mode : 0);
  /* a model chooses (the algorithm's or the strategy's auto): the same
   * input on every rank */
  if (rc == BPC_OK &&
      (source == BPC_SOURCE_BUILTIN || Pm.strategy == BPC_SCAN_STRATEGY_AUTO))
    bpc__sig_bytes(&sig, "op_seconds", &Pm.op_seconds, sizeof Pm.op_seconds);
  else
    bpc__sig_open(&sig, "op_seconds");
  /* the strategy that will run (ranks whose BPC_SCAN_ALPHA made auto choose
   * differently get BPC_EMISMATCH here) */
  bpc__sig_int(&sig, "strategy", rc == BPC_OK ? (int)strategy : 0);
  bpc__sig_bytes(&sig, "order", rc == BPC_OK ? order : NULL,
                 rc == BPC_OK ? sizeof(int) * (size_t)nb : 0);
  bpc__sig_int(&sig, "identity", rc == BPC_OK && op->identity != NULL);
  bpc__sig_int(&sig, "op->commutative",
               rc == BPC_OK && (op->fn != NULL ? op->commutative : op->binary.commutative) != 0);
  bpc__sig_type(&sig, rc == BPC_OK ? type : NULL);
  /* info's totals are reductions: made when any rank asked for them, so a
   * rank passing NULL where another passes info joins them */
  const int info_field = sig.n;
  bpc__sig_max(&sig, "info", info != NULL);
  long long vals[BPC__SIG_MAX];
  rc = bpc__agree_args_vals(ctx, "scan", rc, &sig, vals);
  if (rc != BPC_OK) {
    free(pos_of);
    free(order);
    return rc;
  }

  bpc__scan_call_t C;
  memset(&C, 0, sizeof C);
  C.ctx = ctx;
  C.assign = assign;
  C.type = type;
  C.mode = mode;
  C.strategy = strategy;
  C.in = in;
  C.out = out;
  C.op = op;
  C.nthreads = bpc__threads_resolve(Pm.nthreads);
  C.nblocks = nb;
  C.order = order;
  C.pos_of = pos_of;
  C.absent_gid = -1;
  C.absent_index = -1;
  C.overlap = scan_overlap();
  rc = bpc__exch_open(ctx, "scan", bpc__assign_rank_cb, assign, &C.ex);
  if (rc == BPC_OK) {
    /* a round's values for blocks of one process travel as one message
     * (lib/comm/comm.h); the dataflow driver pushes at the end of each
     * poll, so a value waits at most until then */
    bpc__exch_bundle(C.ex, 1);
    rc = row->run(&C);
  } else if (bpc__scan_row(row)->join != NULL) {
    /* its MPI collectives need every rank: this one joins them as failed
     * (its stage alone: without an exchange nothing else can run) */
    bpc__scan_fail(&C, rc);
    bpc__scan_row(row)->join(&C);
  }
  /* the outcome, the same everywhere (a failure anywhere stops the others'
   * waits) */
  rc = bpc__exch_end(ctx, &C.ex, rc);
  free(pos_of);
  free(order);
  bpc__stats_depth(ctx, (uint64_t)C.depth); /* this rank's results' longest chain */
  if (rc == BPC_OK && vals[info_field] > 0) {
    long long v[5] = {C.ops_local, C.ops_global, C.depth, C.absent_gid, C.absent_index};
    long long w[5];
    rc = bpc__allreduce_ll(ctx, v, w, 2, BPC__RED_SUM);
    if (rc == BPC_OK)
      rc = bpc__allreduce_ll(ctx, v + 2, w + 2, 3, BPC__RED_MAX);
    if (rc == BPC_OK && info != NULL) {
      memset(info, 0, sizeof *info);
      info->algorithm = (bpc_scan_algorithm_t)row->info.id;
      snprintf(info->name, sizeof info->name, "%s", row->info.name);
      info->source = source;
      info->ops_local = C.ops_local;
      info->ops_total = w[0];
      info->ops_global = w[1];
      info->depth = w[2];
      info->absent_gid = (int)w[3];
      info->absent_index = w[4];
      info->strategy = strategy;
    }
  }
  return rc;
}

/* The public entry: the re-entrancy guard (bpc__enter) around the call. */
int bpc_scan(bpc_ctx_t *ctx, const bpc_assign_t *assign, const bpc_type_t *type,
             bpc_scan_mode_t mode, const bpc_buf_t *in, bpc_buf_t *out, const bpc_scan_op_t *op,
             const bpc_scan_params_t *params, bpc_scan_info_t *info)
{
  BPC__GUARDED_RETURN(ctx, "bpc_scan",
      scan_entry(ctx, assign, type, mode, in, out, op, params, info));
}
