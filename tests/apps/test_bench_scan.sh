#!/bin/sh
# tests/apps/test_bench_scan.sh - bpc-bench scan end to end (run by make
# check from the top build directory), with a zero-cost operator: at 1, 3
# and 4 processes (2 blocks each, one item per block and 23 items) every
# line (every strategy x algorithm, MPI_Scan linear and recursive doubling)
# has the serial reference's results and the operator calls of the formulas;
# at 4 processes MPI_Scan really ran the chain (1 call on the busiest rank)
# and recursive doubling (2 log2 4 = 4); without Open MPI's dynamic rules the
# recursive-doubling line is left out with a message; bad options exit 2.
set -u
app=./apps/bpc-bench
name=bpc-bench-scan-test
. "$(dirname "$0")/app_env.sh"

for np in 1 3 4; do
  if ! OMPI_MCA_coll_tuned_use_dynamic_rules=1 timeout -k 5 120 "$MPIRUN" -np "$np" "$app" scan \
      --op-ms 0 --n p,23 --blocks-per-proc 2 --reps 1 --warmup 0 --json \
      >"$tmp/out" 2>"$tmp/err"; then
    echo "FAIL: np=$np: bpc-bench scan failed"; cat "$tmp/err"; fail=1
    continue
  fi
  lines=$(grep -c '"engine":"scan"' "$tmp/out")
  good=$(grep '"correct":1' "$tmp/out" | grep -c -e '"calls_ok":true' -e '"calls_ok":null')
  for v in linear recdbl; do
    if [ "$(grep -c "\"variant\":\"MPI_Scan:$v\"" "$tmp/out")" -ne 2 ]; then
      echo "FAIL: np=$np: no MPI_Scan:$v line for each N"; fail=1
    fi
  done
  if [ "$lines" -lt 34 ] || [ "$good" -ne "$lines" ]; then
    echo "FAIL: np=$np: $good of $lines lines correct with the formulas' calls:"
    { grep -v -e '"calls_ok":true' -e '"calls_ok":null' "$tmp/out"
      grep -v '"correct":1' "$tmp/out"; } | sort -u; fail=1
  fi
done

# which MPI_Scan algorithm ran: one item per rank (no local work), so the
# busiest rank's calls are MPI_Scan's: linear 1, recursive doubling 2 log2 4
if ! OMPI_MCA_coll_tuned_use_dynamic_rules=1 timeout -k 5 120 "$MPIRUN" -np 4 "$app" scan \
    --op-ms 0 --n p --strategies ig --algorithm serial --reps 1 --warmup 0 --json \
    >"$tmp/out" 2>"$tmp/err"; then
  echo "FAIL: np=4: bpc-bench scan failed"; cat "$tmp/err"; fail=1
else
  grep -q '"variant":"MPI_Scan:linear".*"calls_per_rank_max":1,' "$tmp/out" ||
    { echo "FAIL: MPI_Scan:linear did not make 1 call per rank"; cat "$tmp/out"; fail=1; }
  grep -q '"variant":"MPI_Scan:recdbl".*"calls_per_rank_max":4,' "$tmp/out" ||
    { echo "FAIL: MPI_Scan:recdbl did not make 4 calls on the last rank"; cat "$tmp/out"; fail=1; }
fi

# --lockstep: every bpc line twice, the twin (name/ls) with the lock-step
# driver; both right, with the formulas' calls
if ! timeout -k 5 120 "$MPIRUN" -np 3 "$app" scan --op-ms 0 --n 23 --blocks-per-proc 3 \
    --strategies stp --algorithm sklansky,kogge-stone --lockstep --reps 1 --warmup 0 --json \
    >"$tmp/out" 2>"$tmp/err"; then
  echo "FAIL: np=3 --lockstep failed"; cat "$tmp/err"; fail=1
else
  for v in sklansky kogge-stone; do
    for sfx in '' /ls; do
      grep "\"variant\":\"stp:$v$sfx\"" "$tmp/out" | grep '"correct":1' | grep -q '"calls_ok":true' ||
        { echo "FAIL: --lockstep: no right stp:$v$sfx line"; cat "$tmp/out"; fail=1; }
    done
  done
fi

# without dynamic rules: no recursive-doubling line, and a message
OMPI_MCA_coll_tuned_use_dynamic_rules=0 timeout -k 5 120 "$MPIRUN" -np 2 "$app" scan --op-ms 0 \
  --reps 1 --warmup 0 --strategies stp --algorithm serial --json >"$tmp/out" 2>"$tmp/err" ||
  { echo "FAIL: np=2 without dynamic rules failed"; cat "$tmp/err"; fail=1; }
if grep -q 'MPI_Scan:recdbl' "$tmp/out" || ! grep -q 'no MPI_Scan recursive-doubling line' "$tmp/err"; then
  echo "FAIL: without dynamic rules the recursive-doubling line is not left out with a message"
  cat "$tmp/out" "$tmp/err"; fail=1
fi

for np in 1 3; do
  bad $np "comma list of stp, rts, ig" scan --strategies stp,nope
  bad $np "item counts from the block count" scan --n 1,64 --blocks-per-proc 2
  bad $np "op-ms wants" scan --op-ms x
  bad $np "cores wants" scan --cores 0
done

expect_done
[ $fail -eq 0 ] && echo "bpc-bench scan: every line right at 1, 3, 4 processes; options checked"
exit $fail
