# tests/apps/app_env.sh - sourced by the app tests (tests/apps/test_*.sh):
# the mpirun command and the Open MPI / OpenMP settings they run under, a
# temporary folder $tmp removed on exit, fail=0, and the checks of runs that
# must fail (expect, bad, expect_done, below). Usage:
#   app=./apps/bpc-foo; name=bpc-foo-test; . "$(dirname "$0")/app_env.sh"
: "${MPIRUN:=mpirun}"
OMPI_ALLOW_RUN_AS_ROOT=1
OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
OMPI_MCA_rmaps_base_oversubscribe=1
OMPI_MCA_hwloc_base_binding_policy=none
OMP_NUM_THREADS=1
export OMPI_ALLOW_RUN_AS_ROOT OMPI_ALLOW_RUN_AS_ROOT_CONFIRM \
  OMPI_MCA_rmaps_base_oversubscribe OMPI_MCA_hwloc_base_binding_policy OMP_NUM_THREADS
tmp=${TMPDIR:-/tmp}/$name.$$
mkdir -p "$tmp/ompi" || exit 99
trap 'rm -rf "$tmp"' EXIT
fail=0
# Open MPI's session directories under $tmp: each mpirun creates its job's
# folder under a top folder it shares with every other mpirun of the user
# and removes when it looks empty, so concurrent runs (other tests, the
# background runs below) can remove a parent another is creating into
# ("orte_session_dir failed", seen once in a make check). Here only this
# test's runs share it; each background run of expect gets its own.
OMPI_MCA_orte_tmpdir_base=$tmp/ompi
export OMPI_MCA_orte_tmpdir_base
# own_session ID: the session folder of a run that may overlap others (call
# it in the subshell that runs it in the background)
own_session() {
  OMPI_MCA_orte_tmpdir_base=$tmp/ompi.$1
  mkdir -p "$OMPI_MCA_orte_tmpdir_base"
}

# expect NP STATUS TEXT PROGRAM ARGS...: PROGRAM with ARGS on NP processes
# must exit with STATUS and say TEXT on stderr. The runs are quick argument
# failures whose time is mpirun's start-up, so they run in the background,
# BPC_APP_JOBS (default 4) at a time; expect_done waits for them all and
# sets fail=1 (printing why) if any went wrong. Call it before using $fail.
njobs=0
expect() { # np status text program args...
  np=$1 want_st=$2 want=$3
  shift 3
  njobs=$((njobs + 1))
  id=$njobs
  (
    own_session "$id"
    # mpirun ignores SIGPIPE (inherited): a run whose processes exit at once
    # on bad arguments once ended mpirun by SIGPIPE (status 141, CI's
    # sanitizer stage) instead of with their status 2
    trap '' PIPE
    timeout -k 5 60 "$MPIRUN" -np "$np" "$@" >"$tmp/out.$id" 2>"$tmp/err.$id"
    st=$?
    if [ "$st" -ne "$want_st" ]; then
      { echo "FAIL: np=$np $*: exit status $st, expected $want_st"; cat "$tmp/err.$id"; } >"$tmp/fail.$id"
    elif ! grep -q -- "$want" "$tmp/err.$id"; then
      { echo "FAIL: np=$np $*: message does not say '$want':"; cat "$tmp/err.$id"; } >"$tmp/fail.$id"
    fi
  ) &
  if [ $((njobs % ${BPC_APP_JOBS:-4})) -eq 0 ]; then wait; fi
}
expect_done() {
  wait
  for f in "$tmp"/fail.*; do
    [ -e "$f" ] || continue
    cat "$f"
    rm -f "$f"
    fail=1
  done
}
# bad NP TEXT ARGS...: "$app" ARGS must exit with status 2 and say TEXT.
bad() { # np expected-text args...
  np=$1 want=$2
  shift 2
  expect "$np" 2 "$want" "$app" "$@"
}
