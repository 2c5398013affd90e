/*
 * lib/composite/composite.c - the compositing entry, in the engine frame of
 * doc/design.md: every argument checked on this rank (nothing returns early
 * but a NULL ctx), the strategy picked (strategy.c) and its schedule set
 * (its row's run), this rank's images laid out for the swap engine
 * (layout.c), then ONE agreement (bpc__agree_args_vals) on this rank's
 * validity and on everything that must match across ranks, which also
 * tells ranks without blocks the image format and every rank whether some
 * image is sparse; then the swap, the pieces back, and the gather (whose
 * outcome is agreed once more).
 */
#include "composite/composite_internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "patterns/patterns.h"

bpc_composite_params_t bpc_composite_params_default(void)
{
  bpc_composite_params_t p;
  memset(&p, 0, sizeof p);
  p.algorithm = "auto";
  bpc_op_builtin("over", MPI_FLOAT, &p.op);
  p.split = BPC_COMPOSITE_PIXELS;
  p.active_pixels = 1;
  p.empty_depth = INFINITY;
  p.gather_rank = -1;
  return p;
}

/* This rank's arguments (before any message): the first problem is
 * recorded and returned. Sets c->width/height/hasdepth from the local
 * blocks (all alike) or leaves them 0 (no blocks). */
static int check_local(bpc__composite_call_t *c, int nranks)
{
  bpc_ctx_t *ctx = c->ctx;
  const bpc_composite_params_t *P = c->P;
  char msg[256];
  if (P->op.fn == NULL)
    return bpc__err(ctx, BPC_ENULL,
                    "composite: op.fn is NULL (bpc_op_builtin gives \"over\" "
                    "and \"zbuffer\")");
  if (P->split != BPC_COMPOSITE_PIXELS && P->split != BPC_COMPOSITE_ROWS)
    return bpc__err(ctx, BPC_EINVAL, "composite: unknown split %d", (int)P->split);
  if (P->nthreads < 0)
    return bpc__err(ctx, BPC_EINVAL, "composite: nthreads is %d (0 = OpenMP default, or >= 1)",
                    P->nthreads);
  if (P->gather_rank < -1 || P->gather_rank >= nranks)
    return bpc__err(ctx, BPC_EINVAL, "composite: gather_rank %d is not a rank (0..%d) or -1",
                    P->gather_rank, nranks - 1);
  if (P->gather_rank == c->rank && P->gather_rgba == NULL)
    return bpc__err(ctx, BPC_ENULL, "composite: gather_rgba is NULL on the gather rank %d",
                    c->rank);
  if (P->order != NULL && bpc__perm_check(P->order, c->nblocks, msg, sizeof msg) != BPC_OK)
    return bpc__err(ctx, BPC_EPERM, "composite: order: %s", msg);
  if (c->nlocal > 0 && c->images == NULL)
    return bpc__err(ctx, BPC_ENULL, "composite: images is NULL but this rank has %d block(s)",
                    c->nlocal);
  for (int i = 0; i < c->nlocal; i++) {
    const bpc_image_t *im = &c->images[i], *im0 = &c->images[0];
    if (im->width < 0 || im->height < 0)
      return bpc__err(ctx, BPC_EINVAL, "composite: image of local block %d is %d x %d", i,
                      im->width, im->height);
    if (im->rgba == NULL && (size_t)im->width * (size_t)im->height > 0)
      return bpc__err(ctx, BPC_ENULL, "composite: rgba of local block %d is NULL", i);
    if (bpc__composite_kind(&P->op) == BPC__COMPOSITE_ZBUFFER && im->depth == NULL)
      return bpc__err(ctx, BPC_EINVAL, "composite: z-buffer needs depth (local block %d has none)",
                      i);
    if (im->width != im0->width || im->height != im0->height ||
        (im->depth != NULL) != (im0->depth != NULL))
      return bpc__err(ctx, BPC_EINVAL,
                      "composite: the images of local blocks 0 and %d differ (%d x %d%s, %d x "
                      "%d%s); every block's image must have the same size and depth presence",
                      i, im0->width, im0->height, im0->depth ? " with depth" : "", im->width,
                      im->height, im->depth ? " with depth" : "");
    if (P->valid != NULL) {
      const bpc_composite_rect_t *v = &P->valid[i];
      if (v->x < 0 || v->y < 0 || v->width < 0 || v->height < 0 ||
          (long long)v->x + v->width > im->width || (long long)v->y + v->height > im->height)
        return bpc__err(ctx, BPC_EINVAL,
                        "composite: valid rectangle of local block %d (x %d, y %d, %d x %d) is "
                        "not inside its %d x %d image", i, v->x, v->y, v->width, v->height,
                        im->width, im->height);
    }
    if (P->output != NULL) {
      const bpc_image_t *o = &P->output[i];
      if (o->width != im->width || o->height != im->height || (o->depth != NULL) != (im->depth != NULL))
        return bpc__err(ctx, BPC_EINVAL,
                        "composite: output of local block %d is %d x %d%s, its input %d x %d%s",
                        i, o->width, o->height, o->depth ? " with depth" : "", im->width,
                        im->height, im->depth ? " with depth" : "");
      if (o->rgba == NULL && (size_t)o->width * (size_t)o->height > 0)
        return bpc__err(ctx, BPC_ENULL, "composite: output rgba of local block %d is NULL", i);
      if (o->rgba == im->rgba && o->rgba != NULL)
        return bpc__err(ctx, BPC_EINVAL, "composite: output of local block %d is its input "
                                         "(pass output NULL to work in place)", i);
    }
  }
  if (c->nlocal > 0) {
    c->width = c->images[0].width;
    c->height = c->images[0].height;
    c->hasdepth = c->images[0].depth != NULL;
  }
  return BPC_OK;
}

