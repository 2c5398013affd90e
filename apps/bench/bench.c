/*
 * apps/bench/bench.c - bpc-bench: main program, option parsing, the table of
 * benchmarks, and the measurement harness (alternating timed runs of a bpc
 * variant and its MPI baseline, medians, statistics, correctness, output).
 *
 * Usage: bpc-bench <engine> [options]; see usage() or doc/apps/bench.md.
 * Adding a benchmark: write bench_<engine>.c defining a bench_engine_t,
 * declare it in bench.h and list it in `engines` below.
 */
#include "bench.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"

#include "../common/app_mix.h"

/* ------------------------------------------------- allocation counting */

/* With BENCH_COUNT_ALLOCS (apps/Makefile.mk: not under SMPI) bpc-bench is
 * linked with -Wl,--wrap for the malloc family: the library (linked in
 * statically) and the benchmarks' own code go through these wrappers, MPI
 * and the OpenMP runtime (shared libraries) do not. Counted only while a
 * timed bpc run is armed: "allocs" is the most any timed call made on any
 * rank (callbacks included), 0 in a steady state without allocation. */
#ifdef BENCH_COUNT_ALLOCS
void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);
void *__real_aligned_alloc(size_t align, size_t n);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_realloc(void *p, size_t n);
void *__wrap_aligned_alloc(size_t align, size_t n);
static int alloc_armed;
static long alloc_count;
static void alloc_take(void)
{
  if (__atomic_load_n(&alloc_armed, __ATOMIC_RELAXED))
    __atomic_fetch_add(&alloc_count, 1, __ATOMIC_RELAXED);
}
void *__wrap_malloc(size_t n)
{
  alloc_take();
  return __real_malloc(n);
}
void *__wrap_calloc(size_t n, size_t size)
{
  alloc_take();
  return __real_calloc(n, size);
}
void *__wrap_realloc(void *p, size_t n)
{
  alloc_take();
  return __real_realloc(p, n);
}
void *__wrap_aligned_alloc(size_t align, size_t n)
{
  alloc_take();
  return __real_aligned_alloc(align, n);
}
static void alloc_arm(int on)
{
  if (on)
    __atomic_store_n(&alloc_count, 0, __ATOMIC_RELAXED);
  __atomic_store_n(&alloc_armed, on, __ATOMIC_RELEASE);
}
static long alloc_taken(void) { return __atomic_load_n(&alloc_count, __ATOMIC_RELAXED); }
#define BENCH_ALLOCS 1
#else
static void alloc_arm(int on) { (void)on; }
static long alloc_taken(void) { return 0; }
#define BENCH_ALLOCS 0
#endif

/* ------------------------------------------------------------- the table */

static const bench_engine_t *const engines[] = {
    &bench_engine_comm,
    &bench_engine_merge,
    &bench_engine_swap,
    &bench_engine_alltoall,
    &bench_engine_allreduce,
    &bench_engine_tree,
    &bench_engine_neighbor,
    &bench_engine_composite,
    &bench_engine_bcast,
    &bench_engine_scan,
    &bench_engine_io,
    &bench_engine_agree,
    NULL,
};

static const bench_engine_t *find_engine(const char *name)
{
  for (int i = 0; engines[i] != NULL; i++)
    if (strcmp(engines[i]->name, name) == 0)
      return engines[i];
  return NULL;
}

/* -------------------------------------------------------------- payloads */

static uint64_t pattern_word(uint64_t key, size_t j, size_t nwords, int rep)
{
  uint64_t w = app_mix64(app_mix64(key) ^ (uint64_t)j ^ 0x5bd1e9955bd1e995ull);
  if (j == 0 || j + 1 == nwords)
    w ^= app_mix64(((uint64_t)(uint32_t)rep << 32) ^ key ^ 0xa5a5a5a5ull);
  return w;
}

void bench_pattern_fill(unsigned char *buf, size_t bytes, uint64_t key, int rep, size_t j0,
                        size_t j1)
{
  const size_t nwords = (bytes + 7) / 8;
  for (size_t j = j0; j < j1 && j < nwords; j++) {
    uint64_t w = pattern_word(key, j, nwords, rep);
    size_t len = bytes - 8 * j < 8 ? bytes - 8 * j : 8;
    memcpy(buf + 8 * j, &w, len);
  }
}

int bench_pattern_ok(const unsigned char *buf, size_t bytes, uint64_t key, int rep)
{
  const size_t nwords = (bytes + 7) / 8;
  for (size_t j = 0; j < nwords; j++) {
    uint64_t w = pattern_word(key, j, nwords, rep);
    size_t len = bytes - 8 * j < 8 ? bytes - 8 * j : 8;
    if (memcmp(buf + 8 * j, &w, len) != 0)
      return 0;
  }
  return 1;
}

/* ------------------------------------------------- charging MPI's ops */

#ifdef BPC_SMPI
#include <time.h>
/* smpicc's helpers turn clock_gettime into the simulated clock; the CPU
 * time of this thread is what is wanted here */
