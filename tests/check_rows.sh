#!/bin/sh
# tests/check_rows.sh - the algorithm tables are the only place that knows
# a row by its id (doc/contributing.md, issue 33): no file of lib/ compares
# an algorithm id, switches on one or tests which run a row has. A row's
# behaviour is in its table entry (its run and its traits, the row's
# `data`), so a new row needs no edit elsewhere. Fails listing each
# offending line. Ids are the enumerators of the public bpc_*_algorithm_t
# and bpc_composite_strategy_t types (their AUTO excepted).
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
ids=$(awk '/^typedef enum (bpc_[a-z0-9]*_algorithm|bpc_composite_strategy) *\{/ { on = 1; next }
           on && /^\}/ { on = 0 }
           on { for (i = 1; i <= NF; i++) if ($i ~ /^BPC_[A-Z0-9_]+$/ && $i !~ /_AUTO$/) print $i }' \
  "$top"/include/bpc/*.h | sort -u | paste -sd'|' -)
if [ -z "$ids" ]; then
  echo "check_rows: found no algorithm ids in include/bpc/*.h"
  exit 1
fi
# a comparison with an id, a case label, a test or switch on a row's id,
# run or algorithm field, a comparison with the address of an engine's
# variant data; comment lines (starting with * or //) are skipped, and so
# is the registry (lib/core/registry.c: finding a row by its id). Each line
# is read joined with the next, so a comparison split over two lines is
# seen too (reported at its first line).
pat="([!=]=[[:space:]]*($ids)([^A-Za-z0-9_]|\$))|(($ids)[[:space:]]*[!=]=)|(case[[:space:]]+($ids)([^A-Za-z0-9_]|\$))"
pat="$pat|(info\\.id[[:space:]]*([!=]=|[<>]))|([!=]=[[:space:]]*[A-Za-z_>.()-]*info\\.id([^A-Za-z0-9_]|\$))"
pat="$pat|(switch[[:space:]]*\\([^)]*info\\.id)|((->|\\.)run[[:space:]]*[!=]=)|(->algorithm[[:space:]]*[!=]=)"
pat="$pat|([!=]=[[:space:]]*&bpc__(merge|swap|bcast|scan|composite|alltoall|neighbor)_)"
# every line with the next one appended: "file:line:text next-text"
joined=$(cd "$top" && awk 'FNR == 1 && NR > 1 { print f ":" n ":" prev }
                         FNR > 1 { print FILENAME ":" FNR - 1 ":" prev " " $0 }
                         { prev = $0; f = FILENAME; n = FNR }
                         END { if (NR) print f ":" n ":" prev }' \
  lib/*/*.c lib/*/*.h lib/*/*/*.c lib/*/*/*.h)
st=$?
if [ $st -ne 0 ] || [ -z "$joined" ]; then
  echo "check_rows: reading lib/ failed (status $st)"
  exit 1
fi
hits=$(printf '%s\n' "$joined" | grep -E "$pat")
bad=$(printf '%s\n' "$hits" | grep -v '^lib/core/registry\.c:' |
  grep -vE '^[^:]+:[0-9]+:[[:space:]]*(\*|//|/\*)' | grep -v '^$')
if [ -n "$bad" ]; then
  echo "check_rows: behaviour chosen by an algorithm id outside the tables"
  echo "(give the row a trait in its table entry instead; doc/contributing.md):"
  echo "$bad"
  exit 1
fi
echo "check_rows: no algorithm id compared outside the tables (ids: $(echo "$ids" | tr '|' ' '))"
exit 0
