#!/bin/sh
# doc/man/mkman.sh [DIR] - (re)write the man pages of bpc's public calls
# (section 3, one per function) from the header comments of include/bpc/*.h,
# and the list of them that the build installs (doc/man/Makefile.mk).
# Without DIR: into doc/man/man3 of the source tree (run it after changing a
# header comment and commit the result). With DIR: into DIR (DIR/man3 and
# DIR/Makefile.mk), which is how `make check` (tests/check_man.sh) checks
# that the committed pages are up to date.
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
dir=${1:-$top/doc/man}
mkdir -p "$dir/man3"
rm -f "$dir"/man3/bpc_*.3
awk -v out="$dir/man3" -f "$top/doc/man/mkman.awk" "$top"/include/bpc/*.h
{
  echo "# doc/man/Makefile.mk - written by doc/man/mkman.sh; do not edit."
  printf 'man3_MANS ='
  for p in "$dir"/man3/bpc_*.3; do
    printf ' \\\n\tdoc/man/man3/%s' "$(basename "$p")"
  done
  echo
} >"$dir/Makefile.mk"
