# tests/apps/app_env.sh - sourced by the app tests (tests/apps/test_*.sh):
# the mpirun command and the Open MPI / OpenMP settings they run under, a
# temporary folder $tmp removed on exit, and fail=0. Usage:
#   name=bpc-foo-test; . "$(dirname "$0")/app_env.sh"
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
