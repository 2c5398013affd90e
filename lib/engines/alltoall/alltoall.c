/*
 * lib/engines/alltoall/alltoall.c - the all-to-all engine: its algorithm
 * table and registry entry, params, and the public entry bpc_alltoall.
 *
 * One call (the engine frame of doc/design.md): check every argument on
 * this rank, pick the routing (bpc__algo_pick: argument, then
 * BPC_ALLTOALL_ALGORITHM, then the built-in "rounds"), choose the
 * k-vector, then ONE bpc__agree_args on the rank's code and the signature
 * (block count, k-vector, algorithm, type kind and element size), so that a
 * bad or differing argument on any rank fails everywhere before a message
 * is sent; open one exchange, run the row, close the exchange, return the
 * bundles still lent to the pool (the routing returns those of finished
 * rounds itself: bpc__alltoall_unlend), and agree on the outcome.
 */
#include "engines/alltoall/alltoall_internal.h"

#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "comm/coll.h"
#include "datatype/datatype.h"
#include "decomp/decomp.h"
#include "threads/threads.h"

/* Built-in k-vector: rounds of at most 8 members. */
#define A2A_K_TARGET 8

static const bpc__algo_t alltoall_rows[] = {
    {{BPC_ALLTOALL_ROUNDS, "rounds",
      "k-ary swap rounds: items bundled by destination digit, sum(k[r]-1) messages per block"},
     bpc__alltoall_rounds,
     NULL},
};

const bpc__engine_t bpc__engine_alltoall = {"alltoall", "BPC_ALLTOALL_ALGORITHM", alltoall_rows,
                                            BPC__NROWS(alltoall_rows), NULL};

bpc_alltoall_params_t bpc_alltoall_params_default(void)
{
  bpc_alltoall_params_t p;
  memset(&p, 0, sizeof p);
  p.algorithm = "auto";
  return p;
}

int bpc__alltoall_lend(bpc__alltoall_call_t *C, void *buf, size_t cap)
{
  if (C->nlent == C->caplent) {
    int nc = C->caplent ? 2 * C->caplent : 32;
    struct bpc__alltoall_lent *nl = realloc(C->lent, sizeof *nl * (size_t)nc);
    if (nl == NULL)
      return BPC_ENOMEM;
    C->lent = nl;
    C->caplent = nc;
  }
  C->lent[C->nlent].buf = buf;
  C->lent[C->nlent].cap = cap;
  C->nlent++;
  C->held += cap;
  if (C->held > C->peak)
    C->peak = C->held;
  return BPC_OK;
}

void bpc__alltoall_unlend(bpc__alltoall_call_t *C, int from, int to)
{
  if (from < 0)
    from = 0;
  if (to > C->nlent)
    to = C->nlent;
  if (from >= to)
    return;
  for (int i = from; i < to; i++) {
    C->held -= C->lent[i].cap;
    bpc__pool_put(C->ctx, C->lent[i].buf, C->lent[i].cap);
  }
  memmove(&C->lent[from], &C->lent[to], sizeof *C->lent * (size_t)(C->nlent - to));
  C->nlent -= to - from;
}

/* This rank's checks, the pick and the k-vector (first error; no early
 * return to the caller: it agrees on the code). */
static int alltoall_check(bpc_ctx_t *ctx, const bpc_assign_t *assign, const bpc_type_t *type,
                          bpc_a2a_send_fn send, bpc_a2a_recv_fn recv,
                          const bpc_alltoall_params_t *P, const bpc__algo_t **row,
                          bpc_algo_source_t *source, bpc__rounds_t *R)
{
  char msg[256];
  int kk[BPC__MAX_ROUNDS], nk = 0;
  if (assign == NULL || type == NULL || send == NULL || recv == NULL)
    return bpc__err(ctx, BPC_ENULL, "bpc_alltoall: %s is NULL",
                    assign == NULL ? "assign" : type == NULL ? "type" : send == NULL ? "send"
                                                                                    : "recv");
  if (assign->ctx != ctx)
    return bpc__err(ctx, BPC_EINVAL, "bpc_alltoall: the assignment belongs to another context");
  int rc = bpc_type_check(ctx, type);
  if (rc != BPC_OK)
    return rc;
  const int n = assign->nblocks;
  if ((long long)n * n > (1ll << 62))
    return bpc__err(ctx, BPC_ERANGE, "bpc_alltoall: %d blocks are too many", n);
  if (P->nthreads < 0)
    return bpc__err(ctx, BPC_EINVAL,
                    "bpc_alltoall: nthreads %d is negative (0 = OpenMP default)", P->nthreads);
  rc = bpc__algo_pick(ctx, &bpc__engine_alltoall, P->algorithm, NULL, row, source);
  if (rc != BPC_OK)
    return rc;
  if (*row == NULL)
    *row = bpc__algo_by_id(&bpc__engine_alltoall, BPC_ALLTOALL_ROUNDS);
  if (P->k != NULL && P->nk < 0)
    return bpc__err(ctx, BPC_EKVEC, "bpc_alltoall: k-vector length %d is negative", P->nk);
  if (P->k != NULL && P->nk > 0) {
    if (P->nk > BPC_ALLTOALL_MAX_K)
      return bpc__err(ctx, BPC_EKVEC, "bpc_alltoall: k-vector of %d rounds: at most %d are "
                                      "allowed", P->nk, BPC_ALLTOALL_MAX_K);
    nk = P->nk;
    memcpy(kk, P->k, sizeof(int) * (size_t)nk);
  } else if (bpc__kvec_auto(n, A2A_K_TARGET, kk, BPC__MAX_ROUNDS, &nk) != BPC_OK) {
    return bpc__err(ctx, BPC_EKVEC, "bpc_alltoall: no automatic k-vector for %d blocks", n);
  }
  if (bpc__rounds_init(R, n, kk, nk, msg, sizeof msg) != BPC_OK)
    return bpc__err(ctx, BPC_EKVEC, "bpc_alltoall: %s", msg);
  return BPC_OK;
}

