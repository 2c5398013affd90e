/*
 * lib/threads/threads.h - OpenMP helpers (internal): the ordered local tree
 * reduction of Figure 4 of the DIY paper, and thread-count resolution.
 *
 * This layer is a leaf: it calls no other bpc layer (not even the context),
 * so engines (lib/engines/...) and the compositing plug-in may use it. It
 * reports failures as codes and leaves the detailed message to the caller.
 *
 * The ordered tree reduction combines m buffers b[0..m-1] that hold
 * consecutive operands of an associative, possibly non-commutative,
 * element-wise operator ("o"): the result is b[0] o b[1] o ... o b[m-1].
 * The pairing is a fixed binary tree that depends only on m (never on the
 * number of threads, nor on timing), so a float result is bit-identical for
 * any thread count:
 *   level 0 merges (0,1) (2,3) (4,5) ...; level 1 merges the runs [0,2) with
 *   [2,4), [4,6) with [6,8) ...; level L merges the run starting at i*2^(L+1)
 *   with the run starting at i*2^(L+1) + 2^L when that exists.
 * Each merge writes into one of its two buffers (no extra memory): into the
 * buffer of the run that contains the "home" operand if any (so the final
 * result lands in b[home]), else into the left run's buffer. The other
 * buffer's content becomes garbage.
 * Execution: the operator is element-wise, so with threads the element
 * range is cut into chunks and each chunk runs through the whole tree
 * (every merge, level by level) on its own, with no barrier between levels.
 * Chunks are spread over the threads dynamically (about 16 per thread, at
 * least min_chunk elements each), so a single large merge keeps every
 * thread busy and a thread that loses its core delays the call by one chunk
 * only. Serially the whole range goes through the tree level by level.
 * The bytes of the result do not depend on the chunking or the number of
 * threads. At most one thread per min_chunk elements is used, so small
 * reductions run serially, without starting an OpenMP region.
 */
#ifndef BPC_LIB_THREADS_H
#define BPC_LIB_THREADS_H

#include <stddef.h>
#include <stdint.h>

/* The pairwise operator: inout = in o inout when in_first != 0, else
 * inout = inout o in; `count` elements (never 0). Returns 0 or a nonzero
 * user code. May run on any thread, concurrently on disjoint ranges. */
typedef int (*bpc__pair_fn)(const void *in, void *inout, size_t count, int in_first, void *arg);

typedef struct bpc__tree {
  bpc__pair_fn fn;
  void *arg;
  size_t elem_size; /* bytes per element (> 0) */
  int nthreads;     /* threads to use (>= 1; 1 = no OpenMP region at all) */
  size_t min_chunk; /* least elements per chunk when a merge is split (>= 1) */
} bpc__tree_t;

/* Default least chunk size: 16 Ki elements. */
#define BPC__TREE_MIN_CHUNK ((size_t)16384)

/* Threads to use for `requested` (0: omp_get_max_threads(), else itself;
 * 1 without OpenMP). Never less than 1. */
int bpc__threads_resolve(int requested);

/*
 * Reduce bufs[0..m-1] (each `count` elements; m >= 1) in order, as above.
 * home: index of the buffer that must receive the result, or -1 (result in
 * bufs[0]). *holder (may be NULL) gets the index of the buffer holding the
 * result (home, or 0). *nmerges (may be NULL) gets m - 1 (merges done;
 * fewer after a failure). With count == 0 no callback is made.
 * Returns 0, or the nonzero value a failing callback returned (that of the
 * lowest failing chunk; chunks not yet started are skipped), or -1 for bad
 * arguments (NULL tree/bufs/fn, m < 1, home out of range,
 * elem_size 0).
 */
int bpc__tree_reduce(const bpc__tree_t *t, void *const *bufs, int m, int home, size_t count,
                     int *holder, int *nmerges);

/* One tree of a batch (bpc__tree_reduce_many). */
typedef struct bpc__tree_job {
  void *const *bufs; /* m operands, in order */
  int m;             /* >= 1 */
  int home;          /* -1 or 0..m-1 */
  size_t count;      /* elements per operand */
  int holder;        /* out: index holding the result */
  int nmerges;       /* out: merges done (m - 1, fewer after a failure) */
} bpc__tree_job_t;

/*
 * Several independent trees (e.g. one per local block) in one go - one
 * OpenMP region for all of them, their chunks spread over the threads
 * together. Same results and return values as bpc__tree_reduce per job
 * (the first failure stops the rest); -1 for bad arguments (checked before
 * any callback). jobs may be NULL when njobs is 0.
 */
int bpc__tree_reduce_many(const bpc__tree_t *t, bpc__tree_job_t *jobs, int njobs);

/* How `work` elements in all (the largest job maxcount) are cut: *nthreads
 * (at most t->nthreads, and no more than chunks of min_chunk) and *chunk
 * (about 16 per thread, at least min_chunk; maxcount when serial). The
 * rule of bpc__tree_reduce_many, for other element-wise batches. */
void bpc__tree_chunks(const bpc__tree_t *t, size_t work, size_t maxcount, int *nthreads,
                      size_t *chunk);

/* The units of a batch cut by bpc__tree_chunks: first[i] is the first
 * unit (chunk) of job i, first[njobs] the total (non-decreasing; a job
 * without work has none). Returns the job of unit u (< first[njobs]) by
 * binary search; its chunk is u - first[job]. */
int bpc__tree_unit_job(const size_t *first, int njobs, size_t u);

/* The merges the tree does for m operands, in execution order (level by
 * level, left to right): left[i], right[i] are operand indices (the first
 * operand of each run), into[i] is the index whose buffer receives the
 * merge. Returns the number of merges (m - 1); writes at most cap entries
 * (arrays may be NULL with cap 0). For tests and documentation. */
int bpc__tree_plan(int m, int home, int *left, int *right, int *into, int cap);

#endif /* BPC_LIB_THREADS_H */