#undef clock_gettime
static double thread_cpu_s(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
double bench_op_enter(void) { return thread_cpu_s(); }
/* Inside an MPI call SMPI's own measuring is off, so smpi_execute (not the
 * _benched form) charges the time: the calling rank's simulated clock
 * advances by it at smpi/host-speed, as for bpc's own operator calls. */
void bench_op_leave(double t0)
{
  const double dt = thread_cpu_s() - t0;
  if (dt > 0)
    smpi_execute(dt);
}
static void sum_float(void *in, void *inout, int *len, MPI_Datatype *dt)
{
  (void)dt;
  const double t0 = bench_op_enter();
  const float *restrict a = in;
  float *restrict b = inout;
  for (int i = 0; i < *len; i++)
    b[i] += a[i];
  bench_op_leave(t0);
}
int bench_mpi_sum_float(MPI_Op *op) { return MPI_Op_create(sum_float, 1, op); }
void bench_mpi_op_free(MPI_Op *op)
{
  if (*op != MPI_OP_NULL)
    MPI_Op_free(op);
  *op = MPI_OP_NULL;
}
#else
double bench_op_enter(void) { return 0.0; }
void bench_op_leave(double t0) { (void)t0; }
int bench_mpi_sum_float(MPI_Op *op)
{
  *op = MPI_SUM;
  return MPI_SUCCESS;
}
void bench_mpi_op_free(MPI_Op *op) { *op = MPI_OP_NULL; }
#endif

/* ----------------------------------------------------------------- usage */


/* ------------------------------------------------------------ variants */

const char *const BENCH_AUTO_ROWS[] = {NULL};
const char *const BENCH_AUTO_ALL[] = {NULL};

#define BENCH_MAX_ENGINES 16
static struct {
  const bench_engine_t *e;
  const char *names[BENCH_MAX_ALGOS + 1];
  int ids[BENCH_MAX_ALGOS];
  int nrows;
} variant_cache[BENCH_MAX_ENGINES];

static int variant_slot(const bench_engine_t *e)
{
  int i = 0;
  for (; i < BENCH_MAX_ENGINES && variant_cache[i].e != NULL; i++)
    if (variant_cache[i].e == e)
      return i;
  if (i == BENCH_MAX_ENGINES)
    return -1;
  variant_cache[i].e = e;
  int n = 0;
  if (e->registry != NULL) {
    bpc_algo_info_t t[BENCH_MAX_ALGOS];
    if (bpc_algorithms(e->registry, t, BENCH_MAX_ALGOS, &n) != BPC_OK)
      n = 0;
    for (int j = 0; j < n; j++) {
      variant_cache[i].names[j] = t[j].name; /* the library's static strings */
      variant_cache[i].ids[j] = t[j].id;
    }
  }
  variant_cache[i].nrows = n;
  for (int j = 0; e->algorithms != NULL && e->algorithms[j] != NULL && n < BENCH_MAX_ALGOS; j++)
    variant_cache[i].names[n++] = e->algorithms[j];
  variant_cache[i].names[n] = NULL;
  return i;
}

const char *const *bench_variants(const bench_engine_t *e)
{
  static const char *const none[] = {NULL};
  int i = variant_slot(e);
  return i < 0 ? none : variant_cache[i].names;
}

int bench_variant_id(const bench_engine_t *e, const char *name)
{
  int i = variant_slot(e);
  for (int j = 0; i >= 0 && j < variant_cache[i].nrows; j++)
    if (strcmp(variant_cache[i].names[j], name) == 0)
      return variant_cache[i].ids[j];
  return 0;
}

/* What "auto" runs, NULL-terminated. */
static const char *const *auto_variants(const bench_engine_t *e)
{
  static const char *first[2];
  const char *const *v = bench_variants(e);
  if (e->auto_algorithms == BENCH_AUTO_ROWS) {
    static const char *rows[BENCH_MAX_ALGOS + 1];
    int i = variant_slot(e), n = 0;
    for (; i >= 0 && n < variant_cache[i].nrows; n++)
      rows[n] = v[n];
    rows[n] = NULL;
    return rows;
  }
  if (e->auto_algorithms == BENCH_AUTO_ALL)
    return v;
  if (e->auto_algorithms != NULL)
    return e->auto_algorithms;
  first[0] = v[0];
  first[1] = NULL;
  return first;
}

static void usage(FILE *f, const bench_engine_t *e)
{
  fprintf(f, "usage: bpc-bench <engine> [options]\n"
             "\n"
             "Times a bpc engine against its MPI counterpart in the same run (alternating\n"
             "them), and reports medians, their ratio, bytes and messages sent per rank\n"
             "next to the model's lower bound, and a correctness check of every run.\n"
             "Run it under mpirun, e.g.: mpirun -np 4 bpc-bench comm --json\n"
             "\n"
             "engines:\n");
  for (int i = 0; engines[i] != NULL; i++)
    fprintf(f, "  %-10s %s\n", engines[i]->name, engines[i]->desc);
  fprintf(f, "\n"
             "options:\n"
             "  --bytes LIST          sizes, comma separated, suffixes K M G (binary), e.g.\n"
             "                        8,1K,64K,1M,16M (default: the engine's)\n"
             "  --blocks-per-proc N   blocks per process (default: the engine's)\n"
             "  --reps N              timed repetitions per variant (default 20)\n"
             "  --warmup N            untimed repetitions before them (default 3)\n"
             "  --algorithm NAME      bpc variant(s): a name, a comma list, 'auto' or 'all'\n"
             "  --k LIST              k-vector, e.g. 4,2 (or 4x2), or 'auto'\n"
             "  --json                one JSON object per result line instead of a table\n"
             "  --breakdown           also where a bpc call's time goes: the frame's steps\n"
             "                        (pre, args, open, sched, finish, outcome, post; see\n"
             "                        doc/performance.md), median over reps of the mean\n"
             "                        over ranks\n"
             "  --help                this text (with an engine: its variants too)\n");
  if (e != NULL) {
    fprintf(f, "\nengine %s: %s\n  algorithms:", e->name, e->desc);
    for (const char *const *v = bench_variants(e); *v != NULL; v++)
      fprintf(f, " %s", *v);
    fprintf(f, "\n  auto runs:");
    for (const char *const *v = auto_variants(e); *v != NULL; v++)
      fprintf(f, " %s", *v);
    fprintf(f, "\n  default --bytes: ");
    for (int i = 0; i < e->n_default_bytes; i++) {
      char b[32];
      bench_format_bytes(e->default_bytes[i], b, sizeof b);
      fprintf(f, "%s%s", i ? "," : "", b);
    }
    fprintf(f, "\n  default --blocks-per-proc: %d\n", e->default_blocks_per_proc);
    if (!e->uses_k)
      fprintf(f, "  --k does not apply (ignored with a warning)\n");
    if (e->options != NULL && e->options[0].name != NULL) {
      fprintf(f, "  options of this engine:\n");
      for (int i = 0; e->options[i].name != NULL; i++) {
        char lhs[64];
        snprintf(lhs, sizeof lhs, "--%s%s%s", e->options[i].name, e->options[i].arg ? " " : "",
                 e->options[i].arg ? e->options[i].arg : "");
        fprintf(f, "    %-20s %s\n", lhs, e->options[i].help);
      }
    }
    if (e->notes != NULL)
      fprintf(f, "\n%s", e->notes);
  }
}

/* ------------------------------------------------------- option parsing */

/* Parse a non-negative integer with an optional binary suffix (K, M, G,
 * optionally followed by "B" or "iB"), or a plain "B". */
static int parse_size(const char *s, size_t *out)
{
  char *end;
  if (s == NULL || !isdigit((unsigned char)s[0]))
    return -1;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno != 0)
    return -1;
  unsigned long long mul = 1;
  switch (*end) {
  case 'k': case 'K': mul = 1ull << 10; end++; break;
  case 'm': case 'M': mul = 1ull << 20; end++; break;
  case 'g': case 'G': mul = 1ull << 30; end++; break;
  default: break;
  }
  if (mul > 1 && end[0] == 'i' && end[1] == 'B')
    end += 2;
  else if (end[0] == 'B')
    end++;
  if (*end != '\0')
    return -1;
  if (v > (1ull << 40) / mul) /* more than 1 TiB per block: surely a typo */
    return -1;
  *out = (size_t)(v * mul);
  return 0;
}

