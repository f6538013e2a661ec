"""The network profile's cases: weightsync over TCP and gloo, next to a raw torch.distributed transfer.

The floor ("gloo send") is what the data plane itself costs: one two-rank gloo group per
receiver, the same bytes sent to every receiver and a one-number answer back from each,
timed from the first send to the last answer, exactly as weightsync's data plane moves a
version (NET-2) minus everything weightsync adds (frames, acks, slots). Both run in the
same pool of worker processes, over 127.0.0.1, in the same run.
"""

from __future__ import annotations

import datetime
import secrets
import threading
import time

import torch
import torch.distributed as dist

from .. import Sender
from .cases import timed
from .gloo import HOST, gloo_group
from .pool import TIMEOUT, Pool

SIZES = (1e6, 1e7, 1e8)
RECEIVERS = (1, 2, 4)
FLOOR = "gloo send"
VARIANTS = {"weightsync tcp push": ("push", False), "weightsync tcp push zero-copy": ("push", True)}
def bench_gloo(pool: Pool, nbytes: int, n: int, budget, lo, hi) -> list[float]:
    """Times of one raw transfer of `nbytes` to each of `n` workers, and their answers."""
    store = dist.TCPStore(HOST, 0, is_master=True, wait_for_workers=False, timeout=datetime.timedelta(seconds=TIMEOUT))
    prefixes = [secrets.token_hex(8) for _ in range(n)]
    pool.command(n, lambda i: ("gloo", store.port, prefixes[i], nbytes))
    groups: list = [None] * n

    def build(i):
        groups[i] = gloo_group(store, prefixes[i], 0)

    threads = [threading.Thread(target=build, args=(i,)) for i in range(n)]  # each blocks until its peer comes
    for t in threads:
        t.start()
    for t in threads:
        t.join(TIMEOUT)
    if any(g is None for g in groups):
        raise RuntimeError("the gloo groups were not built")
    buf, answers = torch.ones(nbytes, dtype=torch.uint8), [torch.zeros(1) for _ in range(n)]
    go = torch.ones(1, dtype=torch.int64)

    def once():
        for g in groups:
            g.send([go], 1, 0).wait()  # tells the worker a transfer follows; outside the timed span below
        t0 = time.perf_counter()
        works = [g.send([buf], 1, 0) for g in groups]
        for w in works:
            w.wait()
        for w in [g.recv([a], 1, 0) for g, a in zip(groups, answers)]:
            w.wait()
        return time.perf_counter() - t0

    try:
        times = timed(once, budget, lo, hi, measure_self=True)
    finally:
        go.zero_()
        for g in groups:
            g.send([go], 1, 0).wait()
        pool.expect(n, "done")
        groups.clear()  # the groups go with their last reference
    return times


def bench_tcp(pool: Pool, weights, n: int, mode: str, zero_copy: bool, budget, lo, hi):
    """Times of `sender.send()` over TCP and gloo to `n` pool workers that joined by URL."""
    sender = Sender(weights, n, listen=f"tcp://{HOST}:0")
    try:
        pool.command(n, lambda i: ("weightsync", sender.url(i), mode, zero_copy))
        sender.connect(timeout=TIMEOUT)
        pool.expect(n, "connected")
        times = timed(lambda: sender.send(timeout=TIMEOUT), budget, lo, hi)
        version = sender.version
    except BaseException:
        sender.close()
        pool.drain(n)
        raise
    sender.close()
    finals = pool.expect(n, "done")
    if finals != [version] * n:
        raise RuntimeError(f"receivers ended at versions {finals}, the sender at {version}")
    return times, None
