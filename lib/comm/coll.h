/*
 * lib/comm/coll.h - the collectives engines need, as transport operations
 * (internal): error agreement, argument agreement, reductions of long long
 * vectors (blocking and non-blocking), an all-to-all of one int per process,
 * a broadcast of bytes, an allgatherv of bytes and a prefix scan over ranks
 * with a caller's combining function. Two implementations
 * behind one table: MPI on the
 * context's communicator, and the in-process one of serial contexts (one
 * process: every collective is a copy), so an engine never branches on
 * serial/MPI and never calls MPI itself. Every collective is counted in the
 * statistics (bpc_counters_t.colls) of the current call and round.
 *
 * All of them are collective over the context: every rank calls them in the
 * same order (outside OpenMP parallel regions, from the thread that calls
 * the engine).
 */
#ifndef BPC_LIB_COMM_COLL_H
#define BPC_LIB_COMM_COLL_H

#include <limits.h>
#include <mpi.h>
#include <stdint.h>

#include "bpc/datatype.h"
#include "core/core.h"

struct bpc_assign;
struct bpc_decomp;

/*
 * A buffer a rank must have to take part in a collective call already
 * under way on the other ranks (leaving it would leave them waiting for
 * ever): bpc__big_alloc's (malloc, else anonymous pages; free it with
 * bpc__must_free). When even the kernel refuses the pages, the job is
 * aborted (bpc__abort_job) with a message naming `what`. Never NULL.
 */
void *bpc__must_alloc(const bpc_ctx_t *ctx, size_t bytes, int *paged, const char *what);

/* Log `why` and MPI_Abort the job: the library's only abort, for a rank
 * that cannot take part in a collective or take a message off MPI's queue
 * while the other ranks wait for it (doc/design.md, "Departures from
 * DESIGN.md"). Does not return. */
void bpc__abort_job(const bpc_ctx_t *ctx, const char *why);

/* Processes in MPI_COMM_WORLD, or 0 when MPI cannot say. */
int bpc__world_size(void);

typedef enum bpc__redop { BPC__RED_SUM = 0, BPC__RED_MIN = 1, BPC__RED_MAX = 2 } bpc__redop_t;

/* A non-blocking reduction in flight (bpc__iallreduce_ll / bpc__coll_test). */
typedef struct bpc__coll_req {
  MPI_Request req; /* MPI_REQUEST_NULL when none is in flight */
  int active;
} bpc__coll_req_t;

#define BPC__COLL_REQ_INIT {MPI_REQUEST_NULL, 0}

typedef struct bpc__coll_ops {
  const char *name;
  int (*allreduce)(bpc_ctx_t *ctx, const long long *in, long long *out, int n, bpc__redop_t op);
  int (*iallreduce)(bpc_ctx_t *ctx, const long long *in, long long *out, int n, bpc__redop_t op,
                    bpc__coll_req_t *req);
  int (*test)(bpc_ctx_t *ctx, bpc__coll_req_t *req, int *done);
  int (*cancel)(bpc_ctx_t *ctx, bpc__coll_req_t *req);
  int (*alltoall_int)(bpc_ctx_t *ctx, const int *in, int *out);
  int (*bcast)(bpc_ctx_t *ctx, void *buf, size_t bytes, int root);
  /* the lowest code over ranks and the lowest location (0 <= loc < 2^31)
   * stated with it */
  int (*minloc)(bpc_ctx_t *ctx, int code, int loc, int *min_code, int *min_loc);
  int (*allgatherv)(bpc_ctx_t *ctx, const void *in, size_t bytes, void *out,
                    const size_t *counts);
  int (*scan_user)(bpc_ctx_t *ctx, const void *in, void *out, size_t bytes, int exclusive,
                   void (*fn)(const void *in, void *inout, void *arg), void *arg);
} bpc__coll_ops_t;

extern const bpc__coll_ops_t bpc__coll_mpi;  /* coll_mpi.c */
extern const bpc__coll_ops_t bpc__coll_self; /* coll_self.c */
/* The table a context's collectives use: self for serial contexts and one
 * rank, else mpi. */
const bpc__coll_ops_t *bpc__coll_ops(const bpc_ctx_t *ctx);

/* Element-wise reduction of n long longs over ranks: out may equal in. */
int bpc__allreduce_ll(bpc_ctx_t *ctx, const long long *in, long long *out, int n,
                      bpc__redop_t op);

/* The same, non-blocking: in and out must stay valid until bpc__coll_test
 * reports done (or bpc__coll_cancel). *req must be BPC__COLL_REQ_INIT or
 * done. */
int bpc__iallreduce_ll(bpc_ctx_t *ctx, const long long *in, long long *out, int n,
                       bpc__redop_t op, bpc__coll_req_t *req);
/* *done = 1 once the reduction has finished (req is then free again). */
int bpc__coll_test(bpc_ctx_t *ctx, bpc__coll_req_t *req, int *done);
/* Finish a reduction in flight (waits for it: MPI reductions cannot be
 * cancelled; every rank started it, so this returns). */
int bpc__coll_cancel(bpc_ctx_t *ctx, bpc__coll_req_t *req);

