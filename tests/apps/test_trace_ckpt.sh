#!/bin/sh
# tests/apps/test_trace_ckpt.sh - bpc-trace's checkpoint and restart (run by
# make check from the top build directory). The reference is an
# uninterrupted run on 2 processes (bpc-trace's trajectories do not depend on
# the process or block count: the outputs are the same at any count);
# against it, byte for byte (VTK and PNG):
#  - runs that write a checkpoint every N rounds and run to the end;
#  - a run stopped after its second checkpoint (--stop-after-checkpoint: it
#    leaves particles in flight, checked), restarted from the checkpoint on
#    1, 3 and 5 processes (fewer blocks than processes at 5), and with 2
#    threads;
#  - a chain: a restart that checkpoints and stops again, restarted on
#    another count; a checkpoint written on 1 process restarted on 5;
#  - a (longer) run killed once its first checkpoint is there, restarted on
#    3 processes, against its own uninterrupted run;
#  - bpc-ckpt verify accepts the checkpoint.
# Bad restarts exit 2 with the message on every rank: each problem option
# changed (--max-steps, --seed, --step, --dims, --field, --seed-box), another
# --blocks, a missing, corrupted, truncated or foreign (not a checkpoint; a
# checkpoint of another program) file; and the option checks.
# BPC_APP_QUICK=1 (CI's sanitizer stage, where an mpirun takes several
# seconds): the restart on 3 processes and four of the refusals only.
set -u
app=./apps/bpc-trace
name=bpc-trace-ckpt-test
. "$(dirname "$0")/app_env.sh"
[ -x "$app" ] || { echo "test_trace_ckpt: $app not built (configured without libpng): skipped"; exit 77; }
prob="--dims 20,20,28 --seeds 40 --max-steps 250 --round-steps 5"
quick=${BPC_APP_QUICK:-}

run() { # np tag args... (must succeed; outputs $tmp/TAG.vtk, $tmp/TAG.png)
  np=$1 tag=$2
  shift 2
  # shellcheck disable=SC2086
  timeout -k 5 120 "$MPIRUN" -np "$np" "$app" $prob --vtk "$tmp/$tag.vtk" \
    --png "$tmp/$tag.png" --size 64x64 "$@" >"$tmp/$tag.out" 2>"$tmp/$tag.err"
  st=$?
  if [ "$st" -ne 0 ]; then
    echo "FAIL: np=$np $tag $*: exit status $st"; cat "$tmp/$tag.err"; fail=1
  fi
}
same() { # tag: its outputs equal the uninterrupted run's
  for ext in vtk png; do
    if ! cmp -s "$tmp/ref.$ext" "$tmp/$1.$ext"; then
      echo "FAIL: $1: the $ext output differs from the uninterrupted run's"; fail=1
    fi
  done
}
stopped() { # tag: it stopped with particles in flight, and wrote no output
  if ! grep -q 'stopped after .* checkpoint' "$tmp/$1.err"; then
    echo "FAIL: $1: no 'stopped after' message"; cat "$tmp/$1.err"; fail=1
  fi
  if grep -q ': 40 of 40 particles finished' "$tmp/$1.err"; then
    echo "FAIL: $1: every particle had finished at the checkpoint (nothing in flight)"; fail=1
  fi
  if [ -e "$tmp/$1.vtk" ]; then
    echo "FAIL: $1: a stopped run wrote its output"; fail=1
  fi
}

