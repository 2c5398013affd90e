#!/bin/sh
# sweep.sh - bpc-bench over simulated process counts (SimGrid SMPI), every
# engine beside its MPI baseline; JSON lines out, plots by plot.sh.
#
#   apps/bench/sim/sweep.sh [options]
#     --build DIR       an SMPI build (configure --with-smpi; default _build-smpi)
#     --platform NAME   platform of apps/bench/sim/platforms (default fattree)
#     --np LIST         process counts, e.g. "64 256 1024" (default "8 64")
#     --engines LIST    of agree merge swap allreduce neighbor bcast scan
#                       composite (default all but allreduce, which CI's
#                       time budget leaves out; agree: the per-call
#                       agreements)
#     --reps N          timed repetitions (default 5; warm-up 1)
#     --quick           small sizes only (CI: minutes, not more)
#     --out DIR         results folder (default _sim/<platform>)
#
# Per engine and count, one bpc-smpirun of bpc-bench --json: its lines go to
# DIR/results.jsonl with "platform" added; one line per run goes to
# DIR/runs.jsonl with the run's wall-clock seconds, its peak RSS and its exit
# status (the cost of the simulation, doc/scale.md). Sizes that would not fit
# in this machine's memory at a count (every simulated rank lives in one
# process: 16 MiB buffers x 1024 ranks) are left out at that count and
# said so. A run that fails or checks a result wrong makes the sweep exit 1
# after the other runs.
set -eu
top=$(cd "$(dirname "$0")/../../.." && pwd)
here=$top/apps/bench/sim
build=$top/_build-smpi
platform=fattree
nps="8 64"
engines="agree merge swap neighbor bcast scan composite"
reps=5
quick=0
out=
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --platform) platform=$2; shift 2 ;;
    --np) nps=$2; shift 2 ;;
    --engines) engines=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    --quick) quick=1; shift ;;
    --out) out=$2; shift 2 ;;
    -h | --help) sed -n '2,/^set -eu/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "sweep.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
: "${out:=$top/_sim/$platform}"
bench=$build/apps/bpc-bench
if [ ! -x "$bench" ]; then
  echo "sweep.sh: $bench not found: build with ./quickstart sim (or configure --with-smpi)" >&2
  exit 2
fi
mkdir -p "$out"
res=$out/results.jsonl
runs=$out/runs.jsonl
: >"$res"
: >"$runs"
status=0

# args ENGINE P: bpc-bench's arguments for ENGINE at P ranks ("" = skip)
args() {
  e=$1 p=$2
  if [ "$quick" = 1 ]; then
    case $e in
      merge) echo "merge --bytes 16,64K --k auto" ;;
      swap) echo "swap --bytes 64K --algorithm radixk --k auto" ;;
      allreduce) echo "allreduce --bytes 16,64K" ;;
      neighbor) echo "neighbor --bytes 1K" ;;
      bcast) echo "bcast --bytes 1K --s 1 --dist row --algorithm br_lin" ;;
      scan) echo "scan --op-ms 10 --n p --strategies ig --algorithm sklansky" ;;
      composite) echo "composite --image 256 --active 100,10 --op over --mode rs --algorithm radixk" ;;
      agree) echo "agree" ;;
    esac
    return
  fi
  # memory: P ranks x (payload and bpc's and MPI's buffers, ~6 of them)
  big=16M
  [ "$p" -gt 64 ] && big=
  case $e in
    agree) echo "agree --algorithm all" ;;
    merge) echo "merge --bytes 16,64K,1M${big:+,$big} --k auto" ;;
    swap) echo "swap --bytes 64K,1M${big:+,$big} --algorithm radixk --k auto" ;;
    allreduce) echo "allreduce --bytes 16,64K,1M${big:+,$big}" ;;
    neighbor) echo "neighbor --bytes 16,64K" ;;
    bcast) echo "bcast --bytes 1K --s 2 --dist row --algorithm br_lin,br_xy_source,xor,mpi" ;;
    scan) echo "scan --op-ms 10 --n p --strategies ig --algorithm serial,kogge-stone,sklansky" ;;
    composite)
      [ "$p" -gt 64 ] && return
      echo "composite --image 1024 --active 100,47,10 --op over --mode rs"
      ;;
  esac
}

for p in $nps; do
  for e in $engines; do
    a=$(args "$e" "$p")
    if [ -z "$a" ]; then
      echo "sweep.sh: $e at $p ranks: left out (memory; see doc/scale.md)" >&2
      continue
    fi
    echo "sweep.sh: $platform p=$p: bpc-bench $a" >&2
    log=$out/$e-$p.log
    t0=$(date +%s.%N)
    rc=0
    # shellcheck disable=SC2086
    /usr/bin/env time -f "%M" -o "$out/.rss" "$here/bpc-smpirun" --platform "$platform" \
      -np "$p" "$bench" $a --json --reps "$reps" --warmup 1 >"$log" 2>&1 || rc=$?
    t1=$(date +%s.%N)
    rss=$(tail -n 1 "$out/.rss" 2>/dev/null || echo 0)
    case $rss in '' | *[!0-9]*) rss=0 ;; esac
    grep '^{' "$log" | sed "s/^{/{\"platform\":\"$platform\",/" >>"$res" || true
    wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
    printf '{"platform":"%s","engine":"%s","p":%d,"args":"%s","wall_s":%s,"max_rss_mb":%d,"exit":%d}\n' \
      "$platform" "$e" "$p" "$a" "$wall" $((rss / 1024)) "$rc" >>"$runs"
    if [ "$rc" != 0 ] || grep -q '"correct":0' "$log"; then
      echo "sweep.sh: $e at $p ranks failed (exit $rc); see $log" >&2
      tail -n 5 "$log" >&2
      status=1
    fi
  done
done
echo "sweep.sh: $(wc -l <"$res") result lines in $res; runs in $runs" >&2
exit $status