/* Parse an int in [lo, hi]. */
static int parse_int(const char *s, long lo, long hi, int *out)
{
  char *end;
  if (s == NULL || *s == '\0')
    return -1;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno != 0 || *end != '\0' || v < lo || v > hi)
    return -1;
  *out = (int)v;
  return 0;
}

/* Is `name` one of the NULL-terminated list? */
static int in_list(const char *const *list, const char *name, size_t len)
{
  for (int i = 0; list[i] != NULL; i++)
    if (strlen(list[i]) == len && strncmp(list[i], name, len) == 0)
      return 1;
  return 0;
}

enum { PARSE_RUN = 0, PARSE_HELP = 1, PARSE_ERROR = 2 };

typedef struct parse_result {
  const bench_engine_t *engine;
  char msg[512];
  char warn[256];
} parse_result_t;

/* Parse argv into *o. Returns PARSE_RUN, PARSE_HELP or PARSE_ERROR (with
 * r->msg). The same on every rank given the same arguments. */
static int parse_args(int argc, char **argv, bench_opts_t *o, parse_result_t *r)
{
  memset(o, 0, sizeof *o);
  o->reps = 20;
  o->warmup = 3;
  o->algorithm = "auto";
  o->k_auto = 1;
  r->engine = NULL;
  r->msg[0] = '\0';
  r->warn[0] = '\0';
  const char *bytes_arg = NULL;

  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0)
      return PARSE_HELP;
    if (strncmp(a, "--", 2) != 0) {
      if (r->engine != NULL) {
        snprintf(r->msg, sizeof r->msg, "unexpected argument '%s' (engine is already '%s')", a,
                 r->engine->name);
        return PARSE_ERROR;
      }
      if (strcmp(a, "help") == 0)
        return PARSE_HELP;
      r->engine = find_engine(a);
      if (r->engine == NULL) {
        int n = snprintf(r->msg, sizeof r->msg, "unknown engine '%s'; known:", a);
        for (int j = 0; engines[j] != NULL && n > 0 && (size_t)n < sizeof r->msg; j++)
          n += snprintf(r->msg + n, sizeof r->msg - (size_t)n, " %s", engines[j]->name);
        return PARSE_ERROR;
      }
      continue;
    }
    /* --name VALUE or --name=VALUE */
    char name[64];
    const char *eq = strchr(a + 2, '=');
    size_t nlen = eq ? (size_t)(eq - (a + 2)) : strlen(a + 2);
    if (nlen == 0 || nlen >= sizeof name) {
      snprintf(r->msg, sizeof r->msg, "bad option '%s'", a);
      return PARSE_ERROR;
    }
    memcpy(name, a + 2, nlen);
    name[nlen] = '\0';

    static const char *const flags[] = {"json", "breakdown", NULL};
    static const char *const valued[] = {"bytes", "blocks-per-proc", "reps", "warmup",
                                         "algorithm", "k", NULL};
    int eidx = -1, is_flag = 0;
    if (in_list(flags, name, nlen)) {
      is_flag = 1;
    } else if (!in_list(valued, name, nlen)) {
      if (r->engine != NULL && r->engine->options != NULL)
        for (int j = 0; r->engine->options[j].name != NULL && j < BENCH_MAX_EOPTS; j++)
          if (strcmp(r->engine->options[j].name, name) == 0) {
            eidx = j;
            is_flag = r->engine->options[j].arg == NULL;
          }
      if (eidx < 0) {
        snprintf(r->msg, sizeof r->msg, "unknown option '--%s'%s", name,
                 r->engine ? "" : " (engine options need the engine first)");
        return PARSE_ERROR;
      }
    }
    const char *val = NULL;
    if (is_flag) {
      if (eq != NULL) {
        snprintf(r->msg, sizeof r->msg, "option '--%s' takes no value", name);
        return PARSE_ERROR;
      }
    } else if (eq != NULL) {
      val = eq + 1;
    } else if (i + 1 < argc) {
      val = argv[++i];
    } else {
      snprintf(r->msg, sizeof r->msg, "option '--%s' needs a value", name);
      return PARSE_ERROR;
    }

    if (eidx >= 0) {
      o->eopt[eidx] = is_flag ? "1" : val;
    } else if (strcmp(name, "json") == 0) {
      o->json = 1;
    } else if (strcmp(name, "breakdown") == 0) {
      o->breakdown = 1;
    } else if (strcmp(name, "bytes") == 0) {
      bytes_arg = val;
    } else if (strcmp(name, "blocks-per-proc") == 0) {
      if (parse_int(val, 1, 1 << 20, &o->blocks_per_proc) != 0) {
        snprintf(r->msg, sizeof r->msg, "--blocks-per-proc '%s': want an integer in 1..%d", val,
                 1 << 20);
        return PARSE_ERROR;
      }
    } else if (strcmp(name, "reps") == 0) {
      if (parse_int(val, 1, 1000000, &o->reps) != 0) {
        snprintf(r->msg, sizeof r->msg, "--reps '%s': want an integer in 1..1000000", val);
        return PARSE_ERROR;
      }
    } else if (strcmp(name, "warmup") == 0) {
      if (parse_int(val, 0, 1000000, &o->warmup) != 0) {
        snprintf(r->msg, sizeof r->msg, "--warmup '%s': want an integer in 0..1000000", val);
        return PARSE_ERROR;
      }
    } else if (strcmp(name, "algorithm") == 0) {
      if (*val == '\0') {
        snprintf(r->msg, sizeof r->msg, "--algorithm needs a name");
        return PARSE_ERROR;
      }
      o->algorithm = val;
    } else if (strcmp(name, "k") == 0) {
      o->k_given = 1;
      if (strcmp(val, "auto") == 0) {
        o->k_auto = 1;
        o->nk = 0;
        continue;
      }
      o->k_auto = 0;
      o->nk = 0;
      const char *p = val;
      for (;;) {
        char *end;
        if (!isdigit((unsigned char)*p))
          goto bad_k;
        errno = 0;
        long k = strtol(p, &end, 10);
        if (errno != 0 || k < 1 || k > INT_MAX || o->nk >= BENCH_MAX_K)
          goto bad_k;
        o->k[o->nk++] = (int)k;
        if (*end == '\0')
          break;
        if (*end != ',' && *end != 'x' && *end != 'X')
          goto bad_k;
        p = end + 1;
      }
      continue;
    bad_k:
      snprintf(r->msg, sizeof r->msg,
               "--k '%s': want 'auto' or up to %d factors >= 1 like 4,2 or 4x2", val,
               BENCH_MAX_K);
      return PARSE_ERROR;
    }
  }

  if (r->engine == NULL) {
    snprintf(r->msg, sizeof r->msg, "no engine given (try --help)");
    return PARSE_ERROR;
  }
  const bench_engine_t *e = r->engine;

  if (bytes_arg != NULL) {
    const char *p = bytes_arg;
    o->nbytes = 0;
    for (;;) {
      const char *comma = strchr(p, ',');
      size_t len = comma ? (size_t)(comma - p) : strlen(p);
      char item[64];
      size_t v;
      if (len == 0 || len >= sizeof item || o->nbytes >= BENCH_MAX_SIZES) {
        snprintf(r->msg, sizeof r->msg, "--bytes '%s': want up to %d sizes like 8,1K,64K,1M",
                 bytes_arg, BENCH_MAX_SIZES);
        return PARSE_ERROR;
      }
      memcpy(item, p, len);
      item[len] = '\0';
      if (parse_size(item, &v) != 0) {
        snprintf(r->msg, sizeof r->msg,
                 "--bytes: bad size '%s' (want a number with an optional K, M or G suffix, "
                 "at most 1T)",
                 item);
        return PARSE_ERROR;
      }
      o->bytes[o->nbytes++] = v;
      if (comma == NULL)
        break;
      p = comma + 1;
    }
  }

  if (strcmp(o->algorithm, "auto") != 0 && strcmp(o->algorithm, "all") != 0) {
    const char *p = o->algorithm;
    for (;;) {
      const char *comma = strchr(p, ',');
      size_t len = comma ? (size_t)(comma - p) : strlen(p);
      if (!in_list(bench_variants(e), p, len)) {
        int n = snprintf(r->msg, sizeof r->msg,
                         "engine %s has no algorithm '%.*s'; known: auto all", e->name,
                         (int)(len < 64 ? len : 64), p);
        const char *const *v = bench_variants(e);
        for (int j = 0; v[j] != NULL && n > 0 && (size_t)n < sizeof r->msg; j++)
          n += snprintf(r->msg + n, sizeof r->msg - (size_t)n, " %s", v[j]);
        return PARSE_ERROR;
      }
      if (comma == NULL)
        break;
      p = comma + 1;
    }
  }

  if (o->k_given && !e->uses_k)
    snprintf(r->warn, sizeof r->warn, "--k does not apply to engine %s; ignored", e->name);
  return PARSE_RUN;
}

