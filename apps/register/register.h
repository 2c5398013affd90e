/*
 * apps/register/register.h - the pieces of bpc-register (series
 * registration with the prefix scan): frames (synthetic or PNG), rigid
 * transforms, operator A (pairwise alignment) and operator B (compose and
 * refine). No MPI here: bpc-register.c does the distribution.
 *
 * Coordinates are centred: a pixel (x, y) of a W x H frame is the point
 * q = (x - (W-1)/2, y - (H-1)/2). A rigid transform maps a point q of frame
 * `from` to the point R(angle) q + t of frame `to`; it says where the
 * content seen at q in frame `from` lies in frame `to`.
 */
#ifndef BPC_APPS_REGISTER_H
#define BPC_APPS_REGISTER_H

#include <stddef.h>
#include <stdint.h>

/* The scan's item (contiguous, 40 bytes): phi_{to,from}. */
typedef struct reg_xf {
  double angle, tx, ty; /* q_to = R(angle) q_from + (tx, ty) */
  int32_t to, from;     /* frame indices: to <= from */
  int32_t refined;      /* operator B: GN steps accepted (diagnostic) */
  int32_t pad;
} reg_xf_t;

/* Where frames come from. */
typedef struct reg_source {
  int nframes, W, H;
  /* synthetic (paths == NULL) */
  uint64_t seed;
  double noise; /* amplitude of the uniform noise, grey values in [0, 1] */
  /* PNG files (8/16-bit grey) */
  char **paths;
} reg_source_t;

/*
 * A cache of loaded frames shared by the threads of one process: operator B
 * loads its two end frames on every call, and frame 0 (or a block's first
 * frame) is an end of most of them. At most `nslots` frames stay loaded
 * (least recently used out first, never one in use); a frame asked for
 * while every slot is in use is loaded for that caller alone. Thread-safe.
 */
typedef struct reg_cache reg_cache_t;
reg_cache_t *reg_cache_new(const reg_source_t *s, int nslots);
/* Frame i (load it on a miss), or NULL with a message; give it back with
 * reg_cache_put. */
const float *reg_cache_get(reg_cache_t *c, int i, char *err, size_t errlen);
void reg_cache_put(reg_cache_t *c, const float *img);
/* Loads made (misses) and calls answered from the cache (hits). */
void reg_cache_counts(const reg_cache_t *c, long long *loads, long long *hits);
void reg_cache_free(reg_cache_t *c);

/* Operator B's settings (the `user` of the scan operator). */
typedef struct reg_opts {
  const reg_source_t *src;
  reg_cache_t *cache; /* NULL: load every frame B needs anew */
  int gn_pair;    /* Gauss-Newton iterations of operator A (after phase correlation) */
  int gn_refine;  /* Gauss-Newton steps of operator B's refinement (0: compose only) */
  double min_overlap; /* B refines only when this fraction of the frame overlaps */
} reg_opts_t;

/* ---------------------------------------------------------------- frames */

/* The known motion of synthetic frame i: phi_{0,i} (frame 0 is the
 * identity). Deterministic in (seed, i). */
void reg_synthetic_truth(const reg_source_t *s, int i, reg_xf_t *out);

/* Load frame i into a new W*H array of grey values in [0, 1] (row 0 at the
 * top). NULL on failure with a sentence in err. Thread-safe. */
float *reg_frame_load(const reg_source_t *s, int i, char *err, size_t errlen);

/* Bilinear sample of a frame at centred point (qx, qy); 0 with *inside = 0
 * when the point is outside [0, W-1] x [0, H-1]. */
float reg_sample(const float *img, int W, int H, double qx, double qy, int *inside);

/* ------------------------------------------------------------ transforms */

/* out = phi_{l.to, r.from} = l after r: q -> R_l (R_r q + t_r) + t_l. */
void reg_compose(const reg_xf_t *l, const reg_xf_t *r, reg_xf_t *out);

/* The inverse of x (to and from swapped). */
void reg_invert(const reg_xf_t *x, reg_xf_t *out);

/* Operator A: estimate phi_{i-1,i} from frames i-1 (`prev`) and i (`cur`):
 * phase correlation (translation) then o->gn_pair Gauss-Newton iterations
 * (angle and translation). Returns 0, or -1 with a sentence in err. */
int reg_align_pair(const reg_opts_t *o, const float *prev, const float *cur, int i,
                   reg_xf_t *out, char *err, size_t errlen);

/* Gauss-Newton refinement of x (mapping frame `from` into frame `to`) so
 * that to-frame(x(q)) matches from-frame(q) over the overlap: at most
 * `steps` steps; a step that does not lower the mean squared difference is
 * rejected and ends the refinement. Returns the steps accepted. Needs at
 * least min_overlap of the frame's pixels to overlap (else 0 steps). */
int reg_refine(const float *to_img, const float *from_img, int W, int H, reg_xf_t *x,
               int steps, double min_overlap);

/* Operator B (a bpc_scan_fn on reg_xf_t, user = reg_opts_t): compose left
 * and right, then refine against frames left.to and right.from. Nonzero
 * if the two do not chain (left.from != right.to) or a frame cannot be
 * loaded. */
int reg_op_b(const void *left, const void *right, void *result, void *user);

/* --------------------------------------------------------------------- PNG */

/* Nonzero when built with libpng. */
int reg_have_png(void);

/* Read the header of a PNG: its size; 0, or -1 with a sentence (not a PNG,
 * not grey, unreadable). */
int reg_png_info(const char *path, int *W, int *H, char *err, size_t errlen);

/* Read an 8/16-bit grey PNG of size W x H into img (values in [0, 1]). */
int reg_png_read(const char *path, float *img, int W, int H, char *err, size_t errlen);

#endif /* BPC_APPS_REGISTER_H */
