"""What weightsync is measured against: four floors and two baselines.

The floors are what any consistent update costs: `copy` (one copy of the bytes, which a
sender that lets training go on must make), `tensor copy` (the same copy made from the
trainer's own tensors, each one an array torch copies on its own), `pipe` (a small
message to each worker and the answers back) and `copy then pipe` (the two in one timed
sequence, as a send makes them: a copy larger than the last-level cache slows the Python
that follows it in every process, which the two timed apart do not show). The baselines are other ways to do the job: `queue`, the naive
state_dict through one torch.multiprocessing Queue per worker, and `torchrl`, TorchRL's
SharedMemWeightSyncScheme, whose modules are imported only when a run measures it (they
are not a dependency; `torchrl_version()` says whether they import).
"""

from __future__ import annotations

import torch

from .cases import sync, timed
from .pool import TIMEOUT, Pool

# torch's Queue passes one file descriptor per tensor; at 10,000 tensors the processes run out
# of descriptors (EMFILE) and the case only ends at the ack timeout, minutes later.
QUEUE_MAX_TENSORS = 1000


def copier(weights, device):
    """A call that makes one copy of the same bytes, as one tensor of the weights' dtype, on the weights' device:
    the `copy` floor timed alone, and the copy of `copy then pipe`."""
    first = next(iter(weights.values()))
    numel = sum(t.numel() * t.element_size() for t in weights.values()) // first.element_size()
    src = torch.empty(numel, dtype=first.dtype, device=device).uniform_()
    dst = torch.zeros_like(src)  # touched now, so page faults are not timed

    def copy():
        dst.copy_(src)
        sync(device)

    return copy


def bench_tensor_copy(weights, budget, lo, hi) -> list[float]:
    """The weights' own tensors copied into one buffer by torch's batched copy (`_foreach_copy_`).

    The floor of a send that copies the trainer's tensors themselves: what torch takes to
    copy that many arrays, each a call of its own inside one batched call, on their device.
    """
    device = next(iter(weights.values())).device
    buffer = torch.zeros(sum(t.numel() * t.element_size() for t in weights.values()), dtype=torch.uint8,
                         device=device)
    views, at = [], 0
    for t in weights.values():
        n = t.numel() * t.element_size()
        views.append(buffer[at:at + n].view(t.dtype).view(t.shape))
        at += n
    sources = list(weights.values())

    def copy():
        torch._foreach_copy_(views, sources)
        sync(str(device))

    return timed(copy, budget, lo, hi)


def bench_pipe(pool: Pool, n: int, budget, lo, hi, before=None) -> list[float]:
    """A one-byte round trip over a Pipe to each of `n` workers; with `before`, that call and then the
    round trip, timed as one (`copy then pipe`)."""
    pairs = [pool.ctx.Pipe() for _ in range(n)]
    pool.command(n, lambda i: ("pipe", pairs[i][1]))
    for _, theirs in pairs:
        theirs.close()
    ours = [a for a, _ in pairs]

    def round_trip():
        if before is not None:
            before()
        for c in ours:
            c.send(1)
        for c in ours:
            c.recv()

    try:
        for i, c in enumerate(ours):  # a bounded first round: a worker still in another case fails the case
            c.send(1)
            if not c.poll(TIMEOUT):
                raise TimeoutError(f"worker {i} did not echo within {TIMEOUT:.0f} s")
            c.recv()
        return timed(round_trip, budget, lo, hi)
    finally:
        for c in ours:
            c.send(None)
        pool.expect(n, "done")
        for c in ours:
            c.close()


def bench_queue(pool: Pool, weights, device, n: int, budget, lo, hi) -> list[float]:
    """A cloned state_dict put into each worker's queue; each worker copies it and acks."""
    shapes = [(tuple(t.shape), t.dtype) for t in weights.values()]
    pool.command(n, lambda i: ("queue", shapes, device))
    version = [0]

    def send():
        version[0] += 1
        state = {k: v.clone() for k, v in weights.items()}  # a snapshot the trainer cannot change
        for q in pool.data_q[:n]:
            q.put((version[0], state))
        for _ in range(n):
            pool.ack_q.get(timeout=TIMEOUT)

    try:
        return timed(send, budget, lo, hi)
    finally:
        for q in pool.data_q[:n]:
            q.put(None)
        pool.expect(n, "done")


def torchrl_version() -> str | None:
    try:
        import torchrl
    except Exception:  # noqa: BLE001 - any import failure means "not available"
        return None
    return getattr(torchrl, "__version__", "unknown")


def _torchrl_once(ctl, scheme, index: int, shapes, stop) -> None:
    """A TorchRL worker: a module with the same parameter names (on the worker's device), synchronised by `scheme`."""
    torch.set_num_threads(1)
    try:
        model = torch.nn.Module()
        for i, (shape, dtype, device) in enumerate(shapes):
            model.register_parameter(f"w{i:03d}", torch.nn.Parameter(torch.empty(shape, dtype=dtype, device=device),
                                                                     requires_grad=False))
        scheme.init_on_receiver(model_id="policy", model=model, worker_idx=index)
        scheme.connect(worker_idx=index)
        ctl.send(("connected", index))
        stop.wait()
        ctl.send(("done", None))
    except Exception as e:  # noqa: BLE001 - reported to the parent, which names the case
        ctl.send(("error", f"{type(e).__name__}: {e}"))


def bench_torchrl(ctx, weights, n: int, budget, lo, hi) -> list[float]:
    """TorchRL's scheme, in fresh processes: its queues reach a worker only when it is started.

    On a GPU the trainer's weights, the scheme's buffer (`devices=`) and each worker's module live on
    the weights' device, and a send is timed until the trainer's device has finished its copies, as
    weightsync's CUDA sends are (`sync`)."""
    from tensordict import TensorDict
    from torchrl.weight_update import SharedMemWeightSyncScheme

    # The trainer's own weights, distinct from the shared buffer, under the worker module's names
    # (an LLM's dotted names would nest in a TensorDict).
    trainer = TensorDict({f"w{i:03d}": t for i, t in enumerate(weights.values())})
    scheme = SharedMemWeightSyncScheme()
    device = next(iter(weights.values())).device
    scheme.init_on_sender(model_id="policy", weights=trainer.clone(), devices=[device] * n, ctx=ctx)
    shapes = [(tuple(t.shape), t.dtype, str(device)) for t in weights.values()]
    stop = ctx.Event()
    pipes = [ctx.Pipe() for _ in range(n)]
    procs = [
        ctx.Process(target=_torchrl_once, args=(theirs, scheme, i, shapes, stop), daemon=True)
        for i, (_, theirs) in enumerate(pipes)
    ]
    for p in procs:
        p.start()
    for _, theirs in pipes:
        theirs.close()
    try:
        scheme.connect()
        for i, (ours, _) in enumerate(pipes):
            if not ours.poll(TIMEOUT):
                raise TimeoutError(f"torchrl worker {i} did not connect")
            kind, value = ours.recv()
            if kind == "error":
                raise RuntimeError(f"torchrl worker {i}: {value}")
        def send() -> None:
            scheme.send(weights=trainer)
            sync(device.type)

        return timed(send, budget, lo, hi)
    finally:
        stop.set()
        try:
            scheme.shutdown()
        finally:
            for p in procs:
                p.join(timeout=30)
                if p.is_alive():
                    p.kill()
                    p.join(timeout=5)
            for ours, _ in pipes:
                ours.close()
