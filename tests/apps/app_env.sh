# tests/apps/app_env.sh - sourced by the app tests (tests/apps/test_*.sh):
# the mpirun command and the Open MPI / OpenMP settings they run under, a
# temporary folder $tmp removed on exit, fail=0, and bad(). Usage:
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
mkdir -p "$tmp" || exit 99
trap 'rm -rf "$tmp"' EXIT
fail=0

# bad NP TEXT ARGS...: "$app" ARGS at NP processes must exit with status 2
# and say TEXT on stderr (else fail=1)
bad() { # np expected-text args...
  np=$1 want=$2
  shift 2
  timeout -k 5 60 "$MPIRUN" -np "$np" "$app" "$@" >"$tmp/out" 2>"$tmp/err"
  st=$?
  if [ "$st" -ne 2 ]; then
    echo "FAIL: np=$np $*: exit status $st, expected 2"; cat "$tmp/err"; fail=1
  elif ! grep -q -- "$want" "$tmp/err"; then
    echo "FAIL: np=$np $*: message does not say '$want':"; cat "$tmp/err"; fail=1
  fi
}