/* ----------------------------------------------------------- helpers */

void bench_error(const bench_env_t *env, const char *fmt, ...)
{
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  fprintf(stderr, "bpc-bench: rank %d: %s\n", env ? env->rank : 0, buf);
  fflush(stderr);
}

void bench_format_bytes(uint64_t bytes, char *buf, size_t len)
{
  static const char suf[] = {'\0', 'K', 'M', 'G', 'T'};
  int i = 0;
  double v = (double)bytes;
  uint64_t b = bytes;
  while (i < 4 && b >= 1024 && b % 1024 == 0) {
    b /= 1024;
    i++;
  }
  if (b < 1024 || i == 4) {
    if (i == 0)
      snprintf(buf, len, "%llu", (unsigned long long)b);
    else
      snprintf(buf, len, "%llu%c", (unsigned long long)b, suf[i]);
    return;
  }
  i = 0;
  while (i < 4 && v >= 1024) {
    v /= 1024;
    i++;
  }
  snprintf(buf, len, "%.4g%c", v, suf[i]);
}

int bench_agree(const bench_env_t *env, int status)
{
  int in[2] = {status, -status}, out[2];
  if (MPI_Allreduce(in, out, 2, MPI_INT, MPI_MIN, env->world) != MPI_SUCCESS)
    return status != 0 ? status : -1;
  if (status != 0)
    return status;
  if (out[0] != 0)
    return out[0]; /* the lowest (most negative) code */
  return -out[1];  /* else the highest positive one, or 0 */
}

