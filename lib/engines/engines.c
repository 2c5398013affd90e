/*
 * lib/engines/engines.c - the list of every engine's algorithm table, for
 * bpc_algorithms (lib/core/registry.c). A new engine adds its line here
 * (each engine defines its bpc__engine_<name> beside its rows).
 */
#include "core/registry.h"
#include "engines/neighbor/neighbor_internal.h"

extern const bpc__engine_t bpc__engine_merge;
extern const bpc__engine_t bpc__engine_swap;
extern const bpc__engine_t bpc__engine_alltoall;
extern const bpc__engine_t bpc__engine_allreduce;
extern const bpc__engine_t bpc__engine_neighbor;
extern const bpc__engine_t bpc__engine_bcast;
extern const bpc__engine_t bpc__engine_composite;
extern const bpc__engine_t bpc__engine_scan;

const bpc__engine_t *const bpc__engines[] = {
    &bpc__engine_merge,    &bpc__engine_swap,  &bpc__engine_alltoall,  &bpc__engine_allreduce,
    &bpc__engine_neighbor, &bpc__engine_bcast, &bpc__engine_composite, &bpc__engine_scan,
};
const int bpc__nengines = BPC__NROWS(bpc__engines);