# bad restarts: exit 2, the reason on every rank (in the background, as
# app_env.sh's expect: BPC_APP_JOBS at a time; expect_done collects)
everyrank() { # np text args...
  np=$1 want=$2
  shift 2
  njobs=$((njobs + 1))
  id=$njobs
  (
    own_session "$id" # runs overlap: each its own session folder
    trap '' PIPE        # as in app_env.sh's expect: no SIGPIPE for mpirun
    # shellcheck disable=SC2086
    timeout -k 5 60 "$MPIRUN" -np "$np" "$app" $prob --vtk "$tmp/bad$id.vtk" --png none "$@" \
      >/dev/null 2>"$tmp/err.$id"
    st=$?
    if [ "$st" -ne 2 ]; then
      { echo "FAIL: np=$np $*: exit status $st, expected 2"; cat "$tmp/err.$id"; } >"$tmp/fail.$id"
      exit
    fi
    r=0
    while [ $r -lt "$np" ]; do
      if ! grep "rank $r: " "$tmp/err.$id" | grep -q -- "$want"; then
        { echo "FAIL: np=$np $*: rank $r does not say '$want'"; cat "$tmp/err.$id"; } >"$tmp/fail.$id"
        exit
      fi
      r=$((r + 1))
    done
  ) &
  if [ $((njobs % ${BPC_APP_JOBS:-4})) -eq 0 ]; then wait; fi
}

run 2 ref
[ -s "$tmp/ref.vtk" ] || { echo "FAIL: no reference output"; exit 1; }
# checkpointing runs to the end (synchronous rounds): the same result
if [ -z "$quick" ]; then
  run 3 every3 --checkpoint-every 3
  same every3
  [ -s "$tmp/every3.vtk.ckpt" ] || { echo "FAIL: no default checkpoint <vtk>.ckpt"; fail=1; }
fi

# stopped after the second checkpoint (round 8), restarted on 1, 3, 5
run 2 stop --checkpoint-every 4 --checkpoint "$tmp/k.ckpt" --stop-after-checkpoint 2
stopped stop
grep -q 'round 8' "$tmp/stop.err" || { echo "FAIL: stop: not at round 8"; cat "$tmp/stop.err"; fail=1; }
cp "$tmp/k.ckpt" "$tmp/k0.ckpt"
nps="1 3 5"
[ -n "$quick" ] && nps=3
for np in $nps; do
  run "$np" "re$np" --restart "$tmp/k.ckpt"
  same "re$np"
done
if [ -z "$quick" ]; then
  run 3 ret --restart "$tmp/k.ckpt" --threads 2
  same ret
fi
cmp -s "$tmp/k.ckpt" "$tmp/k0.ckpt" || { echo "FAIL: a restart changed its checkpoint"; fail=1; }
"$MPIRUN" -np 2 ./apps/bpc-ckpt verify "$tmp/k.ckpt" >"$tmp/v.out" 2>&1 ||
  { echo "FAIL: bpc-ckpt verify of the checkpoint"; cat "$tmp/v.out"; fail=1; }

if [ -n "$quick" ]; then
  k=$tmp/k.ckpt
  everyrank 3 "another problem: --max-steps is 250 in it, 249 here" --restart "$k" --max-steps 249
  everyrank 2 "BPC_EIO" --restart "$tmp/missing.ckpt"
  everyrank 2 "not a bpc checkpoint" --restart "$tmp/ref.vtk"
  # shellcheck disable=SC2086
  bad 2 "--synchrony must be 1" $prob --checkpoint-every 2 --synchrony 0.5
  expect_done
  echo "test_trace_ckpt: BPC_APP_QUICK: the restart at 3 processes, 4 refusals"
  exit "$fail"
fi

# a chain: restarted on 3, checkpointing again (round 12) and stopping; then
# restarted on 5
run 3 chain1 --restart "$tmp/k.ckpt" --checkpoint-every 4 --checkpoint "$tmp/k2.ckpt" \
  --stop-after-checkpoint 1
stopped chain1
grep -q 'round 12' "$tmp/chain1.err" || { echo "FAIL: chain1: not at round 12"; fail=1; }
run 5 chain2 --restart "$tmp/k2.ckpt" --checkpoint-every 4 --checkpoint "$tmp/k3.ckpt"
same chain2
# written on 1 process (4 blocks), restarted on 5 (a process without blocks)
run 1 one --checkpoint-every 5 --checkpoint "$tmp/k1.ckpt" --stop-after-checkpoint 1
stopped one
run 5 one5 --restart "$tmp/k1.ckpt"
same one5

