#!/bin/sh
# tests/apps/test_entropy.sh - bpc-entropy end to end (run by make check from
# the top build directory): the whole-field entropy with 24 blocks equals the
# one-block reference (no merge at all); partial reductions print the same
# table at every process count, for contiguous and round-robin assignments
# and distance halving; the regions' points add up to the field; a raw
# float32 file of the synthetic field (--dump) gives the synthetic table.
set -u
app=./apps/bpc-entropy
name=bpc-entropy-test
. "$(dirname "$0")/app_env.sh"
dims=30,20,17
run() { # np out args...
  np=$1 out=$2
  shift 2
  if ! "$MPIRUN" -np "$np" "$app" --dims $dims "$@" >"$out.full" 2>"$out.err"; then
    echo "FAIL: np=$np $*: exit status $?"; cat "$out.err"; fail=1
  fi
  grep -v '^# run' "$out.full" >"$out"
}

# whole field: 1 block (no merge) vs 24 blocks at several process counts
run 1 "$tmp/ref" --blocks 1
ref=$(awk '!/^#/ && $1 == "0" { print $4, $5 }' "$tmp/ref")
[ -n "$ref" ] || { echo "FAIL: no reference line"; cat "$tmp/ref"; fail=1; }
for np in 1 2 3 4; do
  run $np "$tmp/full$np" --blocks 24
  got=$(awk '!/^#/ && $1 == "0" { print $4, $5 }' "$tmp/full$np")
  [ "$got" = "$ref" ] || { echo "FAIL: np=$np whole field '$got', reference '$ref'"; fail=1; }
done

# partial reductions: identical tables at every process count
for args in "--rounds 1" "--rounds 2 --assign round-robin --algorithm auto" \
            "--rounds 1 --algorithm halving --assign round-robin" "--rounds 1 --k 2,12"; do
  run 1 "$tmp/p1" --blocks 24 $args
  total=$(awk '!/^#/ && $1 != "root" { s += $4 } END { print s }' "$tmp/p1")
  [ "$total" = "10200" ] || { echo "FAIL: $args: regions hold $total points, not 10200"; fail=1; }
  for np in 2 5; do
    run $np "$tmp/p$np" --blocks 24 $args
    cmp -s "$tmp/p1" "$tmp/p$np" || { echo "FAIL: $args: np=$np differs from np=1";
                                      diff "$tmp/p1" "$tmp/p$np"; fail=1; }
  done
done

# a raw file of the synthetic field gives the same histograms
"$MPIRUN" -np 1 "$app" --dims $dims --dump "$tmp/field.raw" || { echo "FAIL: --dump"; fail=1; }
run 2 "$tmp/syn" --blocks 6 --rounds 1 --histogram
run 3 "$tmp/file" --blocks 6 --rounds 1 --histogram --input "$tmp/field.raw" --range -1,2
sed 1d "$tmp/syn" >"$tmp/syn.body"
sed 1d "$tmp/file" >"$tmp/file.body"
cmp -s "$tmp/syn.body" "$tmp/file.body" || { echo "FAIL: file input differs";
                                             diff "$tmp/syn.body" "$tmp/file.body"; fail=1; }
# a short file is an error (exit 1), not a hang
head -c 1000 "$tmp/field.raw" >"$tmp/short.raw"
if "$MPIRUN" -np 2 "$app" --dims $dims --input "$tmp/short.raw" >/dev/null 2>&1; then
  echo "FAIL: a short file was accepted"; fail=1
fi
[ $fail -eq 0 ] && echo "test_entropy: PASS"
exit $fail
