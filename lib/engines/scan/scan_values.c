/*
 * lib/engines/scan/scan_values.c - the scan driver's values and messages:
 * failures, copies of items, the operator call (the scan callback or a
 * binary bpc_op_t on a copy of the right operand), and sending, taking and
 * receiving a value (header, packed item).
 */
#include "engines/scan/scan_internal.h"

#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/coll.h"
#include "datatype/datatype.h"

/* Message header before the packed value. */
typedef struct scan_hdr {
  int64_t present;
  int64_t depth;
} scan_hdr_t;
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
int bpc__scan_item_copy(scan_state_t *S, const void *item, void **out)
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

int bpc__scan_val_copy(scan_state_t *S, const bpc__scan_val_t *a, bpc__scan_val_t *out)
{
  out->v = NULL;
  out->present = 0;
  out->depth = a->depth;
  if (!a->present)
    return BPC_OK;
  int rc = bpc__scan_item_copy(S, a->v, &out->v);
  if (rc == BPC_OK)
    out->present = 1;
  return rc;
}

/* out = a op b; a and b stay the caller's. An absent operand: out is a
 * copy of the other (absent if both are). After a failure on this rank no
 * operator runs: out is absent. */
void bpc__scan_combine_ref(scan_state_t *S, const bpc__scan_val_t *a, const bpc__scan_val_t *b,
                           bpc__scan_val_t *out, int global)
{
  bpc__scan_call_t *C = S->C;
  out->v = NULL;
  out->present = 0;
  out->depth = 0;
  if (bpc__scan_failed(S->C))
    return;
  if (!a->present || !b->present) {
    int rc = bpc__scan_val_copy(S, a->present ? a : b, out);
    if (rc != BPC_OK)
      bpc__scan_fail(S->C, rc);
    return;
  }
  int rc;
  if (C->op->fn == NULL) { /* binary (MPI's order): out = copy of b, then a o out */
    rc = bpc__scan_item_copy(S, b->v, &out->v);
    if (rc != BPC_OK) {
      bpc__scan_fail(S->C, rc);
      return;
    }
    rc = C->op->binary.fn(a->v, out->v, 1, 1, C->op->binary.user);
  } else if (C->type->kind == BPC_TYPE_CONTIGUOUS) {
    out->v = malloc(C->type->elem_size);
    if (out->v == NULL) {
      bpc__scan_fail(S->C, BPC_ENOMEM);
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
  bpc__scan_combine_ref(&S, a, b, out, global);
}

/* Item i of block l's input as a borrowed value. */
bpc__scan_val_t bpc__scan_in_item(const bpc__scan_call_t *C, int l, size_t i)
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

int bpc__scan_send_val(scan_state_t *S, int src_gid, int dst_gid, int seq, const bpc__scan_val_t *x)
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
    bpc__scan_fail(S->C, rc);
    bytes = 0;
  }
  scan_hdr_t h = {rc == BPC_OK && x->present, x->depth};
  char *buf = malloc(sizeof h + bytes);
  if (buf == NULL)
    return BPC_ENOMEM;
  if (h.present) {
    if (C->type->kind == BPC_TYPE_CONTIGUOUS)
      memcpy(buf + sizeof h, x->v, bytes);
    else if ((rc = bpc__type_pack_exact(C->ctx, C->type, x->v, buf + sizeof h, bytes)) != BPC_OK) {
      bpc__scan_fail(S->C, rc);
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
int bpc__scan_take_val(scan_state_t *S, bpc__msg_t *m, bpc__scan_val_t *x)
{
  bpc__scan_call_t *C = S->C;
  int rc = BPC_OK;
  x->v = NULL;
  x->present = 0;
  x->depth = 0;
  scan_hdr_t h;
  if (m->bytes < sizeof h) {
    bpc__msg_release(C->ex, m);
    return bpc__err(C->ctx, BPC_ETRUNC, "bpc_scan: a message of %zu bytes is too short", m->bytes);
  }
  memcpy(&h, m->data, sizeof h);
  const char *p = (const char *)m->data + sizeof h;
  size_t bytes = m->bytes - sizeof h;
  x->depth = h.depth;
  if (h.present) {
    if (C->type->kind == BPC_TYPE_CONTIGUOUS) {
      if (bytes != C->type->elem_size) {
        rc = bpc__err(C->ctx, BPC_ETRUNC, "bpc_scan: a value of %zu bytes, expected %zu", bytes,
                      C->type->elem_size);
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
    bpc__scan_fail(S->C, rc); /* a callback failed: finish the schedule */
    rc = BPC_OK;
  }
  return rc;
}

int bpc__scan_recv_val(scan_state_t *S, int dst_gid, int src_gid, int seq, bpc__scan_val_t *x)
{
  bpc__msg_t *m = NULL;
  x->v = NULL;
  x->present = 0;
  x->depth = 0;
  int rc = bpc__exch_wait(S->C->ex, dst_gid, src_gid, seq, &m);
  return rc != BPC_OK ? rc : bpc__scan_take_val(S, m, x);
}
