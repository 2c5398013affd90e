/*
 * lib/engines/engines.c - the list of every engine's algorithm table, for
 * bpc_algorithms (lib/core/registry.c). A new engine adds one line here.
 */
#include "core/registry.h"

const bpc__engine_t *const bpc__engines[] = {NULL};
const int bpc__nengines = 0;
