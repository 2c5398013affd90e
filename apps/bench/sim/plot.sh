#!/bin/sh
# plot.sh DIR - plots of a sweep (sweep.sh): for every engine and size in
# DIR/results.jsonl, time against process count, bpc's fastest variant and
# auto beside each MPI baseline, log-log; DIR/<engine>.png (one panel per
# size) and DIR/summary.txt (the same numbers as a table, with
# bpc/baseline ratios). Needs python3 and gnuplot (Debian: gnuplot-nox).
set -eu
dir=${1:?usage: plot.sh DIR}
res=$dir/results.jsonl
[ -s "$res" ] || { echo "plot.sh: no results in $res" >&2; exit 2; }
command -v gnuplot >/dev/null 2>&1 || { echo "plot.sh: gnuplot not found (apt-get install gnuplot-nox)" >&2; exit 2; }
python3 - "$dir" <<'EOF'
import collections, json, os, sys
d = sys.argv[1]
rows = [json.loads(l) for l in open(os.path.join(d, "results.jsonl")) if l.startswith("{")]
# key: engine, size (bytes, or the scan's op_ms), case: the line's own label
def size_of(r):
    if r["engine"] == "scan":
        return "op %gms N=%s" % (r.get("op_ms", 0), "p" if r.get("n_items") == r.get("p") else r.get("n_items"))
    if r["engine"] == "composite":
        return "%s %s%% %s" % (r.get("image", r["bytes"]), r.get("active", 100), r.get("op", ""))
    b = int(r["bytes"])
    op = " " + r["op"] if r.get("op") else ""
    for u, s in ((1 << 20, "M"), (1 << 10, "K")):
        if b >= u and b % u == 0:
            return "%d%s%s" % (b // u, s, op)
    return "%dB%s" % (b, op)
best = collections.defaultdict(dict)    # (engine, size) -> p -> (time, name)
auto = collections.defaultdict(dict)
base = collections.defaultdict(lambda: collections.defaultdict(dict))  # ... -> baseline -> p -> t
for r in rows:
    e, p = r["engine"], int(r["p"])
    k = (e, size_of(r))
    if e == "scan":
        t, name = r["median_s"], r["variant"]
        if name.startswith("MPI_Scan"):
            base[k][name][p] = t
            continue
    else:
        t, name = r["median_s"], r["algorithm"] + ("[%s]" % r["k"] if r.get("k") else "")
        bl = r.get("baseline")
        if bl and r.get("baseline_median_s"):
            old = base[k][bl].get(p)
            if old is None or r["baseline_median_s"] < old:
                base[k][bl][p] = r["baseline_median_s"]
    if p not in best[k] or t < best[k][p][0]:
        best[k][p] = (t, name)
    if "auto" in name and (p not in auto[k] or t < auto[k][p][0]):
        auto[k][p] = (t, name)
summ = open(os.path.join(d, "summary.txt"), "w")
byeng = collections.defaultdict(list)
for k in sorted(best):
    byeng[k[0]].append(k)
for e, keys in byeng.items():
    gp = []
    n = len(keys)
    cols = min(n, 3)
    rws = (n + cols - 1) // cols
    gp.append("set terminal pngcairo noenhanced size %d,%d font ',9'" % (460 * cols, 340 * rws))
    gp.append("set output '%s'" % os.path.join(d, e + ".png"))
    gp.append("set multiplot layout %d,%d title 'bpc-bench %s, simulated (%s)'" % (rws, cols, e, rows[0].get("platform", "")))
    gp.append("set logscale xy; set xlabel 'processes'; set ylabel 'seconds'; set key top left; set grid; set format y '%g'")
    for k in keys:
        files = []
        def dump(tag, pts):
            fn = os.path.join(d, ".%s-%s-%s.dat" % (e, "".join(c if c.isalnum() else "_" for c in k[1]), tag))
            with open(fn, "w") as f:
                for p in sorted(pts):
                    f.write("%d %.9g\n" % (p, pts[p]))
            return fn
        files.append((dump("best", {p: v[0] for p, v in best[k].items()}), "bpc fastest"))
        if auto[k]:
            files.append((dump("auto", {p: v[0] for p, v in auto[k].items()}), "bpc auto"))
        for i, (bl, pts) in enumerate(sorted(base[k].items())):
            files.append((dump("base%d" % i, pts), bl))
        gp.append("set title '%s'" % k[1])
        gp.append("plot " + ", ".join("'%s' using 1:2 with linespoints title '%s'" % (f, t) for f, t in files))
        for p in sorted(best[k]):
            t, name = best[k][p]
            bs = ", ".join("%s %.3g s (%.2fx)" % (bl, pts[p], t / pts[p]) for bl, pts in sorted(base[k].items()) if p in pts and pts[p] > 0)
            au = auto[k].get(p)
            summ.write("%-9s %-16s p=%-5d fastest %-26s %.3g s%s | %s\n" % (e, k[1], p, name, t,
                       "; auto %.3g s" % au[0] if au else "", bs))
    gp.append("unset multiplot")
    with open(os.path.join(d, ".%s.gp" % e), "w") as f:
        f.write("\n".join(gp) + "\n")
summ.close()
EOF
for g in "$dir"/.*.gp; do
  [ -f "$g" ] || continue
  gnuplot "$g"
done
echo "plot.sh: $(ls "$dir"/*.png 2>/dev/null | wc -l) plots and summary.txt in $dir" >&2