int bench_algorithms(const bench_env_t *env, const char **names, int cap)
{
  const bench_engine_t *e = env->engine;
  const char *const *v = bench_variants(e);
  const char *a = env->opts->algorithm;
  int n = 0;
  if (strcmp(a, "auto") == 0) {
    for (const char *const *u = auto_variants(e); *u != NULL && n < cap; u++)
      names[n++] = *u;
    return n;
  }
  if (strcmp(a, "all") == 0) {
    for (int i = 0; v[i] != NULL && n < cap; i++)
      names[n++] = v[i];
    return n;
  }
  /* a validated comma list: map each item to the table's string */
  const char *p = a;
  while (n < cap) {
    const char *comma = strchr(p, ',');
    size_t len = comma ? (size_t)(comma - p) : strlen(p);
    for (int i = 0; v[i] != NULL; i++)
      if (strlen(v[i]) == len && strncmp(v[i], p, len) == 0) {
        names[n++] = v[i];
        break;
      }
    if (comma == NULL)
      break;
    p = comma + 1;
  }
  return n;
}

int bench_sizes(const bench_env_t *env, const size_t **sizes)
{
  if (env->opts->nbytes > 0) {
    *sizes = env->opts->bytes;
    return env->opts->nbytes;
  }
  *sizes = env->engine->default_bytes;
  return env->engine->n_default_bytes;
}

int bench_blocks_per_proc(const bench_env_t *env)
{
  if (env->opts->blocks_per_proc > 0)
    return env->opts->blocks_per_proc;
  return env->engine->default_blocks_per_proc > 0 ? env->engine->default_blocks_per_proc : 1;
}

const char *bench_eopt(const bench_env_t *env, const char *name)
{
  const bench_eopt_t *t = env->engine->options;
  for (int i = 0; t != NULL && t[i].name != NULL && i < BENCH_MAX_EOPTS; i++)
    if (strcmp(t[i].name, name) == 0)
      return env->opts->eopt[i];
  return NULL;
}

/* ------------------------------------------------------------ measuring */

static int cmp_double(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

typedef struct summary {
  double median, min, max, mean;
} summary_t;

/* Summary of n > 0 values (sorts them). */
static summary_t summarize(double *v, int n)
{
  summary_t s;
  double sum = 0;
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  for (int i = 0; i < n; i++)
    sum += v[i];
  s.min = v[0];
  s.max = v[n - 1];
  s.mean = sum / n;
  s.median = (n % 2) ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
  return s;
}

/* Write s as a JSON string (with quotes); NULL as null. */
static void json_str(FILE *f, const char *s)
{
  if (s == NULL) {
    fputs("null", f);
    return;
  }
  fputc('"', f);
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    if (*p == '"' || *p == '\\')
      fprintf(f, "\\%c", *p);
    else if (*p < 0x20)
      fprintf(f, "\\u%04x", *p);
    else
      fputc(*p, f);
  }
  fputc('"', f);
}

enum { ST_BYTES, ST_MSGS, ST_LBYTES, ST_LMSGS, ST_RBYTES, ST_RMSGS, ST_ROUNDS, ST_WIRE, ST_N };

/* --breakdown: the steps of the frame (doc/design.md) between the phase
 * stamps of lib/core/core.h, with the call's own start and end around them:
 * pre (checks, pick, signature), args (argument agreement), open (decisions
 * from agreed values, exchange open), sched (the schedule: messages, waits,
 * callbacks), finish (sends completed, receives landed), outcome (outcome
 * agreement), post (close, result, leaving). */
enum { BD_N = BPC__PH_N + 1 };
static const char *const bd_names[BD_N] = {"pre", "args", "open", "sched", "finish", "outcome",
                                           "post"};

/* The steps' durations of one call from its stamps: a stamp the call did
 * not make (0) takes the one before it, so that step counts 0 and its time
 * goes to the next. */
static void bd_split(double t0, const double *ph, double t1, double *out)
{
  double prev = t0;
  for (int i = 0; i < BD_N; i++) {
    double at = i < BPC__PH_N ? ph[i] : t1;
    if (at <= 0 || at < prev)
      at = prev;
    out[i] = at - prev;
    prev = at;
  }
}

