#!/bin/sh
# tests/apps/test_tune.sh - bpc-tune's argument handling (run by make check
# from the top build directory): at 1 and 3 processes every bad argument
# exits with status 2 (not a crash) and a message that names it, and a small
# real run writes a tuning file that bpc_swap can read.
set -u
app=./apps/bpc-tune
name=bpc-tune-test
. "$(dirname "$0")/app_env.sh"

for np in 1 3; do
  bad $np "'-1' is not a size" --bytes -1
  bad $np "'abc' is not a size" --bytes abc
  bad $np "'0' is not a size" --bytes 1K,0
  bad $np "'99G' is not a size" --bytes 99G
  bad $np "'nope': want sum, over" --op nope
  bad $np "unknown option '--nope'" --nope
  bad $np "--reps '0'" --reps 0
  bad $np "--blocks-per-proc 'x'" --blocks-per-proc x
  bad $np "--out needs a value" --out
done

# a small real run: one size, two candidates, one repetition
if ! timeout -k 5 120 "$MPIRUN" -np 2 "$app" --bytes 4K --op sum --reps 1 --max-candidates 2 \
    --out "$tmp/tune.txt" >"$tmp/out" 2>"$tmp/err"; then
  echo "FAIL: a small tuning run failed"; cat "$tmp/err"; fail=1
elif ! grep -q '^swap 2 2 4096 1 ' "$tmp/tune.txt"; then
  echo "FAIL: the tuning file has no entry for 2 blocks, 4096 bytes:"; cat "$tmp/tune.txt"; fail=1
fi

expect_done
[ $fail -eq 0 ] && echo "bpc-tune: argument checks and a small run passed"
exit $fail
