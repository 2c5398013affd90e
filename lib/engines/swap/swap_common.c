/*
 * lib/engines/swap/swap_common.c - the helpers every swap schedule calls
 * (swap_common.h): the operator and tree reductions with their failure
 * bookkeeping, sends (dense or through the piece codec), the check and
 * decoding of received pieces, and the codec's scratch buffers.
 */
#include "engines/swap/swap_common.h"
#include "engines/swap/swap_internal.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Record a failure that leaves the messaging usable (the first one wins)
 * and return it. */
static int swap_record(bpc__swap_call_t *c, int rc)
{
  if (c->err == BPC_OK)
    c->err = rc;
  return rc;
}

int bpc__swap_op(bpc__swap_call_t *c, void *inout, const void *in, size_t count, int in_first,
                 int gid)
{
  if (c->err != BPC_OK || count == 0)
    return c->err;
  int rc = c->op->fn(in, inout, count, in_first, c->op->user);
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
  return swap_record(c, rc);
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

size_t bpc__swap_piece_cap(const bpc__swap_call_t *c, size_t len)
{
  if (c->sparse != NULL && c->sparse->bound != NULL)
    return c->sparse->bound(len, c->sparse->user);
  return len * c->es;
}

size_t bpc__swap_encode_sparse(bpc__swap_call_t *c, void *dst, int b, size_t off, size_t len)
{
  const size_t cap = bpc__swap_piece_cap(c, len);
  const size_t eb = c->sparse->encode(dst, cap, b, off, len, c->sparse->user);
  if (c->sparse->bound != NULL) {
    if ((eb == 0 || eb > cap) && c->err == BPC_OK)
      c->err = bpc__err(c->ctx, BPC_ESTATE, "swap: the piece encoder returned %zu bytes for %zu "
                                            "elements (room %zu)", eb, len, cap);
    return eb <= cap ? eb : 0;
  }
  return eb > 0 && eb < cap ? eb : 0;
}

int bpc__swap_send(bpc__swap_call_t *c, int b, int dst_gid, int seq, const void *data, size_t len,
                   size_t off)
{
  const size_t bytes = len * c->es;
  const int sparse = c->sparse != NULL && off != BPC__SWAP_NOOFF;
  if ((sparse || (c->codec != NULL && c->codec->encode != NULL)) && bytes > 0) {
    size_t cap = 0;
    void *buf = bpc__pool_get(c->ctx, sparse ? bpc__swap_piece_cap(c, len) : bytes, &cap);
    if (buf == NULL)
      return bpc__err(c->ctx, BPC_ENOMEM, "swap: out of memory for an encoded piece of %zu bytes",
                      bytes);
    const size_t eb = sparse ? bpc__swap_encode_sparse(c, buf, b, off, len)
                             : c->codec->encode(buf, bytes, data, len, c->codec->user);
    if (eb > 0 && (eb < bytes || (sparse && c->sparse->bound != NULL))) {
      int rc = bpc__swap_keep(c, buf, cap);
      if (rc != BPC_OK)
        return rc;
      c->piece_bytes += eb;
      return bpc__exch_send(c->ex, c->gids[b], dst_gid, seq, buf, eb, 0);
    }
    bpc__pool_put(c->ctx, buf, cap);
  }
  c->piece_bytes += bytes;
  return bpc__exch_send(c->ex, c->gids[b], dst_gid, seq, data, bytes, BPC__SEND_BORROW);
}

int bpc__swap_accept_sparse(bpc__swap_call_t *c, bpc__msg_t *m, size_t len, int *encoded)
{
  const size_t bytes = len * c->es;
  const int always = c->sparse->bound != NULL;
  *encoded = 0;
  if (m->bytes == bytes && !always)
    return BPC_OK;
  if (m->bytes < bytes || always) {
    int urc = c->sparse->check(m->data, m->bytes, len, c->sparse->user);
    if (urc == 0) {
      *encoded = 1;
      return BPC_OK;
    }
    int rc = bpc__err(c->ctx, BPC_ETRUNC,
                      "swap: block %d got a malformed %zu-byte encoded piece from block %d in "
                      "round %d (check returned %d; expected %zu elements)", m->dst_gid,
                      m->bytes, m->src_gid, c->cur_round, urc, len);
    return swap_record(c, rc);
  }
  return bpc__swap_bad_size(c, m, bytes);
}

/* Unit u of a fold (bpc__swap_fold): its job's operands applied to one
 * chunk of the job's range; 0, or the first nonzero operator value (*ji:
 * the job). */
static int fold_unit(bpc__swap_call_t *c, const bpc__swap_fold_t *jobs, const size_t *unit,
                     int njobs, size_t chunk, size_t u, int *ji)
{
  const size_t es = c->es;
  const bpc__swap_sparse_t *sp = c->sparse;
  *ji = bpc__tree_unit_job(unit, njobs, u);
  const size_t q = u - unit[*ji];
  const bpc__swap_fold_t *J = &jobs[*ji];
  const size_t lo = q * chunk, len = lo + chunk <= J->count ? chunk : J->count - lo;
  char *home = c->buf[J->b] + J->off * es;
  for (int x = 0; x < J->nops; x++) {
    const bpc__swap_fold_op_t *o = &J->ops[x];
    int rc = o->bytes > 0 ? sp->blend(J->b, J->off, home, J->count, o->data, o->bytes, lo, len,
                                      o->in_first, sp->user)
                          : c->op->fn((const char *)o->data + lo * es, home + lo * es, len,
                                      o->in_first, c->op->user);
    if (rc != 0)
      return rc;
  }
  return 0;
}

int bpc__swap_fold(bpc__swap_call_t *c, const bpc__swap_fold_t *jobs, int njobs)
{
  if (c->err != BPC_OK || njobs == 0)
    return c->err;
  size_t work = 0, maxcount = 0;
  uint64_t nops = 0;
  for (int i = 0; i < njobs; i++) {
    if (jobs[i].nops > 0)
      work += jobs[i].count;
    if (jobs[i].count > maxcount)
      maxcount = jobs[i].count;
    nops += (uint64_t)jobs[i].nops;
  }
  /* chunks as in lib/threads' tree: serially every fold goes whole */
  int T = 1;
  size_t chunk = 1;
  bpc__tree_chunks(&c->tree, work, maxcount, &T, &chunk);
  size_t unit_small[65], *unit = unit_small; /* first unit of job i (bpc__tree_unit_job) */
  if (njobs > 64 && (unit = malloc(sizeof(size_t) * ((size_t)njobs + 1))) == NULL) {
    c->err = bpc__err(c->ctx, BPC_ENOMEM, "swap: out of memory to fold %d pieces", njobs);
    return c->err;
  }
  size_t nunits = 0;
  for (int i = 0; i < njobs; i++) {
    unit[i] = nunits;
    if (jobs[i].nops > 0 && jobs[i].count > 0)
      nunits += (jobs[i].count + chunk - 1) / chunk;
  }
  unit[njobs] = nunits;
  const bpc__swap_sparse_t *sp = c->sparse;
  for (int i = 0; sp->prepare != NULL && i < njobs; i++)
    for (int x = 0; x < jobs[i].nops; x++)
      sp->prepare(jobs[i].b, jobs[i].off, jobs[i].count,
                  jobs[i].ops[x].bytes > 0 ? jobs[i].ops[x].data : NULL, jobs[i].ops[x].bytes,
                  sp->user);
  int err = 0, errjob = -1;
  if (T > 1) {
#pragma omp parallel for num_threads(T) schedule(dynamic, 1)
    for (size_t u = 0; u < nunits; u++) {
      int e, ji = -1;
#pragma omp atomic read
      e = err;
      if (e != 0)
        continue;
      const int rc = fold_unit(c, jobs, unit, njobs, chunk, u, &ji);
      if (rc != 0) {
#pragma omp critical(bpc_swap_fold_err)
        {
          if (err == 0) {
            err = rc;
            errjob = ji;
          }
        }
      }
    }
  } else { /* no team: even a parallel region with if(0) costs ~0.3 us */
    for (size_t u = 0; u < nunits && err == 0; u++) {
      int ji = -1;
      const int rc = fold_unit(c, jobs, unit, njobs, chunk, u, &ji);
      if (rc != 0) {
        err = rc;
        errjob = ji;
      }
    }
  }
  if (unit != unit_small)
    free(unit);
  bpc__stats_ops(c->ctx, nops);
  if (err != 0) {
    c->err = bpc__err(c->ctx, BPC_ECALLBACK,
                      "swap operator returned %d on block %d (round %d, %zu elements)", err,
                      c->gids[jobs[errjob].b], c->cur_round, jobs[errjob].count);
    return c->err;
  }
  for (int i = 0; i < njobs; i++)
    for (int x = 0; x < jobs[i].nops; x++)
      sp->absorb(jobs[i].b, jobs[i].off, jobs[i].count, jobs[i].ops[x].bytes > 0 ? jobs[i].ops[x].data : NULL,
                 jobs[i].ops[x].bytes, sp->user);
  return c->err;
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
      return swap_record(c, rc);
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
    return swap_record(c, rc);
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

/* The piece map of the schedules over all blocks at once (shift, ring):
 * position p owns the p-th of nblocks equal element ranges. */
int bpc__swap_flat_piece(const bpc_swap_info_t *info, size_t count, int pos,
                         bpc_swap_piece_t *piece)
{
  bpc__flat_piece(count, info->nblocks, pos, &piece->offset, &piece->count);
  return BPC_OK;
}
