/*
 * lib/core/error.c - error names and texts from BPC_ERRNO_MAP, the per-context
 * detailed message, and the collective error agreement.
 */
#include "core/core.h"

#include <stdio.h>
#include <string.h>

const char *bpc_strerror(int code)
{
  switch (code) {
#define BPC__ERR_TEXT(name, value, text) \
  case (value):                          \
    return text;
    BPC_ERRNO_MAP(BPC__ERR_TEXT)
#undef BPC__ERR_TEXT
  default:
    return "unknown error code";
  }
}

const char *bpc_err_name(int code)
{
  switch (code) {
#define BPC__ERR_NAME(name, value, text) \
  case (value):                          \
    return "BPC_" #name;
    BPC_ERRNO_MAP(BPC__ERR_NAME)
#undef BPC__ERR_NAME
  default:
    return "BPC_E?";
  }
}

const char *bpc_last_error(const bpc_ctx_t *ctx)
{
  if (ctx == NULL)
    return "NULL context";
  return ctx->errmsg;
}

int bpc__err(bpc_ctx_t *ctx, int code, const char *fmt, ...)
{
  if (ctx == NULL)
    return code;
  va_list ap;
  va_start(ap, fmt);
  int n = snprintf(ctx->errmsg, sizeof ctx->errmsg, "%s: ", bpc_err_name(code));
  if (n < 0 || (size_t)n >= sizeof ctx->errmsg)
    n = 0;
  vsnprintf(ctx->errmsg + n, sizeof ctx->errmsg - (size_t)n, fmt, ap);
  va_end(ap);
  bpc__log(ctx, BPC_LOG_DEBUG, "%s", ctx->errmsg);
  return code;
}

int bpc__err_mpi(bpc_ctx_t *ctx, int mpi_rc, const char *what)
{
  char s[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(mpi_rc, s, &len) != MPI_SUCCESS)
    snprintf(s, sizeof s, "MPI error %d", mpi_rc);
  return bpc__err(ctx, BPC_EMPI, "%s failed: %s", what, s);
}

/* ---------------------------------------------------------- re-entrancy */

static int busy_err(bpc_ctx_t *ctx, const char *call)
{
  const char *running = __atomic_load_n(&ctx->busy_call, __ATOMIC_ACQUIRE);
  return bpc__err(ctx, BPC_EBUSY,
                  "%s: called from inside a callback of %s on the same context; collective "
                  "calls on a context are not allowed while one runs on it (local queries "
                  "are; use another context for a nested collective)",
                  call, running != NULL ? running : "a running call");
}

int bpc__enter(bpc_ctx_t *ctx, const char *call)
{
  int idle = 0;
  if (!__atomic_compare_exchange_n(&ctx->busy, &idle, 1, 0, __ATOMIC_ACQ_REL,
                                   __ATOMIC_ACQUIRE))
    return busy_err(ctx, call);
  __atomic_store_n(&ctx->busy_call, call, __ATOMIC_RELEASE);
  memcpy(ctx->errmsg_before, ctx->errmsg, sizeof ctx->errmsg);
  return BPC_OK;
}

void bpc__leave(bpc_ctx_t *ctx, int rc)
{
  if (rc == BPC_OK)
    memcpy(ctx->errmsg, ctx->errmsg_before, sizeof ctx->errmsg);
  __atomic_store_n(&ctx->busy, 0, __ATOMIC_RELEASE);
}

int bpc__busy_check(bpc_ctx_t *ctx, const char *call)
{
  return __atomic_load_n(&ctx->busy, __ATOMIC_ACQUIRE) ? busy_err(ctx, call) : BPC_OK;
}
