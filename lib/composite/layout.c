/*
 * lib/composite/layout.c - the pixel layout handed to the swap engine and
 * what comes back:
 *  - pack: the swap reduces the user's rgba in place (4 floats a pixel);
 *    with depth, rgba and depth stay in their planes (planar: the sparse
 *    hooks carry depth), except beyond 2^32 pixels, where they are
 *    interleaved into one buffer per block (5 floats a pixel); a swap
 *    element is one pixel, or one row (row splits);
 *  - the one call into the swap engine (bpc__composite_swap), with the strategy's
 *    schedule as data;
 *  - unpack: each block's owned piece back into its rgba (and depth);
 *  - gather: every block's piece to the gather rank through the exchange
 *    (counted in the statistics), each received straight into its place.
 */
#include "composite/composite_internal.h"

#include <stdlib.h>
#include <string.h>

#include "comm/comm.h"
#include "engines/swap/swap_common.h"
#include "engines/swap/swap_internal.h"
#include "threads/threads.h"

/* Depth stays planar unless the image is beyond the encoding's 32-bit run
 * starts, or the internal test switch BPC_COMPOSITE_INTERLEAVE=1 asks for
 * the interleaved layout (tests/mpi/test_composite keeps that path tested;
 * it must be the same on every rank: a difference is BPC_EMISMATCH). */
int bpc__composite_interleave_env(void)
{
  const char *e = getenv("BPC_COMPOSITE_INTERLEAVE");
  return e != NULL && strcmp(e, "1") == 0;
}

static int composite_planar(int hasdepth, size_t npix)
{
  return hasdepth && npix <= UINT32_MAX && !bpc__composite_interleave_env();
}

int bpc__composite_pack(bpc__composite_call_t *c)
{
  bpc_ctx_t *ctx = c->ctx;
  const bpc_composite_params_t *P = c->P;
  const int nl = c->nlocal > 0 ? c->nlocal : 1;
  const int stride = c->hasdepth ? 5 : 4;
  const size_t npix = (size_t)c->width * (size_t)c->height;
  c->bufs = calloc((size_t)nl, sizeof *c->bufs);
  c->packed = calloc((size_t)nl, sizeof *c->packed);
  c->packed_cap = calloc((size_t)nl, sizeof *c->packed_cap);
  c->sp = calloc((size_t)nl, sizeof *c->sp);
  if (c->bufs == NULL || c->packed == NULL || c->packed_cap == NULL || c->sp == NULL)
    return bpc__err(ctx, BPC_ENOMEM, "composite: out of memory for %d blocks", c->nlocal);
  if (P->gather_rank == c->rank) {
    c->pos_of = malloc(sizeof(int) * (size_t)(c->nblocks > 0 ? c->nblocks : 1));
    if (c->pos_of == NULL)
      return bpc__err(ctx, BPC_ENOMEM, "composite: out of memory to gather %d blocks",
                      c->nblocks);
    for (int p = 0; p < c->nblocks; p++)
      c->pos_of[P->order != NULL ? P->order[p] : p] = p;
  }
  /* depth: rgba and depth stay in their planes (active.c; the encoding's
   * run starts are 32-bit, so not beyond 2^32 pixels); from this rank's
   * format here, from the agreed one in bpc__composite_format (the same where
   * this rank has blocks; a rank without blocks learns it there) */
  c->planar = composite_planar(c->hasdepth, npix);
  if (c->planar && (c->cp.dpx = calloc((size_t)nl, sizeof *c->cp.dpx)) == NULL)
    return bpc__err(ctx, BPC_ENOMEM, "composite: out of memory for %d blocks", c->nlocal);
  /* Within one process no piece travels: a dense piece is merged straight
   * from its sender's buffer, and finding and copying the active pixels
   * costs more than that unless valid rectangles leave less than half of
   * the pixels to look at and under a quarter of the image is estimated
   * active (doc/composite.md, "One process"). Not with depth: planar pieces
   * are copied into messages either way, so skipping empty pixels pays. */
  int want = P->active_pixels;
  const int one = c->nranks == 1 && !c->planar;
  if (want && one) {
    double area = 0.0;
    for (int i = 0; P->valid != NULL && i < c->nlocal; i++)
      area += (double)P->valid[i].width * (double)P->valid[i].height;
    want = P->valid != NULL && 2.0 * area < (double)c->nlocal * (double)npix;
  }
  double minfrac = 1.0, sumfrac = 0.0;
  for (int i = 0; i < c->nlocal; i++) {
    const bpc_image_t *im = &c->images[i];
    if (c->planar) { /* an output is filled in bpc__composite_runs (outputs_fill) */
      const bpc_image_t *w = P->output != NULL ? &P->output[i] : im;
      c->bufs[i] = w->rgba;
      c->cp.dpx[i] = w->depth;
    } else if (c->hasdepth) { /* read from the input; written back to the output */
      /* from the context's pool: its pages stay mapped from call to call */
      float *pk = c->packed[i] = bpc__pool_get(ctx, npix * 5 * sizeof(float) + 1, &c->packed_cap[i]);
      if (pk == NULL)
        return bpc__err(ctx, BPC_ENOMEM, "composite: out of memory packing a %d x %d image",
                        c->width, c->height);
      for (size_t p = 0; p < npix; p++) {
        memcpy(pk + 5 * p, im->rgba + 4 * p, 4 * sizeof(float));
        pk[5 * p + 4] = im->depth[p];
      }
      c->bufs[i] = pk;
    } else if (P->output != NULL) { /* filled in bpc__composite_runs (outputs_fill) */
      c->bufs[i] = P->output[i].rgba;
    } else {
      c->bufs[i] = im->rgba;
    }
    if (want) {
      /* an estimate (BPC__CP_SAMPLES pixels, of the valid rectangle only
       * if given: its share of the image times its estimated fraction) */
      double f = 0.0;
      const bpc_composite_rect_t *v = P->valid != NULL ? &P->valid[i] : NULL;
      /* planar: rgba decides (an estimate: rgba 0 with a depth counts as empty) */
      const int est = c->planar ? 4 : stride;
      const size_t W = (size_t)c->width;
      /* the input's pixels (an output is not filled yet) */
      const float *px = c->hasdepth && !c->planar ? c->bufs[i] : im->rgba;
      if (v == NULL) {
        f = bpc__composite_active_fraction(px, W, 0, 0, W, (size_t)c->height, est, P->empty_depth);
      } else if (npix > 0 && v->width > 0 && v->height > 0) {
        const size_t vw = (size_t)v->width, vh = (size_t)v->height;
        f = bpc__composite_active_fraction(px, W, (size_t)v->x, (size_t)v->y, vw, vh, est,
                                           P->empty_depth) *
            ((double)vw * (double)vh / (double)npix);
      }
      if (f < minfrac)
        minfrac = f;
      sumfrac += f;
    }
  }
  c->sparse = want && (!one ? minfrac < 0.5 : sumfrac < 0.25 * (double)c->nlocal);
  return BPC_OK;
}