/*
 * A small non-blocking minimum over ranks made of point-to-point messages
 * (recursive doubling on the context's communicator, reserved tag
 * BPC__TAG_RED; ranks beyond the largest power of two fold into a partner
 * first and get the result back last): what a persistent plan's start
 * agreement runs alongside its schedule. Measured at P = 2 here, an
 * MPI_Iallreduce of three long longs driven by MPI_Test took 1.0-1.3 us
 * against 0.45-0.55 us for this exchange (Open MPI's non-blocking
 * collectives go through libnbc's schedules). At most one in flight per
 * context at a time (every rank starts and finishes them in the same
 * order); n <= BPC__MINRED_MAX. A failed MPI call here on one rank
 * leaves its partners waiting (MPI's default handler aborts first).
 */
#define BPC__MINRED_MAX 4
#define BPC__TAG_RED 1
typedef struct bpc__minred {
  int n;
  int stage; /* 0 folding in, 1 doubling, 2 handing back, 3 done */
  int id, mask, p2, rem;
  int posted; /* requests of the current step in flight */
  MPI_Request rq[2];
  long long acc[BPC__MINRED_MAX]; /* the result when done */
  long long snd[BPC__MINRED_MAX], tmp[BPC__MINRED_MAX];
} bpc__minred_t;

/* Start: acc = in (n long longs). BPC_EMPI on a failed post. */
int bpc__minred_start(bpc_ctx_t *ctx, const long long *in, int n, bpc__minred_t *r);
/* Advance without blocking; *done = 1 once r->acc holds the minimum. */
int bpc__minred_test(bpc_ctx_t *ctx, bpc__minred_t *r, int *done);
/* The same, but first wait (in MPI) for the step in flight: one round of
 * messages at most, so a caller can go back to its own messages after. */
int bpc__minred_wait_step(bpc_ctx_t *ctx, bpc__minred_t *r, int *done);

/* out[r] = the `in[me]` of rank r: one int to and from every process (in
 * and out: ctx size entries). */
int bpc__alltoall_int(bpc_ctx_t *ctx, const int *in, int *out);

/* Broadcast `bytes` bytes from rank `root`. */
int bpc__bcast(bpc_ctx_t *ctx, void *buf, size_t bytes, int root);

/* Gather bytes from every rank to every rank: rank r gives counts[r] bytes
 * (`bytes` here, which must equal counts[me]), out gets them in rank order
 * (sum of counts bytes; counts the same on every rank). One MPI_Allgatherv
 * (BPC_ERANGE when a count or the total passes INT_MAX), or a copy on a
 * serial context. BPC_EINVAL (bytes != counts[me]), BPC_ENOMEM, BPC_EMPI. */
int bpc__allgatherv(bpc_ctx_t *ctx, const void *in, size_t bytes, void *out,
                    const size_t *counts);

/*
 * A prefix scan over ranks of one element of `bytes` bytes per rank with
 * the caller's combining function fn(in, inout, arg), which must set
 * inout = in op inout, where `in` covers lower ranks (the order of MPI user
 * operations). Inclusive: out = the combination of the elements of ranks
 * 0..me; exclusive: of ranks 0..me-1, and rank 0's out is left unchanged.
 * One MPI_Scan / MPI_Exscan with a non-commutative MPI_Op created for the
 * call over a contiguous datatype of `bytes` bytes (count 1, so the
 * element is never split); a serial context copies (inclusive) or leaves
 * out alone (exclusive). fn runs on the calling thread, inside the MPI
 * call, any number of times (the MPI library's algorithm decides); it
 * cannot fail the collective: record failures in the element itself so
 * that they travel to higher ranks. BPC_ERANGE (bytes > INT_MAX),
 * BPC_ENOMEM, BPC_EMPI.
 */
int bpc__scan_user(bpc_ctx_t *ctx, const void *in, void *out, size_t bytes, int exclusive,
                   void (*fn)(const void *in, void *inout, void *arg), void *arg);

/*
 * Collective agreement on an error code. Every rank passes its local code
 * and gets back: its own code if it failed; else, if another rank failed,
 * the lowest failing code, with that rank's own message ("on rank 3: merge
 * callback returned 7 ..."); BPC_OK if none did. Costs one reduction, plus
 * one broadcast of the message when a rank failed. Use it to fail a
 * collective call everywhere or nowhere.
 */
int bpc__agree(bpc_ctx_t *ctx, int rc);

/*
 * bpc__agree with two options, for callers that do not end an exchange
 * with bpc__exch_end (the neighbour rounds):
 *  - followon: this rank's rc only follows another rank's failure (an
 *    abort it took): among ranks failing with the lowest code, one that
 *    failed on its own gives the message, and this rank returns the agreed
 *    code and message instead of its own (its code still counts, so the
 *    failure is never lost);
 *  - poll (may be NULL): made with a non-blocking reduction, calling
 *    poll(arg) while it waits, for a rank whose peers may still need it to
 *    take their messages before they can agree (the neighbour round's
 *    closing agreement: a sender flushes its items by reference first).
 * The same sequence of collectives on every rank whatever the options (the
 * poll choice must be the same everywhere).
 */
