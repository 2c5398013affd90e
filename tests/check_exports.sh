#!/bin/sh
# tests/check_exports.sh [LIBDIR] - the shared libbpc exports exactly the
# public calls: every function declared in include/bpc/*.h is a defined
# dynamic symbol of it, and it defines no other symbol (in particular no
# internal bpc__* one; -export-symbols-regex in Makefile.am). LIBDIR is the
# folder of libbpc.la (default lib, run from the build tree as make check
# does). Skipped (exit 77) when nm is missing or the library is static-only.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
libdir=${1:-lib}
if ! command -v nm >/dev/null 2>&1; then
  echo "check_exports: nm not installed; skipped"
  exit 77
fi
if [ ! -f "$libdir/libbpc.la" ]; then
  echo "check_exports: $libdir/libbpc.la not found (run from the build tree)"
  exit 1
fi
dlname=$(sed -n "s/^dlname='\(.*\)'$/\1/p" "$libdir/libbpc.la")
if [ -z "$dlname" ]; then
  echo "check_exports: no shared library built (--disable-shared); skipped"
  exit 77
fi
so=$libdir/.libs/$dlname
tmp=$(mktemp -d "${TMPDIR:-/tmp}/bpc-exports.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM

# declared: the functions of the public headers (as tests/check_man.sh reads them)
for h in "$top"/include/bpc/*.h; do
  sed -n 's/^[A-Za-z_].*[ *]\(bpc_[a-z0-9_]*\)(.*/\1/p' "$h"
done | sort -u >"$tmp/declared"
# defined: every symbol the library defines for programs linking it
if ! nm -D --defined-only "$so" >"$tmp/nm"; then
  echo "check_exports: nm -D $so failed"
  exit 1
fi
awk '{ print $NF }' "$tmp/nm" | sort -u >"$tmp/defined"
awk '$2 == "T" { print $3 }' "$tmp/nm" | sort -u >"$tmp/functions"

fail=0
n_decl=$(wc -l <"$tmp/declared")
if [ "$n_decl" -eq 0 ]; then
  echo "check_exports: no declarations found in $top/include/bpc"
  fail=1
fi
for f in $(comm -23 "$tmp/declared" "$tmp/functions"); do
  echo "check_exports: $f is declared in include/bpc but not exported by $so"
  fail=1
done
for s in $(comm -13 "$tmp/declared" "$tmp/defined"); do
  case $s in
    bpc__*) echo "check_exports: internal symbol $s is exported by $so" ;;
    *) echo "check_exports: $s is exported by $so but declared in no public header" ;;
  esac
  fail=1
done
[ "$fail" -eq 0 ] && echo "check_exports: $so exports the $n_decl public calls and nothing else"
exit "$fail"