/* The schedule's k-vector, checked against the block count (a given
 * params.k, or one the strategy computed). */
static int check_schedule(bpc__composite_call_t *c)
{
  char msg[256];
  if (c->k == NULL || c->nk == 0)
    return BPC_OK;
  if (c->nk > BPC_SWAP_MAX_K || bpc__kvec_check(c->nblocks, c->k, c->nk, msg, sizeof msg) != BPC_OK)
    return bpc__err(c->ctx, BPC_EKVEC, "composite: %s",
                    c->nk > BPC_SWAP_MAX_K ? "k-vector has more than BPC_SWAP_MAX_K rounds" : msg);
  return BPC_OK;
}

static int composite_entry(bpc_ctx_t *ctx, const bpc_assign_t *assign, bpc_image_t *images,
                           const bpc_composite_params_t *params, bpc_composite_piece_t *pieces,
                           bpc_composite_info_t *info)
{
  if (ctx == NULL)
    return BPC_ENULL;
  int rc = BPC_OK, nranks = 1;
  const bpc_composite_params_t P = params != NULL ? *params : bpc_composite_params_default();
  const bpc__algo_t *row = NULL;
  bpc_algo_source_t source = BPC_SOURCE_BUILTIN;
  bpc__composite_call_t c;
  memset(&c, 0, sizeof c);
  c.ctx = ctx;
  c.assign = assign;
  c.images = images;
  c.P = &P;
  bpc_ctx_rank(ctx, &c.rank);
  bpc_ctx_size(ctx, &nranks);
  c.nranks = nranks;

  /* 1. this rank's arguments, 2. the strategy and its schedule */
  if (assign == NULL) {
    rc = bpc__err(ctx, BPC_ENULL, "composite: assign is NULL");
  } else {
    bpc_assign_nblocks(assign, &c.nblocks);
    bpc_assign_local(assign, &c.lgids, &c.nlocal);
    rc = check_local(&c, nranks);
  }
  int rc2 = bpc__composite_pick(ctx, P.algorithm, &row, &source);
  rc = rc != BPC_OK ? rc : rc2;
  if (rc == BPC_OK)
    rc = row->run(&c);
  if (rc == BPC_OK)
    rc = check_schedule(&c);
  if (rc == BPC_OK)
    rc = bpc__composite_pack(&c);

  /* 3. what must match, 4. one agreement */
  enum { F_WIDTH, F_HEIGHT, F_DEPTH, F_SPARSE, NF_MAX = BPC__SIG_MAX };
  bpc__sig_t sig;
  long long vals[NF_MAX];
  bpc__sig_init(&sig);
  if (c.nlocal > 0) {
    bpc__sig_int(&sig, "image width", c.width);
    bpc__sig_int(&sig, "image height", c.height);
    bpc__sig_int(&sig, "depth presence", c.hasdepth);
  } else { /* no image here: learn the format from the others */
    bpc__sig_open(&sig, "image width");
    bpc__sig_open(&sig, "image height");
    bpc__sig_open(&sig, "depth presence");
  }
  bpc__sig_max(&sig, "sparse images", c.sparse);
  bpc__sig_int(&sig, "block count", c.nblocks);
  bpc__sig_assign(&sig, assign);
  bpc__sig_int(&sig, "op", P.op.fn == NULL ? -1 : (int)bpc__composite_kind(&P.op));
  bpc__sig_int(&sig, "split", P.split);
  bpc__sig_int(&sig, "strategy", row != NULL ? row->info.id : 0);
  bpc__sig_bytes(&sig, "k-vector", c.k, sizeof(int) * (size_t)(c.k != NULL ? c.nk : 0));
  bpc__sig_bytes(&sig, "order", P.order,
                 sizeof(int) * (size_t)(P.order != NULL ? c.nblocks : 0));
  bpc__sig_int(&sig, "active_pixels", P.active_pixels != 0);
  bpc__sig_bytes(&sig, "empty_depth", &P.empty_depth, sizeof P.empty_depth);
  bpc__sig_int(&sig, "gather_rank", P.gather_rank);
  bpc__sig_int(&sig, "op.commutative", P.op.commutative != 0);
  bpc__sig_int(&sig, "BPC_COMPOSITE_INTERLEAVE", bpc__composite_interleave_env());
  rc = bpc__agree_args_vals(ctx, "composite", rc, &sig, vals);
  if (rc != BPC_OK)
    goto cleanup;
  if (vals[F_WIDTH] != BPC__SIG_NONE) {
    c.width = (int)vals[F_WIDTH];
    c.height = (int)vals[F_HEIGHT];
    c.hasdepth = (int)vals[F_DEPTH];
  } /* else no block has an image anywhere: 0 x 0 */
  bpc__composite_format(&c);
  c.cp.encode = P.active_pixels && vals[F_SPARSE] != 0;

  /* 5. the strategy's schedule on the swap engine (planned and run; no second
   * agreement on the arguments) */
  rc = bpc__composite_swap(&c);
  if (rc != BPC_OK)
    goto cleanup;
  bpc__composite_unpack(&c, pieces);
  /* 6. the gather (its exchange's end agrees on its outcome) */
  if (P.gather_rank >= 0)
    rc = bpc__composite_gather(&c);
  if (rc == BPC_OK && info != NULL) {
    memset(info, 0, sizeof *info);
    info->algorithm = (bpc_composite_strategy_t)row->info.id;
    snprintf(info->name, sizeof info->name, "%s", row->info.name);
    info->source = source;
    info->swap = c.sinfo;
    info->bytes_dense = c.cp.bytes_dense;
    info->bytes_sent = c.cp.bytes_sent;
    info->bytes_saved = c.cp.bytes_dense > c.cp.bytes_sent ? c.cp.bytes_dense - c.cp.bytes_sent : 0;
  }

cleanup:
  bpc__composite_free(&c);
  return rc;
}

/* The public entry: the re-entrancy guard (bpc__enter) around the call. */
int bpc_composite(bpc_ctx_t *ctx, const bpc_assign_t *assign, bpc_image_t *images,
                  const bpc_composite_params_t *params, bpc_composite_piece_t *pieces,
                  bpc_composite_info_t *info)
{
  BPC__GUARDED_RETURN(ctx, "bpc_composite",
      composite_entry(ctx, assign, images, params, pieces, info));
}
