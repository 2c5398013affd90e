# bpc_deps.m4 - the optional dependencies: Check and libpng.
#
# The library itself needs only MPI and OpenMP. Check is needed by the test
# suites (make check) and libpng by the apps that write PNG images
# (bpc-render, bpc-trace). Without them configure goes on, skips those parts
# and says so at the end (BPC_REPORT_SKIPPED); ./quickstart installs both.

# BPC_OPTIONAL_CHECK: --with-check=yes|no|auto (default auto). Sets
# CHECK_CFLAGS, CHECK_LIBS, bpc_have_check, the conditional BPC_HAVE_CHECK and
# the substitution BPC_HAVE_CHECK (yes/no, for make dist).
AC_DEFUN([BPC_OPTIONAL_CHECK], [
  AC_ARG_WITH([check],
    [AS_HELP_STRING([--without-check], [do not build the test suites (default: build them when Check is found)])],
    [], [with_check=auto])
  bpc_have_check=no
  AS_IF([test "x$with_check" != xno], [
    PKG_CHECK_MODULES([CHECK], [check >= 0.11], [bpc_have_check=yes], [
      AS_IF([test "x$with_check" = xyes],
        [AC_MSG_ERROR([--with-check: Check (unit test framework) not found: install the Debian package 'check'])])])])
  AM_CONDITIONAL([BPC_HAVE_CHECK], [test "x$bpc_have_check" = xyes])
  BPC_HAVE_CHECK=$bpc_have_check
  AC_SUBST([BPC_HAVE_CHECK])
])

# BPC_OPTIONAL_PNG: --with-png=yes|no|auto (default auto). Sets PNG_CFLAGS,
# PNG_LIBS, bpc_have_png and the conditional BPC_HAVE_PNG.
AC_DEFUN([BPC_OPTIONAL_PNG], [
  AC_ARG_WITH([png],
    [AS_HELP_STRING([--without-png], [do not build the apps that write PNG images, bpc-render and bpc-trace, and build bpc-register without PNG input and output (default: use libpng when found)])],
    [], [with_png=auto])
  bpc_have_png=no
  AS_IF([test "x$with_png" != xno], [
    PKG_CHECK_MODULES([PNG], [libpng], [bpc_have_png=yes], [
      AS_IF([test "x$with_png" = xyes],
        [AC_MSG_ERROR([--with-png: libpng not found: install the Debian package 'libpng-dev'])])])])
  AM_CONDITIONAL([BPC_HAVE_PNG], [test "x$bpc_have_png" = xyes])
])

# BPC_REPORT_SKIPPED: after AC_OUTPUT, one warning per part left out.
AC_DEFUN([BPC_REPORT_SKIPPED], [
  AS_IF([test "x$bpc_have_check" != xyes], [
    AS_IF([test "x$with_check" = xno], [bpc_why="--without-check"], [bpc_why="Check not found"])
    AC_MSG_WARN([$bpc_why: the test suites are skipped (make check runs none of them). To build them: apt-get install check (Debian package 'check'), then configure again.])])
  AS_IF([test "x$bpc_have_png" != xyes], [
    AS_IF([test "x$with_png" = xno], [bpc_why="--without-png"], [bpc_why="libpng not found"])
    AC_MSG_WARN([$bpc_why: the apps bpc-render and bpc-trace (PNG output) are skipped, and bpc-register takes only its synthetic series. To build them: apt-get install libpng-dev (Debian package 'libpng-dev'), then configure again.])])
])

# BPC_VERSION_SPLIT: BPC_VERSION_MAJOR, _MINOR, _PATCH (substituted) from
# AC_INIT's version MAJOR.MINOR.PATCH (a missing part is 0; a suffix after
# the numbers, as in 1.2.0rc1, is kept only in the version string).
AC_DEFUN([BPC_VERSION_SPLIT], [
  bpc_v=`echo "$PACKAGE_VERSION" | sed 's/[[^0-9.]].*//'`
  BPC_VERSION_MAJOR=`echo "$bpc_v" | cut -d. -f1`
  BPC_VERSION_MINOR=`echo "$bpc_v" | cut -s -d. -f2`
  BPC_VERSION_PATCH=`echo "$bpc_v" | cut -s -d. -f3`
  BPC_VERSION_MAJOR=${BPC_VERSION_MAJOR:-0}
  BPC_VERSION_MINOR=${BPC_VERSION_MINOR:-0}
  BPC_VERSION_PATCH=${BPC_VERSION_PATCH:-0}
  AC_SUBST([BPC_VERSION_MAJOR])
  AC_SUBST([BPC_VERSION_MINOR])
  AC_SUBST([BPC_VERSION_PATCH])
])
