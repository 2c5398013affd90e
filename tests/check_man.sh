#!/bin/sh
# tests/check_man.sh - the man pages in doc/man/man3 (and the install list
# doc/man/Makefile.mk) are exactly what doc/man/mkman.sh makes from the
# current header comments, every public call has a page, and every page
# formats without a groff warning (when groff is installed).
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/bpc-man.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM
fail=0
if ! sh "$top/doc/man/mkman.sh" "$tmp"; then
  echo "check_man: doc/man/mkman.sh failed (see above)"
  exit 1
fi
if ! diff -r "$top/doc/man/man3" "$tmp/man3" >"$tmp/diff" 2>&1 ||
  ! diff "$top/doc/man/Makefile.mk" "$tmp/Makefile.mk" >>"$tmp/diff" 2>&1; then
  head -40 "$tmp/diff"
  echo "check_man: the man pages are out of date: run doc/man/mkman.sh and commit doc/man"
  fail=1
fi
# every function declared in a public header has its page
for h in "$top"/include/bpc/*.h; do
  for f in $(sed -n 's/^[A-Za-z_].*[ *]\(bpc_[a-z0-9_]*\)(.*/\1/p' "$h"); do
    if [ ! -f "$tmp/man3/$f.3" ]; then
      echo "check_man: no page for $f ($(basename "$h"))"
      fail=1
    fi
  done
done
if command -v groff >/dev/null 2>&1; then
  for p in "$tmp"/man3/*.3; do
    w=$(groff -man -Tutf8 -ww -z "$p" 2>&1)
    if [ -n "$w" ]; then
      echo "check_man: $(basename "$p"): $w"
      fail=1
    fi
  done
else
  echo "check_man: groff not installed; pages not formatted"
fi
n=$(ls "$tmp"/man3/*.3 | wc -l)
[ "$fail" -eq 0 ] && echo "check_man: $n pages up to date"
exit "$fail"
