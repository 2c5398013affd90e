/*
 * lib/core/ctx.c - context creation and destruction, options from the
 * environment, tag epochs, timers, logging.
 */
#include "core/core.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <time.h>

#define BPC__DEFAULT_POOL_BYTES (256LL << 20)
/* Tags below this are left to the user of the duplicated communicator (none
 * today); epochs cycle through [BPC__TAG_FIRST, tag_ub]. */
#define BPC__TAG_FIRST 16

void *bpc__malloc(size_t n) { return malloc(n ? n : 1); }
void *bpc__calloc(size_t n, size_t size) { return calloc(n ? n : 1, size ? size : 1); }

void *bpc__big_alloc(size_t bytes, int *paged)
{
  if (bytes == 0)
    bytes = 1;
  *paged = 0;
  void *p = malloc(bytes);
  if (p != NULL)
    return p;
  p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED)
    return NULL;
  *paged = 1;
  return p;
}

void *bpc__scratch(bpc_ctx_t *ctx, int slot, size_t bytes)
{
  if (bytes <= ctx->scratch_cap[slot] && ctx->scratch[slot] != NULL)
    return ctx->scratch[slot];
  size_t cap = ctx->scratch_cap[slot] ? 2 * ctx->scratch_cap[slot] : 256;
  while (cap < bytes)
    cap *= 2;
  void *p = malloc(cap);
  if (p == NULL)
    return NULL;
  free(ctx->scratch[slot]);
  ctx->scratch[slot] = p;
  ctx->scratch_cap[slot] = cap;
  return p;
}

void bpc__must_free(void *p, size_t bytes, int paged)
{
  if (paged)
    munmap(p, bytes ? bytes : 1);
  else
    free(p);
}

long long bpc__env_ll(const char *name, long long dflt)
{
  const char *s = getenv(name);
  if (s == NULL || *s == '\0')
    return dflt;
  char *end = NULL;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (errno != 0 || end == s)
    return dflt;
  return v;
}

static int log_level_from_env(void)
{
  const char *s = getenv("BPC_LOG");
  if (s == NULL || *s == '\0')
    return BPC_LOG_WARN;
  static const struct {
    const char *name;
    int level;
  } names[] = {{"none", BPC_LOG_NONE}, {"error", BPC_LOG_ERROR}, {"warn", BPC_LOG_WARN},
               {"info", BPC_LOG_INFO}, {"debug", BPC_LOG_DEBUG}};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (strcasecmp(s, names[i].name) == 0)
      return names[i].level;
  return BPC_LOG_WARN;
}

bpc_options_t bpc_options_default(void)
{
  bpc_options_t o;
  memset(&o, 0, sizeof o);
  o.log_level = BPC_LOG_DEFAULT;
  o.pool_bytes = -1;
  return o;
}

static int ctx_alloc(const bpc_options_t *opts, bpc_ctx_t **out)
{
  bpc_ctx_t *ctx = bpc__calloc(1, sizeof *ctx);
  if (ctx == NULL)
    return BPC_ENOMEM;
  bpc_options_t o = opts ? *opts : bpc_options_default();
  ctx->log_level = o.log_level >= 0 ? o.log_level : log_level_from_env();
  ctx->pool_bytes = o.pool_bytes >= 0 ? o.pool_bytes
                                      : bpc__env_ll("BPC_POOL_BYTES", BPC__DEFAULT_POOL_BYTES);
  ctx->no_bundle = bpc__env_ll("BPC_BUNDLE", 1) == 0;
  ctx->comm = MPI_COMM_NULL;
  ctx->rank = 0;
  ctx->size = 1;
  ctx->tag_ub = 32767;
  *out = ctx;
  return BPC_OK;
}

int bpc_init(MPI_Comm comm, const bpc_options_t *opts, bpc_ctx_t **out)
{
  int flag = 0;
  bpc_ctx_t *ctx = NULL;
  if (out != NULL)
    *out = NULL;
  if (MPI_Initialized(&flag) != MPI_SUCCESS || !flag)
    return BPC_EINVAL;
  if (comm == MPI_COMM_NULL)
    return BPC_EINVAL; /* not in any communicator: nobody to agree with */
  /* the collective step first, then what may fail on one rank only, then
   * one agreement (the lowest code): a rank out of memory or passing out
   * NULL must not leave the others in MPI_Comm_dup */
  MPI_Comm dup = MPI_COMM_NULL;
  if (MPI_Comm_dup(comm, &dup) != MPI_SUCCESS)
    return BPC_EMPI;
  MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN);
  int rc = out == NULL ? BPC_ENULL : ctx_alloc(opts, &ctx), low = BPC_OK;
  if (MPI_Allreduce(&rc, &low, 1, MPI_INT, MPI_MIN, dup) != MPI_SUCCESS)
    rc = rc != BPC_OK ? rc : BPC_EMPI;
  else if (rc == BPC_OK)
    rc = low; /* another rank's */
  if (rc != BPC_OK) {
    MPI_Comm_free(&dup);
    free(ctx);
    return rc;
  }
  ctx->comm = dup;
  MPI_Comm_rank(ctx->comm, &ctx->rank);
  MPI_Comm_size(ctx->comm, &ctx->size);
  void *ub = NULL;
  flag = 0;
  if (MPI_Comm_get_attr(ctx->comm, MPI_TAG_UB, &ub, &flag) == MPI_SUCCESS && flag && ub)
    ctx->tag_ub = *(int *)ub;
  *out = ctx;
  return BPC_OK;
}

