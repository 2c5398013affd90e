/*
 * lib/core/version.c - bpc_version(): the version this library was built as
 * (the macros of the generated bpc/version.h, compiled in here).
 */
#include "bpc/core.h"
#include "bpc/version.h"

const char *bpc_version(int *major, int *minor, int *patch)
{
  if (major != NULL)
    *major = BPC_VERSION_MAJOR;
  if (minor != NULL)
    *minor = BPC_VERSION_MINOR;
  if (patch != NULL)
    *patch = BPC_VERSION_PATCH;
  return BPC_VERSION_STRING;
}
