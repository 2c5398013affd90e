/*
 * lib/composite/composite.c - the compositing entry: argument checks and
 * their agreement over ranks, the strategy table and selection, the pixel
 * operators (over, z-buffer, user), the pixel layout handed to the swap
 * engine (the user's rgba in place, or rgba+depth interleaved), the gather
 * of the final image, and visibility orders from a view.
 */
#include "composite/composite_internal.h"

#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ------------------------------------------------------------ strategies */

static const bpc_composite_strategy_info_t g_table[] = {
    {BPC_COMPOSITE_RADIXK, "radixk", "radix-k rounds (k-vector given or automatic)"},
    {BPC_COMPOSITE_BINARY_SWAP, "binary-swap", "rounds of 2 (odd factors as extra rounds)"},
    {BPC_COMPOSITE_DIRECT_SEND, "direct-send", "one round: every piece straight to its owner"},
    {BPC_COMPOSITE_SHIFT, "shift", "shift-permutation stages, compositing overlapped"},
    {BPC_COMPOSITE_PIPELINE, "pipeline", "parallel pipeline: partials travel between neighbours"},
};
#define NSTRAT ((int)(sizeof g_table / sizeof g_table[0]))

static const bpc__cp_setup_fn g_setup[] = {NULL, bpc__cp_radixk, bpc__cp_binary_swap,
                                           bpc__cp_direct_send, bpc__cp_shift, bpc__cp_pipeline};

int bpc_composite_strategies(const bpc_composite_strategy_info_t **table, int *n)
{
  if (table == NULL || n == NULL)
    return BPC_ENULL;
  *table = g_table;
  *n = NSTRAT;
  return BPC_OK;
}

/* name -> id; 0 for "auto"; -1 unknown */
static int strategy_id(const char *name)
{
  if (name == NULL || strcasecmp(name, "auto") == 0)
    return 0;
  for (int i = 0; i < NSTRAT; i++)
    if (strcasecmp(name, g_table[i].name) == 0)
      return g_table[i].id;
  return -1;
}

bpc_composite_params_t bpc_composite_params_default(void)
{
  bpc_composite_params_t p;
  memset(&p, 0, sizeof p);
  p.strategy = "auto";
  p.op = BPC_COMPOSITE_OVER;
  p.split = BPC_COMPOSITE_PIXELS;
  p.active_pixels = 1;
  p.gather_rank = -1;
  return p;
}

/* ------------------------------------------------------------- operators */

static int cp_op(void *inout, const void *in, size_t count, int in_first, void *user)
{
  const bpc__cp_t *cp = user;
  const size_t n = count * cp->px_per_elem;
  const int st = cp->stride;
  float *o = inout;
  const float *a = in;
  if (cp->op == BPC_COMPOSITE_USER)
    return cp->ufn(o, a, n, st, in_first, cp->user);
  if (cp->op == BPC_COMPOSITE_OVER) {
    if (st == 4) {
      if (in_first) {
        for (size_t i = 0; i < 4 * n; i += 4) {
          const float t = 1.0f - a[i + 3];
          o[i] = a[i] + t * o[i];
          o[i + 1] = a[i + 1] + t * o[i + 1];
          o[i + 2] = a[i + 2] + t * o[i + 2];
          o[i + 3] = a[i + 3] + t * o[i + 3];
        }
      } else {
        for (size_t i = 0; i < 4 * n; i += 4) {
          const float t = 1.0f - o[i + 3];
          o[i] = o[i] + t * a[i];
          o[i + 1] = o[i + 1] + t * a[i + 1];
          o[i + 2] = o[i + 2] + t * a[i + 2];
          o[i + 3] = o[i + 3] + t * a[i + 3];
        }
      }
    } else {
      for (size_t i = 0; i < 5 * n; i += 5) {
        const float *f = in_first ? a + i : o + i; /* front */
        const float *b = in_first ? o + i : a + i; /* back */
        const float t = 1.0f - f[3];
        float r[5];
        for (int c = 0; c < 4; c++)
          r[c] = f[c] + t * b[c];
        r[4] = f[3] != 0.0f ? f[4] : b[4];
        memcpy(o + i, r, sizeof r);
      }
    }
    return 0;
  }
  /* z-buffer: smaller depth wins; ties go to the larger rgba bit pattern */
  for (size_t i = 0; i < 5 * n; i += 5) {
    int take = a[i + 4] < o[i + 4];
    if (!take && a[i + 4] == o[i + 4]) {
      uint32_t wa[4], wo[4];
      memcpy(wa, a + i, sizeof wa);
      memcpy(wo, o + i, sizeof wo);
      for (int c = 0; c < 4; c++)
        if (wa[c] != wo[c]) {
          take = wa[c] > wo[c];
          break;
        }
    }
    if (take)
      memcpy(o + i, a + i, 5 * sizeof(float));
  }
  return 0;
}

