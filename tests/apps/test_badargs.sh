#!/bin/sh
# tests/apps/test_badargs.sh - every app (bpc-render, bpc-decomp, bpc-entropy,
# bpc-trace, bpc-ckpt, bpc-tune, bpc-bench with each engine) with bad
# arguments at 1 and 3 processes (run by make check from the top build
# directory). Each must end with its documented status on every rank,
# never a signal or a hang (timeout), with a message naming what was wrong:
#   2  a rejected argument (unknown option, not a number, out of range, a
#      missing value, an unknown name, a size too large);
#   1  a run-time failure the arguments led to (a file that cannot be read,
#      a value the library refuses: its message names the parameter).
set -u
name=bpc-badargs-test
. "$(dirname "$0")/app_env.sh"

run() { # np expected-status expected-text app args...
  np=$1 st=$2 txt=$3 a=$4
  shift 4
  expect "$np" "$st" "$txt" "./apps/$a" "$@"
}

# every case at 3 processes; one per app at 1 process (the same code path)
for np in 3; do
  run $np 2 "too large" bpc-entropy --dims 100000,100000,100000
  run $np 2 "--dims '-5,4,4'" bpc-entropy --dims -5,4,4
  run $np 2 "--dims 'abc'" bpc-entropy --dims abc
  run $np 2 "'--blocks' needs a value" bpc-entropy --blocks
  run $np 1 "/nonexistent" bpc-entropy --input /nonexistent

  run $np 2 "--field 'nope'" bpc-trace --field nope
  run $np 2 "too large" bpc-trace --dims 100000,100000,100000
  run $np 2 "--seeds" bpc-trace --seeds -1
  run $np 2 "unknown option '--nope'" bpc-trace --nope

  run $np 2 "--n" bpc-render --n -4
  run $np 2 "--size 100000x100000" bpc-render --size 100000x100000
  run $np 2 "--bpp" bpc-render --bpp x
  run $np 1 "unknown algorithm 'nope'" bpc-render --strategy nope --out none --n 16
  run $np 1 "/nonexistent" bpc-render --raw /nonexistent --dims 4,4,4 --out none

  run $np 2 "--domain" bpc-decomp --domain abc

  run $np 2 "unknown command 'nope'" bpc-ckpt nope FILE
  run $np 2 "unknown option '--bogus'" bpc-ckpt --bogus
  run $np 2 "missing FILE" bpc-ckpt info
  run $np 2 "first extra: 'b'" bpc-ckpt info a b
  run $np 2 "--dim" bpc-decomp --dim 9
  run $np 1 "nblocks is -1" bpc-decomp --blocks -1

  run $np 2 "'-1' is not a size" bpc-tune --bytes -1

  run $np 2 "nope" bpc-bench nope
  for e in comm merge swap tree neighbor composite bcast scan; do
    run $np 2 "bad size '-1'" bpc-bench $e --bytes -1
  done
  run $np 2 "--reps" bpc-bench merge --reps x
done
run 1 2 "--nope" bpc-entropy --nope
run 1 2 "--field 'nope'" bpc-trace --field nope
run 1 2 "--nope" bpc-render --nope
run 1 2 "--nope" bpc-decomp --nope
run 1 2 "unknown option '--nope'" bpc-tune --nope
run 1 2 "bad size '-1'" bpc-bench swap --bytes -1
expect_done
exit $fail
