/*
 * tests/common/swap_sparse.h - every swap schedule through the sparse-piece
 * hooks (lib/engines/swap/swap_common.h), which only the compositing
 * plug-in sets: a codec of the test's own (a bitmask of the elements that
 * are not the operator's identity, then those elements packed) run on the
 * schedule's plan, so a new schedule's sparse path is tested by adding its
 * row, without a compositing strategy for it. Header-only, static; used by
 * tests/common/swap_run.h (so_case_t.sparse).
 *
 * The inputs have holes (so_holes: three elements of four are the
 * identity), so pieces really travel encoded; mode 2 sets the codec's
 * bound, so every piece travels encoded and every message is checked as
 * an encoding.
 */
#ifndef BPC_TESTS_SWAP_SPARSE_H
#define BPC_TESTS_SWAP_SPARSE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/coll.h"
#include "engines/swap/swap_common.h"
#include "engines/swap/swap_internal.h"
#include "swap_ops.h"

typedef struct so_codec {
  int op;
  size_t es;
  char *const *bufs; /* each local block's buffer */
  long encoded;      /* pieces encoded by this rank (a run that encoded none tests nothing) */
} so_codec_t;

static inline size_t so_mask_bytes(size_t count) { return (count + 7) / 8; }

static inline int so_is_identity(const so_codec_t *k, const void *x)
{
  unsigned char id[16];
  so_identity(k->op, id);
  return memcmp(x, id, k->es) == 0;
}

static inline size_t so_enc_encode(void *dst, size_t cap, int lb, size_t off, size_t count,
                                   void *user)
{
  so_codec_t *k = user;
  const char *src = k->bufs[lb] + off * k->es;
  const size_t mb = so_mask_bytes(count);
  if (cap < mb)
    return 0;
  unsigned char *mask = dst;
  memset(mask, 0, mb);
  size_t w = mb;
  for (size_t e = 0; e < count; e++) {
    if (so_is_identity(k, src + e * k->es))
      continue;
    if (w + k->es > cap)
      return 0; /* larger than dense: send it dense */
    mask[e / 8] |= (unsigned char)(1u << (e % 8));
    memcpy((char *)dst + w, src + e * k->es, k->es);
    w += k->es;
  }
  k->encoded++;
  return w;
}

static inline size_t so_enc_count(const unsigned char *mask, size_t from, size_t to)
{
  size_t n = 0;
  for (size_t e = from; e < to; e++)
    n += (mask[e / 8] >> (e % 8)) & 1u;
  return n;
}

static inline int so_enc_check(const void *src, size_t bytes, size_t count, void *user)
{
  const so_codec_t *k = user;
  const size_t mb = so_mask_bytes(count);
  if (bytes < mb)
    return 1;
  return bytes != mb + so_enc_count(src, 0, count) * k->es;
}

static inline int so_enc_blend(int lb, size_t off, void *inout, size_t count, const void *src,
                               size_t bytes, size_t lo, size_t len, int in_first, void *user)
{
  (void)lb;
  (void)off;
  (void)bytes;
  const so_codec_t *k = user;
  const unsigned char *mask = src;
  const char *packed = (const char *)src + so_mask_bytes(count);
  size_t j = so_enc_count(mask, 0, lo);
  for (size_t e = lo; e < lo + len; e++) {
    if (!((mask[e / 8] >> (e % 8)) & 1u))
      continue;
    char *io = (char *)inout + e * k->es;
    if (in_first)
      so_combine1(k->op, packed + j * k->es, io, io);
    else
      so_combine1(k->op, io, packed + j * k->es, io);
    j++;
  }
  return 0;
}

static inline void so_enc_absorb(int lb, size_t off, size_t count, const void *src, size_t bytes,
                                 void *user)
{
  (void)lb, (void)off, (void)count, (void)src, (void)bytes, (void)user;
}

static inline void so_enc_keep(int lb, size_t off, size_t count, void *user)
{
  (void)lb, (void)off, (void)count, (void)user;
}

static inline size_t so_enc_bound(size_t count, void *user)
{
  const so_codec_t *k = user;
  return so_mask_bytes(count) + count * k->es;
}

/* The schedules whose rows declare rounds of a k-vector (the kvec trait of
 * swap_internal.h: k-vectors and partial swaps), names into names[0..],
 * at most cap; returns how many. */
static inline int so_kvec_algos(const char **names, int cap)
{
  int n = 0;
  for (int i = 0; i < bpc__engine_swap.nrows && n < cap; i++)
    if (bpc__swap_row(&bpc__engine_swap.rows[i])->kvec)
      names[n++] = bpc__engine_swap.rows[i].info.name;
  return n;
}

/* bpc_swap's steps (swap_internal.h) with the codec's hooks on the plan.
 * mode 1: a piece travels encoded when that is smaller; 2: always. */
static inline int so_swap_sparse(bpc_ctx_t *ctx, const bpc_assign_t *a, const bpc_type_t *type,
                                 void **bufs, size_t count, const bpc_op_t *op, int opid,
                                 const bpc_swap_params_t *params, bpc_swap_piece_t *pieces,
                                 bpc_swap_info_t *info, int mode, long *encoded)
{
  so_codec_t k = {opid, so_elem_size(opid), (char *const *)bufs, 0};
  bpc__swap_sparse_t hooks;
  memset(&hooks, 0, sizeof hooks);
  hooks.encode = so_enc_encode;
  hooks.check = so_enc_check;
  hooks.blend = so_enc_blend;
  hooks.absorb = so_enc_absorb;
  hooks.keep = so_enc_keep;
  hooks.bound = mode == 2 ? so_enc_bound : NULL;
  hooks.user = &k;
  bpc__swap_plan_t plan;
  bpc__sig_t sig;
  int rc = bpc__swap_plan(ctx, a, type, count, op, params, &plan);
  bpc__sig_init(&sig);
  bpc__swap_plan_sig(&plan, &sig);
  rc = bpc__agree_args(ctx, "swap", rc, &sig);
  plan.sparse = &hooks;
  if (rc == BPC_OK)
    rc = bpc__swap_exec(&plan, bufs, pieces, info);
  bpc__swap_plan_free(&plan);
  *encoded = k.encoded;
  return rc;
}

#endif /* BPC_TESTS_SWAP_SPARSE_H */
