/*
 * lib/engines/swap/swap_common.c - the helpers every swap schedule calls
 * (swap_common.h): the operator and tree reductions with their failure
 * bookkeeping, sends (dense or through the piece codec), the check and
 * decoding of received pieces, and the codec's scratch buffers.
 */
#include "engines/swap/swap_common.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int bpc__swap_op(bpc__swap_call_t *c, void *inout, const void *in, size_t count, int in_first,
                 int gid)
{
  if (c->err != BPC_OK || count == 0)
    return c->err;
  int rc = c->op->fn(inout, in, count, in_first, c->op->user);
  bpc__stats_ops(c->ctx, 1);
  if (rc != 0)
    c->err = bpc__err(c->ctx, BPC_ECALLBACK,
                      "swap operator returned %d on block %d (round/stage %d, %zu elements)", rc,
                      gid, c->cur_round, count);
  return c->err;
}

int bpc__swap_trees(bpc__swap_call_t *c, bpc__tree_job_t *jobs, int njobs)
{
  for (int i = 0; i < njobs; i++)
    jobs[i].holder = jobs[i].home >= 0 ? jobs[i].home : 0;
  if (c->err != BPC_OK || njobs == 0)
    return c->err;
  int rc = bpc__tree_reduce_many(&c->tree, jobs, njobs);
  uint64_t done = 0;
  for (int i = 0; i < njobs; i++)
    done += (uint64_t)jobs[i].nmerges;
  bpc__stats_ops(c->ctx, done);
  if (rc != 0)
    c->err = bpc__err(c->ctx, BPC_ECALLBACK,
                      "swap operator returned %d (round %d, a batch of %d reduction tree(s) of "
                      "%d local block(s))", rc, c->cur_round, njobs, c->nlocal);
  return c->err;
}

int bpc__swap_bad_size(bpc__swap_call_t *c, const bpc__msg_t *m, size_t expected)
{
  int rc = bpc__err(c->ctx, BPC_ETRUNC,
                    "swap: block %d got %zu bytes from block %d in round/stage %d, expected %zu "
                    "(is count the same on every rank?)", m->dst_gid, m->bytes, m->src_gid,
                    c->cur_round, expected);
  if (c->err == BPC_OK)
    c->err = rc;
  return rc;
}

int bpc__swap_keep(bpc__swap_call_t *c, void *buf, size_t cap)
{
  if (c->nscratch == c->scratch_max) {
    int nm = c->scratch_max > 0 ? 2 * c->scratch_max : 16;
    void **ns = realloc(c->scratch, sizeof(void *) * (size_t)nm);
    size_t *nc = ns != NULL ? realloc(c->scratch_cap, sizeof(size_t) * (size_t)nm) : NULL;
    if (ns != NULL)
      c->scratch = ns;
    if (nc == NULL) {
      bpc__pool_put(c->ctx, buf, cap);
      return bpc__err(c->ctx, BPC_ENOMEM, "swap: out of memory for the buffers in flight");
    }
    c->scratch_cap = nc;
    c->scratch_max = nm;
  }
  c->scratch[c->nscratch] = buf;
  c->scratch_cap[c->nscratch] = cap;
  c->nscratch++;
  return BPC_OK;
}

int bpc__swap_send(bpc__swap_call_t *c, int b, int dst_gid, int seq, const void *data, size_t len)
{
  const size_t bytes = len * c->es;
  if (c->codec != NULL && c->codec->encode != NULL && bytes > 0) {
    size_t cap = 0;
    void *buf = bpc__pool_get(c->ctx, bytes, &cap);
    if (buf == NULL)
      return bpc__err(c->ctx, BPC_ENOMEM, "swap: out of memory for an encoded piece of %zu bytes",
                      bytes);
    const size_t eb = c->codec->encode(buf, bytes, data, len, c->codec->user);
    if (eb > 0 && eb < bytes) {
      int rc = bpc__swap_keep(c, buf, cap);
      if (rc != BPC_OK)
        return rc;
      return bpc__exch_send(c->ex, c->gids[b], dst_gid, seq, buf, eb, 0);
    }
    bpc__pool_put(c->ctx, buf, cap);
  }
  return bpc__exch_send(c->ex, c->gids[b], dst_gid, seq, data, bytes, BPC__SEND_BORROW);
}

int bpc__swap_accept(bpc__swap_call_t *c, bpc__msg_t *m, size_t len)
{
  const size_t bytes = len * c->es;
  if (m->bytes == bytes)
    return BPC_OK;
  if (c->codec != NULL && c->codec->decode != NULL && m->bytes < bytes) {
    size_t cap = 0;
    void *buf = bpc__pool_get(c->ctx, bytes, &cap);
    if (buf == NULL) {
      int rc = bpc__err(c->ctx, BPC_ENOMEM, "swap: out of memory decoding a piece of %zu bytes",
                        bytes);
      if (c->err == BPC_OK)
        c->err = rc;
      return rc;
    }
    int urc = c->codec->decode(buf, len, m->data, m->bytes, c->codec->user);
    if (urc == 0) {
      if (m->buf != NULL)
        bpc__pool_put(c->ctx, m->buf, m->cap);
      m->buf = buf;
      m->cap = cap;
      m->data = buf;
      m->bytes = bytes;
      m->borrowed = 0;
      return BPC_OK;
    }
    bpc__pool_put(c->ctx, buf, cap);
    int rc = bpc__err(c->ctx, BPC_ETRUNC,
                      "swap: block %d could not decode the %zu-byte piece from block %d in "
                      "round/stage %d (codec returned %d; expected %zu elements)", m->dst_gid,
                      m->bytes, m->src_gid, c->cur_round, urc, len);
    if (c->err == BPC_OK)
      c->err = rc;
    return rc;
  }
  return bpc__swap_bad_size(c, m, bytes);
}

void bpc__swap_scratch_free(bpc__swap_call_t *c)
{
  for (int i = 0; i < c->nscratch; i++)
    bpc__pool_put(c->ctx, c->scratch[i], c->scratch_cap[i]);
  free(c->scratch);
  free(c->scratch_cap);
  c->scratch = NULL;
  c->scratch_cap = NULL;
  c->nscratch = c->scratch_max = 0;
}
