#!/usr/bin/python3
"""Side by side, in one run on one machine: shardcomm's gradient reducer
(`scrun -n 2 sc-bench reducer`) and PyTorch DDP on gloo (CPU, 2 processes) replaying
the same gradient profile, with the same bucket cap and the same backward compute,
slept for in proportion to each gradient's size on a fixed timeline (--compute-mode
sleep: the CPU is free, as when a GPU computes).

usage: /usr/bin/python3 bench/compare/reducer_vs_torch.py [-B BUILD_DIR]
           [--profile FILE] [--bucket-mb X] [--compute-ms T] [--iters N] [--warmup W]
           [--rounds R] [--view]

  BUILD_DIR: a built tree (default $SC_BUILD_DIR, else <repo>/build); builds nothing.
  The profile defaults to bench/profiles/resnet50.txt, the cap to 25 MiB, the compute
  to 50 ms, 20 timed iterations after 3 warmup ones; --rounds runs both R times,
  alternating, and reports each round (absolute times drift on a shared machine:
  compare the ratios of one round). --view: sc-bench --view against DDP's
  gradient_as_bucket_view=True.

Needs torch (Debian: `apt-get install -y python3-torch`, torch 1.13, run with
/usr/bin/python3). The DDP model has one 1-D parameter per profile line, in profile
order; its forward chains one autograd function per parameter, so the backward reaches
them in reverse registration order, as sc-bench marks its gradients ready. Before each
iteration (untimed) every gradient is copied from a constant tensor; the backward of
parameter k hands its copy over (AccumulateGrad takes it without copying) once k's
deadline has come: the iteration start plus the compute of the gradients produced so
far, as sc-bench's sleep mode does. DDP copies each gradient into its bucket (divided by the world size)
and back after the all-reduce, as sc-bench's copy mode does; with --view it writes the
gradients into the bucket views instead. Times are per iteration, from backward() being
called to it returning (DDP has then waited for its buckets and written the
gradients), the slowest rank's, averaged over the iterations; sc-bench's iter_ms is the
same span (first gradient's compute to finalize returning). ratio = torch / shardcomm:
above 1 means shardcomm is faster.
"""
import argparse
import ctypes
import json
import os
import socket
import subprocess
import sys
import tempfile
import time

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))

try:
    import torch
    import torch.distributed as dist
    import torch.multiprocessing as mp
except ImportError:
    sys.exit("reducer_vs_torch.py: torch is missing: install it with "
             "`apt-get install -y python3-torch` and run this script with /usr/bin/python3")


def load_profile(path):
    tensors = []
    with open(path) as f:
        for line in f:
            s = line.strip()
            if not s or s.startswith("#"):
                continue
            name, count, dtype = s.split()
            if dtype != "float32":
                sys.exit("reducer_vs_torch.py: %s: %s is %s; the DDP replay takes float32 "
                         "gradients only" % (path, name, dtype))
            tensors.append((name, int(count)))
    return tensors


def set_timer_slack():
    """Wake within 1 us of a deadline, as sc-bench does in sleep mode."""
    try:
        ctypes.CDLL(None).prctl(29, 1000, 0, 0, 0)  # PR_SET_TIMERSLACK
    except (OSError, AttributeError):
        pass


class Replay:
    """Per process: the backward's timeline and the constant gradients."""
    t0 = 0.0
    t_last = 0.0
    compute_s = 0.0
    backlog = []
    consts = []
    fresh = []  # this iteration's gradients, handed over once each


class Produce(torch.autograd.Function):
    """Forward: passes x on, with parameter p as an input. Backward: gradient k, ready
    at its deadline."""

    @staticmethod
    def forward(ctx, x, p, k):
        ctx.k = k
        return x.clone()

    @staticmethod
    def backward(ctx, g):
        k = ctx.k
        grad, Replay.fresh[k] = Replay.fresh[k], None
        if Replay.compute_s > 0:
            delay = Replay.t0 + Replay.compute_s * Replay.backlog[k] - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
        if k == 0:
            Replay.t_last = time.perf_counter()
        return g, grad, None


class Model(torch.nn.Module):
    def __init__(self, tensors):
        super().__init__()
        self.params = torch.nn.ParameterList(
            [torch.nn.Parameter(torch.zeros(count)) for _, count in tensors])

    def forward(self, x):
        for k, p in enumerate(self.params):
            x = Produce.apply(x, p, k)
        return x


