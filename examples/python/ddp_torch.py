"""Example: data-parallel training of a tiny torch model (CPU) on shardcomm's gradient
reducer, driven from Python the way a framework drives it (shardcomm.py, ctypes).

- The gradients live in bucket memory (gradient_as_bucket_view): each step p.grad is
  the reducer's view, zeroed, and autograd accumulates into it.
- A hook that runs once autograd has accumulated a gradient marks it ready, so that a
  full bucket's all-reduce overlaps the rest of the backward.
- Every step checks the averaged gradients against torch's own average of every rank's
  gradient, computed apart with torch.autograd.grad and gathered with allgather.

Run with `scrun -n 2 /usr/bin/python3 examples/python/ddp_torch.py` (any number of
ranks); prints one line per step on every rank and OK, exits 1 on a mismatch."""
import os
import sys
import traceback

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import shardcomm  # noqa: E402

STEPS = 5
torch.set_num_threads(1)
torch.manual_seed(0)  # every rank starts from the same parameters
model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.Tanh(),
                            torch.nn.Linear(32, 4))
names, params = zip(*model.named_parameters())
opt = torch.optim.SGD(params, lr=0.1)

comm = shardcomm.Comm()
reducer = shardcomm.Reducer(comm, params, names=names, gradient_as_bucket_view=True)


def after_accumulation(p, fn):
    """Calls fn() each time autograd has accumulated p's gradient into p.grad."""
    if hasattr(p, "register_post_accumulate_grad_hook"):  # torch >= 2.1
        p.register_post_accumulate_grad_hook(lambda _: fn())
        return None
    acc = p.expand_as(p).grad_fn.next_functions[0][0]  # p's AccumulateGrad node
    acc.register_hook(lambda *_: fn())
    return acc  # autograd holds it weakly: keep it, or the next one has no hook


accumulators = [after_accumulation(p, lambda i=i: reducer.mark_ready(i))
                for i, p in enumerate(params)]


def loss_of(x, y):
    return torch.nn.functional.mse_loss(model(x), y)


def train():
    """Returns how many steps' averaged gradients differ from torch's."""
    data = torch.Generator().manual_seed(1 + comm.rank)  # each rank its own batches
    failures = 0
    for step in range(STEPS):
        x, y = torch.randn(8, 16, generator=data), torch.randn(8, 4, generator=data)

        # torch's reference: this rank's gradient (autograd.grad leaves .grad and the hooks
        # alone), every rank's gathered, then averaged here. Before the first mark_ready:
        # the reducer's iteration owns the communicator until finalize.
        grads = torch.autograd.grad(loss_of(x, y), params)
        local = torch.cat([g.reshape(-1) for g in grads])
        every = torch.empty(comm.size * local.numel())
        comm.allgather(local, every)
        expected = every.view(comm.size, -1).double().mean(0)

        for i, p in enumerate(params):
            p.grad = reducer.grad_view(i)  # ask every step: a rebuild moves the views
            p.grad.zero_()
        loss = loss_of(x, y)
        loss.backward()  # the hooks mark every gradient ready
        reducer.finalize()

        got = torch.cat([p.grad.reshape(-1) for p in params]).double()
        err, scale = (got - expected).abs().max().item(), expected.abs().max().item()
        ok = err <= 1e-6 * scale  # float32: a few roundings of the sum
        failures += not ok
        mean_loss = loss.detach().reshape(1)
        comm.allreduce(mean_loss, mean_loss, shardcomm.AVG)
        print("step %d: loss %.5f (mean over ranks), averaged gradients (%d elements) "
              "differ from torch's by %.3g of %.3g%s"
              % (step, mean_loss.item(), got.numel(), err, scale,
                 "" if ok else ": MISMATCH"), flush=True)
        opt.step()
    return failures


try:
    failures = train()
except BaseException:
    # Exit at once: a backward that raised leaves its graph to be freed at exit, after
    # Python has finalized, and torch 1.13 hangs there releasing the views it holds.
    traceback.print_exc()
    sys.stderr.flush()
    os._exit(1)
for p in params:
    p.grad = None  # the views die with the reducer
reducer.destroy()
comm.destroy()
if failures:
    print("FAIL: %d of %d steps' averaged gradients differ from torch's"
          % (failures, STEPS))
    sys.exit(1)
print("OK")
