/*
 * lib/engines/engines.c - the list of every engine's algorithm table, for
 * bpc_algorithms (lib/core/registry.c). A new engine adds one line here.
 */
#include "core/registry.h"
#include "engines/alltoall/alltoall_internal.h"
#include "engines/swap/swap_internal.h"

const bpc__engine_t *const bpc__engines[] = {
    &bpc__engine_swap,
    &bpc__engine_alltoall,
};
const int bpc__nengines = BPC__NROWS(bpc__engines);