# a run killed (SIGTERM to mpirun) after its first checkpoint appeared
# (a longer problem, so that the kill lands mid-run), restarted on 3
# processes: the output of an uninterrupted run of that problem
prob0=$prob
prob="--dims 32,32,40 --seeds 300 --max-steps 3000 --round-steps 2"
run 2 kref
# (killed: its own session folder, so that nothing it leaves meets later runs)
mkdir -p "$tmp/ompi.kill"
# shellcheck disable=SC2086
OMPI_MCA_orte_tmpdir_base=$tmp/ompi.kill "$MPIRUN" -np 2 "$app" $prob --vtk "$tmp/kill.vtk" \
  --png none --quiet --checkpoint-every 5 --checkpoint "$tmp/kill.ckpt" >/dev/null 2>&1 &
pid=$!
i=0
while [ ! -e "$tmp/kill.ckpt" ] && [ $i -lt 600 ] && kill -0 $pid 2>/dev/null; do
  sleep 0.1
  i=$((i + 1))
done
kill -TERM $pid 2>/dev/null
wait $pid
if [ ! -e "$tmp/kill.ckpt" ]; then
  echo "FAIL: the run to be killed wrote no checkpoint"; fail=1
else
  [ -e "$tmp/kill.vtk" ] && echo "note: the run ended before the kill reached it"
  run 3 kre --restart "$tmp/kill.ckpt"
  for ext in vtk png; do
    cmp -s "$tmp/kref.$ext" "$tmp/kre.$ext" ||
      { echo "FAIL: the restart of a killed run: its $ext differs from the uninterrupted run's"; fail=1; }
  done
fi
prob=$prob0

k=$tmp/k.ckpt
everyrank 3 "another problem: --max-steps is 250 in it, 249 here" --restart "$k" --max-steps 249
everyrank 2 "another problem: the seeds' hash" --restart "$k" --seed 7
everyrank 2 "another problem: the seeds' hash" --restart "$k" --seed-box 0,0,0,1,1,0.5
everyrank 3 "another problem: --step" --restart "$k" --step 0.03
everyrank 2 "another problem: --dims is 20,20,28 in it, 20,20,29 here" --restart "$k" --dims 20,20,29
everyrank 2 "another problem: --field is tornado in it, abc here" --restart "$k" --field abc
everyrank 2 "the checkpoint has 8 blocks, not 6" --restart "$k" --blocks 6
everyrank 2 "BPC_EIO" --restart "$tmp/missing.ckpt"
cp "$k" "$tmp/flip.ckpt"
sz=$(wc -c <"$k")
printf 'XXXX' | dd of="$tmp/flip.ckpt" bs=1 seek=$((sz - 100)) conv=notrunc 2>/dev/null
everyrank 3 "payload checksum mismatch" --restart "$tmp/flip.ckpt"
head -c $((sz / 2)) "$k" >"$tmp/short.ckpt"
everyrank 2 "truncated" --restart "$tmp/short.ckpt"
everyrank 2 "not a bpc checkpoint" --restart "$tmp/ref.vtk"
# a checkpoint of another program (tests/apps/io_step: no bpc-trace metadata)
if timeout -k 5 60 "$MPIRUN" -np 2 ./tests/apps/io_step write "$tmp/other.ckpt" 8 1 c s \
    >"$tmp/io_step.out" 2>&1; then
  everyrank 2 "not a bpc-trace checkpoint" --restart "$tmp/other.ckpt"
else
  echo "FAIL: io_step could not write a foreign checkpoint (status $?):"
  cat "$tmp/io_step.out"; fail=1
fi
# option checks (rank 0 says it)
# shellcheck disable=SC2086
bad 2 "--stop-after-checkpoint needs --checkpoint-every" $prob --stop-after-checkpoint 1
bad 2 "--checkpoint needs --checkpoint-every" $prob --checkpoint "$tmp/x.ckpt"
bad 2 "--synchrony must be 1" $prob --checkpoint-every 2 --synchrony 0.5
bad 1 "--checkpoint-every '0'" $prob --checkpoint-every 0
bad 1 "--bench takes no checkpoint" --bench --checkpoint-every 2
expect_done
exit "$fail"