/* ------------------------------------------------------------ piece math */

int bpc_composite_piece_of(const bpc_composite_info_t *info, int width, int height, int split,
                           int pos, bpc_composite_piece_t *piece)
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

/* ------------------------------------------------------------ view order */

typedef struct {
  long long key;
  int gid;
} okey_t;

static int okey_cmp(const void *x, const void *y)
{
  const okey_t *a = x, *b = y;
  if (a->key != b->key)
    return a->key < b->key ? -1 : 1;
  return a->gid < b->gid ? -1 : (a->gid > b->gid);
}

int bpc_composite_order_view(int dim, const int *divs, const double *dir, const double *eye,
                             int back_to_front, int *order)
{
  if (divs == NULL || order == NULL || (dir == NULL && eye == NULL))
    return BPC_ENULL;
  if (dim < 1 || dim > BPC_MAX_DIM)
    return BPC_EINVAL;
  long long n = 1;
  for (int a = 0; a < dim; a++) {
    if (divs[a] < 1)
      return BPC_EINVAL;
    n *= divs[a];
    if (n > INT_MAX)
      return BPC_EINVAL;
  }
  okey_t *k = malloc(sizeof *k * (size_t)n);
  if (k == NULL)
    return BPC_ENOMEM;
  for (int g = 0; g < (int)n; g++) {
    int rest = g;
    long long key = 0;
    for (int a = 0; a < dim; a++) {
      const int c = rest % divs[a];
      rest /= divs[a];
      if (eye != NULL) {
        /* the eye's slab along this axis (may lie outside the grid) */
        const double e = floor(eye[a]);
        const double d = fabs((double)c - (e < -1.0 ? -1.0 : e > divs[a] ? divs[a] : e));
        key += (long long)d;
      } else if (dir[a] > 0.0) {
        key += c;
      } else if (dir[a] < 0.0) {
        key += divs[a] - 1 - c;
      }
    }
    k[g].key = key;
    k[g].gid = g;
  }
  qsort(k, (size_t)n, sizeof *k, okey_cmp);
  for (int i = 0; i < (int)n; i++)
    order[back_to_front ? (int)n - 1 - i : i] = k[i].gid;
  free(k);
  return BPC_OK;
}

/* --------------------------------------------------------------- the call */

/* Pick the strategy: argument, else BPC_COMPOSITE_STRATEGY, else radixk. */
static int choose(bpc_ctx_t *ctx, const char *name, int *id, int *source)
{
  *source = 0;
  int s = strategy_id(name);
  if (s < 0)
    return bpc__err(ctx, BPC_EALGO,
                    "composite: unknown strategy \"%s\" (radixk, binary-swap, direct-send, shift, "
                    "pipeline or auto)", name);
  if (s == 0) {
    const char *env = getenv("BPC_COMPOSITE_STRATEGY");
    if (env != NULL && *env != '\0') {
      s = strategy_id(env);
      if (s < 0)
        return bpc__err(ctx, BPC_EALGO,
                        "composite: unknown strategy \"%s\" in BPC_COMPOSITE_STRATEGY", env);
      *source = 1;
    }
  }
  *id = s == 0 ? BPC_COMPOSITE_RADIXK : s;
  return BPC_OK;
}

