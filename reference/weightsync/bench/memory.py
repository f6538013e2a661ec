"""Shared memory the slots take, per worker count: what SLOT-3's bound lets a sender reserve.

Pull receivers in this process take every version and never poll, so each send pins a
slot until no free one is left: the slots then held are the most the sender reserves for
that many workers. For a model above 1 GiB the default bound is computed, not allocated.
"""

from __future__ import annotations

import threading

import torch

from ..slots import slot_bound

#: The model of the measured rows: 1e7 fp32 parameters (40 MB).
PARAMS = 10_000_000
LARGE = 4 << 30  # a 4 GiB model, for the computed rows


def _reserved(n: int) -> tuple[int, int]:
    """(slots held, their bytes) once n pull receivers that never poll pinned all they can."""
    import weightsync

    with weightsync.Sender({"w": torch.zeros(PARAMS)}, n) as sender:
        receivers = [weightsync.Receiver(sender.handle(i), mode="pull") for i in range(n)]
        threads = [threading.Thread(target=r.connect, args=(60,)) for r in receivers]
        for t in threads:
            t.start()
        sender.connect(timeout=60)
        for t in threads:
            t.join()
        try:
            for _ in range(n + 3):  # more sends than any bound lets through
                sender.send_async(timeout=0.05)
        except weightsync.SyncTimeoutError:
            pass  # every slot is pinned: the bound is reached
        slots = [s for g in sender._pool.groups.values() for s in g.slots]
        held = (len(slots), sum(s.nbytes for s in slots))
        for r in receivers:
            r.close()
    return held


def measure(workers: list[int]) -> dict:
    """{"model_bytes", "rows": {N: [slots, bytes]}, "large": {"model_bytes", "copies": {N: slots}}}."""
    rows = {n: list(_reserved(n)) for n in workers}
    large = {n: slot_bound(LARGE, n, None, None) for n in workers}
    return {"model_bytes": PARAMS * 4, "rows": rows, "large": {"model_bytes": LARGE, "copies": large}}


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
    return lines
