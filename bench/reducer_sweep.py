#!/usr/bin/env python3
"""The reducer's bucket-cap sweep over the model profiles, as issue 5 asks it recorded:
for every profile and both modes (copies, gradient_as_bucket_view), `sc-bench reducer
--sweep CAPS --autotune` on local ranks, ROUNDS times with the runs alternated, then a
markdown table (iter_ms per cap, round by round; autotune's choice; one all-reduce per
tensor; the per-tensor time over the best cap's) and the last round as bars of iteration
time against bucket cap. Every run's JSON is kept in OUTDIR; --report-only formats JSON
files written before.

usage: bench/reducer_sweep.py [-B BUILD] [-n RANKS] [-r ROUNDS] [--caps 1,5,25,100]
                              [--profiles resnet50,bert_base,gpt2_124m] [-o OUTDIR]
                              [--iters N]
  --profiles: names from bench/profiles/, or paths of profile files
       bench/reducer_sweep.py --report-only FILE.json...
Exit status non-zero when a run fails or any row's check is not ok."""
import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
# Iterations per profile: the small model gets more, so that each row lasts a while.
ITERS = {"resnet50": 20}
DEFAULT_ITERS = 10
BAR = 50


def run_sweeps(a):
    files, failed = [], 0
    scrun = os.path.join(a.build, "tools", "scrun")
    bench = os.path.join(a.build, "bench", "sc-bench")
    os.makedirs(a.out, exist_ok=True)
    for rnd in range(1, a.rounds + 1):
        for prof in a.profiles.split(","):
            # A name from bench/profiles/, or a profile file's path.
            ppath = prof if os.sep in prof or prof.endswith(".txt") else \
                os.path.join(ROOT, "bench", "profiles", prof + ".txt")
            prof = os.path.splitext(os.path.basename(ppath))[0]
            for view in (False, True):
                name = "%s-%s-r%d.json" % (prof, "views" if view else "copies", rnd)
                path = os.path.join(a.out, name)
                cmd = [scrun, "-n", str(a.ranks), bench, "reducer", "--profile", ppath,
                       "--sweep", a.caps, "--autotune",
                       "--iters", str(a.iters or ITERS.get(prof, DEFAULT_ITERS)),
                       "--json", path]
                if view:
                    cmd.append("--view")
                print("# " + " ".join(cmd), flush=True)
                rc = subprocess.call(cmd, stdout=subprocess.DEVNULL)
                if rc != 0:
                    print("reducer_sweep: the run above failed (exit %d)" % rc,
                          file=sys.stderr)
                    failed += 1
                else:
                    files.append(path)
    return files, failed


def load(files):
    """{(profile, mode): [rows of round 1, rows of round 2, ...]} in file order."""
    runs = {}
    for f in files:
        with open(f) as fh:
            rows = json.load(fh)
        if not rows:
            continue
        prof = os.path.splitext(os.path.basename(rows[0]["profile"]))[0]
        mode = "views" if rows[0]["view"] else "copies"
        runs.setdefault((prof, mode), []).append(rows)
    return runs


def fmt(x):
    return "%.1f" % x if x >= 10 else "%.2f" % x


def report(runs):
    bad = 0
    caps = sorted({r["bucket_mb"] for rr in runs.values() for rows in rr for r in rows
                   if not r["autotune"]})
    print("| profile | mode | " + " | ".join("%g MiB" % c for c in caps) +
          " | auto (cap: ms, / best (its cap's sweep row / best)) | per-tensor |"
          " per-tensor / best cap |")
    print("| --- | --- | " + " | ".join("---:" for _ in caps) + " | --- | ---: | ---: |")
    for (prof, mode), rr in runs.items():
        cells, autos, pts, ratios = [], [], [], []
        for c in caps:
            cells.append(" / ".join(fmt(r["iter_ms"]) for rows in rr for r in rows
                                    if not r["autotune"] and r["bucket_mb"] == c) or "-")
        for rows in rr:
            sweep = [r for r in rows if not r["autotune"]]
            best = min(r["iter_ms"] for r in sweep)
            for r in rows:
                bad += r["wrong"] != 0 or not r["identical"]
                if r["autotune"]:
                    # The chosen cap's own sweep row against the best, beside the
                    # autotuned row (timed later, so in another state of a noisy VM).
                    row = [x["iter_ms"] for x in sweep if x["bucket_bytes"] == r["bucket_bytes"]]
                    autos.append("%.4g: %s, %.2f (row %s)" % (
                        r["bucket_mb"], fmt(r["iter_ms"]), r["iter_ms"] / best,
                        "%.2f" % (row[0] / best) if row else "-"))
            pts.append(fmt(rows[0]["per_tensor_iter_ms"]))
            ratios.append("%.2f" % (rows[0]["per_tensor_iter_ms"] / best))
        print("| %s | %s | %s | %s | %s | %s |" % (prof, mode, " | ".join(cells),
              " / ".join(autos), " / ".join(pts), " / ".join(ratios)))
    print("\nThe last round as bars (`#` the reducer at each cap, `-` one all-reduce per "
          "tensor):\n\n```")
    for (prof, mode), rr in runs.items():
        rows = rr[-1]
        bars = [(("%.4g MiB" if not r["autotune"] else "auto %.4g MiB") % r["bucket_mb"],
                 r["iter_ms"], "#") for r in rows]
        bars.append(("  per-tensor", rows[0]["per_tensor_iter_ms"], "-"))
        top = max(v for _, v, _ in bars)
        print("%s, %s%s ms" % (prof, mode, " " * (BAR + 7 - len(prof) - len(mode))))
        for label, v, ch in bars:
            n = int(round(BAR * v / top)) if top > 0 else 0
            print("%14s |%s%s %7s" % (label, ch * n, " " * (BAR - n), fmt(v)))
    print("```")
    return bad


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("-B", "--build", default=os.environ.get("SC_BUILD_DIR",
                                                           os.path.join(ROOT, "build")))
    p.add_argument("-n", "--ranks", type=int, default=2)
    p.add_argument("-r", "--rounds", type=int, default=2)
    p.add_argument("--caps", default="1,5,25,100")
    p.add_argument("--profiles", default="resnet50,bert_base,gpt2_124m")
    p.add_argument("-o", "--out", default="reducer-sweep")
    p.add_argument("--iters", type=int, default=0,
                   help="timed iterations per row (default 20 for resnet50, else 10)")
    p.add_argument("--report-only", nargs="+", metavar="FILE")
    a = p.parse_args()
    failed = 0
    if a.report_only:
        files = a.report_only
    else:
        for tool in ("tools/scrun", "bench/sc-bench"):
            if not os.access(os.path.join(a.build, tool), os.X_OK):
                sys.exit("reducer_sweep: %s is missing; build first (-B BUILD)"
                         % os.path.join(a.build, tool))
        files, failed = run_sweeps(a)
    bad = report(load(files))
    if bad:
        print("reducer_sweep: %d rows with wrong results or ranks that differ" % bad,
              file=sys.stderr)
    return 1 if failed or bad else 0


if __name__ == "__main__":
    sys.exit(main())
