/*
 * lib/engines/engines.c - the list of every engine's algorithm table, for
 * bpc_algorithms (lib/core/registry.c). A new engine adds one line here.
 */
#include "core/registry.h"
#include "engines/neighbor/neighbor.h"

const bpc__engine_t *const bpc__engines[] = {
    &bpc__engine_neighbor,
};
const int bpc__nengines = BPC__NROWS(bpc__engines);
