#!/bin/sh
# tests/check_names.sh [LISTER] - every complete list of an engine's
# algorithm names in the documentation, the public headers (so the man
# pages) and the apps' help texts holds every row of the engine's table, so
# a new row cannot leave a list stale (doc/contributing.md).
#
# A list is recognised as the names are written for users: quoted (`name`,
# "name" or 'name') in one paragraph (lines up to a blank or comment-only
# line; a markdown table is one). A paragraph is taken to list the engine
# most of whose names it quotes; when it quotes all of them but one (and at
# least two), it must quote them all. An engine of one or two rows counts
# only in a paragraph that also offers `auto`, the choice every algorithm
# parameter takes, and there one quoted name of it makes a list. Prose that
# names rows unquoted is not a list, nor is C code (in C sources only
# comments and string literals count, and a help text printed by a call
# rather than kept in a string is not seen). A list that leaves a row out
# on purpose must say why in the same paragraph, quoting the row. LISTER (default tests/list_algorithms, run from the
# build tree as make check does) prints each engine's names from the
# registry, one engine a line.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
lister=${1:-tests/list_algorithms}
if [ ! -x "$lister" ]; then
  echo "check_names: $lister not found (run from the build tree)"
  exit 1
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/bpc-names.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM
if ! "$lister" >"$tmp/names" || [ ! -s "$tmp/names" ]; then
  echo "check_names: $lister printed no table"
  exit 1
fi
cd "$top" || exit 1
awk -v tablefile="$tmp/names" '
  function quoted(name, text,    q) {
    # a name between quotes (backquote, double or single)
    return match(text, "[`\"\x27]" name "[`\"\x27]") > 0
  }
  function check(    e, i, hits, frac, best, bestfrac, miss, nm) {
    if (para == "")
      return
    withauto = quoted("auto", para)
    best = ""
    bestfrac = 0
    for (e = 1; e <= ne; e++) {
      if (cnt[e] < 3 && !withauto)
        continue
      hits = 0
      for (i = 1; i <= cnt[e]; i++)
        if (quoted(nm_[e, i], para))
          hits++
      frac = hits / cnt[e]
      if (hits >= (cnt[e] < 3 ? 1 : 2) && frac > bestfrac) {
        best = e
        bestfrac = frac
        besthits = hits
      }
    }
    if (best == "" || besthits == cnt[best] || besthits < cnt[best] - 1)
      return
    miss = ""
    for (i = 1; i <= cnt[best]; i++)
      if (!quoted(nm_[best, i], para))
        miss = miss " " nm_[best, i]
    printf "%s:%d: a list of %s names without%s\n", fname, start, en[best], miss
    bad++
  }
  BEGIN {
    while ((getline line < tablefile) > 0) {
      n = split(line, w, " ")
      ne++
      en[ne] = w[1]
      cnt[ne] = n - 1
      for (i = 2; i <= n; i++)
        nm_[ne, i - 1] = w[i]
    }
  }
  FNR == 1 { check(); para = ""; fname = FILENAME }
  {
    t = $0
    gsub(/^[ \t]*(\/\*|\*\/|\*|\/\/)?[ \t]*/, "", t)
    if (t == "" || t == "*/") {
      check()
      para = ""
      next
    }
    # in C, only comments and string literals are text a user reads
    if (FILENAME ~ /\.[ch]$/ && $0 !~ /^[ \t]*(\/\*|\*|\/\/|")/) {
      check()
      para = ""
      next
    }
    if (para == "")
      start = FNR
    para = para " " $0
  }
  END { check(); exit bad > 0 }
' README.md doc/*.md doc/apps/*.md include/bpc/*.h apps/*.c apps/*/*.c >"$tmp/out"
st=$?
if [ $st -ne 0 ]; then
  cat "$tmp/out"
  echo "check_names: lists of algorithm names miss rows of the tables (add them; the"
  echo "tables are bpc_algorithms(), printed by tests/list_algorithms)"
  exit 1
fi
echo "check_names: every list of algorithm names holds its whole table"
exit 0
