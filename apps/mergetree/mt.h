/*
 * apps/mergetree/mt.h - distributed merge trees and 0-dimensional
 * persistence of a 3-D scalar field (bpc-mergetree).
 *
 * Vertices are the grid points, gid = x + X * (y + Y * z) (x fastest);
 * edges join the 6 face neighbours (across the domain boundary too in a
 * wrapping dimension). The sweep visits vertices in a strict total order:
 * sublevel sets ascending (value, gid), superlevel sets descending
 * (value, gid). A vertex with no earlier neighbour is a birth; where
 * components meet, the one born earliest (the elder) survives and every other
 * dies: a pair (birth, death). The last component is the essential class,
 * paired with -inf (superlevel) or +inf (sublevel), death vertex -1.
 *
 * The distributed algorithm (mt_sweep.c, mt_run.c): every block sweeps the
 * graph of its box (core plus its upper layer: each grid edge is in the box
 * of the block owning its lower end, and neighbouring boxes share one layer
 * of vertices); a vertex is on the region's boundary when a block outside
 * the region also has it. A pair whose component holds no boundary vertex
 * is final. What is left is a reduced tree: the boundary vertices, the
 * elder birth of each subtree holding one, and the vertices where two such
 * subtrees merge, each with an edge to the nearest kept vertex below (with
 * a segmentation, whose labels are pending there, every vertex whose
 * subtree holds a boundary vertex is kept). Merge-
 * reduce glues the trees of a group at their shared vertices, sweeps the
 * union and reduces it again for the larger region; at the full region
 * nothing is on the boundary and every pair is final.
 */
#ifndef BPC_APPS_MT_H
#define BPC_APPS_MT_H

#include <stddef.h>
#include <stdint.h>

#include "bpc.h"

/* ----------------------------------------------------------------- pairs */

typedef struct mt_pair {
  double birth, death; /* death: +-INFINITY for the essential class */
  int64_t bgid, dgid;  /* dgid -1 for the essential class */
} mt_pair_t;

typedef struct mt_pairs {
  mt_pair_t *p;
  size_t n, cap;
} mt_pairs_t;

int mt_pairs_push(mt_pairs_t *v, double b, double d, int64_t bg, int64_t dg);
void mt_pairs_free(mt_pairs_t *v);
/* Sort in sweep order of the birth (elder first); sub = sublevel. */
void mt_pairs_sort(mt_pair_t *p, size_t n, int sub);

/* ------------------------------------------------------------- the sweep */

/* Strict sweep order: nonzero if (va, ga) comes before (vb, gb). */
static inline int mt_before(double va, int64_t ga, double vb, int64_t gb, int sub)
{
  if (va != vb)
    return sub ? va < vb : va > vb;
  return sub ? ga < gb : ga > gb;
}

/* Vertex indices within one sweep (a block's box, a glued tree): 32 bits,
 * half the memory of int64 per index array; a graph of more than
 * MT_IDX_MAX vertices is refused (mt_sweep: -1; the local step names it). */
typedef int32_t mt_idx_t;
#define MT_IDX_MAX INT32_MAX

/* A graph to sweep: n vertices with values and gids (distinct gids), a
 * neighbour enumeration, and which vertices are on the region's boundary. */
typedef struct mt_graph {
  int64_t n; /* <= MT_IDX_MAX */
  const double *val;
  const int64_t *gid;
  const unsigned char *bnd; /* NULL: no boundary (the whole domain) */
  /* write the neighbours of i to out (at most 6 for a grid; CSR for trees);
   * return their number */
  int (*nbrs)(const void *g, mt_idx_t i, mt_idx_t *out, int cap);
  const void *nbr_data;
  int maxdeg; /* capacity of out that nbrs needs */
} mt_graph_t;

/* A reduced tree: kept vertices and the index of the next kept vertex down
 * (-1 at a root), plus the blocks of the region it describes (ascending). */
typedef struct mt_tree {
  int nblk;
  int *blk;
  int64_t n;
  int64_t *gid;
  double *val;
  int64_t *par;
} mt_tree_t;

void mt_tree_free(mt_tree_t *t);