void bpc__composite_format(bpc__composite_call_t *c)
{
  const bpc_composite_params_t *P = c->P;
  bpc__composite_t *cp = &c->cp;
  cp->op = bpc__composite_kind(&P->op);
  cp->stride = c->hasdepth ? 5 : 4;
  cp->px_per_elem = P->split == BPC_COMPOSITE_ROWS ? (size_t)c->width : 1;
  cp->uop = P->op;
  cp->empty_depth = P->empty_depth;
  c->npix = (size_t)c->width * (size_t)c->height;
  cp->npix = c->npix;
  c->count = c->npix == 0 ? 0 : P->split == BPC_COMPOSITE_ROWS ? (size_t)c->height : c->npix;
  c->planar = composite_planar(c->hasdepth, c->npix);
  cp->planar = c->planar;
  c->es = sizeof(float) * (size_t)(c->planar ? 4 : cp->stride) *
          (cp->px_per_elem > 0 ? cp->px_per_elem : 1);
}

/*
 * The one call into the swap engine: the strategy's schedule (swap
 * algorithm id, k-vector) goes in as data through the swap engine's
 * internal entry (lib/engines/swap/swap_internal.h). Compositing has
 * already agreed on everything the schedule depends on (block count, image
 * format, strategy, k-vector, order), so the swap does not pick or agree on
 * its arguments again: plan (local) and, with active pixels (or planar
 * depth), each block's run lists (active.c), one agreement on
 * their outcome (an allocation may fail on one rank), execute (which
 * agrees on the result). The statistics record is "composite".
 */
