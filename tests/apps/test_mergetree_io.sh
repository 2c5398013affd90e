#!/bin/sh
# tests/apps/test_mergetree_io.sh - bpc-mergetree's other outputs and inputs
# (run by make check from the top build directory; test_mergetree.sh checks
# the pairs): the segmentation as .npy and VTK against the labels of the
# serial reference tests/apps/mt_ref at 1 2 3 4 processes; --persistence;
# .npy and raw input give the synthetic field's pairs; --bench's bpc runs
# and gather baseline agree; bad inputs exit 2 with a message naming the
# problem, at 1 and 3 processes.
set -u
app=./apps/bpc-mergetree
ref=./tests/apps/mt_ref
name=bpc-mergetree-io-test
. "$(dirname "$0")/app_env.sh"
nps=${BPC_MT_NPS:-1 2 3 4}
# BPC_MT_QUICK=1 (CI's sanitizer stage): 3 processes, no bench
quick=${BPC_MT_QUICK:-}
[ -n "$quick" ] && nps=${BPC_MT_NPS:-3}
blobs="--dims 12,10,9 --blobs 6 --seed 3"

# the segmentation (label = birth vertex of the branch) equals the
# reference's labels, as .npy and as VTK (big-endian int32)
segcheck() { # field-args run-args [block counts] [labels the simplification must leave]
  "$app" $1 --dump "$tmp/sf.npy" || { echo "FAIL: --dump $1"; fail=1; return; }
  # shellcheck disable=SC2086
  "$ref" "$tmp/sf.npy" $2 --labels "$tmp/sf.lab" >/dev/null
  od -An -v -td8 "$tmp/sf.lab" | tr -s ' \n' '\n\n' | sed '/^$/d' >"$tmp/sf.labt"
  if [ -n "${4:-}" ]; then # the case must simplify: fewer labels, and not one
    nlab=$(sort -u "$tmp/sf.labt" | wc -l | tr -d ' ')
    [ "$nlab" = "$4" ] || { echo "FAIL: $1 $2: the reference has $nlab labels, want $4"; fail=1; }
  fi
  for np in $nps; do
    for b in ${3:-8 27}; do
      # shellcheck disable=SC2086
      if ! "$MPIRUN" -np $np "$app" $1 $2 --blocks $b --segment "$tmp/s.npy" --vtk "$tmp/s.vtk" \
          >/dev/null 2>"$tmp/s.err"; then
        echo "FAIL: np=$np $1 $2 --segment: exit status $?"; cat "$tmp/s.err"; fail=1; continue
      fi
      hl=$(od -An -tu2 -j8 -N2 "$tmp/s.npy" | tr -d ' ')
      tail -c +$((hl + 11)) "$tmp/s.npy" | cmp -s - "$tmp/sf.lab" ||
        { echo "FAIL: np=$np $1 $2 blocks $b: the segmentation differs from the reference"; fail=1; }
      vh=$(grep -a -n 'LOOKUP_TABLE' "$tmp/s.vtk" | head -1 | cut -d: -f1)
      head -n "$vh" "$tmp/s.vtk" | wc -c >"$tmp/vh"
      tail -c +$(($(cat "$tmp/vh") + 1)) "$tmp/s.vtk" | head -c $(($(wc -l <"$tmp/sf.labt") * 4)) |
        od -An -v -td4 --endian=big | tr -s ' \n' '\n\n' | sed '/^$/d' | cmp -s - "$tmp/sf.labt" ||
        { echo "FAIL: np=$np $1 $2 blocks $b: the VTK labels differ from the reference"; fail=1; }
    done
  done
}
segcheck "$blobs --levels 4" "--wrap"
segcheck "--dims 10,8,7 --field noise --levels 3" "--sublevel"
# --persistence T simplifies the segmentation: a branch below T takes the
# label of the branch it dies into (mt_ref --persistence does the same on its
# own sweep); ties (zero-persistence pairs on plateaus), sub and superlevel,
# wrap, block counts that do not divide the grid evenly
segcheck "$blobs --levels 4" "--wrap --persistence 0.1" "7 8 27" 5
segcheck "--dims 10,8,7 --field noise --levels 3" "--sublevel --persistence 0.1" "2 10 27" 9
segcheck "$blobs" "--sublevel --persistence 0.03" "7 32" 7
# blocks swept in tiles (--tile) with a segmentation: the tiles' and the
# tile glues' labels fill the block's; one-vertex tiles, wrap, simplified
segcheck "$blobs --levels 4" "--wrap --tile 2" "1 8"
segcheck "--dims 10,8,7 --field noise --levels 3" "--sublevel --tile 1 --persistence 0.1" "2 7" 9
segcheck "$blobs" "--tile 3" "1 27"

