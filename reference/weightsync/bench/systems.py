"""The weightsync variants under test, and the names of every system a run can hold.

A variant is a receiver mode and whether receivers read the sender's slot in place. This
module measures one variant through the public binding only (`weightsync.Sender` here,
`weightsync.Receiver` in the pool's workers), so the benchmark sees what a user sees, and
counts the descriptors the sender holds while it does.
"""

from __future__ import annotations

import torch

from .. import CAPABILITIES, Sender, pack
from .cases import Case, fd_count, timed
from .pool import TIMEOUT, Pool

VARIANTS = {  # system name -> (mode, zero_copy, packed: the trainer's weights re-homed by weightsync.pack)
    "weightsync push zero-copy": ("push", True, False),
    "weightsync push": ("push", False, False),
    "weightsync pull zero-copy": ("pull", True, False),
    "weightsync pull": ("pull", False, False),
    "weightsync push zero-copy packed": ("push", True, True),
}
FLOORS = ["copy", "tensor copy", "pipe", "copy then pipe"]  # what any consistent update costs (baselines.py)
# Every system in the report's column order: the floors, the variants, the baselines.
COLUMNS = [*FLOORS, *VARIANTS, "queue", "torchrl"]


def cuda_supported() -> bool:
    """CUDA cases run when the binding names the capability and a device is present (API-5)."""
    return "cuda" in CAPABILITIES and torch.cuda.is_available()


def best_weightsync(idx: dict, key: tuple) -> Case | None:
    """The fastest variant measured for `key` (device, params, layout, receivers)."""
    found = [idx[(*key, s)] for s in VARIANTS if (*key, s) in idx]
    return min(found, key=lambda c: c.p50) if found else None


def bench_weightsync(pool: Pool, weights, n: int, mode: str, zero_copy: bool, budget, lo, hi, packed=False,
                     dtypes=None):
    """Times of `sender.send()` to `n` pool workers, and the descriptors the sender added.

    With `packed`, a copy of the weights re-homed into one buffer (API-8) is what is sent;
    with `dtypes`, the workers' slots are of that dtype (LAYOUT-3).
    """
    before = fd_count()
    if packed:
        weights = pack({k: v.clone() for k, v in weights.items()})
    sender = Sender(weights, n, ctx=pool.ctx, dtypes=dtypes)
    try:
        pool.command(n, lambda i: ("weightsync", sender.handle(i), mode, zero_copy))
        sender.connect(timeout=TIMEOUT)
        pool.expect(n, "connected")
        times = timed(lambda: sender.send(timeout=TIMEOUT), budget, lo, hi)
        fds = fd_count() - before
        version = sender.version
    except BaseException:
        sender.close()
        pool.drain(n)  # the workers end this case (Stop reaches them) before the next one starts
        raise
    sender.close()
    finals = pool.expect(n, "done")
    if finals != [version] * n:
        raise RuntimeError(f"receivers ended at versions {finals}, the sender at {version}")
    return times, fds