int bpc_init_serial(const bpc_options_t *opts, bpc_ctx_t **out)
{
  if (out == NULL)
    return BPC_ENULL;
  *out = NULL;
  bpc_ctx_t *ctx = NULL;
  int rc = ctx_alloc(opts, &ctx);
  if (rc != BPC_OK)
    return rc;
  ctx->serial = 1;
  *out = ctx;
  return BPC_OK;
}

int bpc_finalize(bpc_ctx_t **pctx)
{
  if (pctx == NULL || *pctx == NULL)
    return BPC_OK;
  bpc_ctx_t *ctx = *pctx;
  if (bpc__busy_check(ctx, "bpc_finalize") != BPC_OK)
    return BPC_EBUSY; /* from inside a callback of a call running on it */
  for (int i = ctx->ncleanup - 1; i >= 0; i--)
    ctx->cleanup[i].fn(ctx->cleanup[i].arg);
  int rc = BPC_OK;
  if (!ctx->serial && ctx->comm != MPI_COMM_NULL) {
    int fin = 0;
    MPI_Finalized(&fin);
    if (!fin && MPI_Comm_free(&ctx->comm) != MPI_SUCCESS)
      rc = BPC_EMPI;
  }
  if (ctx->exch_spare != NULL)
    bpc__must_free(ctx->exch_spare, ctx->exch_spare_bytes, ctx->exch_spare_paged);
  for (int i = 0; i < BPC__SCR_N; i++)
    free(ctx->scratch[i]);
  free(ctx);
  *pctx = NULL;
  return rc;
}

int bpc_plan_start(bpc_plan_t *plan)
{
  if (plan == NULL)
    return BPC_ENULL;
  BPC__GUARDED_RETURN(plan->ctx, plan->call, plan->start(plan));
}

int bpc_plan_free(bpc_plan_t **plan)
{
  if (plan == NULL || *plan == NULL)
    return BPC_OK;
  if (bpc__busy_check((*plan)->ctx, "bpc_plan_free") != BPC_OK)
    return BPC_EBUSY;
  (*plan)->destroy(*plan);
  *plan = NULL;
  return BPC_OK;
}

const char *bpc_plan_engine(const bpc_plan_t *plan) { return plan != NULL ? plan->engine : NULL; }

int bpc_ctx_rank(const bpc_ctx_t *ctx, int *rank)
{
  if (ctx == NULL || rank == NULL)
    return BPC_ENULL;
  *rank = ctx->rank;
  return BPC_OK;
}

int bpc_ctx_size(const bpc_ctx_t *ctx, int *size)
{
  if (ctx == NULL || size == NULL)
    return BPC_ENULL;
  *size = ctx->size;
  return BPC_OK;
}

int bpc_ctx_comm(const bpc_ctx_t *ctx, MPI_Comm *comm)
{
  if (ctx == NULL || comm == NULL)
    return BPC_ENULL;
  *comm = ctx->comm;
  return BPC_OK;
}

int bpc_set_log_level(bpc_ctx_t *ctx, bpc_log_level_t level)
{
  if (ctx == NULL)
    return BPC_ENULL;
  if (level < BPC_LOG_NONE || level > BPC_LOG_DEBUG)
    return bpc__err(ctx, BPC_ERANGE, "log level %d is not in [%d, %d]", level, BPC_LOG_NONE,
                    BPC_LOG_DEBUG);
  ctx->log_level = level;
  return BPC_OK;
}

double bpc_wtime(const bpc_ctx_t *ctx)
{
  if (ctx != NULL && !ctx->serial)
    return MPI_Wtime();
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int bpc__next_tag(bpc_ctx_t *ctx)
{
  long long span = (long long)ctx->tag_ub - BPC__TAG_FIRST + 1;
  int tag = (int)(BPC__TAG_FIRST + (long long)(ctx->epoch % (unsigned long long)span));
  ctx->epoch++;
  return tag;
}

int bpc__cleanup_add(bpc_ctx_t *ctx, const char *name, void (*fn)(void *), void *arg)
{
  if (ctx->ncleanup >= BPC__MAX_CLEANUPS)
    return bpc__err(ctx, BPC_ENOMEM, "too many context extensions (max %d)", BPC__MAX_CLEANUPS);
  ctx->cleanup[ctx->ncleanup].fn = fn;
  ctx->cleanup[ctx->ncleanup].arg = arg;
  ctx->cleanup[ctx->ncleanup].name = name;
  ctx->ncleanup++;
  return BPC_OK;
}

void *bpc__cleanup_find(const bpc_ctx_t *ctx, const char *name)
{
  for (int i = 0; i < ctx->ncleanup; i++)
    if (strcmp(ctx->cleanup[i].name, name) == 0)
      return ctx->cleanup[i].arg;
  return NULL;
}

void bpc__log(const bpc_ctx_t *ctx, int level, const char *fmt, ...)
{
  int cur = ctx ? ctx->log_level : log_level_from_env();
  if (level > cur || level <= BPC_LOG_NONE)
    return;
  static const char *const names[] = {"", "error", "warn", "info", "debug"};
  char line[1024];
  int n = snprintf(line, sizeof line, "[bpc r%d %s] ", ctx ? ctx->rank : 0, names[level]);
  if (n < 0 || (size_t)n >= sizeof line)
    n = 0;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
  va_end(ap);
  fprintf(stderr, "%s\n", line); /* one write per line keeps ranks' lines whole */
}
