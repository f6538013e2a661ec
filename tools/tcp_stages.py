"""Where a one-receiver TCP send goes (docs/benchmark.md, "The targets this run misses").

A sender in this process and one zero-copy receiver joined by URL in a spawned process;
both stamp `time.perf_counter()` (one monotonic clock) at the slot copy, at the gloo
send and receive (posted, done), at the receiver's Inbound.expect and around its apply and
Ack. It prints the p50 of each step between consecutive stamps in the order they usually
fall, then the total, and then the benchmark's floor in the same run: a raw gloo transfer of
the same bytes to one worker and its answer. Run by hand: `python tools/tcp_stages.py [PARAMS] [SENDS]`
(defaults 1e7, 40); it asserts nothing.
"""

from __future__ import annotations

import statistics
import sys
import time

import torch
import torch.multiprocessing as mp

import weightsync as ws
from weightsync import applier, netplane, slots
from weightsync.bench.network import bench_gloo
from weightsync.bench.pool import Pool

now = time.perf_counter
STEPS = [("send()", "copy0"), ("copy0", "copy1"), ("copy1", "r.expect"), ("r.expect", "r.grecv0"),
         ("copy1", "gsend0"), ("r.grecv0", "r.grecv1"), ("gsend0", "gsend1"), ("r.grecv1", "r.apply0"),
         ("r.apply0", "r.acked"), ("r.acked", "return")]


class _Stamped:
    """A gloo group whose send and recv stamp when posted and when their wait() ends."""

    def __init__(self, group, log: list) -> None:
        self._group, self._log = group, log

    def __getattr__(self, name: str):
        return getattr(self._group, name)

    def _op(self, kind: str, *args):
        self._log.append((f"g{kind}0", now()))
        work, log = getattr(self._group, kind)(*args), self._log

        class Work:
            def wait(self):
                done = work.wait()
                log.append((f"g{kind}1", now()))
                return done

        return Work()

    def send(self, *args):
        return self._op("send", *args)

    def recv(self, *args):
        return self._op("recv", *args)


def _stamp_groups(log: list) -> None:
    make = netplane._group
    netplane._group = lambda *a, **k: _Stamped(make(*a, **k), log)


def _stamp(cls, name: str, before: str, after: str | None, log: list) -> None:
    original = getattr(cls, name)

    def stamped(self, *args):
        log.append((before, now()))
        try:
            return original(self, *args)
        finally:
            if after:
                log.append((after, now()))

    setattr(cls, name, stamped)


def _receiver(url: str, out) -> None:
    torch.set_num_threads(1)
    log: list = []
    _stamp_groups(log)
    _stamp(applier.Applier, "_apply_and_ack", "apply0", "acked", log)
    _stamp(netplane.Inbound, "expect", "expect", None, log)
    with ws.Receiver(url, zero_copy=True) as r:
        r.connect(60)
        while not r.stopped:
            time.sleep(0.01)
    out.put(log)


def main() -> None:
    params = int(float(sys.argv[1])) if len(sys.argv) > 1 else 10_000_000
    sends = int(sys.argv[2]) if len(sys.argv) > 2 else 40
    torch.set_num_threads(1)
    log: list = []
    _stamp_groups(log)
    _stamp(slots.CpuSlot, "write", "copy0", "copy1", log)
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    sender = ws.Sender({f"w{i}": torch.randn(params // 6) for i in range(6)}, 1, listen="tcp://127.0.0.1:0")
    proc = ctx.Process(target=_receiver, args=(sender.url(0), out), daemon=True)
    proc.start()
    rows = []
    try:
        sender.connect(60)
        for _ in range(sends):
            log.clear()
            t0 = now()
            sender.send(timeout=60)
            rows.append((t0, now(), dict(log)))
    finally:
        sender.close()
    theirs = out.get(timeout=60)
    proc.join(30)
    steps: dict[tuple[str, str], list[float]] = {s: [] for s in STEPS}
    for t0, t1, ours in rows[sends // 5:]:
        marks = {"send()": t0, "return": t1, **ours}
        for name, t in theirs:
            if t0 <= t <= t1:
                marks.setdefault("r." + name, t)
        for a, b in STEPS:
            if a in marks and b in marks:
                steps[(a, b)].append(marks[b] - marks[a])
    print(f"{params:.0e} parameters in 6 tensors, one zero-copy TCP receiver, p50 of {sends - sends // 5} sends:")
    for (a, b), v in steps.items():
        if v:
            print(f"  {a:>9} -> {b:<9} {statistics.median(v) * 1e3:8.3f} ms")
    print(f"  total               {statistics.median(t1 - t0 for t0, t1, _ in rows[sends // 5:]) * 1e3:8.3f} ms")
    pool = Pool(1, ctx)
    try:
        gloo = bench_gloo(pool, params // 6 * 6 * 4, 1, 5.0, sends // 2, sends)
    finally:
        pool.close()
    print(f"  raw gloo transfer   {statistics.median(gloo) * 1e3:8.3f} ms (the floor)")


if __name__ == "__main__":
    main()