/*
 * Sweep g: append the final pairs to *pairs (and, when g->bnd is NULL, the
 * essential class), and make *out the reduced tree (nodes and parents; the
 * caller sets blk). label (optional, n entries): the gid of each vertex's
 * label, or -1 where it is not final yet (the vertex is kept). Returns 0,
 * or -1 when out of memory or g->n > MT_IDX_MAX.
 */
int mt_sweep(const mt_graph_t *g, int sub, mt_pairs_t *pairs, mt_tree_t *out, int64_t *label);

/* (vertex, label) of the segmentation: the label of a vertex is the birth
 * vertex of its branch (the elder birth of its component when it is swept). */
typedef struct mt_lab {
  int64_t gid, label;
} mt_lab_t;

typedef struct mt_labs {
  mt_lab_t *p;
  size_t n, cap;
} mt_labs_t;

int mt_labs_push(mt_labs_t *v, int64_t gid, int64_t label);

/* Glue trees at their shared gids (the regions of all k) and sweep the union
 * with the boundary flags of the merged region; at the whole domain there
 * is no boundary. *out is a new tree; labs (optional) gets the labels that
 * became final. */
typedef struct mt_geom mt_geom_t;
int mt_glue(const mt_geom_t *geo, mt_tree_t *const *trees, int k, int sub, mt_pairs_t *pairs,
            mt_tree_t *out, mt_labs_t *labs);

/* The heap's high-water mark as sampled (glibc mallinfo2: bytes malloc'd
 * and in use, MPI's and bpc's included, not MPI's shared memory) where the
 * run peaks: at the end of every sweep, twice in every glue (the union's
 * vertices built, its edges built), in every merge callback, after the
 * merge. mt_heap_peak: the largest sample since the last reset minus the
 * heap in use at that reset (bytes; -1 without mallinfo2), then, with
 * reset, start again from what is in use now. Sampling is thread-safe. */
void mt_heap_sample(void);
int64_t mt_heap_peak(int reset);

/* mt_glue with the region's boundary test given: onb(ctx, gid) nonzero for
 * a vertex on it, or whole_given nonzero for a region that is the whole
 * domain (no boundary: survivors are essential); onb NULL: the geometry's
 * test, as mt_glue. For the tiles of one block (mt_run.c). consume: free
 * the input trees' arrays as soon as the union has them (gids and values
 * after the union's vertices, the rest after its edges; on failure they
 * may be partly freed), before the sweep; the caller still destroys the
 * (empty) trees. */
typedef int (*mt_onb_fn)(const void *ctx, int64_t gid);
int mt_glue_region(const mt_geom_t *geo, mt_onb_fn onb, const void *ctx, int whole_given,
                   int consume, mt_tree_t *const *trees, int k, int sub, mt_pairs_t *pairs,
                   mt_tree_t *out, mt_labs_t *labs);

/* ------------------------------------------------------------- geometry */

struct mt_geom {
  int64_t dims[3];
  int wrap[3];
  const bpc_decomp_t *d;
  int nblocks;
  /* per axis and coordinate c: nb[d][4 * c] distinct division indices of
   * the valid (wrapped) coordinates among c - 1, c (1 or 2 of them) in
   * nb[d][4 * c + 1 ..]; gidtab:
   * the block gid of division coordinates i0 + D0 * (i1 + D1 * i2) */
  int divs[3];
  int *nb[3];
  int *gidtab;
};

/* Fill the tables of geo (dims, wrap, d and nblocks set). 0, or -1 when out
 * of memory. mt_geom_free releases them. */
int mt_geom_tables(mt_geom_t *geo);
void mt_geom_free(mt_geom_t *geo);

/* Nonzero if vertex gid lies in the box (core plus upper layer) of a block
 * not in the region: inreg has a byte per block, nonzero for the region's.
 * The blocks whose box holds vertex c own a point of {c - 1, c} per axis:
 * the product of the per-axis division lists (no decomposition lookup per
 * vertex). */
int mt_on_boundary(const mt_geom_t *geo, int64_t gid, const unsigned char *inreg);

/* --------------------------------------------------------------- fields */

typedef enum mt_source { MT_SYNTHETIC = 0, MT_NPY, MT_RAW } mt_source_t;
typedef enum mt_synth { MT_BLOBS = 0, MT_CONSTANT, MT_NOISE } mt_synth_t;

