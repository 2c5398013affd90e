# bpc_smpi.m4 - the simulated build: bpc, bpc-bench and the MPI suites
# compiled with SimGrid's SMPI (smpicc) and run on a simulated cluster
# (smpirun with a platform file; apps/bench/sim/).
#
# BPC_ARG_SMPI: before BPC_PROG_MPICC and LT_INIT. --with-smpi (or
# --with-smpi=PATH/smpicc) makes smpicc the compiler and:
#  - exports SMPI_PRETEND_CC=1 while configure runs (smpicc then compiles
#    and links ordinary programs, so configure's test programs run; make
#    runs without it, so what make links are SMPI programs), and sets LD
#    (smpicc prints a warning on stdout in that mode, which libtool's
#    search for ld would otherwise read as the linker's name);
#  - builds static libraries only (smpirun gives each simulated rank its
#    own copy of the program's globals; a shared libbpc would be one copy
#    for all ranks);
#  - keeps SMPI's malloc, calloc, realloc and free (smpicc's macros): by
#    default they are the C library's; with smpi/auto-shared-malloc-thresh
#    set (bpc-smpirun --shared) allocations above it are shared among the
#    simulated ranks, so that 1024 ranks of 16 MiB buffers fit in memory
#    (their contents are then garbage: bpc-bench then checks no result);
#  - defines BPC_SMPI=1 (what differs in the code: the MPI transport's
#    probe and the pool's free lists, bpc-bench's charging of MPI's
#    operators, its written-out baselines and shared payloads; see
#    doc/scale.md) and sets MPIRUN to apps/bench/sim/bpc-smpirun, so the
#    MPI suites run on a simulated cluster (apps/bench/sim/simcheck.sh).
# Sets bpc_smpi (yes/no), SMPIRUN and the conditional BPC_SMPI.
AC_DEFUN([BPC_ARG_SMPI], [
  AC_ARG_WITH([smpi],
    [AS_HELP_STRING([--with-smpi@<:@=SMPICC@:>@],
      [build for SimGrid's SMPI simulator (Debian package libsimgrid-dev): smpicc compiles, static libraries, make check runs on a simulated cluster (default: no)])],
    [], [with_smpi=no])
  bpc_smpi=no
  AS_IF([test "x$with_smpi" != xno], [
    AS_IF([test "x$with_smpi" = xyes], [AC_PATH_PROG([BPC_SMPICC], [smpicc], [])],
          [BPC_SMPICC=$with_smpi])
    AS_IF([test -z "$BPC_SMPICC" || test ! -x "$BPC_SMPICC"],
      [AC_MSG_ERROR([--with-smpi: smpicc not found: install the Debian package 'libsimgrid-dev' (SimGrid 3.32), or give its path, --with-smpi=/path/to/smpicc])])
    bpc_smpi_dir=`AS_DIRNAME(["$BPC_SMPICC"])`
    AC_PATH_PROG([SMPIRUN], [smpirun], [], [$bpc_smpi_dir$PATH_SEPARATOR$PATH])
    AS_IF([test -z "$SMPIRUN"],
      [AC_MSG_ERROR([--with-smpi: smpicc found ($BPC_SMPICC) but not smpirun beside it or on PATH])])
    bpc_smpi=yes
    bpc_smpi_version=`"$BPC_SMPICC" --version 2>/dev/null | head -n 1`
    AC_MSG_NOTICE([SMPI: $BPC_SMPICC ($bpc_smpi_version), $SMPIRUN])
    MPICC=$BPC_SMPICC
    CC=$BPC_SMPICC
    SMPI_PRETEND_CC=1
    export SMPI_PRETEND_CC
    AS_IF([test -z "$LD"], [LD=ld])
    AS_IF([test -z "${enable_shared+set}"], [enable_shared=no])
    AS_IF([test -z "${enable_static+set}"], [enable_static=yes])
    AS_IF([test "x$enable_shared" != xno],
      [AC_MSG_ERROR([--with-smpi builds static libraries only (each simulated rank needs its own copy of libbpc's globals): drop --enable-shared])])
    AC_DEFINE([BPC_SMPI], [1], [built with SimGrid's SMPI])
  ])
  AM_CONDITIONAL([BPC_SMPI], [test "x$bpc_smpi" = xyes])
  AC_SUBST([SMPIRUN])
])

# BPC_SMPI_DONE: after BPC_CHECK_MPI and the last test program of
# configure: smpicc no longer pretends (config.status and make run without
# it), and make check's launcher is bpc-smpirun (unless MPIRUN was given).
AC_DEFUN([BPC_SMPI_DONE], [
  AS_IF([test "x$bpc_smpi" = xyes], [
    AS_UNSET([SMPI_PRETEND_CC])
    AS_IF([test -z "$ac_env_MPIRUN_value"], [MPIRUN='$(abs_top_srcdir)/apps/bench/sim/bpc-smpirun'])])
])
