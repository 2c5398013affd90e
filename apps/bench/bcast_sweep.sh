#!/bin/sh
# apps/bench/bcast_sweep.sh - the s-to-p broadcast sweep of doc/bcast.md
# ("Measurements"): P = 8 with one block per process (s = 1..8) and a
# 100-block 10 x 10 mesh on 4 processes (s = 1, 2, 5, 10, 25, 50, 75, 100);
# 32 B, 1 KiB and 16 KiB per source; every distribution; every algorithm,
# the repositioned and partitioned variants and the library's auto
# (lib_auto), each against MPI_Allgatherv and s x MPI_Bcast in the same run
# (alternated by bpc-bench). Writes the raw JSON lines and a summary table:
# per configuration the best variant, auto, both MPI baselines (medians),
# best/MPI and auto/MPI against the better baseline, bytes and messages per
# rank of auto with the model's lower bound, and auto's cost model beside
# the measurement: best_model (the model's time of the best variant),
# auto_pick and model_us (what auto picks and its modelled time; the JSON
# lines' model_s and model_pick).
#
# Usage (from the build directory, on an idle machine):
#   sh ../apps/bench/bcast_sweep.sh [OUTDIR]      (default: bcast-sweep)
# Environment: MPIRUN (default "mpirun --bind-to none"), BENCH (default
# apps/bpc-bench), REPS (default 20), WARMUP (default 3), OMP_NUM_THREADS
# (default 1); for a smoke run only: S8 and S100 (the s lists), BYTES.
# Run time: not measured here (shared machine); 16 bpc-bench runs of 810
# result lines each, estimated at 10-20 minutes on an idle node.
set -eu
OUT=${1:-bcast-sweep}
MPIRUN=${MPIRUN:-mpirun --bind-to none}
BENCH=${BENCH:-apps/bpc-bench}
REPS=${REPS:-20}
WARMUP=${WARMUP:-3}
S8=${S8:-1 2 3 4 5 6 7 8}
S100=${S100:-1 2 5 10 25 50 75 100}
BYTES=${BYTES:-32,1K,16K}
OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
export OMP_NUM_THREADS
mkdir -p "$OUT"
: > "$OUT/raw.json"
for s in $S8; do
  $MPIRUN -np 8 "$BENCH" bcast --json --reps "$REPS" --warmup "$WARMUP" --algorithm auto \
    --s "$s" --bytes "$BYTES" --blocks-per-proc 1 >> "$OUT/raw.json"
done
for s in $S100; do
  $MPIRUN -np 4 "$BENCH" bcast --json --reps "$REPS" --warmup "$WARMUP" --algorithm auto \
    --s "$s" --bytes "$BYTES" --blocks-per-proc 25 >> "$OUT/raw.json"
done
awk '
function num(k,   m) { if (match($0, "\"" k "\":[-0-9.e+]+")) { m = substr($0, RSTART, RLENGTH); sub(/^[^:]*:/, "", m); return m + 0 } return -1 }
function str(k,   m) { if (match($0, "\"" k "\":\"[^\"]*\"")) { m = substr($0, RSTART, RLENGTH); sub(/^[^:]*:"/, "", m); sub(/"$/, "", m); return m } return "" }
/^\{/ {
  a = str("algorithm"); d = str("dist"); s = num("s")
  v = a; sub("-" d "-s" s "$", "", v)
  key = num("p") " " num("nblocks") " " d " " s " " num("bytes")
  if (!(key in seen)) { seen[key] = 1; order[n++] = key }
  t = num("median_s"); b = num("baseline_median_s")
  if (str("baseline") == "MPI_Allgatherv") { ag[key] = ag[key] == "" || b < ag[key] ? b : ag[key] }
  else { bc[key] = bc[key] == "" || b < bc[key] ? b : bc[key] }
  if (v == "lib_auto") { au[key] = au[key] == "" || t < au[key] ? t : au[key]; ab[key] = num("bytes_sent_max"); am[key] = num("msgs_sent_max"); lb[key] = num("lower_bound_bytes"); mo[key] = num("model_s"); pk[key] = str("model_pick") }
  else if (best[key] == "" || t < best[key]) { best[key] = t; bn[key] = v; bm[key] = num("model_s") }
  if (num("correct") != 1) bad++
}
END {
  printf "%-3s %-7s %-6s %-4s %-6s %-16s %10s %10s %-16s %10s %10s %10s %10s %8s %8s %10s %6s %10s\n", "P", "nblocks", "dist", "s", "bytes", "best", "best_us", "best_model", "auto_pick", "auto_us", "model_us", "allgv_us", "bcast_us", "best/mpi", "auto/mpi", "auto_bytes", "msgs", "lb_bytes"
  for (i = 0; i < n; i++) {
    k = order[i]; split(k, f, " "); m = ag[k] < bc[k] ? ag[k] : bc[k]
    printf "%-3s %-7s %-6s %-4s %-6s %-16s %10.1f %10.1f %-16s %10.1f %10.1f %10.1f %10.1f %8.3f %8.3f %10d %6d %10d\n", f[1], f[2], f[3], f[4], f[5], bn[k], best[k] * 1e6, bm[k] * 1e6, pk[k], au[k] * 1e6, mo[k] * 1e6, ag[k] * 1e6, bc[k] * 1e6, best[k] / m, au[k] / m, ab[k], am[k], lb[k]
  }
  if (bad) printf "# %d result lines failed the correctness check\n", bad
}' "$OUT/raw.json" > "$OUT/table.txt"
echo "bcast_sweep: $OUT/table.txt ($(grep -c . "$OUT/raw.json") result lines in $OUT/raw.json)"