static void print_result(bench_env_t *env, const bench_case_t *c, const summary_t *b,
                         const summary_t *m, const uint64_t *st, int correct, const double *bd,
                         long allocs)
{
  const bench_opts_t *o = env->opts;
  double ratio = m->median > 0 ? b->median / m->median : 0.0;
  const char *rl = env->engine->ref_label;
  const double ref = c->ref_self ? b->median : c->ref_s;
  FILE *f = stdout;
  if (o->json) {
    fprintf(f, "{\"engine\":");
    json_str(f, env->engine->name);
    fprintf(f, ",\"algorithm\":");
    json_str(f, c->algorithm);
    fprintf(f, ",\"k\":");
    json_str(f, c->kvec);
    fprintf(f,
            ",\"p\":%d,\"nblocks\":%d,\"blocks_per_proc\":%d,\"bytes\":%llu,\"reps\":%d,"
            "\"warmup\":%d",
            env->size, c->nblocks, bench_blocks_per_proc(env), (unsigned long long)c->bytes,
            o->reps, o->warmup);
    fprintf(f, ",\"median_s\":%.9g,\"min_s\":%.9g,\"max_s\":%.9g,\"mean_s\":%.9g", b->median,
            b->min, b->max, b->mean);
    fprintf(f, ",\"baseline\":");
    json_str(f, c->baseline);
    fprintf(f,
            ",\"baseline_median_s\":%.9g,\"baseline_min_s\":%.9g,\"baseline_max_s\":%.9g,"
            "\"baseline_mean_s\":%.9g",
            m->median, m->min, m->max, m->mean);
    if (m->median > 0)
      fprintf(f, ",\"ratio\":%.6g", ratio);
    else
      fprintf(f, ",\"ratio\":null");
    fprintf(f,
            ",\"bytes_sent_max\":%llu,\"msgs_sent_max\":%llu,\"bytes_recv_max\":%llu,"
            "\"msgs_recv_max\":%llu,\"local_bytes_max\":%llu,\"local_msgs_max\":%llu,"
            "\"rounds_max\":%llu,\"wire_msgs_max\":%llu",
            (unsigned long long)st[ST_BYTES], (unsigned long long)st[ST_MSGS],
            (unsigned long long)st[ST_RBYTES], (unsigned long long)st[ST_RMSGS],
            (unsigned long long)st[ST_LBYTES], (unsigned long long)st[ST_LMSGS],
            (unsigned long long)st[ST_ROUNDS], (unsigned long long)st[ST_WIRE]);
    fprintf(f, ",\"lower_bound_bytes\":%llu,\"lower_bound_msgs\":%llu",
            (unsigned long long)c->lower_bound_bytes, (unsigned long long)c->lower_bound_msgs);
    if (correct < 0) /* shared payloads: not checked */
      fprintf(f, ",\"correct\":null,\"shared\":1");
    else
      fprintf(f, ",\"correct\":%d", correct);
    if (rl != NULL) {
      if (ref > 0)
        fprintf(f, ",\"%s_s\":%.9g,\"vs_%s\":%.6g", rl, ref, rl, b->median / ref);
      else
        fprintf(f, ",\"%s_s\":null,\"vs_%s\":null", rl, rl);
    }
    if (BENCH_ALLOCS)
      fprintf(f, ",\"allocs_max\":%ld", allocs);
    else
      fprintf(f, ",\"allocs_max\":null");
    if (bd != NULL) {
      fprintf(f, ",\"breakdown_s\":{");
      for (int i = 0; i < BD_N; i++)
        fprintf(f, "%s\"%s\":%.9g", i ? "," : "", bd_names[i], bd[i]);
      fprintf(f, "}");
    }
    if (c->extra_json != NULL && c->extra_json[0] != '\0')
      fprintf(f, ",%s", c->extra_json);
    fprintf(f, "}\n");
  } else {
    if (!env->header_done) {
      fprintf(f,
              "# bpc-bench %s: p=%d, reps=%d, warmup=%d. Times: median over reps of the max\n"
              "# over ranks, in microseconds; ratio = bpc/baseline; sent = max over ranks of\n"
              "# what one bpc call sent to other processes; lb = model lower bound.\n",
              env->engine->name, env->size, o->reps, o->warmup);
      fprintf(f, "%-12s %4s %7s %6s %12s %-20s %12s %7s", "algorithm", "p", "nblocks", "bytes",
              "bpc_us", "baseline", "baseline_us", "ratio");
      if (rl != NULL) {
        char h1[48], h2[48];
        snprintf(h1, sizeof h1, "%s_us", rl);
        snprintf(h2, sizeof h2, "vs_%s", rl);
        fprintf(f, " %12s %8s", h1, h2);
      }
      fprintf(f, " %12s %8s %12s %7s\n", "sent_bytes", "sent_msg", "lb_bytes", "correct");
      env->header_done = 1;
    }
    char bb[32];
    char name[64];
    bench_format_bytes(c->bytes, bb, sizeof bb);
    if (c->kvec != NULL)
      snprintf(name, sizeof name, "%s[%s]", c->algorithm, c->kvec);
    else
      snprintf(name, sizeof name, "%s", c->algorithm);
    fprintf(f, "%-12s %4d %7d %6s %12.2f %-20s %12.2f %7.3f", name, env->size, c->nblocks, bb,
            b->median * 1e6, c->baseline, m->median * 1e6, ratio);
    if (rl != NULL && ref > 0)
      fprintf(f, " %12.2f %8.3f", ref * 1e6, b->median / ref);
    else if (rl != NULL)
      fprintf(f, " %12s %8s", "-", "-");
    fprintf(f, " %12llu %8llu %12llu %7s\n", (unsigned long long)st[ST_BYTES],
            (unsigned long long)st[ST_MSGS], (unsigned long long)c->lower_bound_bytes,
            correct < 0 ? "n/a" : correct ? "yes" : "NO");
    if (bd != NULL) {
      double sum = 0;
      fprintf(f, "#   breakdown_us");
      for (int i = 0; i < BD_N; i++) {
        fprintf(f, " %s %.2f", bd_names[i], bd[i] * 1e6);
        sum += bd[i];
      }
      fprintf(f, " (sum %.2f)", sum * 1e6);
      if (BENCH_ALLOCS)
        fprintf(f, " allocs %ld", allocs);
      fprintf(f, "\n");
    }
  }
  fflush(f);
}

