#!/usr/bin/python3
"""Top-k by magnitude on the same array, in one run on one machine: shardcomm's exact
selection (`sc-bench topk --input FILE --mode exact`) against numpy.argpartition and
torch.topk, with the ratios of their times.

usage: /usr/bin/python3 bench/compare/topk_vs_numpy_torch.py [-B BUILD_DIR]
           [-n COUNT] [--ratio R] [--threads T] [--iters N] [--seed S] [--json FILE]
           [--device]

  BUILD_DIR: a built tree (default $SC_BUILD_DIR, else <repo>/build); builds nothing.
  COUNT defaults to 25000000 float32, R to 0.01 (k = round(R * COUNT), halves away from
  zero: the k sc-bench reports and selects, which all three select), T to 2 (at least 1:
  both shardcomm's selection threads and torch.set_num_threads; numpy's argpartition is
  single-threaded), N to 5 timed calls each after one warm-up.
  --device: the GPU's turn (a CUDA build of shardcomm and a torch with CUDA): sc-bench
  selects on GPU 0 (`--device`) and torch.topk runs on the same GPU on a copy of the
  same array, timed to the end of its work (torch.cuda.synchronize); numpy stays on the
  CPU, for the index sets and for scale.

The array is gradient-like (normal, float32, from numpy's generator with the seed),
written raw to a temporary file that sc-bench reads (it writes its indices back). Each peer does the whole job the
compressor needs: the indices of the k largest magnitudes and their signed values
(numpy: argpartition of -|x| then a gather; torch: topk of |x| then a gather). Times
are the median of N calls. The index sets of the three must be equal, and equal to
the elements whose magnitude is at least the k-th largest (the values are
continuous, so ties have probability ~0; a tie would show as a set difference, and the
script says so). ratio = peer / shardcomm: above 1 means shardcomm is faster.
Needs Debian's python3-numpy and python3-torch (run with /usr/bin/python3).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def median_time(fn, iters):
    fn()  # warm-up
    times = []
    result = None
    for _ in range(iters):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), result


def at_least_one(text):
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError("%r is not a count of threads (at least 1)" % text)
    return value


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-B", "--build", default=os.environ.get("SC_BUILD_DIR",
                                                            os.path.join(REPO, "build")))
    ap.add_argument("-n", "--count", type=int, default=25_000_000)
    ap.add_argument("--ratio", type=float, default=0.01)
    ap.add_argument("--threads", type=at_least_one, default=2)
    ap.add_argument("--iters", type=int, default=5)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json")
    ap.add_argument("--device", action="store_true")
    a = ap.parse_args()
    # Imported after the arguments are checked, so that a usage error says so first.
    try:
        import numpy as np
        import torch
    except ImportError as e:
        sys.exit("topk_vs_numpy_torch.py: needs numpy and torch (apt-get install -y "
                 "python3-numpy python3-torch; run with /usr/bin/python3): %s" % e)
    if a.device and not torch.cuda.is_available():
        sys.exit("topk_vs_numpy_torch.py: --device needs a torch with CUDA and a GPU")
    bench = os.path.join(a.build, "bench", "sc-bench")
    if not os.access(bench, os.X_OK):
        sys.exit("topk_vs_numpy_torch.py: %s is missing; build first" % bench)
    x = (np.random.default_rng(a.seed).standard_normal(a.count, dtype=np.float32) * 1e-3)

    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, "x.f32")
        out = os.path.join(tmp, "sc.json")
        x.tofile(data)
        # shardcomm: times from sc-bench's own clock around each call; its check of the
        # result against the input is part of the run (exit status 1 when wrong).
        cmd = [bench, "topk", "--input", data, "-n", str(a.count), "--ratio", str(a.ratio),
               "--mode", "exact", "--threads", str(a.threads), "--iters", str(a.iters),
               "--warmup", "1", "--json", out, "--indices-out", os.path.join(tmp, "idx")]
        if a.device:
            cmd.append("--device")
        run = subprocess.run(cmd, capture_output=True, text=True)
        sys.stdout.write(run.stdout)
        if run.returncode != 0:
            sys.stderr.write(run.stderr)
            sys.exit("topk_vs_numpy_torch.py: sc-bench topk failed (status %d)"
                     % run.returncode)
        with open(out) as f:
            doc = json.load(f)
        # sc-bench's k (C's round: halves away from zero), not Python's round (halves to
        # even): -n 250 --ratio 0.01 is k = 3 there and was 2 here, a false DIFFER.
        k = doc["k"]
        sc = doc["rows"][0]
        sc_set = set(np.fromfile(os.path.join(tmp, "idx"), dtype=np.uint32).tolist())

    sc_s = sc["median_ms"] * 1e-3

    def numpy_topk():
        idx = np.argpartition(-np.abs(x), k - 1)[:k]
        return idx, x[idx]

    torch.set_num_threads(a.threads)
    xt = torch.from_numpy(x).cuda() if a.device else torch.from_numpy(x)

    def torch_topk():
        _, idx = torch.topk(xt.abs(), k, sorted=False)
        vals = xt[idx]
        if a.device:
            torch.cuda.synchronize()
        return idx, vals

    np_s, (np_idx, _) = median_time(numpy_topk, a.iters)
    th_s, (th_idx, _) = median_time(torch_topk, a.iters)
    np_set = set(np_idx.tolist())
    agree = np_set == set(th_idx.cpu().numpy().tolist())
    kth = np.partition(np.abs(x), a.count - k)[a.count - k]
    exact_set = set(np.nonzero(np.abs(x) >= kth)[0].tolist())
    agree = agree and np_set == exact_set and sc_set == exact_set

    where = "GPU" if a.device else "%d threads" % a.threads
    rows = [("shardcomm exact (%s)" % where, sc_s),
            ("numpy.argpartition (1 thread)", np_s),
            ("torch.topk (%s)" % where, th_s)]
    print("# top-k of %d float32, k = %d, median of %d calls" % (a.count, k, a.iters))
    print("# %-32s %10s %8s %10s" % ("method", "ms", "GB/s", "peer/sc"))
    for name, s in rows:
        print("  %-32s %10.2f %8.2f %10.1f" % (name, s * 1e3, a.count * 4 / s * 1e-9,
                                              s / sc_s))
    print("# index sets of shardcomm, numpy, torch and |x| >= the k-th magnitude: %s"
          % ("equal" if agree else "DIFFER (ties in the data?)"))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"count": a.count, "k": k, "threads": a.threads, "iters": a.iters,
                       "device": a.device,
                       "shardcomm_ms": sc_s * 1e3, "numpy_ms": np_s * 1e3,
                       "torch_ms": th_s * 1e3, "numpy_ratio": np_s / sc_s,
                       "torch_ratio": th_s / sc_s, "index_sets_equal": agree}, f)
    return 0 if agree else 1


if __name__ == "__main__":
    sys.exit(main())
