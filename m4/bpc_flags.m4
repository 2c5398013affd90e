# bpc_flags.m4 - warning flags for bpc's own code and the sanitizer build.

# BPC_WARNINGS: -Wall -Wextra -Werror for our code (--disable-werror drops
# -Werror). Sets BPC_WARN_CFLAGS.
AC_DEFUN([BPC_WARNINGS], [
  AC_ARG_ENABLE([werror],
    [AS_HELP_STRING([--disable-werror], [do not turn warnings into errors])],
    [], [enable_werror=yes])
  BPC_WARN_CFLAGS="-Wall -Wextra"
  AS_IF([test "x$enable_werror" = xyes], [BPC_WARN_CFLAGS="$BPC_WARN_CFLAGS -Werror"])
  AC_SUBST([BPC_WARN_CFLAGS])
])

# BPC_SANITIZERS: --enable-sanitizers builds everything with ASan and UBSan.
# Sets SAN_CFLAGS and SAN_LDFLAGS.
AC_DEFUN([BPC_SANITIZERS], [
  AC_ARG_ENABLE([sanitizers],
    [AS_HELP_STRING([--enable-sanitizers], [build with AddressSanitizer and UndefinedBehaviorSanitizer])],
    [], [enable_sanitizers=no])
  SAN_CFLAGS=
  SAN_LDFLAGS=
  AS_IF([test "x$enable_sanitizers" = xyes], [
    SAN_CFLAGS="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined -g"
    SAN_LDFLAGS="-fsanitize=address,undefined"
    bpc_save_CFLAGS=$CFLAGS
    bpc_save_LDFLAGS=$LDFLAGS
    CFLAGS="$CFLAGS $SAN_CFLAGS"
    LDFLAGS="$LDFLAGS $SAN_LDFLAGS"
    AC_MSG_CHECKING([whether $CC supports -fsanitize=address,undefined])
    AC_LINK_IFELSE([AC_LANG_PROGRAM([], [])], [AC_MSG_RESULT([yes])],
      [AC_MSG_RESULT([no]); AC_MSG_ERROR([the compiler cannot build with sanitizers])])
    CFLAGS=$bpc_save_CFLAGS
    LDFLAGS=$bpc_save_LDFLAGS
  ])
  AM_CONDITIONAL([BPC_SANITIZE], [test "x$enable_sanitizers" = xyes])
  AC_SUBST([SAN_CFLAGS])
  AC_SUBST([SAN_LDFLAGS])
])