int bench_run_case(bench_env_t *env, const bench_case_t *c)
{
  const bench_opts_t *o = env->opts;
  const int reps = o->reps, total = o->warmup + o->reps;
  double *t = NULL, *tmax = NULL, *bd = NULL;
  uint64_t st[ST_N] = {0}, stmax[ST_N];
  long allocs = 0; /* the most allocations of one timed bpc call here */
  int correct = 1, gcorrect = 0, status = 0, ret = BENCH_EXIT_FAIL;

  t = calloc(2 * (size_t)reps, sizeof *t);
  tmax = calloc(2 * (size_t)reps, sizeof *tmax);
  if (o->breakdown)
    bd = calloc((size_t)BD_N * (size_t)reps, sizeof *bd);
  const int nomem = t == NULL || tmax == NULL || (o->breakdown && bd == NULL);
  status = bench_agree(env, nomem ? BPC_ENOMEM : 0);
  if (status != 0) {
    if (nomem)
      bench_error(env, "out of memory for %d repetitions", reps);
    goto cleanup;
  }

  for (int rep = 0; rep < total && status == 0; rep++) {
    const int timed = rep >= o->warmup;
    const int idx = timed ? rep - o->warmup : rep;
    const int bpc_first = (idx % 2) == 0;
    int ran_bpc = 0, local = 0;
    for (int phase = 0; phase < 2; phase++) {
      const int is_bpc = (phase == 0) == bpc_first;
      const char *what = is_bpc ? "bpc run" : "baseline run";
      int lrc = c->prepare != NULL ? c->prepare(c->state, rep, is_bpc) : 0;
      status = bench_agree(env, lrc);
      if (status != 0) {
        what = "prepare";
      } else {
        if (is_bpc)
          bpc_stats_reset(env->ctx);
        if (is_bpc && bd != NULL) {
          memset(env->ctx->phase_t, 0, sizeof env->ctx->phase_t);
          env->ctx->phase_on = 1;
        }
        MPI_Barrier(env->world);
        alloc_arm(is_bpc && timed);
        const double t0 = MPI_Wtime();
        lrc = is_bpc ? c->run_bpc(c->state) : c->run_baseline(c->state);
        const double t1 = MPI_Wtime();
        alloc_arm(0);
        if (is_bpc && timed && alloc_taken() > allocs)
          allocs = alloc_taken();
        if (is_bpc && bd != NULL) {
          env->ctx->phase_on = 0;
          if (timed)
            bd_split(t0, env->ctx->phase_t, t1, bd + (size_t)BD_N * (size_t)idx);
        }
        if (is_bpc) {
          ran_bpc = 1;
          bpc_counters_t cnt;
          bpc_call_stats_t last;
          if (timed && bpc_stats_total(env->ctx, &cnt) == BPC_OK &&
              bpc_stats_last_call(env->ctx, &last) == BPC_OK) {
            const uint64_t v[ST_N] = {cnt.bytes_sent,  cnt.msgs_sent,  cnt.local_bytes,
                                      cnt.local_msgs,  cnt.bytes_recv, cnt.msgs_recv,
                                      (uint64_t)last.nrounds, cnt.wire_sent};
            for (int i = 0; i < ST_N; i++)
              if (v[i] > st[i])
                st[i] = v[i];
          }
        }
        if (timed)
          t[(is_bpc ? 0 : reps) + idx] = t1 - t0;
        status = bench_agree(env, lrc);
      }
      if (status != 0) {
        if (lrc < 0)
          bench_error(env, "%s %s: %s failed at repetition %d: %s (%s)", env->engine->name,
                      c->algorithm, what, rep, bpc_err_name(lrc), bpc_last_error(env->ctx));
        else if (lrc > 0)
          bench_error(env, "%s %s: %s failed at repetition %d (code %d)", env->engine->name,
                      c->algorithm, what, rep, lrc);
        break;
      }
    }
    local = 0;
    if (status == 0 && !env->shared) {
      int ok = 0;
      local = c->check(c->state, &ok);
      if (local < 0)
        bench_error(env, "%s %s: check failed at repetition %d: %s (%s)", env->engine->name,
                    c->algorithm, rep, bpc_err_name(local), bpc_last_error(env->ctx));
      else if (local > 0)
        bench_error(env, "%s %s: check failed at repetition %d (code %d)", env->engine->name,
                    c->algorithm, rep, local);
      else if (!ok)
        correct = 0;
    }
    if (ran_bpc && c->bpc_done != NULL) {
      int rc = c->bpc_done(c->state);
      if (rc != 0) {
        bench_error(env, "%s %s: finishing the bpc run failed at repetition %d: %s (%s)",
                    env->engine->name, c->algorithm, rep, rc < 0 ? bpc_err_name(rc) : "callback",
                    rc < 0 ? bpc_last_error(env->ctx) : "");
        if (local == 0)
          local = rc;
      }
    }
    if (status == 0)
      status = bench_agree(env, local);
  }
  if (status != 0)
    goto cleanup;

  if (MPI_Allreduce(t, tmax, 2 * reps, MPI_DOUBLE, MPI_MAX, env->world) != MPI_SUCCESS ||
      MPI_Allreduce(st, stmax, ST_N, MPI_UINT64_T, MPI_MAX, env->world) != MPI_SUCCESS ||
      MPI_Allreduce(&correct, &gcorrect, 1, MPI_INT, MPI_MIN, env->world) != MPI_SUCCESS ||
      MPI_Allreduce(MPI_IN_PLACE, &allocs, 1, MPI_LONG, MPI_MAX, env->world) != MPI_SUCCESS) {
    bench_error(env, "MPI_Allreduce of the results failed");
    goto cleanup;
  }
  double bdmed[BD_N];
  if (bd != NULL) {
    if (getenv("BENCH_BD_RANKS")) {
      double tmp[BD_N];
      for (int i = 0; i < BD_N; i++) {
        for (int r = 0; r < reps; r++)
          t[r] = bd[(size_t)BD_N * (size_t)r + (size_t)i];
        tmp[i] = summarize(t, reps).median;
      }
      fprintf(stderr, "rank %d:", env->rank);
      for (int i = 0; i < BD_N; i++)
        fprintf(stderr, " %s %.2f", bd_names[i], tmp[i] * 1e6);
      fprintf(stderr, "\n");
    }
    /* the mean over ranks of each step, per repetition; then its median */
    if (MPI_Allreduce(MPI_IN_PLACE, bd, BD_N * reps, MPI_DOUBLE, MPI_SUM, env->world) !=
        MPI_SUCCESS) {
      bench_error(env, "MPI_Allreduce of the breakdown failed");
      goto cleanup;
    }
    for (int i = 0; i < BD_N; i++) {
      for (int r = 0; r < reps; r++) /* t (this rank's times) is done with */
        t[r] = bd[(size_t)BD_N * (size_t)r + (size_t)i] / env->size;
      bdmed[i] = summarize(t, reps).median;
    }
  }
  {
    summary_t b = summarize(tmax, reps), m = summarize(tmax + reps, reps);
    if (c->median_out != NULL)
      *c->median_out = b.median;
    if (env->rank == 0)
      print_result(env, c, &b, &m, stmax, env->shared ? -1 : gcorrect, bd ? bdmed : NULL,
                   allocs);
  }
  if (!gcorrect) {
    env->nfail++;
    if (!correct)
      bench_error(env, "%s %s: wrong result for %llu bytes (%d blocks)", env->engine->name,
                  c->algorithm, (unsigned long long)c->bytes, c->nblocks);
  }
  ret = BENCH_EXIT_OK;

cleanup:
  free(t);
  free(tmax);
  free(bd);
  return ret;
}

