"""`python -m weightsync demo`: a trainer pushes a stream of updates to worker processes.

Each worker runs its copy of the model and reports a digest of every version
it sees; the trainer checks each digest against the bytes it published.
"""

from __future__ import annotations

import argparse
import hashlib
import math
import os
import signal
import statistics
import sys
import time
from multiprocessing import connection

import torch
import torch.multiprocessing as mp
from torch import nn

from .clock import Deadline
from .errors import WeightSyncError
from .receiver import Receiver
from .sender import Sender

IN, OUT = 32, 8


def make_model(params: int) -> nn.Module:
    """An MLP with BatchNorm of about `params` parameters (hidden width from h^2 + 43h = params)."""
    h = max(4, int((-43 + math.sqrt(43 * 43 + 4 * params)) / 2))
    return nn.Sequential(nn.Linear(IN, h), nn.BatchNorm1d(h), nn.ReLU(), nn.Linear(h, h), nn.ReLU(), nn.Linear(h, OUT))


def digest(weights) -> str:
    h = hashlib.blake2b(digest_size=16)
    for name in sorted(weights):
        t = weights[name].detach().contiguous().reshape(-1)
        h.update(name.encode())
        h.update(t.view(torch.uint8).numpy().tobytes())
    return h.hexdigest()


def worker(handle, params: int, mode: str, results) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the trainer stops us with Stop, also on Ctrl-C
    torch.set_num_threads(1)
    model = make_model(params).eval()
    batch = torch.randn(16, IN)
    with Receiver(handle, model, mode=mode) as receiver:
        receiver.connect(timeout=120)
        last = None
        while True:
            stopped = receiver.stopped  # read first: one more look after Stop sees the final version
            if mode == "pull" and not stopped:
                receiver.poll(timeout=0.01)
            snapshot = None
            with receiver.reading():
                version = receiver.version
                if version != last:
                    snapshot = {k: v.detach().clone() for k, v in model.state_dict().items()}
                with torch.no_grad():
                    model(batch)
            if snapshot is not None:  # hashed outside reading(), so updates are not held back
                results.send(("seen", handle.receiver, version, digest(snapshot)))
                last = version
            if stopped:
                break
            if mode == "push":
                time.sleep(0.001)  # a rollout step would go here
        results.send(("done", handle.receiver, receiver.version, None))
    results.close()


def _interrupt(signum, frame):
    raise KeyboardInterrupt


def run(args: argparse.Namespace) -> int:
    signal.signal(signal.SIGTERM, _interrupt)  # stop as cleanly on SIGTERM as on Ctrl-C
    # Leave a core per worker: intra-op threads that outnumber free cores stall each
    # other for a whole scheduler slice, which would show up as send latency.
    torch.set_num_threads(max(1, (os.cpu_count() or 1) - args.workers))
    torch.manual_seed(0)
    ctx = mp.get_context("spawn")
    model = make_model(int(args.params))
    nparams = sum(p.numel() for p in model.parameters())
    nbytes = sum(t.numel() * t.element_size() for t in model.state_dict().values())
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    sender = Sender(model, args.workers, ctx=ctx)
    pipes = [ctx.Pipe(duplex=False) for _ in range(args.workers)]  # pipes, not a Queue: no helper process
    procs = [
        ctx.Process(target=worker, args=(sender.handle(i), int(args.params), args.mode, w), daemon=True)
        for i, (_, w) in enumerate(pipes)
    ]
    published = {0: digest(model.state_dict())}
    latencies: list[float] = []
    interrupted = False
    try:
        for p, (_, w) in zip(procs, pipes):
            p.start()
            w.close()
        print(f"demo: {nparams:,} parameters ({nbytes / 1e6:.2f} MB), {args.workers} workers, {args.mode} mode")
        t0 = time.perf_counter()
        sender.connect(timeout=120)
        print(f"connected in {time.perf_counter() - t0:.2f} s")
        for _ in range(args.updates):
            x = torch.randn(64, IN)
            loss = (model(x) - x[:, :OUT]).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            # Recorded before the send: an interrupt may land after the version is
            # out but before send() returns, and workers will report it.
            published[sender.version + 1] = digest(model.state_dict())
            t = time.perf_counter()
            version = sender.send(timeout=30)
            latencies.append(time.perf_counter() - t)
            print(f"update {version:4d}/{args.updates}  loss {loss.item():8.4f}  send {latencies[-1] * 1e3:8.3f} ms")
    except KeyboardInterrupt:
        interrupted = True
        print("\ninterrupted: stopping workers", file=sys.stderr)
    except WeightSyncError as e:
        print(f"sync failed: {e}", file=sys.stderr)
        interrupted = True
    finally:
        sender.close()
    checks, failures, finals = _collect([r for r, _ in pipes], published)
    for p in procs:
        p.join(timeout=30)
        if p.is_alive():
            p.kill()
            p.join(timeout=5)
    if interrupted:
        return 130 if not failures else 1
    ok = not failures and all(finals.get(i) == sender.version for i in range(args.workers))
    lat = sorted(latencies)
    p50 = statistics.median(lat) if lat else float("nan")
    p90 = lat[min(len(lat) - 1, int(0.9 * len(lat)))] if lat else float("nan")
    print("summary:")
    print(f"  updates        {len(latencies)}")
    print(f"  send latency   p50 {p50 * 1e3:.3f} ms   p90 {p90 * 1e3:.3f} ms")
    print(f"  throughput     {nbytes * args.workers / p50 / 1e9:.2f} GB/s delivered ({nbytes / 1e6:.2f} MB x {args.workers} workers per send)")
    print(f"  checks passed  {checks - len(failures)}/{checks}")
    print(f"  final versions {[finals.get(i) for i in range(args.workers)]} (sender at {sender.version})")
    for f in failures:
        print(f"  FAILED: {f}", file=sys.stderr)
    print("  result         " + ("ok" if ok else "FAILED"))
    return 0 if ok else 1


def _collect(readers, published):
    """Reads worker reports until every worker's pipe ends, each wait bounded."""
    checks, failures, finals = 0, [], {}
    open_readers = list(readers)
    deadline = Deadline(60)
    while open_readers and not deadline.expired():
        for r in connection.wait(open_readers, timeout=1.0):
            try:
                kind, i, version, value = r.recv()
            except EOFError:
                open_readers.remove(r)
                r.close()
                continue
            if kind == "seen":
                checks += 1
                if published.get(version) != value:
                    failures.append(f"worker {i} holds version {version} with a digest that differs from the one published")
            else:
                finals[i] = version
    return checks, failures, finals


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--params", type=float, default=1e6, help="model size in parameters (default 1e6)")
    parser.add_argument("--workers", type=int, default=3, help="worker processes (default 3)")
    parser.add_argument("--updates", type=int, default=20, help="updates to push (default 20)")
    parser.add_argument("--mode", choices=["push", "pull"], default="push", help="receiver mode (default push)")
