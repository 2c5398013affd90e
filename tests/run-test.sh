#!/bin/sh
# tests/run-test.sh PROGRAM - run one test for `make check`.
#   tests/unit/*, the scripts: run directly, with a timeout.
#   tests/mpi/*:  run under $MPIRUN at every process count listed for it in
#                 $BPC_TESTLIST, with CK_FORK=no, a timeout per run
#                 (BPC_TEST_TIMEOUT seconds, default 300, times one more for
#                 every 4 processes beyond 4: 600 s at 5-8, 900 s at 9-12),
#                 oversubscription and OMP_WAIT_POLICY=passive (unless set).
#                 The scaling is for a busy machine: an oversubscribed run
#                 waits for time slices at every message, and other load
#                 multiplies that (test_faults at 12 processes on 2 cores:
#                 7 s idle, 122 s beside two busy loops, over 300 s on a
#                 machine busier still).
# Sanitizer build (BPC_LSAN_SUPP set by tests/Makefile.mk): LeakSanitizer
# with whole stacks at every count, or, with BPC_LSAN_MAXNP=n, only up to n
# processes; above n, AddressSanitizer and UBSan still run but without leak
# detection, with the fast unwinder (about 2.4 times faster: the whole
# stacks the leak suppressions need cost a slow unwind per malloc).
# The suite itself sums failures over ranks (tests/mpi/mpi_check.h), so any
# failing rank makes the run exit nonzero. Exit 0 only if every run passed.
# Every run prints a "run-test.sh: NAME ... (N s)" line into the test's log
# (.ci/run lists the slowest tests from them).
set -u
prog=$1
name=$(basename "$prog")
timeout_s=${BPC_TEST_TIMEOUT:-300}

CK_FORK=no
CK_DEFAULT_TIMEOUT=${CK_DEFAULT_TIMEOUT:-0}
OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
export CK_FORK CK_DEFAULT_TIMEOUT OMP_NUM_THREADS
if [ -n "${BPC_LSAN_SUPP:-}" ]; then
  # Open MPI's libraries have no frame pointers: the slow unwinder gives
  # whole stacks, so the suppressions can recognise Open MPI's allocations
  LSAN_OPTIONS="suppressions=$BPC_LSAN_SUPP:print_suppressions=0:fast_unwind_on_malloc=0${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
  ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:fast_unwind_on_malloc=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
  UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
  # keep Open MPI's plug-ins loaded so their allocations are attributed to
  # them (and suppressed) instead of to an unloaded "<unknown module>"
  OMPI_MCA_mca_base_component_disable_dlclose=1
  export LSAN_OPTIONS ASAN_OPTIONS UBSAN_OPTIONS OMPI_MCA_mca_base_component_disable_dlclose
fi

case "$prog" in
  */mpi/*) ;;
  *)
    start=$(date +%s)
    timeout -k 10 "$timeout_s" "$prog"
    rc=$?
    # the time, for finding what makes a stage slow (like the MPI lines below)
    echo "run-test.sh: $name exit $rc ($(($(date +%s) - start)) s)"
    exit $rc
    ;;
esac

: "${MPIRUN:=mpirun}"
list=${BPC_TESTLIST:-$(dirname "$0")/testlist}
counts=$(awk -v n="$name" '$1 == n { $1 = ""; print }' "$list")
if [ -n "${BPC_NP:-}" ]; then counts=$BPC_NP; fi
if [ -z "$counts" ]; then
  echo "run-test.sh: $name is not listed in $list" >&2
  exit 99
fi

# Open MPI: allow root (CI runs as root), more ranks than cores, no binding.
OMPI_ALLOW_RUN_AS_ROOT=1
OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
OMPI_MCA_rmaps_base_oversubscribe=1
OMPI_MCA_hwloc_base_binding_policy=none
OMPI_MCA_btl_vader_single_copy_mechanism=none
MPIEXEC_TIMEOUT=$timeout_s
# OpenMP threads of oversubscribed ranks must sleep when idle: with the
# default (spinning) wait policy every idle team thread burns a core that a
# rank waiting for a message needs, and each message hop waits for a time
# slice (test_scan at 3 ranks on 2 cores: about 95 s spinning, 4 s passive).
: "${OMP_WAIT_POLICY:=passive}"
# Open MPI's session directories in a folder of this test's own: the top
# folder every mpirun of the user shares is removed by whichever run finds
# it empty, which can race with another run creating its job's folder in it
# (tests run two at a time under make -j2; tests/apps/app_env.sh has the same)
otmp=$(mktemp -d "${TMPDIR:-/tmp}/bpc-ompi.XXXXXX") || exit 99
trap 'rm -rf "$otmp"' EXIT
OMPI_MCA_orte_tmpdir_base=$otmp
export OMPI_ALLOW_RUN_AS_ROOT OMPI_ALLOW_RUN_AS_ROOT_CONFIRM \
  OMPI_MCA_rmaps_base_oversubscribe OMPI_MCA_hwloc_base_binding_policy \
  OMPI_MCA_btl_vader_single_copy_mechanism MPIEXEC_TIMEOUT OMP_WAIT_POLICY \
  OMPI_MCA_orte_tmpdir_base

status=0
passed=0
failed=0
asan_all=${ASAN_OPTIONS:-}
lsan_all=${LSAN_OPTIONS:-}
for np in $counts; do
  start=$(date +%s)
  if [ -n "${BPC_LSAN_SUPP:-}" ] && [ -n "${BPC_LSAN_MAXNP:-}" ] && [ "$np" -gt "$BPC_LSAN_MAXNP" ]; then
    ASAN_OPTIONS="$asan_all:detect_leaks=0:fast_unwind_on_malloc=1"
    LSAN_OPTIONS="$lsan_all:fast_unwind_on_malloc=1"
    leaks=" no leak check"
  else
    ASAN_OPTIONS=$asan_all
    LSAN_OPTIONS=$lsan_all
    leaks=""
  fi
  [ -n "${BPC_LSAN_SUPP:-}" ] && export ASAN_OPTIONS LSAN_OPTIONS
  limit=$((timeout_s * (1 + (np > 4 ? (np - 1) / 4 : 0))))
  MPIEXEC_TIMEOUT=$limit
  export MPIEXEC_TIMEOUT
  timeout -k 10 $((limit + 30)) "$MPIRUN" -np "$np" "$prog"
  rc=$?
  end=$(date +%s)
  if [ $rc -eq 0 ]; then
    passed=$((passed + 1))
    echo "run-test.sh: $name np=$np PASS ($((end - start)) s$leaks)"
  else
    failed=$((failed + 1))
    status=1
    [ $rc -eq 124 ] && echo "run-test.sh: $name np=$np TIMEOUT after $limit s" >&2
    echo "run-test.sh: $name np=$np FAIL (exit $rc$leaks)"
  fi
done
echo "run-test.sh: $name: $passed process counts passed, $failed failed"
exit $status