typedef struct mt_field {
  mt_source_t source;
  int64_t dims[3]; /* X, Y, Z: x fastest */
  /* synthetic */
  mt_synth_t synth;
  unsigned seed;
  int nblobs;
  double noise;
  int levels; /* > 0: quantise to this many levels (plateaus, ties) */
  /* files */
  const char *path;
  int is_double; /* element type: float64 (else float32) */
  int64_t offset; /* bytes before the data */
} mt_field_t;

/* The value of the synthetic field at (x, y, z) (rounded to float). */
double mt_synth_value(const mt_field_t *f, int64_t x, int64_t y, int64_t z);
/* Parse the header of a .npy file and fill dims, is_double, offset.
 * 0, or -1 with a message. */
int mt_npy_open(mt_field_t *f, char *msg, size_t len);
/* Check that a raw file (dims, is_double set) is long enough. */
int mt_raw_open(mt_field_t *f, char *msg, size_t len);
/* Write the whole field as .npy (shape Z, Y, X, C order; float32 unless
 * the source is float64). 0 or -1 with a message. */
int mt_npy_write(const mt_field_t *f, const char *path, char *msg, size_t len);
/* Read the points of the box (given as the list of x, y and z coordinates
 * of each dimension, nx*ny*nz values, x fastest) into out. 0 or -1. */
int mt_field_read(const mt_field_t *f, const int64_t *xs, int64_t nx, const int64_t *ys,
                  int64_t ny, const int64_t *zs, int64_t nz, double *out, char *msg,
                  size_t len);

/* ------------------------------------------------------- the whole run */

typedef struct mt_run_params {
  int nblocks;
  int sub;
  int wrap[3];
  int nthreads;
  int labels; /* nonzero: compute the segmentation */
  int tile;   /* > 0: sweep a block wider than this in tiles of at most
               * tile^3 vertices (not with labels); 0: whole blocks */
} mt_run_params_t;

/* The segmentation of this rank's blocks: per local block its core bounds
 * and the label (birth vertex of its branch) of every core vertex, x
 * fastest. */
typedef struct mt_seg {
  int nl;
  bpc_bounds_t *core;
  int64_t **label;
  float **value; /* the field at the same vertices (for the PNG's shading) */
} mt_seg_t;

void mt_seg_free(mt_seg_t *s);

typedef struct mt_run_stats {
  double t_local, t_merge; /* seconds on this rank */
  uint64_t bytes_sent;     /* by this rank in the merge (bpc statistics) */
  int64_t local_nodes;     /* kept nodes after the local step, this rank */
} mt_run_stats_t;

/* Collective over ctx: decompose, sweep every local block, merge-reduce.
 * *pairs gets this rank's final pairs (unsorted), *seg (with p->labels)
 * the segmentation of its blocks. 0 on success; nonzero
 * with a message (the same outcome on every rank). */
int mt_run(bpc_ctx_t *ctx, const mt_field_t *f, const mt_run_params_t *p, mt_pairs_t *pairs,
           mt_seg_t *seg, mt_run_stats_t *st, char *msg, size_t len);

/* The benchmark's baseline: one serial sweep of the whole field (x
 * fastest). 0, or -1 when out of memory. */
int mt_serial_pairs(const int64_t dims[3], const int wrap[3], const float *field, int sub,
                    mt_pairs_t *pairs);

/* Gather bytes from every rank at rank 0 (rank order): *all (malloc'd, rank
 * 0 only; free it) holds *total bytes. 0, or -1 at rank 0 when out of
 * memory. Collective. */
int mt_gather0(const void *mine, size_t bytes, int rank, int size, void **all, size_t *total);

/* Collective writers of the segmentation (mt_out.c): 0, or -1 with a
 * message on every rank. The PNG shows slice z (a colour per label). */
int mt_write_seg_npy(const char *path, const mt_field_t *f, const mt_seg_t *s, int rank,
                     char *msg, size_t len);
int mt_write_seg_vtk(const char *path, const mt_field_t *f, const mt_seg_t *s, int rank,
                     char *msg, size_t len);
int mt_write_seg_png(const char *path, const mt_field_t *f, const mt_seg_t *s, int64_t z,
                     int rank, int size, char *msg, size_t len);

#endif
