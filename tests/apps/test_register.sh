#!/bin/sh
# tests/apps/test_register.sh - bpc-register end to end (run by make check
# from the top build directory):
#  - the synthetic series (24 frames 64x64, 7 and 6 blocks) at 1 and 3
#    processes (2-7 blocks per process): every frame's registration error
#    against the known drift is below 0.25 px and 0.005 rad (measured:
#    about 0.05 px and 0.0012 rad), and the transforms (printed with 17
#    digits) are identical at 1 and 3 processes for the same block count
#    and algorithm;
#  - with libpng: the series dumped as 16-bit PNGs and registered from the
#    directory agrees with the synthetic run to 0.05 px / 0.001 rad, and the
#    two average pictures are written;
#  - bad arguments and inputs at 1 and 3 processes exit with status 2 and a
#    message that names the argument (missing directory, no frames, one
#    frame, a non-PNG file, frames of different sizes, bad numbers).
set -u
app=./apps/bpc-register
name=bpc-register-test
. "$(dirname "$0")/app_env.sh"
TMAX=0.25 RMAX=0.005

good() { # np out args...
  np=$1 out=$2
  shift 2
  if ! timeout -k 5 120 "$MPIRUN" -np "$np" "$app" --quiet --json "$@" >"$out" 2>"$out.err"; then
    echo "FAIL: np=$np $*: exit status $?"; cat "$out.err"; fail=1
  fi
}
within() { # json what
  t=$(sed -n 's/.*"translation_max": \([^,]*\),.*/\1/p' "$1")
  r=$(sed -n 's/.*"rotation_max": \([^,]*\),.*/\1/p' "$1")
  if ! awk -v t="$t" -v r="$r" -v T=$TMAX -v R=$RMAX \
       'BEGIN { exit !(t != "" && r != "" && t + 0 < T && r + 0 < R) }'; then
    echo "FAIL: $2: registration error $t px, $r rad (tolerance $TMAX px, $RMAX rad)"; fail=1
  fi
}

# a named algorithm: "auto" may choose by the process count
for args in "--blocks 7 --algorithm blelloch --strategy reduce-then-scan" \
            "--blocks 6 --algorithm sklansky"; do
  good 1 "$tmp/s1" --synthetic 24,64,64 $args
  good 3 "$tmp/s3" --synthetic 24,64,64 $args
  within "$tmp/s1" "np=1 $args"
  within "$tmp/s3" "np=3 $args"
  [ "$(grep -c '"frame"' "$tmp/s1")" = 24 ] || { echo "FAIL: $args: not 24 transforms"; fail=1; }
  cmp -s "$tmp/s1" "$tmp/s3" || { echo "FAIL: $args: np=3 differs from np=1";
                                   diff "$tmp/s1" "$tmp/s3"; fail=1; }
done

# operator B's frame cache changes nothing but the loads: no cache, a tiny
# one (every slot in use at times: callers get their own copies) and the
# default give the same transforms, bit for bit (the last run: sklansky, 6 blocks)
good 3 "$tmp/c0" --synthetic 24,64,64 --blocks 6 --algorithm sklansky --frame-cache 0
good 3 "$tmp/c1" --synthetic 24,64,64 --blocks 6 --algorithm sklansky --frame-cache 1
for c in c0 c1; do
  cmp -s "$tmp/s3" "$tmp/$c" || { echo "FAIL: --frame-cache ($c) changed the result";
                                   diff "$tmp/s3" "$tmp/$c"; fail=1; }
done

if "$app" --help | grep -q 'with libpng'; then
  # a PNG directory: the dumped synthetic series (16-bit grey)
  # (compared with the last synthetic run, $tmp/s1)
  "$MPIRUN" -np 2 "$app" --quiet --synthetic 24,64,64 --dump "$tmp/frames" ||
    { echo "FAIL: --dump"; fail=1; }
  good 3 "$tmp/dir" "$tmp/frames" --blocks 6 --algorithm sklansky --png "$tmp/avg"
  grep '"frame"' "$tmp/s1" | tr -d '{},"' >"$tmp/syn.t"
  grep '"frame"' "$tmp/dir" | tr -d '{},"' >"$tmp/dir.t"
  if ! paste "$tmp/syn.t" "$tmp/dir.t" | awk 'NF != 16 { bad = 1 }
       { d = $4 - $12; if (d < 0) d = -d; if (d > 0.001) bad = 1
         for (k = 6; k <= 8; k += 2) { d = $k - $(k + 8); if (d < 0) d = -d; if (d > 0.05) bad = 1 } }
       END { exit bad || NR != 24 }'; then
    echo "FAIL: the PNG directory's transforms differ from the synthetic run's"
    paste "$tmp/syn.t" "$tmp/dir.t"; fail=1
  fi
  for k in registered raw; do
    [ -s "$tmp/avg-$k.png" ] || { echo "FAIL: no $tmp/avg-$k.png"; fail=1; }
  done
  mkdir -p "$tmp/empty" "$tmp/one" "$tmp/mixed" "$tmp/junk"
  cp "$tmp/frames/frame-000000.png" "$tmp/one/"
  cp "$tmp/frames/frame-00000"[0-4].png "$tmp/mixed/"
  cp "$tmp/frames/frame-00000"[0-4].png "$tmp/junk/"
  "$MPIRUN" -np 1 "$app" --quiet --synthetic 2,32,32 --dump "$tmp/small" >/dev/null 2>&1
  cp "$tmp/small/frame-000001.png" "$tmp/mixed/frame-000003.png"
  echo "not a picture" >"$tmp/junk/frame-000004.png"
  for np in 1 3; do
    bad $np "input '$tmp/nothere': No such file" "$tmp/nothere"
    bad $np "input '$tmp/empty': 0 PNG frames" "$tmp/empty"
    bad $np "input '$tmp/one': 1 PNG frame" "$tmp/one"
    bad $np "frame-000004.png: not a PNG file" "$tmp/junk" --blocks 3
    bad $np "frames differ in size: $tmp/mixed/frame-000003.png is 32x32" "$tmp/mixed" --blocks 3
  done
else
  for np in 1 3; do
    bad $np "built without libpng" "$tmp"
  done
fi

for np in 1 3; do
  bad $np "--synthetic '1': 1 frame" --synthetic 1
  bad $np "--synthetic '10,8,x'" --synthetic 10,8,x
  bad $np "--blocks 9: more blocks than the 5 frames" --synthetic 5,32,32 --blocks 9
  bad $np "--algorithm 'nope'" --synthetic 5,32,32 --algorithm nope
  bad $np "--frame-cache '-1'" --synthetic 5,32,32 --frame-cache -1
done

expect_done
[ $fail -eq 0 ] && echo "test_register: PASS"
exit $fail