static int alltoall_entry(bpc_ctx_t *ctx, const bpc_assign_t *assign, const bpc_type_t *type,
                          bpc_a2a_send_fn send, bpc_a2a_recv_fn recv, void *user,
                          const bpc_alltoall_params_t *params, bpc_alltoall_info_t *info)
{
  if (ctx == NULL)
    return BPC_ENULL;
  const bpc_alltoall_params_t P = params != NULL ? *params : bpc_alltoall_params_default();
  const bpc__algo_t *row = NULL;
  bpc_algo_source_t source = BPC_SOURCE_BUILTIN;
  bpc__rounds_t R;
  bpc__sig_t sig;
  memset(&R, 0, sizeof R);
  int rc = alltoall_check(ctx, assign, type, send, recv, &P, &row, &source, &R);

  bpc__sig_init(&sig);
  bpc__sig_int(&sig, "algorithm", rc == BPC_OK ? row->info.id : 0);
  bpc__sig_int(&sig, "block count", rc == BPC_OK ? assign->nblocks : 0);
  bpc__sig_assign(&sig, rc == BPC_OK ? assign : NULL);
  bpc__sig_bytes(&sig, "k-vector", R.k, sizeof(int) * (size_t)R.nrounds);
  bpc__sig_type(&sig, rc == BPC_OK ? type : NULL);
  rc = bpc__agree_args(ctx, "alltoall", rc, &sig);
  if (rc != BPC_OK)
    return rc;

  bpc__alltoall_call_t C;
  memset(&C, 0, sizeof C);
  C.ctx = ctx;
  C.assign = assign;
  C.type = type;
  C.send = send;
  C.recv = recv;
  C.user = user;
  C.R = &R;
  C.nthreads = bpc__threads_resolve(P.nthreads);
  rc = bpc__exch_open(ctx, "alltoall", bpc__assign_rank_cb, assign, &C.ex);
  if (rc == BPC_OK)
    rc = row->run(&C);
  /* the outcome, the same everywhere (a failure anywhere stops the others'
   * waits); the lent items back once no send reads them */
  rc = bpc__exch_end(ctx, &C.ex, rc);
  bpc__alltoall_unlend(&C, 0, C.nlent);
  free(C.lent);
  if (rc == BPC_OK && info != NULL) {
    memset(info, 0, sizeof *info);
    info->algorithm = (bpc_alltoall_algorithm_t)row->info.id;
    snprintf(info->name, sizeof info->name, "%s", row->info.name);
    info->source = source;
    info->nk = R.nrounds;
    memcpy(info->k, R.k, sizeof(int) * (size_t)R.nrounds);
    info->peak_bundle_bytes = C.peak;
  }
  return rc;
}

/* The public entry: the re-entrancy guard (bpc__enter) around the call. */
int bpc_alltoall(bpc_ctx_t *ctx, const bpc_assign_t *assign, const bpc_type_t *type,
                 bpc_a2a_send_fn send, bpc_a2a_recv_fn recv, void *user,
                 const bpc_alltoall_params_t *params, bpc_alltoall_info_t *info)
{
  BPC__GUARDED_RETURN(ctx, "bpc_alltoall",
      alltoall_entry(ctx, assign, type, send, recv, user, params, info));
}