int bpc__composite_swap(bpc__composite_call_t *c)
{
  const bpc_composite_params_t *P = c->P;
  bpc_swap_params_t S = bpc_swap_params_default();
  S.k = c->k;
  S.nk = c->nk;
  S.order = P->order;
  S.nthreads = P->nthreads;
  const bpc__swap_sparse_t sparse = {bpc__composite_encode_block,
                                     bpc__composite_check,
                                     bpc__composite_blend,
                                     bpc__composite_prepare,
                                     bpc__composite_absorb,
                                     bpc__composite_keep,
                                     c->planar ? bpc__composite_bound : NULL,
                                     &c->cp};
  const bpc_op_t op = {bpc__composite_op,
                       c->cp.op == BPC__COMPOSITE_ZBUFFER ||
                           (c->cp.op == BPC__COMPOSITE_USER && P->op.commutative),
                       &c->cp};
  const bpc_type_t type = bpc_type_contiguous(c->es, MPI_BYTE);
  bpc__swap_plan_t plan;
  int rc = bpc__swap_plan_by_id(c->ctx, c->assign, &type, c->count, &op, &S,
                                (bpc_swap_algorithm_t)c->swap_algo, &plan);
  if (rc == BPC_OK) /* each block's run lists (filled as pieces are sent) */
    rc = bpc__composite_runs(c);
  rc = bpc__agree(c->ctx, rc);
  if (rc == BPC_OK) {
    plan.engine = "composite";
    plan.sparse = c->cp.runs != NULL ? &sparse : NULL;
    plan.src = c->out_src;
    rc = bpc__swap_exec(&plan, c->nlocal > 0 ? c->bufs : NULL, c->nlocal > 0 ? c->sp : NULL,
                        &c->sinfo);
    if (plan.sparse == NULL) { /* no hooks to count: every piece went dense */
      c->cp.bytes_dense += plan.bytes_sent;
      c->cp.bytes_sent += plan.bytes_sent;
    }
    for (int i = 0; rc == BPC_OK && c->cp.init != NULL && i < c->nlocal; i++)
      bpc__composite_finish(&c->cp, i, c->sp[i].offset, c->sp[i].count); /* outputs on demand */
  }
  bpc__swap_plan_free(&plan);
  return rc;
}

void bpc__composite_unpack(bpc__composite_call_t *c, bpc_composite_piece_t *pieces)
{
  const size_t ppe = c->cp.px_per_elem;
  for (int i = 0; i < c->nlocal; i++) {
    const size_t off = c->sp[i].offset * ppe, n = c->sp[i].count * ppe;
    if (pieces != NULL) {
      pieces[i].offset = off;
      pieces[i].count = n;
    }
    if (c->hasdepth && !c->planar) {
      const float *pk = c->packed[i];
      bpc_image_t *im = c->P->output != NULL ? &c->P->output[i] : &c->images[i];
      for (size_t p = off; p < off + n; p++) {
        memcpy(im->rgba + 4 * p, pk + 5 * p, 4 * sizeof(float));
        im->depth[p] = pk[5 * p + 4];
      }
    }
  }
}

/* The number of non-empty pieces the gather rank receives (per plane). */
static int gather_pieces(const bpc__composite_call_t *c)
{
  int n = 0;
  for (int g = 0; g < c->nblocks; g++) {
    bpc_swap_piece_t pc;
    bpc_swap_piece_of(&c->sinfo, c->count, c->pos_of[g], &pc);
    n += pc.count > 0;
  }
  return n;
}

/* The gid of a gathered message and its piece (*pc); a sender that has no
 * non-empty piece is a malformed message (*rc). */
static int gather_piece(const bpc__composite_call_t *c, const bpc__msg_t *m, bpc_swap_piece_t *pc,
                        int *rc)
{
  const int g = m->src_gid;
  memset(pc, 0, sizeof *pc);
  if (g >= 0 && g < c->nblocks)
    bpc_swap_piece_of(&c->sinfo, c->count, c->pos_of[g], pc);
  if (pc->count == 0)
    *rc = bpc__err(c->ctx, BPC_ETRUNC, "composite: a gathered piece from gid %d, which has none",
                   g);
  return g;
}

/* The gather's rank map: the real blocks where the assignment puts them,
 * and one virtual block, gid nblocks, on the gather rank. */
static int gather_rank_of(const void *arg, int gid)
{
  const bpc__composite_call_t *c = arg;
  int r = -1;
  if (gid == c->nblocks)
    return c->P->gather_rank;
  bpc_assign_rank(c->assign, gid, &r);
  return r;
}