# --persistence keeps the pairs of at least that persistence, and the counts
# of components follow
"$MPIRUN" -np 2 "$app" $blobs --blocks 8 >"$tmp/all" 2>/dev/null
"$MPIRUN" -np 2 "$app" $blobs --blocks 8 --persistence 0.1 >"$tmp/some" 2>/dev/null
want=$(awk '!/^#/ { d = $2 - $1; if (d < 0) d = -d; if ($2 == "-inf" || d >= 0.1) n++ } END { print n }' "$tmp/all")
got=$(grep -vc '^#' "$tmp/some")
[ "$want" = "$got" ] && [ "$want" -gt 1 ] || { echo "FAIL: --persistence 0.1 kept $got pairs, want $want"; fail=1; }

# a raw float32 file of the same values gives the same pairs
f=$tmp/field
"$app" $blobs --dump "$f.npy" || fail=1
hl=$(od -An -tu2 -j8 -N2 "$f.npy" | tr -d ' ')
tail -c +$((hl + 11)) "$f.npy" >"$f.raw"
"$MPIRUN" -np 3 "$app" $blobs --blocks 7 | grep -v '^# bpc' >"$tmp/syn"
"$MPIRUN" -np 3 "$app" --input "$f.npy" --blocks 7 | grep -v '^# bpc' >"$tmp/npy"
"$MPIRUN" -np 3 "$app" --input "$f.raw" --dims 12,10,9 --type float32 --blocks 7 |
  grep -v '^# bpc' >"$tmp/raw"
cmp -s "$tmp/syn" "$tmp/npy" || { echo "FAIL: .npy input differs from the synthetic field"; fail=1; }
cmp -s "$tmp/syn" "$tmp/raw" || { echo "FAIL: raw input differs from the synthetic field"; fail=1; }

# --bench (tiny): the bpc runs and the gather baseline find the same pairs
if [ -z "$quick" ]; then
  "$MPIRUN" -np 3 "$app" --bench --dims 14,12,10 --blocks 8,27 --reps 1 >"$tmp/bench" 2>&1 &&
    "$MPIRUN" -np 3 "$app" --bench --dims 14,12,10 --baseline gather --reps 1 >>"$tmp/bench" 2>&1 ||
    { echo "FAIL: --bench"; cat "$tmp/bench"; fail=1; }
  nd=$(awk '!/^#/ { print $NF }' "$tmp/bench" | sort -u | wc -l)
  nl=$(grep -vc '^#' "$tmp/bench")
  [ "$nd" = 1 ] && [ "$nl" = 3 ] ||
    { echo "FAIL: --bench digests differ or lines missing"; cat "$tmp/bench"; fail=1; }
fi

# bad input: exit 2 on every rank, a message that names the problem
head -c 1000 "$f.npy" >"$tmp/short.npy"
mknpy() { # file dict: a version 1 .npy with that header and 32 zero bytes
  len=$((${#2} + 1))
  { printf '\223NUMPY\001\000'; printf "\\$(printf %o $((len % 256)))\\$(printf %o $((len / 256)))"
    printf '%s\n' "$2"; head -c 32 /dev/zero; } >"$1"
}
mknpy "$tmp/int.npy" "{'descr': '<i4', 'fortran_order': False, 'shape': (2, 2, 2), }"
sed 's/False/True/; s/<i4/<f4/' "$tmp/int.npy" >"$tmp/fort.npy"
printf 'not a numpy file at all\n' >"$tmp/junk.npy"
# a NaN at vertex 77: bytes 308..311 of the raw data
cp "$f.raw" "$tmp/nan.raw"
printf '\000\000\300\177' | dd of="$tmp/nan.raw" bs=1 seek=308 conv=notrunc 2>/dev/null
bad_nps="1 3"
[ -n "$quick" ] && bad_nps=3
for np in $bad_nps; do
  bad $np "truncated" --input "$tmp/short.npy"
  bad $np "dtype '<i4' is not supported" --input "$tmp/int.npy"
  bad $np "Fortran order" --input "$tmp/fort.npy"
  bad $np "not a .npy file" --input "$tmp/junk.npy"
  bad $np "truncated" --input "$f.raw" --dims 12,10,10
  bad $np "at vertex 77 (x=5, y=6, z=0)" --input "$tmp/nan.raw" --dims 12,10,9 --blocks 4
  bad $np "needs --dims" --input "$f.raw"
  bad $np "drop --dims" --input "$f.npy" --dims 12,10,9
  bad $np "no such file\|No such file" --input "$tmp/none.npy"
  bad $np "--blocks '0'" --blocks 0
  bad $np "--dims '4,0,4'" --dims 4,0,4
  bad $np "--field 'cubes'" --field cubes
  bad $np "--type 'int8'" --input "$f.raw" --dims 12,10,9 --type int8
  bad $np "unknown option '--colour'" --colour red
  bad $np "blocks" --dims 2,2,2 --blocks 27
  bad $np "--baseline needs --bench" --baseline gather
  bad $np "--slice 40" --dims 8,8,8 --slice 40 --png "$tmp/x.png"
done
expect_done

[ $fail -eq 0 ] && echo "test_mergetree_io: PASS"
exit $fail