/* Local argument checks (before any message). */
static int check_local(bpc_ctx_t *ctx, const bpc_assign_t *assign, const bpc_image_t *images,
                       const bpc_composite_params_t *P, int nlocal, int rank, int nranks)
{
  if (P->op != BPC_COMPOSITE_OVER && P->op != BPC_COMPOSITE_ZBUFFER &&
      P->op != BPC_COMPOSITE_USER)
    return bpc__err(ctx, BPC_EINVAL, "composite: unknown operator %d", P->op);
  if (P->op == BPC_COMPOSITE_USER && P->user_fn == NULL)
    return bpc__err(ctx, BPC_ENULL, "composite: BPC_COMPOSITE_USER without user_fn");
  if (P->split != BPC_COMPOSITE_PIXELS && P->split != BPC_COMPOSITE_ROWS)
    return bpc__err(ctx, BPC_EINVAL, "composite: unknown split %d", P->split);
  if (P->gather_rank < -1 || P->gather_rank >= nranks)
    return bpc__err(ctx, BPC_EINVAL, "composite: gather_rank %d is not a rank (0..%d) or -1",
                    P->gather_rank, nranks - 1);
  if (P->gather_rank == rank && P->gather_rgba == NULL)
    return bpc__err(ctx, BPC_ENULL, "composite: gather_rgba is NULL on the gather rank %d", rank);
  if (nlocal > 0 && images == NULL)
    return bpc__err(ctx, BPC_ENULL, "composite: images is NULL but this rank has %d block(s)",
                    nlocal);
  (void)assign;
  for (int i = 0; i < nlocal; i++) {
    const bpc_image_t *im = &images[i];
    if (im->width < 0 || im->height < 0)
      return bpc__err(ctx, BPC_EINVAL, "composite: image of local block %d is %d x %d", i,
                      im->width, im->height);
    if (im->rgba == NULL && (size_t)im->width * (size_t)im->height > 0)
      return bpc__err(ctx, BPC_ENULL, "composite: rgba of local block %d is NULL", i);
    if (P->op == BPC_COMPOSITE_ZBUFFER && im->depth == NULL)
      return bpc__err(ctx, BPC_EINVAL, "composite: z-buffer needs depth (local block %d has none)",
                      i);
  }
  return BPC_OK;
}

