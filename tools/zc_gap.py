"""The 1e7-parameter zero-copy gap (docs/benchmark.md, "The targets this run misses"), piece by piece.

One copy of 40 MB into a `torch.empty` buffer, rotating over six, and into a memfd mapping
(what a slot is); the Python of one notification (a Receive and an Ack encoded and decoded)
timed warm and right after a copy of 1, 4, 16 and 40 MB, the copy a send makes (a copy larger
than the last-level cache leaves the interpreter's own code and data to be read from memory
again); the floor measured as one sequence, a copy and then a pipe round trip to 1 and 4
workers, against the sum of the two measured apart (the benchmark's floor); then the send p50
to 1 and 4 zero-copy receivers, with the default slots and with 2 and 3. Run by hand
(python tools/zc_gap.py); it prints, it asserts nothing.
"""

from __future__ import annotations

import mmap
import os
import statistics
import time

import torch
import torch.multiprocessing as mp

import weightsync as ws
from weightsync import wire
from weightsync.messages import Ack, Receive

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


def echo(conn) -> None:
    while (msg := conn.recv()) is not None:
        conn.send(msg)


def copy_then_pipe(n: int) -> tuple[float, float, float]:
    """p50 ms of the copy, of a pipe round trip to `n` workers, and of the two in one sequence."""
    ctx = mp.get_context("spawn")
    pairs = [ctx.Pipe() for _ in range(n)]
    procs = [ctx.Process(target=echo, args=(theirs,)) for _, theirs in pairs]
    for p in procs:
        p.start()
    ours = [c for c, _ in pairs]

    def round_trip() -> None:
        for c in ours:
            c.send(1)
        for c in ours:
            c.recv()

    src = torch.randn(PARAMS)
    dst = torch.empty_like(src)
    for _ in range(20):
        dst.copy_(src)
        round_trip()
    try:
        return (p50_ms(lambda: dst.copy_(src), 150), p50_ms(round_trip, 150),
                p50_ms(lambda: (dst.copy_(src), round_trip()), 150))
    finally:
        for c in ours:
            c.send(None)
        for p in procs:
            p.join(30)


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


def notification() -> None:
    """The codec work of one send's two frames, as each side does it."""
    for msg, kind in ((Receive(7, 1, ()), Receive), (Ack(0, 7, "ok", ""), Ack)):
        wire.decode(wire.payload(msg), (kind,))


def after_copy_us(megabytes: int, reps: int = 300) -> tuple[float, float]:
    """p50 µs of notification() right after a copy of `megabytes`, and with nothing before it."""
    src = torch.randn(megabytes * 2**20 // 4)
    dst = torch.empty_like(src)
    cold, warm = [], []
    for _ in range(reps):
        dst.copy_(src)
        t0 = time.perf_counter()
        notification()
        cold.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        notification()
        warm.append(time.perf_counter() - t0)
    return statistics.median(cold) * 1e6, statistics.median(warm) * 1e6


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
    for mb in (1, 4, 16, 40):
        cold, warm = after_copy_us(mb)
        print(f"one notification's codec after a {mb:2d} MB copy {cold:6.1f} us (right after it again: {warm:.1f} us)")
    for n in (1, 4):
        copy, pipe, both = copy_then_pipe(n)
        print(f"{n} workers: copy {copy:.3f} + pipe {pipe:.3f} = {copy + pipe:.3f} ms; "
              f"copy then pipe {both:.3f} ms", flush=True)
    for n, slots in ((1, None), (4, None), (4, 2), (4, 3)):
        print(f"{n} zero-copy receivers, max_slots={slots}: send p50 {send_p50(n, slots):.3f} ms", flush=True)


if __name__ == "__main__":
    main()
