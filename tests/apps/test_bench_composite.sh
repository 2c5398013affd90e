#!/bin/sh
# tests/apps/test_bench_composite.sh - bpc-bench composite end to end (run by
# make check from the top build directory), on small images: at 1, 2 and 3
# processes a run with --active 10,0 (the dense case is added first) gives,
# for every strategy x operator x mode, one right line per density, each with
# the JSON fields of the density sweep; a line's dense_s is its strategy's
# dense median of the same run (vs_dense = median / dense_s, 1 on the dense
# line); the realised share of active pixels is near the request; the table
# has the dense columns; several blocks a process give right lines;
# --density still works as an alias; bad --active,
# --density and --seed values exit 2 on every rank with a message from each.
# BPC_APP_QUICK=1 (CI's sanitizer stage, where each mpirun takes seconds):
# the matrix at 1 and 3 processes, the bad values at 3 only.
set -u
app=./apps/bpc-bench
name=bpc-bench-composite-test
. "$(dirname "$0")/app_env.sh"

# field NAME: the value of "NAME" in each line of stdin (numbers or strings)
field() { sed -n "s/.*\"$1\":\"\{0,1\}\([^\",}]*\).*/\1/p"; }

nps="1 2 3"; badnps="1 3"
[ -n "${BPC_APP_QUICK:-}" ] && { nps="1 3"; badnps="3"; }
for np in $nps; do
  if ! timeout -k 5 120 "$MPIRUN" -np "$np" "$app" composite --image 48 --active 10,0 \
      --reps 2 --warmup 1 --json >"$tmp/out" 2>"$tmp/err"; then
    echo "FAIL: np=$np: bpc-bench composite --active 10,0 failed"; cat "$tmp/err"; fail=1
    continue
  fi
  lines=$(grep -c '"engine":"composite"' "$tmp/out")
  good=$(grep -c '"correct":1' "$tmp/out")
  n100=$(grep -c '"active":100,"active_pct":100.0000,"density":"dense"' "$tmp/out")
  n10=$(grep -c '"active":10,"active_pct":[0-9.]*,"density":"sparse"' "$tmp/out")
  n0=$(grep -c '"active":0,"active_pct":0.0000,"density":"empty"' "$tmp/out")
  # 2 operators x 2 modes x at least 5 strategies, for each density
  if [ "$lines" -lt 60 ] || [ "$good" -ne "$lines" ] || [ "$n100" -lt 20 ] ||
     [ "$n100" -ne "$n10" ] || [ "$n100" -ne "$n0" ] || [ $((n100 * 3)) -ne "$lines" ]; then
    echo "FAIL: np=$np: $good of $lines lines right; dense $n100, 10% $n10, empty $n0 lines"
    grep -v '"correct":1' "$tmp/out"; fail=1
  fi
  for f in dense_s vs_dense active active_pct density seed mode op image median_s; do
    if [ "$(grep -c "\"$f\":" "$tmp/out")" -ne "$lines" ]; then
      echo "FAIL: np=$np: not every line has \"$f\""; fail=1
    fi
  done
  # the realised share of the 10% layers (48x48: within 0.5 of 10)
  field active_pct <"$tmp/out" | sort -u | awk -v np="$np" '
    $1 != 100 && $1 != 0 && ($1 < 9.5 || $1 > 10.5) {
      print "FAIL: np=" np ": 10% requested, " $1 "% realised"; bad = 1 }
    END { exit bad }' || fail=1
  # dense_s is the same strategy/op/mode's dense median; vs_dense the ratio
  { field algorithm <"$tmp/out" >"$tmp/a"; field op <"$tmp/out" >"$tmp/o"
    field mode <"$tmp/out" >"$tmp/m"; field active <"$tmp/out" >"$tmp/d"
    field median_s <"$tmp/out" >"$tmp/t"; field dense_s <"$tmp/out" >"$tmp/r"
    field vs_dense <"$tmp/out" >"$tmp/v"; }
  paste -d' ' "$tmp/a" "$tmp/o" "$tmp/m" "$tmp/d" "$tmp/t" "$tmp/r" "$tmp/v" | awk -v np="$np" '
    { key = $1 " " $2 " " $3
      if ($4 == 100) dense[key] = $5
      if (!(key in dense) || $6 != dense[key] || $6 <= 0 ||
          ($7 - $5 / $6) * ($7 - $5 / $6) > 1e-8 * ($7 * $7 + 1e-12)) {
        print "FAIL: np=" np ": " key " active " $4 ": dense_s " $6 ", vs_dense " $7 \
          " (dense median " dense[key] ", median " $5 ")"; bad = 1 } }
    { n++ }
    END { if (n == 0) { print "FAIL: np=" np ": no lines"; bad = 1 } exit bad }' || fail=1