def torch_worker(rank, n, port, args, tensors, out_path):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.set_num_threads(1)
    set_timer_slack()
    dist.init_process_group("gloo", rank=rank, world_size=n)
    total = sum(c for _, c in tensors)
    done, backlog = 0.0, [0.0] * len(tensors)
    for k in range(len(tensors) - 1, -1, -1):
        done += tensors[k][1] / total if total else 0.0
        backlog[k] = done
    Replay.backlog = backlog
    Replay.compute_s = args.compute_ms * 1e-3
    Replay.consts = [torch.full((c,), 0.25 * (rank + 1)) for _, c in tensors]
    model = torch.nn.parallel.DistributedDataParallel(
        Model(tensors), bucket_cap_mb=args.bucket_mb, broadcast_buffers=False,
        gradient_as_bucket_view=args.view)
    x0 = torch.zeros(1)
    times = []
    for it in range(args.warmup + args.iters):
        model.zero_grad(set_to_none=not args.view)
        Replay.fresh = [c.clone() for c in Replay.consts]
        loss = model(x0).sum()
        dist.barrier()
        Replay.t0 = time.perf_counter()
        loss.backward()
        end = time.perf_counter()
        if it >= args.warmup:
            times += [end - Replay.t0, Replay.t_last - Replay.t0, end - Replay.t_last]
    # Every gradient is the average of 0.25 and 0.5.
    for p in model.module.params:
        if p.numel() and not torch.all(p.grad == 0.375):
            raise SystemExit("rank %d: DDP's averaged gradient is wrong" % rank)
    t = torch.tensor(times, dtype=torch.float64)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    if rank == 0:
        t = t.view(-1, 3).mean(0) * 1e3
        with open(out_path, "w") as f:
            json.dump({"iter_ms": t[0].item(), "compute_ms": t[1].item(),
                       "exposed_ms": t[2].item(), "torch": torch.__version__}, f)
    dist.barrier()
    # torch 1.13 can deadlock tearing DDP down at exit (the Reducer destroys the gloo
    # group, whose worker thread waits for the GIL): leave without destructors.
    os._exit(0)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_torch(args, tensors, tmp):
    out = os.path.join(tmp, "torch.json")
    mp.spawn(torch_worker, args=(2, free_port(), args, tensors, out), nprocs=2)
    with open(out) as f:
        return json.load(f)


def run_shardcomm(args, build, tmp):
    out = os.path.join(tmp, "sc.json")
    cmd = [os.path.join(build, "tools", "scrun"), "-n", "2",
           os.path.join(build, "bench", "sc-bench"), "reducer", "--profile", args.profile,
           "--bucket-mb", str(args.bucket_mb), "--compute-ms", str(args.compute_ms),
           "--compute-mode", "sleep", "--iters", str(args.iters), "--warmup",
           str(args.warmup), "--json", out] + (["--view"] if args.view else [])
    print("# " + " ".join(cmd), flush=True)
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if r.returncode != 0:
        sys.exit("reducer_vs_torch.py: sc-bench reducer failed (exit %d):\n%s"
                 % (r.returncode, r.stdout))
    with open(out) as f:
        row = json.load(f)[0]
    # DDP's side times each rank from its own last gradient: compare with the same.
    row["exposed_ms"] = row["rank_exposed_ms"]
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-B", dest="build", default=os.environ.get(
        "SC_BUILD_DIR", os.path.join(REPO, "build")))
    ap.add_argument("--profile", default=os.path.join(REPO, "bench", "profiles",
                                                      "resnet50.txt"))
    ap.add_argument("--bucket-mb", type=float, default=25.0)
    ap.add_argument("--compute-ms", type=float, default=50.0)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--view", action="store_true")
    args = ap.parse_args()
    for f in ("tools/scrun", "bench/sc-bench"):
        if not os.access(os.path.join(args.build, f), os.X_OK):
            sys.exit("reducer_vs_torch.py: %s/%s not found: build %s first"
                     % (args.build, f, args.build))
    tensors = load_profile(args.profile)
    print("# profile %s: %d tensors, %.1f MiB; 2 ranks, bucket cap %g MiB, compute %g ms "
          "(sleep), iters %d, warmup %d, %s" % (
              args.profile, len(tensors), sum(c for _, c in tensors) * 4 / 2**20,
              args.bucket_mb, args.compute_ms, args.iters, args.warmup,
              "bucket views" if args.view else "gradients copied into the buckets"))
    print("# torch %s, gloo on CPU; times in ms, slowest rank, averaged over the "
          "iterations; ratio = torch / shardcomm" % torch.__version__)
    print("# %5s %-10s %9s %10s %10s" % ("round", "peer", "iter_ms", "compute_ms",
                                         "exposed_ms"))
    with tempfile.TemporaryDirectory() as tmp:
        for rnd in range(args.rounds):
            sc = run_shardcomm(args, args.build, tmp)
            th = run_torch(args, tensors, tmp)
            for name, r in (("shardcomm", sc), ("torch-ddp", th)):
                print("  %5d %-10s %9.3f %10.3f %10.3f" % (
                    rnd, name, r["iter_ms"], r["compute_ms"], r["exposed_ms"]))
            print("  %5d %-10s %9.2f %10s %10.2f" % (
                rnd, "ratio", th["iter_ms"] / sc["iter_ms"], "",
                th["exposed_ms"] / sc["exposed_ms"] if sc["exposed_ms"] > 0 else 0.0),
                flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
