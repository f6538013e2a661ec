"""Shared memory the slots take, per worker count, and what a lower bound costs a trainer that runs ahead (SLOT-3).

Pull receivers in this process take every version and never poll, so each send pins a
slot until no free one is left: the slots then held are the most the sender reserves for
that many workers. For a model above 1 GiB the default bound is computed, not allocated.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from typing import Any

import torch

from ..slots import slot_bound

#: The model of the measured rows: 1e7 fp32 parameters (40 MB).
PARAMS = 10_000_000
LARGE = 4 << 30  # a 4 GiB model, for the computed rows


@contextlib.contextmanager
def _pull_workers(params: int, n: int, max_slots: int | None = None) -> Iterator[tuple[Any, list[Any]]]:
    """A sender of `params` fp32 parameters and n pull receivers in this process, connected; all closed after.

    The sender closes first, as a trainer ends its workers (Stop, LIFE-4): receivers that closed
    first would be receivers gone, each a warning from the sender.
    """
    import weightsync

    sender = weightsync.Sender({"w": torch.zeros(params)}, n, max_slots=max_slots)
    receivers: list[Any] = []
    try:
        receivers = [weightsync.Receiver(sender.handle(i), mode="pull") for i in range(n)]
        threads = [threading.Thread(target=r.connect, args=(60,)) for r in receivers]
        for t in threads:
            t.start()
        sender.connect(timeout=60)
        for t in threads:
            t.join(60)
        yield sender, receivers
    finally:
        sender.close()
        for r in receivers:
            r.close()


def _reserved(n: int) -> tuple[int, int]:
    """(slots held, their bytes) once n pull receivers that never poll pinned all they can."""
    import weightsync

    with _pull_workers(PARAMS, n) as (sender, _):
        try:
            for _ in range(n + 3):  # more sends than any bound lets through
                sender.send_async(timeout=0.05)
        except weightsync.SyncTimeoutError:
            pass  # every slot is pinned: the bound is reached
        slots = [s for g in sender._hub.pool.groups.values() for s in g.slots]
        return len(slots), sum(s.nbytes for s in slots)


#: At the bound: pull workers poll every POLL_EVERY seconds; the trainer publishes SENDS versions back to back.
POLL_EVERY, SENDS, AT_BOUND_PARAMS = 0.02, 40, 1_000_000


def _at_bound(n: int, max_slots: int | None) -> float:
    """Mean seconds of send_async() when the trainer publishes faster than n pull workers poll: each send
    waits for a free slot once the pending versions pin every one (SLOT-3). The mean, since the waits are
    a few long ones among many short, which a median hides."""
    with _pull_workers(AT_BOUND_PARAMS, n, max_slots) as (sender, receivers):
        stop = threading.Event()

        def poller(r) -> None:
            while not stop.wait(POLL_EVERY):
                r.poll(0)

        pollers = [threading.Thread(target=poller, args=(r,), daemon=True) for r in receivers]
        for t in pollers:
            t.start()
        times = []
        try:
            for _ in range(SENDS):
                t0 = time.perf_counter()
                sender.send_async(timeout=60)
                times.append(time.perf_counter() - t0)
        finally:
            stop.set()
            for t in pollers:
                t.join(5)
    return sum(times) / len(times)


def measure(workers: list[int]) -> dict:
    """{"model_bytes", "rows": {N: [slots, bytes]}, "large": {"model_bytes", "copies": {N: slots}},
    "at_bound": {N: {"3": mean s, "default": mean s}}}."""
    rows = {n: list(_reserved(n)) for n in workers}
    large = {n: slot_bound(LARGE, n, None, None) for n in workers}
    at_bound = {n: {"3": _at_bound(n, 3), "default": _at_bound(n, None)} for n in workers}
    return {"model_bytes": PARAMS * 4, "rows": rows, "large": {"model_bytes": LARGE, "copies": large},
            "at_bound": at_bound}


def markdown(memory: dict) -> list[str]:
    mb = memory["model_bytes"] / 1e6
    gib = memory["large"]["model_bytes"] / (1 << 30)
    lines = ["### Shared memory of the slots", "",
             f"A {mb:.0f} MB model (measured: pull workers that never poll pin every slot they can) and a "
             f"{gib:.0f} GiB one (the default bound, computed), per worker count:", "",
             f"| workers | slots held ({mb:.0f} MB model) | shared memory | copies ({gib:.0f} GiB model) |",
             "|---:|---:|---:|---:|"]
    for n, (slots, nbytes) in memory["rows"].items():
        lines.append(f"| {n} | {slots} | {nbytes / 1e6:.0f} MB | {memory['large']['copies'][n]} |")
    lines += ["", f"What fewer slots cost: a trainer that publishes {SENDS} versions back to back "
                  f"({AT_BOUND_PARAMS / 1e6:.0f}M parameters) to pull workers that poll every {POLL_EVERY * 1e3:.0f} ms "
                  "waits for a free slot once the unpolled versions pin all of them (SLOT-3); mean time of a send_async():", "",
              "| workers | 3 slots | default (N+2) |", "|---:|---:|---:|"]
    for n, row in memory["at_bound"].items():
        lines.append(f"| {n} | {row['3'] * 1e3:.2f} ms | {row['default'] * 1e3:.2f} ms |")
    return lines