done

# the table: dense columns, a filled value on the 1% lines
if ! timeout -k 5 120 "$MPIRUN" -np 2 "$app" composite --image 32 --active 1 --op over \
    --mode rs --algorithm shift --reps 1 --warmup 0 >"$tmp/out" 2>"$tmp/err"; then
  echo "FAIL: np=2 table run failed"; cat "$tmp/err"; fail=1
elif ! grep -q 'dense_us *vs_dense' "$tmp/out" ||
     ! grep -q '^# image 32x32, op over, active 1% ' "$tmp/out" ||
     [ "$(grep -c '^shift .* yes$' "$tmp/out")" -ne 2 ] || grep '^shift' "$tmp/out" | grep -q ' - '; then
  echo "FAIL: the table lacks the dense columns or lines:"; cat "$tmp/out"; fail=1
fi

# --valid passes each layer's bounding box: every line still correct, and says so
if ! timeout -k 5 120 "$MPIRUN" -np 3 "$app" composite --image 48 --active 10,0 --valid \
    --mode rs,gather --reps 1 --warmup 0 --json >"$tmp/out" 2>"$tmp/err"; then
  echo "FAIL: np=3 --valid failed"; cat "$tmp/err"; fail=1
elif [ "$(grep -c '"valid":1' "$tmp/out")" -lt 3 ] || grep -q '"correct":0' "$tmp/out"; then
  echo "FAIL: --valid lines missing or wrong:"; cat "$tmp/out"; fail=1
fi

# --footprint compact clusters each layer's blobs: correct with --valid, and its
# bounding boxes cover less of the image than the spread layout's (same seed)
bbox() { sed -n 's/.*"active":10,.*"bbox_pct":\([0-9.]*\).*/\1/p' "$1" | head -1; }
if ! timeout -k 5 120 "$MPIRUN" -np 3 "$app" composite --image 96 --active 10 --valid \
    --footprint compact --op over --mode rs,gather --reps 1 --warmup 0 --json >"$tmp/out" 2>"$tmp/err" ||
   ! timeout -k 5 120 "$MPIRUN" -np 3 "$app" composite --image 96 --active 10 --valid \
    --op over --mode rs --algorithm radixk --reps 1 --warmup 0 --json >"$tmp/out2" 2>"$tmp/err"; then
  echo "FAIL: np=3 --footprint compact failed"; cat "$tmp/err"; fail=1
elif [ "$(grep -c '"footprint":"compact"' "$tmp/out")" -lt 3 ] || grep -q '"correct":0' "$tmp/out" ||
     [ "$(grep -c '"footprint":"spread"' "$tmp/out2")" -lt 1 ] ||
     ! awk -v c="$(bbox "$tmp/out")" -v s="$(bbox "$tmp/out2")" \
       'BEGIN { exit !(c > 0 && s > 0 && c < s) }'; then
  echo "FAIL: compact footprint lines missing, wrong, or not tighter (bbox $(bbox "$tmp/out")% vs $(bbox "$tmp/out2")%):"
  cat "$tmp/out" "$tmp/out2"; fail=1
fi
"$MPIRUN" -np 1 "$app" composite --footprint round --image 32 --reps 1 --warmup 0 >"$tmp/out" 2>"$tmp/err"
if [ $? -ne 2 ] || ! grep -q "footprint 'round': want spread or compact" "$tmp/err"; then
  echo "FAIL: --footprint round not refused with status 2:"; cat "$tmp/err"; fail=1
fi

