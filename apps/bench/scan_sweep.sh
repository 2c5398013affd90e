#!/bin/sh
# apps/bench/scan_sweep.sh - the bpc-bench scan sweep of issue 12: P = 2, 4, 8
# processes x operator cost 1 and 10 ms x N = P (one item per rank), 64 and
# 1024 items, every bpc_scan strategy x global algorithm against MPI_Scan
# linear and recursive doubling, alternating in each run; one table.
#
# Usage (from the source tree, after ./quickstart build):
#   sh apps/bench/scan_sweep.sh [OUTFILE]       (default: scan_sweep.txt)
# Environment (defaults):
#   BENCH=_build/apps/bpc-bench  PROCS="2 4 8"  OPS=1,10  NS=p,64,1024
#   REPS=3  WARMUP=2  JSON=0 (1: JSON lines instead of the table)
#   MPIRUN="mpirun --bind-to none --oversubscribe -x OMP_NUM_THREADS"
#   OMP_NUM_THREADS=1  EXTRA="" (more bpc-bench options, e.g. --cores 2)
# Run time: REPS x the sum of every line's time. With the defaults on 2
# cores the lines' model bounds alone add up to 27 minutes (9 min per
# repetition; the N = 1024, 10 ms lines dominate: 7.7-10 s per variant and
# repetition at every P), so expect 35-40 minutes; REPS=1 about 13 minutes;
# REPS=1 OPS=1 about 1-2 minutes.
# Smoke test: OPS=0.01 NS=p,64 REPS=1 sh apps/bench/scan_sweep.sh /tmp/s.txt
set -u
BENCH=${BENCH:-_build/apps/bpc-bench}
PROCS=${PROCS:-"2 4 8"}
OPS=${OPS:-1,10}
NS=${NS:-p,64,1024}
REPS=${REPS:-3}
WARMUP=${WARMUP:-2}
JSON=${JSON:-0}
MPIRUN=${MPIRUN:-"mpirun --bind-to none --oversubscribe -x OMP_NUM_THREADS"}
EXTRA=${EXTRA:-}
OUT=${1:-scan_sweep.txt}
OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
# recursive doubling in MPI_Scan needs Open MPI's dynamic rules (the bench
# picks the algorithm per communicator through MPI_T); waiting ranks yield
# their core to working ones when the node is oversubscribed
OMPI_MCA_coll_tuned_use_dynamic_rules=1
OMPI_MCA_mpi_yield_when_idle=1
export OMP_NUM_THREADS OMPI_MCA_coll_tuned_use_dynamic_rules OMPI_MCA_mpi_yield_when_idle

if [ ! -x "$BENCH" ]; then
  echo "scan_sweep.sh: no $BENCH (build first, or set BENCH)" >&2
  exit 2
fi
fmt=""
[ "$JSON" = 1 ] && fmt=--json
: > "$OUT" || exit 2
status=0
first=1
start=$(date +%s)
for p in $PROCS; do
  hdr=""
  [ $first = 1 ] || hdr=--no-header
  first=0
  echo "scan_sweep.sh: P=$p ..." >&2
  # shellcheck disable=SC2086
  $MPIRUN -np "$p" "$BENCH" scan --op-ms "$OPS" --n "$NS" --reps "$REPS" \
    --warmup "$WARMUP" $hdr $fmt $EXTRA >> "$OUT" || status=1
done
echo "scan_sweep.sh: $(($(date +%s) - start)) s; table in $OUT" >&2
cat "$OUT"
exit $status