int bpc_composite(bpc_ctx_t *ctx, const bpc_assign_t *assign, bpc_image_t *images,
                  const bpc_composite_params_t *params, bpc_composite_piece_t *pieces,
                  bpc_composite_info_t *info)
{
  if (ctx == NULL)
    return BPC_ENULL;
  int rc = BPC_OK, rank = 0, nranks = 1, nlocal = 0, nblocks = 0, sid = 0, source = 0;
  const int *lgids = NULL;
  bpc_composite_params_t P = params != NULL ? *params : bpc_composite_params_default();
  MPI_Comm comm = MPI_COMM_NULL;
  void **bufs = NULL;
  float **packed = NULL;
  bpc_swap_piece_t *sp = NULL;
  unsigned char *gbuf = NULL;
  int *pos_of = NULL;
  MPI_Request *reqs = NULL;
  bpc__cp_t cp;
  memset(&cp, 0, sizeof cp);
  int W = 0, H = 0, hasdepth = 0;

  bpc_ctx_rank(ctx, &rank);
  bpc_ctx_size(ctx, &nranks);
  if (bpc_ctx_comm(ctx, &comm) != BPC_OK)
    comm = MPI_COMM_NULL;
  if (assign == NULL) {
    rc = bpc__err(ctx, BPC_ENULL, "composite: assign is NULL");
    goto agree;
  }
  bpc_assign_nblocks(assign, &nblocks);
  bpc_assign_local(assign, &lgids, &nlocal);
  rc = check_local(ctx, assign, images, &P, nlocal, rank, nranks);
  if (rc == BPC_OK)
    rc = choose(ctx, P.strategy, &sid, &source);

agree:
  rc = bpc__agree(ctx, rc);
  if (rc != BPC_OK)
    goto cleanup;

  /* sizes and depth presence must agree over every block of every rank;
   * the smallest fraction of active pixels decides whether to encode */
  {
    /* v: min w, -max w, min h, -max h, min depth, -max depth, then the
     * parameters that must match: gather rank, strategy, op, split */
    enum { NV = 14 };
    int v[NV];
    for (int i = 0; i < 6; i++)
      v[i] = INT_MAX;
    const int same[4] = {P.gather_rank, sid, P.op, P.split};
    for (int i = 0; i < 4; i++) {
      v[6 + 2 * i] = same[i];
      v[7 + 2 * i] = -same[i];
    }
    for (int i = 0; i < nlocal; i++) {
      const bpc_image_t *im = &images[i];
      const int d = im->depth != NULL;
      v[0] = im->width < v[0] ? im->width : v[0];
      v[1] = -im->width < v[1] ? -im->width : v[1];
      v[2] = im->height < v[2] ? im->height : v[2];
      v[3] = -im->height < v[3] ? -im->height : v[3];
      v[4] = d < v[4] ? d : v[4];
      v[5] = -d < v[5] ? -d : v[5];
    }
    if (comm != MPI_COMM_NULL && nranks > 1) {
      int g[NV];
      if (MPI_Allreduce(v, g, NV, MPI_INT, MPI_MIN, comm) != MPI_SUCCESS) {
        rc = bpc__err(ctx, BPC_EMPI, "composite: MPI_Allreduce of the image sizes failed");
        goto cleanup;
      }
      memcpy(v, g, sizeof v);
    }
    static const char *const what[4] = {"gather_rank", "the strategy", "op", "split"};
    for (int i = 0; i < 4; i++)
      if (v[6 + 2 * i] != -v[7 + 2 * i]) {
        rc = bpc__err(ctx, BPC_EINVAL, "composite: %s differs between ranks (%d..%d)", what[i],
                      v[6 + 2 * i], -v[7 + 2 * i]);
        goto cleanup;
      }
    if (v[0] == INT_MAX) { /* no block anywhere: nothing to do */
      W = H = 0;
    } else if (v[0] != -v[1] || v[2] != -v[3] || v[4] != -v[5]) {
      rc = bpc__err(ctx, BPC_EINVAL,
                    "composite: the blocks' images differ: widths %d..%d, heights %d..%d, %s",
                    v[0], -v[1], v[2], -v[3],
                    v[4] != -v[5] ? "some with depth and some without" : "depth alike");
      goto cleanup;
    } else {
      W = v[0];
      H = v[2];
      hasdepth = v[4];
    }
  }

  /* pixel layout for the swap engine */
  cp.op = P.op;
  cp.stride = hasdepth ? 5 : 4;
  cp.px_per_elem = P.split == BPC_COMPOSITE_ROWS ? (size_t)W : 1;
  cp.ufn = P.user_fn;
  cp.user = P.user;
  const size_t npix = (size_t)W * (size_t)H;
  const size_t count = npix == 0 ? 0 : P.split == BPC_COMPOSITE_ROWS ? (size_t)H : npix;
  const size_t es = sizeof(float) * (size_t)cp.stride * (cp.px_per_elem > 0 ? cp.px_per_elem : 1);
  bufs = calloc((size_t)(nlocal > 0 ? nlocal : 1), sizeof *bufs);
  packed = calloc((size_t)(nlocal > 0 ? nlocal : 1), sizeof *packed);
  sp = calloc((size_t)(nlocal > 0 ? nlocal : 1), sizeof *sp);
  if (bufs == NULL || packed == NULL || sp == NULL)
    rc = bpc__err(ctx, BPC_ENOMEM, "composite: out of memory for %d blocks", nlocal);
  double minfrac = 1.0;
  for (int i = 0; i < nlocal && rc == BPC_OK; i++) {
    if (hasdepth) {
      packed[i] = malloc(npix * 5 * sizeof(float) + 1);
      if (packed[i] == NULL) {
        rc = bpc__err(ctx, BPC_ENOMEM, "composite: out of memory packing a %d x %d image", W, H);
        break;
      }
      for (size_t p = 0; p < npix; p++) {
        memcpy(packed[i] + 5 * p, images[i].rgba + 4 * p, 4 * sizeof(float));
        packed[i][5 * p + 4] = images[i].depth[p];
      }
      bufs[i] = packed[i];
    } else {
      bufs[i] = images[i].rgba;
    }
    if (P.active_pixels) {
      double f = bpc__cp_active_fraction(bufs[i], npix, cp.stride);
      if (f < minfrac)
        minfrac = f;
    }
  }
  /* gather resources, before anything is sent */
  if (rc == BPC_OK && P.gather_rank >= 0) {
    if (npix * sizeof(float) * (size_t)cp.stride > (size_t)INT_MAX) {
      rc = bpc__err(ctx, BPC_ERANGE, "composite: a %d x %d image is too large to gather", W, H);
    } else {
      reqs = malloc(sizeof(MPI_Request) * (size_t)(nblocks > nlocal ? nblocks : nlocal) + 1);
      if (rank == P.gather_rank) {
        pos_of = malloc(sizeof(int) * (size_t)nblocks);
        if (hasdepth)
          gbuf = malloc(npix * 5 * sizeof(float) + 1);
        if (pos_of != NULL)
          for (int p = 0; p < nblocks; p++)
            pos_of[P.order != NULL && P.order[p] >= 0 && P.order[p] < nblocks ? P.order[p] : p] =
                p;
      }
      if (reqs == NULL || (rank == P.gather_rank && (pos_of == NULL || (hasdepth && gbuf == NULL))))
        rc = bpc__err(ctx, BPC_ENOMEM, "composite: out of memory to gather a %d x %d image", W, H);
    }
  }
  /* encode when some block's image is less than half active (agreed) */
  {
    int loc[2] = {rc, minfrac < 0.5 ? 1 : 0}, glob[2] = {rc, loc[1]};
    rc = bpc__agree(ctx, rc);
    if (rc != BPC_OK)
      goto cleanup;
    if (comm != MPI_COMM_NULL && nranks > 1) {
      if (MPI_Allreduce(&loc[1], &glob[1], 1, MPI_INT, MPI_MAX, comm) != MPI_SUCCESS) {
        rc = bpc__err(ctx, BPC_EMPI, "composite: MPI_Allreduce failed");
        goto cleanup;
      }
    }
    cp.encode = P.active_pixels && glob[1];
  }

  /* run the strategy on the swap engine */
  bpc_swap_params_t S = bpc_swap_params_default();
  int kbuf[BPC_SWAP_MAX_K];
  rc = g_setup[sid](ctx, nblocks, &P, &S, kbuf);
  if (rc != BPC_OK)
    goto cleanup;
  S.order = P.order;
  S.nthreads = P.nthreads;
  bpc_swap_codec_t codec = {bpc__cp_encode, bpc__cp_decode, &cp};
  S.codec = &codec;
  bpc_swap_op_t op = {cp_op, P.op == BPC_COMPOSITE_ZBUFFER ||
                                 (P.op == BPC_COMPOSITE_USER && P.user_commutative),
                      &cp};
  bpc_type_t type = bpc_type_contiguous(es, MPI_BYTE);
  bpc_swap_info_t sinfo;
  memset(&sinfo, 0, sizeof sinfo);
  rc = bpc_swap(ctx, assign, &type, nlocal > 0 ? bufs : NULL, count, &op, &S,
                nlocal > 0 ? sp : NULL, &sinfo);
  if (rc != BPC_OK)
    goto cleanup;

  /* the owned pieces back into the user's layout */
  for (int i = 0; i < nlocal; i++) {
    const size_t off = sp[i].offset * cp.px_per_elem, n = sp[i].count * cp.px_per_elem;
    if (pieces != NULL) {
      pieces[i].offset = off;
      pieces[i].count = n;
    }
    if (hasdepth)
      for (size_t p = off; p < off + n; p++) {
        memcpy(images[i].rgba + 4 * p, packed[i] + 5 * p, 4 * sizeof(float));
        images[i].depth[p] = packed[i][5 * p + 4];
      }
  }

  /* gather to one rank: every block's piece goes straight from its buffer
   * to its place (without depth: the final image itself) with point-to-point
   * messages under a tag reserved for this call; ranks send their blocks in
   * local (ascending gid) order, which the root's receives follow */
  if (P.gather_rank >= 0) {
    const int tag = bpc__next_tag(ctx);
    const int root = P.gather_rank;
    const size_t ps = sizeof(float) * (size_t)cp.stride;
    unsigned char *dst = hasdepth ? gbuf : (unsigned char *)P.gather_rgba;
    int nreq = 0;
    for (int i = 0; i < nlocal && rank == root; i++) /* local pieces */
      if (sp[i].count > 0)
        memcpy(dst + sp[i].offset * es, (unsigned char *)bufs[i] + sp[i].offset * es,
               sp[i].count * es);
    if (rank == root) {
      for (int g = 0; g < nblocks && rc == BPC_OK; g++) {
        int r = 0;
        bpc_swap_piece_t pc;
        bpc_assign_rank(assign, g, &r);
        bpc_swap_piece_of(&sinfo, count, pos_of[g], &pc);
        if (r == root || pc.count == 0)
          continue;
        if (MPI_Irecv(dst + pc.offset * es, (int)(pc.count * es), MPI_BYTE, r, tag, comm,
                      &reqs[nreq++]) != MPI_SUCCESS)
          rc = bpc__err(ctx, BPC_EMPI, "composite: MPI_Irecv of a gathered piece failed");
      }
    } else {
      for (int i = 0; i < nlocal && rc == BPC_OK; i++)
        if (sp[i].count > 0 &&
            MPI_Isend((unsigned char *)bufs[i] + sp[i].offset * es, (int)(sp[i].count * es),
                      MPI_BYTE, root, tag, comm, &reqs[nreq++]) != MPI_SUCCESS)
          rc = bpc__err(ctx, BPC_EMPI, "composite: MPI_Isend of a piece to rank %d failed", root);
    }
    if (nreq > 0 && MPI_Waitall(nreq, reqs, MPI_STATUSES_IGNORE) != MPI_SUCCESS && rc == BPC_OK)
      rc = bpc__err(ctx, BPC_EMPI, "composite: gathering the image failed");
    if (rc == BPC_OK && rank == root && hasdepth)
      for (size_t p = 0; p < npix; p++) {
        memcpy(P.gather_rgba + 4 * p, gbuf + p * ps, 4 * sizeof(float));
        if (P.gather_depth != NULL)
          memcpy(P.gather_depth + p, gbuf + p * ps + 4 * sizeof(float), sizeof(float));
      }
    rc = bpc__agree(ctx, rc);
  }

  if (info != NULL) {
    memset(info, 0, sizeof *info);
    info->strategy = sid;
    snprintf(info->name, sizeof info->name, "%s", g_table[sid - 1].name);
    info->swap = sinfo;
    info->source = source;
    info->bytes_dense = cp.bytes_dense;
    info->bytes_sent = cp.bytes_sent;
    info->bytes_saved = cp.bytes_dense - cp.bytes_sent;
  }

cleanup:
  for (int i = 0; packed != NULL && i < nlocal; i++)
    free(packed[i]);
  free(packed);
  free(bufs);
  free(sp);
  free(gbuf);
  free(pos_of);
  free(reqs);
  return rc;
}
