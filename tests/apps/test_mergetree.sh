#!/bin/sh
# tests/apps/test_mergetree.sh - bpc-mergetree end to end (run by make check
# from the top build directory). The reference is tests/apps/mt_ref, a
# serial union-find over the whole grid that shares no code with the app.
# For every field (smooth blobs, quantised blobs and noise with plateaus of
# equal values, a constant field, a tiny field whose blocks are one or two
# points wide), superlevel and sublevel, with and without wrap: the pairs
# and the component counts for block counts 1 2 7 8 10 27 32 at 1 2 3 4
# processes equal the reference byte for byte, and every block count prints
# the same text (process counts: see below); three fields again with blocks
# swept in tiles of 1, 2 and 3 vertices (--tile). test_mergetree_io.sh checks
# the segmentation, the inputs, the bench and the bad inputs. Under
# AddressSanitizer every mpirun takes ~20 s here (slow unwinder): raise
# BPC_TEST_TIMEOUT (run-test.sh's 300 s) for these two scripts, or set
# BPC_MT_QUICK=1 (as .ci/run's sanitizer stage does: stage 1 runs them
# whole) for every third case at 3 processes.
set -u
app=./apps/bpc-mergetree
ref=./tests/apps/mt_ref
name=bpc-mergetree-test
. "$(dirname "$0")/app_env.sh"
counts=1,2,7,8,10,27,32
# BPC_MT_NPS="1 2 3 4" runs every case at every count; by default case i runs
# at two counts, rotating through 1..4 (each count gets five cases), which
# keeps the script within run-test.sh's time limit under AddressSanitizer

# check FIELD-ARGS RUN-ARGS THRESHOLDS [APP-ARGS]: the field is dumped, mt_ref
# gives the reference, and every run (with APP-ARGS too) must match it.
ncase=0
check() {
  fargs=$1 rargs=$2 th=$3 aargs=${4:-}
  ncase=$((ncase + 1))
  c=$tmp/c$ncase
  # BPC_MT_QUICK=1 (CI's sanitizer stage): every third case, at 3 processes
  if [ -n "${BPC_MT_QUICK:-}" ] && [ $((ncase % 3)) -ne 2 ]; then return; fi
  # shellcheck disable=SC2086
  if ! "$app" $fargs --dump "$c.npy" 2>"$c.err"; then
    echo "FAIL: --dump $fargs"; cat "$c.err"; fail=1; return
  fi
  # shellcheck disable=SC2086
  "$ref" "$c.npy" $rargs --thresholds "$th" >"$c.ref" || { echo "FAIL: mt_ref $fargs"; fail=1; return; }
  nps=${BPC_MT_NPS:-$((1 + ncase % 4)) $((1 + (ncase + 1) % 4))}
  [ -n "${BPC_MT_QUICK:-}" ] && nps=${BPC_MT_NPS:-3}
  for np in $nps; do
    # shellcheck disable=SC2086
    if ! "$MPIRUN" -np "$np" "$app" $fargs $rargs $aargs --blocks $counts --thresholds "$th" \
        >"$c.out" 2>"$c.err"; then
      echo "FAIL: np=$np $fargs $rargs: exit status $?"; cat "$c.err"; fail=1; continue
    fi
    # one file per block count (the text after its "# blocks N" line)
    awk -v p="$c.b" '/^# blocks /{ f = p $3; next } { print > f }' "$c.out"
    for b in $(echo $counts | tr , ' '); do
      [ -s "$c.b$b" ] || { echo "FAIL: np=$np $fargs $rargs: no output for $b blocks"; fail=1; continue; }
      cmp -s "$c.b1" "$c.b$b" || { echo "FAIL: np=$np $fargs $rargs: $b blocks differ from 1";
                                   diff "$c.b1" "$c.b$b" | head -5; fail=1; }
      grep -v -e '^# [bp]' -e '^# birth' "$c.b$b" | cmp -s - "$c.ref" || {
        echo "FAIL: np=$np $fargs $rargs: $b blocks differ from the serial reference"
        grep -v -e '^# [bp]' -e '^# birth' "$c.b$b" | diff - "$c.ref" | head -5; fail=1; }
    done
    rm -f "$c.b"*
  done
}

blobs="--dims 12,10,9 --blobs 6 --seed 3"
check "$blobs" "" 0.2,0.5,0.8
check "$blobs" "--sublevel --wrap" 0.1,0.3
check "$blobs --levels 4" "--wrap" 0.25,0.5,0.75
check "$blobs --levels 4" "--sublevel" 0.25,0.5
check "--dims 10,8,7 --field noise --levels 3" "--wrap" 0.333333343267441,0.5
check "--dims 10,8,7 --field noise --levels 3" "--sublevel" -0.333333343267441,0
check "--dims 9,8,7 --field constant" "" 1,2
check "--dims 9,8,7 --field constant" "--sublevel --wrap" 0.5,1
check "--dims 5,7,4 --field noise --noise 1" "--wrap" 0
check "--dims 5,7,4 --field noise --noise 1 --levels 2" "--sublevel --wrap" 0
# blocks swept in tiles (--tile; the default 32 never splits these fields):
# tiles of 1 to 3 vertices, with wrap, ties and one-vertex-wide blocks
check "$blobs" "--sublevel --wrap" 0.1,0.3 "--tile 2"
check "--dims 10,8,7 --field noise --levels 3" "--wrap" 0.333333343267441,0.5 "--tile 3"
check "--dims 5,7,4 --field noise --noise 1" "--wrap" 0 "--tile 1"

if [ -n "${BPC_MT_QUICK:-}" ]; then
  echo "test_mergetree: BPC_MT_QUICK: every third of $ncase field cases, at ${BPC_MT_NPS:-3} processes"
else
  echo "test_mergetree: $ncase field cases at processes ${BPC_MT_NPS:-1 2 3 4 (two per case)}"
fi
[ $fail -eq 0 ] && echo "test_mergetree: PASS"
exit $fail
