#!/bin/sh
# simcheck.sh - bpc's MPI test suites on a simulated cluster (SMPI build).
#
#   apps/bench/sim/simcheck.sh [--build DIR] [--np LIST] [--platform NAME]
#                              [--timeout S] [SUITE ...]
#
# Runs each suite (default: the engines' suites, see below) under
# bpc-smpirun at each count of --np (default "8"), CK_FORK=no, each run
# under a timeout (default 600 s: a hang fails). Prints a line per run,
# Check's summary lines, and one closing "N passed, N failed" line over all
# runs (checks counted as Check counts them; a run that crashed or timed
# out counts as one failure). Exit 1 when anything failed.
# The serial suites (tests/unit) are not run: smpicc links every program as
# an SMPI program, which only smpirun can start; the normal build runs them.
# Left out of the default list, with what was seen when it was made (SMPI
# 3.32, 8 processes on the 'small' platform): test_bcast and test_scan did
# not finish in 4 minutes (perf: 90% of the time in one loop inside
# libsimgrid, not in bpc; not investigated further; test_scan's 'mpi' rows
# would also fail: SMPI's MPI_Scan/MPI_Exscan ignore a non-commutative
# operator, see apps/bench/bench_scan.c); test_io (MPI-IO needs disks in the
# platform); test_faults, test_trace and test_render (long sweeps and apps).
# The default list passed in 1-41 s a suite.
set -u
top=$(cd "$(dirname "$0")/../../.." && pwd)
build=$top/_build-smpi
nps=8
platform=small
tmo=600
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --np) nps=$2; shift 2 ;;
    --platform) platform=$2; shift 2 ;;
    --timeout) tmo=$2; shift 2 ;;
    -h | --help) sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) echo "simcheck.sh: unknown option $1" >&2; exit 2 ;;
    *) break ;;
  esac
done
suites=${*:-test_core_mpi test_decomp_mpi test_comm test_merge test_swap test_alltoall test_neighbor test_composite}
CK_FORK=no
CK_DEFAULT_TIMEOUT=0
export CK_FORK CK_DEFAULT_TIMEOUT
checks=0
fails=0
status=0
logdir=$build/tests/sim
mkdir -p "$logdir"
for np in $nps; do
  for s in $suites; do
    prog=$build/tests/mpi/$s
    if [ ! -x "$prog" ]; then
      echo "simcheck.sh: $prog not built (make check TESTS= in $build)" >&2
      fails=$((fails + 1))
      status=1
      continue
    fi
    log=$logdir/$s-$np.log
    start=$(date +%s)
    timeout -k 10 "$tmo" "$top/apps/bench/sim/bpc-smpirun" --platform "$platform" -np "$np" "$prog" >"$log" 2>&1
    rc=$?
    secs=$(($(date +%s) - start))
    line=$(grep -E '^[0-9]+%: Checks: ' "$log" | head -n 1)
    c=$(echo "$line" | sed -n 's/.*Checks: \([0-9]*\).*/\1/p')
    f=$(echo "$line" | sed -n 's/.*Failures: \([0-9]*\), Errors: \([0-9]*\).*/\1 \2/p')
    c=${c:-0}
    nf=0
    for x in $f; do nf=$((nf + x)); done
    if [ "$rc" != 0 ] && [ "$nf" = 0 ]; then nf=1; fi
    checks=$((checks + c))
    fails=$((fails + nf))
    if [ "$rc" = 0 ]; then
      echo "simcheck.sh: $s np=$np PASS ($secs s) $line"
    else
      status=1
      [ "$rc" = 124 ] && echo "simcheck.sh: $s np=$np TIMEOUT after $tmo s" >&2
      echo "simcheck.sh: $s np=$np FAIL (exit $rc, $secs s) $line"
      grep -E 'Not yet implemented|:F:|:E:' "$log" | head -n 5
    fi
  done
done
passed=$((checks - fails))
[ $passed -lt 0 ] && passed=0
echo "simulated: $passed passed, $fails failed"
exit $status