int bpc__agree_ex(bpc_ctx_t *ctx, int rc, int followon, void (*poll)(void *arg), void *arg);

/* --------------------------------------------------- argument agreement */

#define BPC__SIG_MAX 24

/*
 * The signature of a collective call: what must be the same on every rank,
 * field by field (a name and a 63-bit value: small integers are kept as they
 * are, so a mismatch message can show them; anything else is hashed).
 */
typedef struct bpc__sig {
  int n;
  int overflow; /* more than BPC__SIG_MAX fields were added: bpc__agree_args
                   fails with BPC_ESTATE (a bug in the caller) */
  const char *name[BPC__SIG_MAX];
  long long val[BPC__SIG_MAX];
  int hashed[BPC__SIG_MAX]; /* 1: val is a hash, 0: the value itself */
  int kind[BPC__SIG_MAX];   /* bpc__sig_kind_t */
} bpc__sig_t;

typedef enum bpc__sig_kind {
  BPC__SIG_MATCH = 0, /* must be the same on every rank */
  BPC__SIG_OPEN = 1,  /* this rank has no value: matches any (bpc__sig_open) */
  BPC__SIG_MAXED = 2  /* not compared: reduced to the largest (bpc__sig_max) */
} bpc__sig_kind_t;

/* The agreed value of a field no rank stated (bpc__agree_args_vals). */
#define BPC__SIG_NONE LLONG_MIN

void bpc__sig_init(bpc__sig_t *s);
/* An integer field (kept as is when it fits in 62 bits, else hashed). */
void bpc__sig_int(bpc__sig_t *s, const char *name, long long v);
/* A field hashed from bytes (NULL data hashes as "absent"). */
void bpc__sig_bytes(bpc__sig_t *s, const char *name, const void *data, size_t len);
/* The item type's fields: "type kind" and "element size" (contiguous
 * types; 0 for custom ones). A NULL type adds -1 to both (a rank with a
 * NULL type fails its own check anyway). */
void bpc__sig_type(bpc__sig_t *s, const bpc_type_t *type);
/* A field hashed from a string (NULL hashes as "absent"). */
void bpc__sig_str(bpc__sig_t *s, const char *name, const char *str);
/* The assignment's fields: "assignment mode" and "assignment map" (a
 * hash of the whole gid -> rank relation, made when the assignment was
 * created: no pass over the blocks here). Assignments are made locally by
 * bpc_assign_create, so this is where ranks that made different ones find
 * out. A NULL assignment adds -1 to both. */
void bpc__sig_assign(bpc__sig_t *s, const struct bpc_assign *a);
/* A decomposition's geometry: "dim", "domain", "divisions", "share_face",
 * "wrap" and "ghost" (hashes over its dim entries; NULL: -1 for all six,
 * the same number of fields). */
void bpc__sig_decomp(bpc__sig_t *s, const struct bpc_decomp *d);
/* A must-match integer field that this rank cannot state (e.g. the image
 * size on a rank without blocks): it matches whatever the other ranks
 * state, and bpc__agree_args_vals tells this rank their value. Add it in the
 * same position as the ranks that add the value with bpc__sig_int. */
void bpc__sig_open(bpc__sig_t *s, const char *name);
/* A field that is not compared but reduced to its largest value over ranks
 * (a flag any rank may raise), read back with bpc__agree_args_vals. Every
 * rank adds it in the same position. */
void bpc__sig_max(bpc__sig_t *s, const char *name, long long v);

/*
 * The agreement every collective entry makes before any message: each rank
 * passes its own validity (rc: BPC_OK or the code of an argument error it
 * found, with its message recorded) and the signature of what must match
 * (NULL: nothing). Returns the same code on every rank:
 *  - a rank's own error when some rank failed (every rank gets the failing
 *    rank's code and message, as bpc__agree);
 *  - else BPC_EMISMATCH when a signature field differs between ranks,
 *    naming the first such field, its values (for integer fields) on the
 *    lowest rank that states it (rank 0 unless it left the field open) and
 *    on a rank that differs: "swap: ranks disagree on count (10 on rank 0,
 *    12 on rank 3)";
 *  - else BPC_OK.
 * `engine` prefixes the mismatch message and names the statistics record
 * the call begins here (bpc_stats_last_call; the call's exchange, opened
 * with the same name, continues it). Costs one reduction of 2 n + 1
 * long longs (n = fields); a mismatch costs two more reductions and two
 * broadcasts.
 */
int bpc__agree_args(bpc_ctx_t *ctx, const char *engine, int rc, const bpc__sig_t *sig);

/*
 * bpc__agree_args, and (when it returns BPC_OK and vals is not NULL) the
 * agreed value of every field in vals[0..sig->n-1]: the common value of a
 * must-match field (also on ranks that left it open; BPC__SIG_NONE when no
 * rank stated it), the largest value of a bpc__sig_max field. Same cost as
 * bpc__agree_args.
 */
int bpc__agree_args_vals(bpc_ctx_t *ctx, const char *engine, int rc, const bpc__sig_t *sig,
                         long long *vals);

#endif /* BPC_LIB_COMM_COLL_H */
