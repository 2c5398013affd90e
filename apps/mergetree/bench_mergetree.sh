#!/bin/sh
# apps/mergetree/bench_mergetree.sh - the bpc-mergetree benchmark table of
# issue 14 (doc/apps/mergetree.md, "Benchmark"): a 256^3 synthetic field at
# P = 1, 2, 4, 8 processes, bpc-mergetree with 8..512 blocks against the
# baseline (gather the field to rank 0, one serial union-find there). Every
# line is its own mpirun, so maxrss (the peak resident memory, max over
# ranks) is that configuration's. Equal digests: equal pairs.
#   sh apps/mergetree/bench_mergetree.sh [BUILD_DIR] [extra bpc-mergetree options]
# Run it on an idle machine; timings on a loaded one mean nothing.
build=${1:-_build}
[ $# -gt 0 ] && shift
app=$build/apps/bpc-mergetree
: "${MPIRUN:=mpirun}"
: "${BENCH_NPS:=1 2 4 8}"
: "${BENCH_BLOCKS:=8 16 32 64 128 256 512}"
OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
export OMP_NUM_THREADS
first=1
for np in $BENCH_NPS; do
  for b in gather $BENCH_BLOCKS; do
    if [ "$b" = gather ]; then
      set -- --baseline gather "$@"
    else
      set -- --blocks "$b" "$@"
    fi
    out=$("$MPIRUN" --bind-to none -np "$np" "$app" --bench "$@") || exit 1
    shift 2
    if [ $first -eq 1 ]; then echo "$out"; first=0; else echo "$out" | grep -v '^#'; fi
  done
done