/* ------------------------------------------------------------------ main */

int main(int argc, char **argv)
{
  int provided, rank = 0, size = 1, ret = BENCH_EXIT_FAIL;
  bench_opts_t opts;
  parse_result_t pr;
  bench_env_t env;
  bpc_ctx_t *ctx = NULL;

  if (MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) {
    fprintf(stderr, "bpc-bench: MPI_Init_thread failed\n");
    return BENCH_EXIT_FAIL;
  }
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  memset(&env, 0, sizeof env);
  env.world = MPI_COMM_WORLD;
  env.rank = rank;
  env.size = size;
#ifdef BPC_SMPI
  {
    const char *sh = getenv("BPC_SMPI_SHARED");
    env.shared = sh != NULL && sh[0] != '\0' && strcmp(sh, "0") != 0;
#if defined(__x86_64__) || defined(__i386__)
    /* shared payloads hold garbage, whose denormal floats would make the
     * operators' time depend on the data: flush them to zero (MXCSR FTZ
     * and DAZ; the simulated ranks share this thread) */
    if (env.shared)
      __builtin_ia32_ldmxcsr(__builtin_ia32_stmxcsr() | 0x8040u);
#endif
  }
#endif

  /* Every rank parses the same arguments; agree anyway (an error anywhere
   * wins), and let rank 0 speak unless only other ranks failed. */
  int st = parse_args(argc, argv, &opts, &pr), st_all = st, st_r0 = st;
  MPI_Allreduce(&st, &st_all, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Bcast(&st_r0, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (st_all == PARSE_HELP) {
    if (rank == 0)
      usage(stdout, pr.engine);
    ret = BENCH_EXIT_OK;
    goto finish;
  }
  if (st_all == PARSE_ERROR) {
    if (st == PARSE_ERROR && (rank == 0 || st_r0 != PARSE_ERROR))
      fprintf(stderr, "bpc-bench: %s\n", pr.msg);
    ret = BENCH_EXIT_USAGE;
    goto finish;
  }
  if (rank == 0 && pr.warn[0] != '\0')
    fprintf(stderr, "bpc-bench: warning: %s\n", pr.warn);

  int rc = bpc_init(MPI_COMM_WORLD, NULL, &ctx);
  if (bench_agree(&env, rc) != 0) {
    bench_error(&env, "bpc_init failed: %s", bpc_err_name(rc));
    goto finish;
  }
  env.ctx = ctx;
  env.opts = &opts;
  env.engine = pr.engine;
  ret = pr.engine->run(&env);
  if (ret == BENCH_EXIT_OK && env.nfail > 0)
    ret = BENCH_EXIT_FAIL;

finish:
  bpc_finalize(&ctx);
  MPI_Finalize();
  return ret;
}