/*
 * Every block sends its piece (elements [offset, offset + count) of its
 * swap buffer, without a copy) to the virtual block on the gather rank, which
 * has posted every piece's place in the final image (the user's gather_rgba
 * itself) as its receive destination beforehand, so each piece lands there
 * straight from the wire (a local one with one copy). Planar (depth): the
 * depth piece travels as a second message (seq 1) straight into
 * gather_depth (a scratch plane when that is NULL). Interleaved depth
 * (images over 2^32 pixels): the interleaved image is split into
 * gather_rgba and gather_depth at the end. If the gather rank cannot
 * allocate what it needs, it still takes every piece (into pool buffers)
 * and fails afterwards.
 */
/* With active pixels: every block's piece travels encoded from
 * its runs (an empty piece: 16 bytes) and the gather rank writes the empty
 * pattern and the runs into place. */
static int gather_sparse(bpc__composite_call_t *c)
{
  bpc_ctx_t *ctx = c->ctx;
  const bpc_composite_params_t *P = c->P;
  bpc__composite_t *cp = &c->cp;
  const int root = P->gather_rank, vgid = c->nblocks;
  const size_t ppe = cp->px_per_elem > 0 ? cp->px_per_elem : 1;
  const unsigned long long bd = cp->bytes_dense, bs = cp->bytes_sent, pe = cp->pieces_encoded;
  bpc__exch_t *ex = NULL;
  /* the encoded pieces, kept until the exchange is closed */
  void **bufs = calloc((size_t)(c->nlocal > 0 ? c->nlocal : 1), sizeof *bufs);
  size_t *caps = calloc((size_t)(c->nlocal > 0 ? c->nlocal : 1), sizeof *caps);
  int rc = bufs == NULL || caps == NULL
               ? bpc__err(ctx, BPC_ENOMEM, "composite: out of memory to gather %d pieces",
                          c->nlocal)
               : BPC_OK;
  int rc0 = bpc__exch_open(ctx, NULL, gather_rank_of, c, &ex);
  if (rc0 != BPC_OK) {
    free(bufs);
    free(caps);
    return bpc__exch_end(ctx, &ex, rc0);
  }
  bpc__stats_set_round(ctx, ctx->last.nrounds); /* a round of its own, after the swap's */
  /* a failure here stops this rank: the exchange's end tells the gather
   * rank, whose wait for the pieces not sent then returns */
  for (int i = 0; i < c->nlocal && rc == BPC_OK; i++) {
    if (c->sp[i].count == 0)
      continue;
    const size_t bound =
        bpc__composite_bound(c->sp[i].count, cp) + 8; /* room: never "send dense" */
    void *buf = bufs[i] = bpc__pool_get(ctx, bound, &caps[i]);
    if (buf == NULL) {
      rc = bpc__err(ctx, BPC_ENOMEM, "composite: out of memory for a %zu-byte piece", bound);
      break;
    }
    const size_t eb =
        bpc__composite_encode_block(buf, bound, i, c->sp[i].offset, c->sp[i].count, cp);
    rc = bpc__exch_send(ex, c->lgids[i], vgid, 0, buf, eb, 0);
  }
  cp->bytes_dense = bd; /* the counters are the swap's */
  cp->bytes_sent = bs;
  cp->pieces_encoded = pe;
  /* the pieces in the order they arrive (a wait per gid in gid order would
   * walk past the ones that came earlier: quadratic in the block count) */
  const int npieces = c->rank == root ? gather_pieces(c) : 0;
  for (int k = 0; k < npieces && rc == BPC_OK; k++) {
    bpc_swap_piece_t pc;
    bpc__msg_t *m = NULL;
    int rc2 = bpc__exch_wait(ex, vgid, -1, 0, &m);
    const int g = rc2 == BPC_OK ? gather_piece(c, m, &pc, &rc2) : -1;
    if (rc2 == BPC_OK && bpc__composite_check(m->data, m->bytes, pc.count, cp) != 0)
      rc2 = bpc__err(ctx, BPC_ETRUNC, "composite: block %d's gathered piece (%zu bytes) is "
                                      "malformed", g, m->bytes);
    if (rc2 == BPC_OK) {
      const size_t p0 = pc.offset * ppe;
      bpc__composite_unpack_runs(
          cp, m->data, pc.count * ppe, P->gather_rgba + 4 * p0, 4,
          c->hasdepth && P->gather_depth != NULL ? P->gather_depth + p0 : NULL, 1);
    }
    bpc__msg_release(ex, m);
    rc = rc2;
  }
  rc = bpc__exch_end(ctx, &ex, rc);
  for (int i = 0; bufs != NULL && caps != NULL && i < c->nlocal; i++)
    bpc__pool_put(ctx, bufs[i], caps[i]);
  free(bufs);
  free(caps);
  return rc;
}

