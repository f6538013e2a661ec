"""Where a send of an LLM-shaped model spends its time on a GPU: p50 of sends, then cProfile's top rows.

One sender and one in-process zero-copy receiver on cuda:0 (python tests/gpu/send_profile.py [moe|llm] [params]).
Run by hand on a GPU machine; it prints, it asserts nothing.
"""

from __future__ import annotations

import cProfile
import pstats
import statistics
import sys
import threading
import time

import torch

import weightsync as ws
from weightsync.bench.cases import llm_weights


def connected(weights) -> tuple[ws.Sender, ws.Receiver]:
    """A sender of `weights` and one zero-copy receiver in this process, connected."""
    sender = ws.Sender(weights, 1)
    receiver = ws.Receiver(sender.handle(0), zero_copy=True)
    t = threading.Thread(target=receiver.connect, args=(60,))
    t.start()
    sender.connect(60)
    t.join(60)
    return sender, receiver


def main() -> None:
    layout = sys.argv[1] if len(sys.argv) > 1 else "moe"
    params = int(float(sys.argv[2])) if len(sys.argv) > 2 else 100_000_000
    weights = llm_weights(params, layout, "cuda")
    sender, receiver = connected(weights)
    tensors = list(weights.values())
    times = []
    for i in range(60):
        torch._foreach_add_(tensors, 1.0)  # an optimizer step: every tensor changed in place
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        sender.send(timeout=30)
        if i >= 10:
            times.append(time.perf_counter() - t0)
    print(f"{layout} {params:.0e} params, {len(tensors)} tensors: send p50 {statistics.median(times) * 1e3:.3f} ms")
    views = [torch.empty_like(x) for x in tensors]
    t0 = time.perf_counter()
    for _ in range(20):
        torch._foreach_copy_(views, tensors)
        torch.cuda.synchronize()
    print(f"torch._foreach_copy_ of the same tensors: {(time.perf_counter() - t0) / 20 * 1e3:.3f} ms")
    t0 = time.perf_counter()
    for _ in range(20):
        sender._publisher.checker.ordered(weights)
    print(f"the check alone: {(time.perf_counter() - t0) / 20 * 1e3:.3f} ms")
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(30):
        sender.send(timeout=30)
    prof.disable()
    pstats.Stats(prof).sort_stats("tottime").print_stats(18)
    receiver.close()
    sender.close()


if __name__ == "__main__":
    main()