# several blocks a process (the MPI side composites its layers first): every
# strategy x operator x mode right, in place and (with --valid) into outputs
# filled on demand, and the lines say 6 blocks
if ! timeout -k 5 120 "$MPIRUN" -np 2 "$app" composite --image 48 --blocks-per-proc 3 --active 10,0 \
    --reps 1 --warmup 0 --json >"$tmp/out" 2>"$tmp/err" ||
   ! timeout -k 5 120 "$MPIRUN" -np 2 "$app" composite --image 48 --blocks-per-proc 3 --active 10 \
    --valid --output --footprint compact --reps 1 --warmup 0 --json >>"$tmp/out" 2>"$tmp/err"; then
  echo "FAIL: np=2 --blocks-per-proc 3 failed"; cat "$tmp/err"; fail=1
else
  lines=$(grep -c '"engine":"composite"' "$tmp/out")
  if [ "$lines" -lt 100 ] || grep -q '"correct":0' "$tmp/out" ||
     [ "$(grep -c '"nblocks":6,' "$tmp/out")" -ne "$lines" ] ||
     [ "$(grep -c '"valid":1,"output":1,' "$tmp/out")" -lt 24 ]; then
    echo "FAIL: --blocks-per-proc 3: $lines lines, wrong ones or not 6 blocks each:"
    grep -v '"correct":1' "$tmp/out" | head -5; fail=1
  fi
fi
timeout -k 5 60 "$MPIRUN" -np 2 "$app" composite --blocks-per-proc 2000 --image 32 --reps 1 \
  --warmup 0 >"$tmp/out" 2>"$tmp/err"
st=$?
if [ "$st" -ne 2 ] ||
   [ "$(grep -c "rank [0-9]*: composite: --blocks-per-proc 2000: want at most 1024" "$tmp/err")" -ne 2 ]; then
  echo "FAIL: --blocks-per-proc 2000: status $st (want 2), a message from each rank wanted:"
  cat "$tmp/err"; fail=1
fi

# --density, the old option, is an alias (sparse = 10%)
if ! timeout -k 5 120 "$MPIRUN" -np 2 "$app" composite --image 32 --density sparse --op zbuffer \
    --mode gather --algorithm radixk --reps 1 --warmup 0 --json >"$tmp/out" 2>"$tmp/err"; then
  echo "FAIL: np=2 --density sparse failed"; cat "$tmp/err"; fail=1
elif [ "$(grep -c '"active":10,' "$tmp/out")" -ne 1 ] || [ "$(grep -c '"active":100,' "$tmp/out")" -ne 1 ]; then
  echo "FAIL: --density sparse did not run the 10% and dense lines:"; cat "$tmp/out"; fail=1
fi

"$app" composite --help 2>&1 | grep -q -- '--active LIST' ||
  { echo "FAIL: composite --help does not list --active"; fail=1; }

# every rank names the bad value (the engine checks its own options)
for np in $badnps; do
  timeout -k 5 60 "$MPIRUN" -np "$np" "$app" composite --active 101 --image 48 --reps 1 --warmup 0 >"$tmp/out" 2>"$tmp/err"
  st=$?
  if [ "$st" -ne 2 ] || [ "$(grep -c "rank [0-9]*: composite: --active '101'" "$tmp/err")" -ne "$np" ]; then
    echo "FAIL: np=$np --active 101: status $st (want 2), a message from each rank wanted:"
    cat "$tmp/err"; fail=1
  fi
done
for np in $badnps; do
  bad $np "--active '-1'" composite --active -1 --image 48 --reps 1
  bad $np "--active 'junk'" composite --active junk --image 48 --reps 1
  bad $np "bad value '200'" composite --active 10,200 --image 48 --reps 1
  bad $np "bad value ''" composite --active 10, --image 48 --reps 1
  bad $np "bad value '0x10'" composite --active 0x10 --image 48 --reps 1
  bad $np "--density 'foo'" composite --density foo --image 48 --reps 1
  bad $np "not both" composite --active 10 --density dense --image 48 --reps 1
  bad $np "--seed 'x'" composite --seed x --image 48 --reps 1
done

expect_done
[ $fail -eq 0 ] && echo "bpc-bench composite: --active lines right at 1, 2, 3 processes; options checked"
exit $fail
