# bpc_mpi.m4 - find the MPI C compiler wrapper and check that it works.
# Written for bpc (no autoconf-archive needed).
#
# BPC_PROG_MPICC: before AC_PROG_CC. Honours MPICC, else searches for
# mpicc; sets CC to it unless the user set CC.
AC_DEFUN([BPC_PROG_MPICC], [
  AC_ARG_VAR([MPICC], [MPI C compiler wrapper (default: mpicc)])
  AS_IF([test -z "$MPICC"], [AC_CHECK_PROGS([MPICC], [mpicc mpicc.openmpi mpicc.mpich], [])])
  AS_IF([test -z "$MPICC"],
        [AC_MSG_ERROR([no MPI C compiler wrapper found. On Debian: apt-get install openmpi-bin libopenmpi-dev (or set MPICC)])])
  AS_IF([test -z "$CC"], [CC="$MPICC"])
])

# BPC_CHECK_MPI: after AC_PROG_CC. Links an MPI-3 program (matched probes are
# used by the messaging layer) and finds mpirun for the test suite.
AC_DEFUN([BPC_CHECK_MPI], [
  AC_CACHE_CHECK([whether $CC builds MPI-3 programs], [bpc_cv_mpi3], [
    AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <mpi.h>]], [[
        MPI_Message m; MPI_Status s; int flag;
        MPI_Init(0, 0);
        MPI_Improbe(MPI_ANY_SOURCE, 0, MPI_COMM_WORLD, &flag, &m, &s);
        MPI_Finalize();]])],
      [bpc_cv_mpi3=yes], [bpc_cv_mpi3=no])])
  AS_IF([test "x$bpc_cv_mpi3" != xyes],
        [AC_MSG_ERROR([$CC cannot build MPI-3 programs; install libopenmpi-dev or set MPICC])])
  AC_ARG_VAR([MPIRUN], [MPI launcher used by make check (default: mpirun)])
  AC_PATH_PROGS([MPIRUN], [mpirun mpiexec], [])
  AS_IF([test -z "$MPIRUN"], [AC_MSG_WARN([no mpirun found: make check cannot run the MPI suites])])
])
