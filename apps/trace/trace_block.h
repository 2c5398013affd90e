/*
 * apps/trace/trace_block.h - internal to apps/trace: the block of the
 * tracer (its samples, particles, recorded points and counters), shared by
 * the tracing loop (trace_run.c) and the checkpoint code (trace_ckpt.c).
 */
#ifndef BPC_APPS_TRACE_BLOCK_H
#define BPC_APPS_TRACE_BLOCK_H

#include "trace.h"

typedef struct tblock {
  int gid;
  trace_box_t box;
  int seeded;
  trace_particle_t *act; /* particles in this block */
  int64_t nact, capact;
  struct leaver {
    int64_t dst, order;
    trace_particle_t t;
  } *out; /* leavers of this round */
  int64_t nout, capout;
  trace_point_t *pts; /* recorded points */
  int64_t npts, cappts;
  int64_t steps, finished, left;
} tblock_t;

/* Free a block and everything it holds (box samples may be NULL). */
void trace_block_free(tblock_t *b);

/* The custom item type of a checkpoint: one tblock_t per block, packed as
 * a header (gid, seeded, particle and point counts, counters) and the
 * particles in flight and recorded points (native byte order). Unpack makes
 * a block without samples (box.v NULL; the caller loads them). */
bpc_type_t trace_ckpt_type(void);

/* The metadata of a checkpoint: a text naming the problem (field, grid,
 * field maximum, step, step limit, seeds' count and hash, recording) and the
 * round number. *out is malloc'ed (without a terminating NUL in *len). */
int trace_ckpt_meta(const trace_params_t *P, long long round, char **out, size_t *len);

/* Check that metadata `m` (len bytes) was written for the problem of P;
 * set *round. Returns 0, or -1 with a message naming the first parameter
 * that differs (or saying the metadata is not bpc-trace's). */
int trace_ckpt_check(const trace_params_t *P, const char *m, size_t len, long long *round,
                     char *err, size_t errlen);

#endif /* BPC_APPS_TRACE_BLOCK_H */
