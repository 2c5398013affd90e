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
 * calls; blocks of this process in parallel, OpenMP dynamic schedule);
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
 */
#include "engines/scan/scan_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/coll.h"
#include "datatype/datatype.h"
#include "decomp/decomp.h"
#include "threads/threads.h"

static const bpc__algo_t scan_rows[] = {
    {{BPC_SCAN_SERIAL, "serial", "chain: P-1 rounds, P-1 calls (inclusive) + shift"},
     bpc__scan_serial, NULL},
    {{BPC_SCAN_KOGGE_STONE, "kogge-stone",
      "shift form: round r from p-2^r; depth log2 P, P log2 P - P + 1 calls"},
     bpc__scan_kogge_stone, NULL},
    {{BPC_SCAN_SKLANSKY, "sklansky", "fan-out halves; depth log2 P, (P/2) log2 P calls"},
     bpc__scan_sklansky, NULL},
    {{BPC_SCAN_BRENT_KUNG, "brent-kung",
      "up-sweep + inclusive down-sweep; depth 2 log2 P - 1, 2P - log2 P - 2 calls"},
     bpc__scan_brent_kung, NULL},
    {{BPC_SCAN_BLELLOCH, "blelloch",
      "up-sweep + exclusive down-sweep; depth 2 log2 P, 2(P-1) - log2 P calls"},
     bpc__scan_blelloch, NULL},
    {{BPC_SCAN_MPI, "mpi",
      "MPI_Exscan over ranks with a user MPI_Op; contiguous types, rank-ordered blocks"},
     bpc__scan_mpi, NULL},
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

typedef struct scan_state {
  bpc__scan_call_t *C;
  void **sendbufs; /* packed messages, freed after the flush */
  int nsend, capsend;
} scan_state_t;

void bpc__scan_fail(bpc__scan_call_t *C, int code)
{
#pragma omp critical(bpc_scan_fail)
  {
    if (!C->failed) {
      C->failed = 1;
      C->fail_code = code;
    }
  }
}

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
      bpc_type_destroy(C->type, x->v);
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
  if (C->type->kind == BPC_TYPE_CONTIGUOUS) {
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
      bpc_type_destroy(C->type, out->v);
    out->v = NULL;
    bpc__err(C->ctx, BPC_ECALLBACK, "bpc_scan: the operator returned %d%s", rc,
             rc == 0 ? " but no result item" : "");
    st_fail(S, BPC_ECALLBACK);
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

static int recv_val(scan_state_t *S, int dst_gid, int src_gid, int seq, bpc__scan_val_t *x)
{
  bpc__scan_call_t *C = S->C;
  bpc__msg_t *m = NULL;
  x->v = NULL;
  x->present = 0;
  x->depth = 0;
  int rc = bpc__exch_wait(C->ex, dst_gid, src_gid, seq, &m);
  if (rc != BPC_OK)
    return rc;
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

/* ------------------------------------------------------------- runner */

int bpc__scan_run(bpc__scan_call_t *C, const bpc__scan_sched_t *sched)
{
  scan_state_t S;
  memset(&S, 0, sizeof S);
  S.C = C;
  const int n = C->assign->nlocal;
  const int *gids = C->assign->local;
  const int P = C->nblocks;
  const size_t es = C->type->elem_size;
  int rc = BPC_OK;
  bpc__scan_val_t **s = calloc((size_t)(n > 0 ? n : 1), sizeof *s);
  bpc__scan_val_t *tot = calloc((size_t)(n > 0 ? n : 1), sizeof *tot);
  bpc__scan_val_t *got = calloc((size_t)(n > 0 ? n : 1), sizeof *got);
  int *kinds = calloc((size_t)(n > 0 ? n : 1), sizeof *kinds);
  bpc__scan_val_t *incl = calloc((size_t)(n > 0 ? n : 1), sizeof *incl);
  const int rts = C->strategy == BPC_SCAN_REDUCE_THEN_SCAN;
  const int shortcut = C->strategy == BPC_SCAN_INCLUSIVE_GLOBAL &&
                       C->mode == BPC_SCAN_INCLUSIVE && !sched->exclusive_out;
  /* Algorithm 10, deterministic: the last item takes the successor's
   * exclusive prefix, always waited for */
  const int succ = C->strategy == BPC_SCAN_SUCCESSOR && C->mode == BPC_SCAN_INCLUSIVE;
  if (s == NULL || tot == NULL || got == NULL || kinds == NULL || incl == NULL) {
    free(incl);
    free(s);
    free(tot);
    free(got);
    free(kinds);
    return BPC_ENOMEM;
  }

  /* (1) local inclusive scans (threads only when there is more than one
   * block: an idle team would spin) */
#pragma omp parallel for schedule(dynamic, 1) num_threads(C->nthreads) if (n > 1)
  for (int l = 0; l < n; l++) {
    size_t c = C->in[l].count;
    if (c == 0)
      continue;
    s[l] = calloc(rts ? 1 : c, sizeof **s);
    if (s[l] == NULL) {
      st_fail(&S, BPC_ENOMEM);
      continue;
    }
    bpc__scan_val_t x0 = in_item(C, l, 0);
    int r = val_copy(&S, &x0, &s[l][0]);
    if (r != BPC_OK)
      st_fail(&S, r);
    if (rts) { /* Algorithm 8: a reduction, no values kept */
      for (size_t i = 1; i < c; i++) {
        bpc__scan_val_t xi = in_item(C, l, i), t;
        combine_ref(&S, &s[l][0], &xi, &t, 0);
        bpc__scan_val_free(C, &s[l][0]);
        s[l][0] = t;
      }
      tot[l] = s[l][0];
      s[l][0].v = NULL;
      s[l][0].present = 0;
      continue;
    }
    for (size_t i = 1; i < c; i++) {
      bpc__scan_val_t xi = in_item(C, l, i);
      combine_ref(&S, &s[l][i - 1], &xi, &s[l][i], 0);
    }
    r = val_copy(&S, &s[l][c - 1], &tot[l]);
    if (r != BPC_OK)
      st_fail(&S, r);
  }

  /* (2) the global stage over positions (or the row's own stage) */
  if (sched->stage != NULL)
    rc = sched->stage(C, tot, shortcut ? incl : NULL);
  const int nr = sched->nrounds != NULL ? sched->nrounds(P) : 0;
  const int total_rounds = sched->nrounds == NULL ? 0 : nr + (sched->exclusive_out ? 0 : 1);
  for (int r = 0; r < total_rounds && rc == BPC_OK; r++) {
    const int shift = r == nr;
    if (shift && shortcut) /* keep the inclusive prefixes (Algorithm 9) */
      for (int l = 0; l < n; l++)
        if (C->in[l].count > 0) {
          int r2 = val_copy(&S, &tot[l], &incl[l]);
          if (r2 != BPC_OK)
            st_fail(&S, r2);
        }
    /* sends: every position q whose source is one of ours */
    for (int q = 0; q < P && rc == BPC_OK; q++) {
      bpc__scan_step_t k = BPC__SCAN_NONE;
      int src = shift ? q - 1 : sched->step(P, r, q, &k);
      if (shift)
        k = q > 0 ? BPC__SCAN_TAKE : BPC__SCAN_CLEAR;
      if (src < 0 || k == BPC__SCAN_NONE || k == BPC__SCAN_CLEAR)
        continue;
      int li = bpc__assign_local_index(C->assign, C->order[src]);
      if (li >= 0)
        rc = send_val(&S, C->order[src], C->order[q], r, &tot[li]);
    }
    /* receives */
    for (int l = 0; l < n && rc == BPC_OK; l++) {
      const int p = C->pos_of[gids[l]];
      bpc__scan_step_t k = BPC__SCAN_NONE;
      int src = shift ? p - 1 : sched->step(P, r, p, &k);
      if (shift)
        k = p > 0 ? BPC__SCAN_TAKE : BPC__SCAN_CLEAR;
      kinds[l] = (int)k;
      if (src >= 0 && k != BPC__SCAN_NONE && k != BPC__SCAN_CLEAR)
        rc = recv_val(&S, gids[l], C->order[src], r, &got[l]);
      else
        kinds[l] = k == BPC__SCAN_CLEAR ? BPC__SCAN_CLEAR : BPC__SCAN_NONE;
    }
    if (rc != BPC_OK)
      break;
    int busy = 0;
    for (int l = 0; l < n; l++)
      busy += kinds[l] == BPC__SCAN_LEFT || kinds[l] == BPC__SCAN_RIGHT;
    /* combines (this process's positions in parallel) */
#pragma omp parallel for schedule(dynamic, 1) num_threads(C->nthreads) if (busy > 1)
    for (int l = 0; l < n; l++) {
      bpc__scan_val_t nv = {NULL, 0, 0};
      switch (kinds[l]) {
      case BPC__SCAN_LEFT:
        combine_ref(&S, &got[l], &tot[l], &nv, 1);
        break;
      case BPC__SCAN_RIGHT:
        combine_ref(&S, &tot[l], &got[l], &nv, 1);
        break;
      case BPC__SCAN_TAKE:
        nv = got[l];
        got[l].v = NULL;
        got[l].present = 0;
        break;
      case BPC__SCAN_CLEAR:
        break;
      default:
        continue;
      }
      bpc__scan_val_free(C, &got[l]);
      bpc__scan_val_free(C, &tot[l]);
      tot[l] = nv;
    }
  }
  /* the successor round: position p sends its exclusive prefix to p - 1,
   * which takes it as the inclusive result of its last item (every
   * position but the last receives, also an empty one, which drops it) */
  if (succ && rc == BPC_OK) {
    for (int l = 0; l < n && rc == BPC_OK; l++) {
      const int p = C->pos_of[gids[l]];
      if (p > 0)
        rc = send_val(&S, gids[l], C->order[p - 1], total_rounds, &tot[l]);
    }
    for (int l = 0; l < n && rc == BPC_OK; l++) {
      const int p = C->pos_of[gids[l]];
      if (p + 1 < P) {
        rc = recv_val(&S, gids[l], C->order[p + 1], total_rounds, &incl[l]);
        if (C->in[l].count == 0)
          bpc__scan_val_free(C, &incl[l]);
      }
    }
  }
  int rc2 = bpc__exch_flush(C->ex);
  if (rc == BPC_OK)
    rc = rc2;
  for (int i = 0; i < S.nsend; i++)
    free(S.sendbufs[i]);
  free(S.sendbufs);

  /* (3) propagate the exclusive prefixes tot[l] into the blocks */
  if (rc == BPC_OK) {
#pragma omp parallel for schedule(dynamic, 1) num_threads(C->nthreads) if (n > 1)
    for (int l = 0; l < n; l++) {
      size_t c = C->in[l].count;
      const bpc__scan_val_t *E = &tot[l];
      long long dmax = 0;
      bpc__scan_val_t run = {NULL, 0, 0}; /* reduce-then-scan: running value */
      for (size_t i = 0; i < c; i++) {
        bpc__scan_val_t res = {NULL, 0, 0};
        int first = 0; /* the exclusive result of the very first item */
        if (rts) {
          /* Algorithm 8: run = E op x_0 op ... op x_i, sequentially */
          const bpc__scan_val_t *prev = i == 0 ? E : &run;
          int r = BPC_OK;
          if (C->mode == BPC_SCAN_EXCLUSIVE) {
            if (prev->present)
              r = val_copy(&S, prev, &res);
            else
              first = 1;
          }
          bpc__scan_val_t nxt = {NULL, 0, 0};
          if (C->mode == BPC_SCAN_INCLUSIVE || i + 1 < c) {
            bpc__scan_val_t xi = in_item(C, l, i);
            combine_ref(&S, prev, &xi, &nxt, 0);
          }
          if (C->mode == BPC_SCAN_INCLUSIVE)
            r = val_copy(&S, &nxt, &res);
          if (r != BPC_OK)
            st_fail(&S, r);
          bpc__scan_val_free(C, &run);
          run = nxt;
        } else if ((shortcut || succ) && i == c - 1 && incl[l].present) {
          /* Algorithm 9: the global inclusive prefix; 10: the successor's
           * exclusive one (the same value) */
          res = incl[l];
          incl[l].v = NULL;
          incl[l].present = 0;
        } else if (C->mode == BPC_SCAN_INCLUSIVE) {
          combine_ref(&S, E, &s[l][i], &res, 0);
        } else if (i > 0) {
          combine_ref(&S, E, &s[l][i - 1], &res, 0);
        } else if (E->present) {
          int r = val_copy(&S, E, &res);
          if (r != BPC_OK)
            st_fail(&S, r);
        } else {
          first = 1;
        }
        if (first && C->op->identity != NULL) {
          int r = item_copy(&S, C->op->identity, &res.v);
          if (r != BPC_OK)
            st_fail(&S, r);
          else
            res.present = 1;
        } else if (first) {
#pragma omp critical(bpc_scan_absent)
          {
            C->absent_gid = gids[l];
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
      }
      bpc__scan_val_free(C, &run);
      C->out[l].count = c;
#pragma omp critical(bpc_scan_depth)
      if (dmax > C->depth)
        C->depth = dmax;
    }
  }
  for (int l = 0; l < n; l++) {
    if (s[l] != NULL)
      for (size_t i = 0; i < (rts ? 1 : C->in[l].count); i++)
        bpc__scan_val_free(C, &s[l][i]);
    free(s[l]);
    bpc__scan_val_free(C, &tot[l]);
    bpc__scan_val_free(C, &got[l]);
    bpc__scan_val_free(C, &incl[l]);
  }
  free(incl);
  free(s);
  free(tot);
  free(got);
  free(kinds);
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

/* Global stage of each algorithm over P blocks: message rounds (with the
 * shift round), operator depth and calls (doc/scan.md's table). */
static void scan_model(int id, int P, double *rounds, double *depth, double *calls)
{
  const int K = bpc__scan_log2up(P);
  double W = 0;
  switch (id) {
  case BPC_SCAN_SERIAL:
    *rounds = P > 1 ? P : 0;
    *depth = P - 1;
    W = P - 1;
    break;
  case BPC_SCAN_KOGGE_STONE:
    *rounds = K + (P > 1);
    *depth = K;
    for (int r = 0; r < K; r++)
      W += P - (1 << r);
    break;
  case BPC_SCAN_SKLANSKY:
    *rounds = K + (P > 1);
    *depth = K;
    W = 0.5 * P * K;
    break;
  case BPC_SCAN_BRENT_KUNG:
    *rounds = K + (K > 1 ? K - 1 : 0) + (P > 1);
    *depth = K > 1 ? 2 * K - 1 : K;
    W = 2.0 * P - K - 2;
    break;
  default: /* Blelloch */
    *rounds = 2 * K; /* the root's clearing round sends nothing */
    *depth = K > 1 ? 2 * K - 1 : K;
    W = 2.0 * (P - 1) - K;
    break;
  }
  *calls = W;
}

int bpc__scan_auto(int P, int R, double gamma, double alpha)
{
  if (!(gamma > 0.0))
    gamma = 1e-3;
  if (R < 1)
    R = 1;
  const double cores = R < P ? R : P;
  int best = BPC_SCAN_SKLANSKY;
  double tbest = 0;
  static const int ids[] = {BPC_SCAN_SKLANSKY, BPC_SCAN_KOGGE_STONE, BPC_SCAN_BRENT_KUNG,
                            BPC_SCAN_BLELLOCH, BPC_SCAN_SERIAL};
  for (int i = 0; i < 5; i++) {
    double rounds, depth, calls;
    scan_model(ids[i], P, &rounds, &depth, &calls);
    double work = calls / cores;
    double t = rounds * alpha + gamma * (depth > work ? depth : work);
    if (i == 0 || t < tbest * (1 - 1e-12)) {
      best = ids[i];
      tbest = t;
    }
  }
  return best;
}

bpc_scan_strategy_t bpc__scan_strategy_auto(bpc_scan_mode_t mode, int algorithm, double gamma,
                                            double alpha)
{
  if (mode != BPC_SCAN_INCLUSIVE)
    return BPC_SCAN_SCAN_THEN_PROPAGATE; /* the others are the same or cost a call more */
  if (algorithm != BPC_SCAN_BLELLOCH)
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
  if (assign == NULL || type == NULL || op == NULL || op->fn == NULL)
    return bpc__err(ctx, BPC_ENULL, "bpc_scan: %s is NULL",
                    assign == NULL ? "assign" : type == NULL ? "type"
                                            : op == NULL     ? "op"
                                                             : "op->fn");
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
  if ((*row)->info.id == BPC_SCAN_MPI)
    return bpc__scan_mpi_check(ctx, assign, type, pos_of);
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
  /* the strategy that will run: ranks whose auto resolved differently
   * (different op_seconds or BPC_SCAN_ALPHA) get BPC_EMISMATCH */
  bpc__sig_int(&sig, "strategy", rc == BPC_OK ? (int)strategy : 0);
  if (rc == BPC_OK && source == BPC_SOURCE_BUILTIN) /* the model chose: same inputs */
    bpc__sig_bytes(&sig, "op_seconds", &Pm.op_seconds, sizeof Pm.op_seconds);
  else
    bpc__sig_open(&sig, "op_seconds");
  bpc__sig_bytes(&sig, "order", rc == BPC_OK ? order : NULL,
                 rc == BPC_OK ? sizeof(int) * (size_t)nb : 0);
  bpc__sig_int(&sig, "identity", rc == BPC_OK && op->identity != NULL);
  bpc__sig_int(&sig, "op->commutative", rc == BPC_OK && op->commutative != 0);
  bpc__sig_type(&sig, rc == BPC_OK ? type : NULL);
  rc = bpc__agree_args(ctx, "scan", rc, &sig);
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
  rc = bpc__exch_open(ctx, "scan", bpc__assign_rank_cb, assign, &C.ex);
  if (rc == BPC_OK) {
    rc = row->run(&C);
    int rc2 = bpc__exch_close(&C.ex);
    if (rc == BPC_OK)
      rc = rc2;
  }
  free(pos_of);
  free(order);
  bpc__stats_depth(ctx, (uint64_t)C.depth); /* this rank's results' longest chain */
  rc = bpc__agree(ctx, rc);
  if (rc == BPC_OK && info != NULL) {
    long long v[5] = {C.ops_local, C.ops_global, C.depth, C.absent_gid, C.absent_index};
    long long w[5];
    rc = bpc__allreduce_ll(ctx, v, w, 2, BPC__RED_SUM);
    if (rc == BPC_OK)
      rc = bpc__allreduce_ll(ctx, v + 2, w + 2, 3, BPC__RED_MAX);
    if (rc == BPC_OK) {
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