int bpc__composite_gather(bpc__composite_call_t *c)
{
  /* the same choice on every rank (from agreed values only) */
  if (c->cp.encode && c->npix <= UINT32_MAX)
    return gather_sparse(c);
  bpc_ctx_t *ctx = c->ctx;
  const bpc_composite_params_t *P = c->P;
  const int root = P->gather_rank, vgid = c->nblocks;
  const int nplanes = c->planar ? 2 : 1;
  const size_t ppe = c->cp.px_per_elem > 0 ? c->cp.px_per_elem : 1;
  const size_t esq[2] = {c->es, sizeof(float) * ppe};
  unsigned char *gbuf = NULL, *dst[2] = {NULL, NULL};
  size_t gcap = 0;
  bpc__exch_t *ex = NULL;
  int rc = bpc__exch_open(ctx, NULL, gather_rank_of, c, &ex);
  if (rc != BPC_OK)
    return bpc__exch_end(ctx, &ex, rc);
  bpc__stats_set_round(ctx, ctx->last.nrounds); /* a round of its own, after the swap's */
  if (c->rank == root) {
    const int interleaved = c->hasdepth && !c->planar;
    const int scratch_depth = c->planar && P->gather_depth == NULL;
    if ((interleaved || scratch_depth) &&
        (gbuf = bpc__pool_get(ctx, c->npix * (interleaved ? 5 : 1) * sizeof(float) + 1, &gcap)) ==
            NULL)
      rc = bpc__err(ctx, BPC_ENOMEM, "composite: out of memory to gather a %d x %d image",
                    c->width, c->height);
    dst[0] = interleaved ? gbuf : (unsigned char *)P->gather_rgba;
    dst[1] = scratch_depth ? gbuf : (unsigned char *)P->gather_depth;
    for (int q = 0; q < nplanes && rc == BPC_OK; q++)
      for (int g = 0; g < c->nblocks && dst[q] != NULL && rc == BPC_OK; g++) {
        bpc_swap_piece_t pc;
        bpc_swap_piece_of(&c->sinfo, c->count, c->pos_of[g], &pc);
        if (pc.count > 0) {
          rc = bpc__exch_recv_into(ex, vgid, g, q, dst[q] + pc.offset * esq[q],
                                   pc.count * esq[q]);
        }
      }
  }
  /* a failure stops this rank (the exchange's end tells the others) */
  for (int q = 0; q < nplanes && rc == BPC_OK; q++)
    for (int i = 0; i < c->nlocal && rc == BPC_OK; i++)
      if (c->sp[i].count > 0) {
        const unsigned char *src = q == 0 ? (const unsigned char *)c->bufs[i]
                                          : (const unsigned char *)c->cp.dpx[i];
        int rc2 = bpc__exch_send(ex, c->lgids[i], vgid, q, src + c->sp[i].offset * esq[q],
                                 c->sp[i].count * esq[q], 0);
        rc = rc2;
      }
  /* the pieces of both planes in the order they arrive (see gather_sparse) */
  const int npieces = c->rank == root ? nplanes * gather_pieces(c) : 0;
  for (int k = 0; k < npieces && rc == BPC_OK; k++) {
    bpc_swap_piece_t pc;
    bpc__msg_t *m = NULL;
    int rc2 = bpc__exch_wait(ex, vgid, -1, -1, &m);
    const int g = rc2 == BPC_OK ? gather_piece(c, m, &pc, &rc2) : -1;
    const int q = rc2 == BPC_OK ? m->seq : 0;
    if (rc2 == BPC_OK && (q < 0 || q >= nplanes))
      rc2 = bpc__err(ctx, BPC_ETRUNC, "composite: block %d's gathered piece is of plane %d",
                     g, q);
    if (rc2 == BPC_OK && m->bytes != pc.count * esq[q])
      rc2 = bpc__err(ctx, BPC_ETRUNC, "composite: block %d's gathered piece has %zu bytes, "
                                      "expected %zu", g, m->bytes, pc.count * esq[q]);
    else if (rc2 == BPC_OK && dst[q] != NULL && m->data != dst[q] + pc.offset * esq[q])
      memcpy(dst[q] + pc.offset * esq[q], m->data, m->bytes); /* arrived before its place was posted */
    bpc__msg_release(ex, m);
    rc = rc2;
  }
  rc = bpc__exch_end(ctx, &ex, rc);
  if (rc == BPC_OK && c->rank == root && c->hasdepth && !c->planar) {
    const size_t ps = 5 * sizeof(float);
    for (size_t p = 0; p < c->npix; p++) {
      memcpy(P->gather_rgba + 4 * p, gbuf + p * ps, 4 * sizeof(float));
      if (P->gather_depth != NULL)
        memcpy(P->gather_depth + p, gbuf + p * ps + 4 * sizeof(float), sizeof(float));
    }
  }
  bpc__pool_put(ctx, gbuf, gcap);
  return rc;
}

