"""The 1e7-parameter zero-copy gap (docs/benchmark.md, "The targets this run misses"), piece by piece.

One copy of 40 MB into a `torch.empty` buffer, rotating over six, and into a memfd mapping
(what a slot is); then the send p50 to 1 and 4 zero-copy receivers, with the default slots
and with 2 and 3. Run by hand (python tools/zc_gap.py); it prints, it asserts nothing.
"""

from __future__ import annotations

import mmap
import os
import statistics
import time

import torch
import torch.multiprocessing as mp

import weightsync as ws

PARAMS = 10_000_000


def p50_ms(fn, reps: int) -> float:
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3


def worker(handle) -> None:
    torch.set_num_threads(1)
    with ws.Receiver(handle, zero_copy=True) as r:
        r.connect(60)
        while not r.stopped:
            time.sleep(0.05)


def send_p50(n: int, max_slots: int | None) -> float:
    ctx = mp.get_context("spawn")
    weights = {f"w{i}": torch.randn(PARAMS // 6) for i in range(6)}
    sender = ws.Sender(weights, n, ctx=ctx, max_slots=max_slots)
    procs = [ctx.Process(target=worker, args=(sender.handle(i),)) for i in range(n)]
    for p in procs:
        p.start()
    sender.connect(60)
    for _ in range(20):
        sender.send(timeout=10)
    ms = p50_ms(lambda: sender.send(timeout=10), 150)
    sender.close()
    for p in procs:
        p.join(30)
    return ms


def main() -> None:
    torch.set_num_threads(1)
    src = torch.randn(PARAMS)
    bufs = [torch.empty(PARAMS) for _ in range(6)]
    for b in bufs:
        b.copy_(src)
    print(f"copy into one buffer          {p50_ms(lambda: bufs[0].copy_(src), 100):.3f} ms")
    turn = iter(range(10**9))
    print(f"copy rotating over 6 buffers  {p50_ms(lambda: bufs[next(turn) % 6].copy_(src), 100):.3f} ms")
    fd = os.memfd_create("zc-gap")
    os.ftruncate(fd, PARAMS * 4)
    mapped = torch.frombuffer(mmap.mmap(fd, PARAMS * 4), dtype=torch.float32)
    mapped.copy_(src)
    print(f"copy into a memfd mapping     {p50_ms(lambda: mapped.copy_(src), 100):.3f} ms")
    for n, slots in ((1, None), (4, None), (4, 2), (4, 3)):
        print(f"{n} zero-copy receivers, max_slots={slots}: send p50 {send_p50(n, slots):.3f} ms", flush=True)


if __name__ == "__main__":
    main()
