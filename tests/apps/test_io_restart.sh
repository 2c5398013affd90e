#!/bin/sh
# tests/apps/test_io_restart.sh - checkpoints across process counts and a
# writer killed mid-write (run by make check from the top build directory;
# tests/apps/io_step does each step under mpirun):
#  - written on P processes, read on P' in another mpirun: 1->5, 4->3,
#    12->2, doubles and strings, with contiguous, round-robin
#    and user-map assignments on either side; every block is compared with
#    its formula and the file is verified;
#  - a checkpoint of generation 1, then a write of generation 2 in which
#    one rank is killed (SIGKILL in its pack callback, after earlier chunks
#    were written: BPC_IO_CHUNK is small): generation 1 still reads
#    correctly at another process count, and the next write (generation 3)
#    replaces the leftover temporary file and reads back;
#  - bpc-ckpt info / verify: a good file at 1 and 3 processes (exit 0, the
#    header listed), a flipped payload byte (exit 1), a truncated file
#    (exit 1), bad arguments and a missing file (exit 2);
#  - bpc-bench io with tiny sizes: the write and read lines are correct,
#    also with --replace (the baseline's atomic replacement) and --sync.
set -u
app=./tests/apps/io_step
name=io-restart-test
. "$(dirname "$0")/app_env.sh"
ck=$tmp/c.ckpt

step() { # np args... (must succeed)
  np=$1
  shift
  if ! timeout -k 5 120 "$MPIRUN" -np "$np" "$app" "$@" >"$tmp/out" 2>&1; then
    echo "FAIL: np=$np $*"; cat "$tmp/out"; fail=1
  fi
}

for pair in "1 5 c r s" "4 3 r u d" "12 2 u c s"; do
  set -- $pair
  step "$1" write "$ck" 29 4 "$3" "$5"
  step "$2" check "$ck" 29 4 "$4" "$5"
done

# a writer killed mid-write leaves the previous checkpoint readable
step 3 write "$ck" 17 1 c s
BPC_IO_CHUNK=16 timeout -k 5 120 "$MPIRUN" -np 3 "$app" write "$ck" 17 2 c s 16 \
  >"$tmp/out" 2>&1
st=$?
if [ "$st" -eq 0 ]; then
  echo "FAIL: the write with a killed rank exited 0"; fail=1
fi
if [ ! -e "$ck.tmp.bpc" ]; then
  echo "FAIL: the killed write left no temporary file (was it killed mid-write?)"; fail=1
fi
step 2 check "$ck" 17 1 r s
step 4 write "$ck" 17 3 u d
step 1 check "$ck" 17 3 c d
if [ -e "$ck.tmp.bpc" ]; then
  echo "FAIL: $ck.tmp.bpc remains after a good write"; fail=1
fi
# bpc-ckpt: info and verify of a good file at 1 and 3 processes, exit 1 for
# a corrupted one (a payload byte flipped), 2 for bad arguments / no file
ckpt=./apps/bpc-ckpt
for np in 1 3; do
  if ! "$MPIRUN" -np $np $ckpt verify "$ck" >"$tmp/out" 2>&1 ||
     ! grep -q "blocks          17" "$tmp/out" || ! grep -q "all checksums match" "$tmp/out" ||
     ! grep -q 'metadata        7 bytes: "io_step"' "$tmp/out"; then
    echo "FAIL: bpc-ckpt verify on $np:"; cat "$tmp/out"; fail=1
  fi
done
size=$(wc -c <"$ck")
cp "$ck" "$tmp/bad.ckpt"
printf 'Z' | dd of="$tmp/bad.ckpt" bs=1 seek=$((size - 3)) conv=notrunc 2>/dev/null
"$MPIRUN" -np 1 $ckpt info "$tmp/bad.ckpt" >/dev/null 2>&1 ||
  { echo "FAIL: bpc-ckpt info of a file with a bad payload (the header is fine)"; fail=1; }
expect 3 1 "payload checksum mismatch" $ckpt verify "$tmp/bad.ckpt"
head -c 100 "$ck" >"$tmp/short.ckpt"
expect 2 1 "truncated" $ckpt info "$tmp/short.ckpt"
expect 1 2 "usage" $ckpt
expect 3 2 "unknown command" $ckpt frobnicate "$ck"
expect 2 2 "too many" $ckpt info "$ck" extra
expect 1 2 "BPC_EIO" $ckpt info "$tmp/missing.ckpt"
expect_done

# bpc-bench io, tiny: both lines right (write verified, read compared)
if ! "$MPIRUN" -np 2 ./apps/bpc-bench io --bytes 96K --blocks-per-proc 2 --reps 1 --warmup 0 \
     --dir "$tmp" >"$tmp/bench" 2>&1 ||
   [ "$(grep -cE '^(write|read) .* yes$' "$tmp/bench")" -ne 2 ]; then
  echo "FAIL: bpc-bench io:"; cat "$tmp/bench"; fail=1
fi
# --replace: the baseline replaces its file by a new one (the line's check
# reads the file's size under the final name); nothing is left behind
if ! "$MPIRUN" -np 2 ./apps/bpc-bench io --bytes 96K --reps 2 --warmup 0 --algorithm write \
     --replace --dir "$tmp" >"$tmp/bench" 2>&1 ||
   ! grep -qE '^write .*MPI_File_write_at_all\+rename .* yes$' "$tmp/bench" ||
   ls "$tmp"/bpc-bench-io.* >/dev/null 2>&1; then
  echo "FAIL: bpc-bench io --replace:"; cat "$tmp/bench"; ls "$tmp"; fail=1
fi
# --sync: durable writes on both sides, still right; with strace at hand, the
# syncs are really made (bpc's new file and the baseline's, every repetition)
tracer=
# (only where strace can trace here: ptrace may be refused in a container)
# LeakSanitizer cannot run under ptrace: the traced run checks no leaks
if strace -qq -o /dev/null true >/dev/null 2>&1; then
  tracer="env ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 strace -f -qq -e trace=fsync,fdatasync -o $tmp/strace"
else
  echo "test_io_restart: no working strace here: the --sync lines are checked, their syncs not counted"
fi
if ! $tracer "$MPIRUN" -np 2 ./apps/bpc-bench io --bytes 96K --reps 2 --warmup 0 --algorithm write \
     --sync --dir "$tmp" >"$tmp/bench" 2>&1 || ! grep -qE '^write .* yes$' "$tmp/bench"; then
  echo "FAIL: bpc-bench io --sync:"; cat "$tmp/bench"; fail=1
elif [ -n "$tracer" ] && [ "$(grep -cE '(fsync|fdatasync)\([0-9]+' "$tmp/strace")" -lt 8 ]; then
  echo "FAIL: bpc-bench io --sync made $(grep -cE 'sync\(' "$tmp/strace") syncs (want >= 8: 2 ranks x 2 reps x 2 sides)"
  cat "$tmp/strace"; fail=1
fi
[ "$fail" -eq 0 ] && echo "test_io_restart: all steps passed"
exit "$fail"