/* The outputs (params.output; not with depth interleaved, whose buffers
 * are packed from the input): filled on demand where the run lists and
 * valid rectangles allow it (active.c), else copied from the inputs whole. */
static void outputs_fill(bpc__composite_call_t *c)
{
  const bpc_composite_params_t *P = c->P;
  bpc__composite_t *cp = &c->cp;
  if (P->output == NULL || (c->hasdepth && !c->planar) || c->npix == 0)
    return;
  if (cp->runs != NULL && cp->encode && P->valid != NULL &&
      bpc__composite_outputs_on_demand(cp, c->images) == 0)
    return;
  /* dense: the swap takes the inputs apart from the outputs
   * (bpc__swap_plan_t.src: radix-k sends round 0 from them and copies only
   * what each block keeps, other schedules copy them whole) */
  if (cp->runs == NULL && !c->planar && c->nlocal > 0 &&
      (c->out_src = malloc(sizeof *c->out_src * (size_t)c->nlocal)) != NULL) {
    for (int i = 0; i < c->nlocal; i++)
      c->out_src[i] = c->images[i].rgba;
    return;
  }
  for (int i = 0; i < c->nlocal; i++) {
    memcpy(P->output[i].rgba, c->images[i].rgba, c->npix * 4 * sizeof(float));
    if (c->planar)
      memcpy(P->output[i].depth, c->images[i].depth, c->npix * sizeof(float));
  }
}

static int runs_setup(bpc__composite_call_t *c)
{
  bpc__composite_t *cp = &c->cp;
  if ((!cp->encode && !c->planar) || c->nlocal == 0)
    return BPC_OK;
  if (c->nblocks == 1 && c->P->gather_rank < 0)
    return BPC_OK; /* one block, nothing sent: no need to know its pixels */
  cp->nlocal = c->nlocal;
  cp->px = (float **)c->bufs;
  cp->valid = c->P->valid;
  cp->width = (size_t)c->width;
  cp->nthreads = bpc__threads_resolve(c->P->nthreads);
  cp->min_chunk = bpc__swap_min_chunk(); /* least pixels a thread scans */
  if (bpc__composite_runs_init(cp) != 0)
    return bpc__err(c->ctx, BPC_ENOMEM, "composite: out of memory for the active pixels of %d "
                                        "block(s)", c->nlocal);
  return BPC_OK;
}

int bpc__composite_runs(bpc__composite_call_t *c)
{
  int rc = runs_setup(c);
  if (rc == BPC_OK)
    outputs_fill(c);
  return rc;
}

void bpc__composite_free(bpc__composite_call_t *c)
{
  bpc__composite_runs_free(&c->cp);
  free(c->cp.dpx);
  for (int i = 0; c->packed != NULL && c->packed_cap != NULL && i < c->nlocal; i++)
    bpc__pool_put(c->ctx, c->packed[i], c->packed_cap[i]);
  free(c->packed);
  free(c->packed_cap);
  free(c->bufs);
  free(c->out_src);
  free(c->sp);
  free(c->pos_of);
}

int bpc_composite_piece_of(const bpc_composite_info_t *info, int width, int height,
                           bpc_composite_split_t split, int pos, bpc_composite_piece_t *piece)
{
  if (info == NULL || piece == NULL)
    return BPC_ENULL;
  if (width < 0 || height < 0 || (split != BPC_COMPOSITE_PIXELS && split != BPC_COMPOSITE_ROWS))
    return BPC_EINVAL;
  const size_t per = split == BPC_COMPOSITE_ROWS ? (size_t)width : 1;
  const size_t count = split == BPC_COMPOSITE_ROWS ? (size_t)height
                                                     : (size_t)width * (size_t)height;
  bpc_swap_piece_t sp;
  int rc = bpc_swap_piece_of(&info->swap, count, pos, &sp);
  if (rc != BPC_OK)
    return rc;
  piece->offset = sp.offset * per;
  piece->count = sp.count * per;
  return BPC_OK;
}
