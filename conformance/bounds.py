"""Bounded waits: every wait the suite does ends, with `HarnessError` when it runs out.

`bounded` runs a blocking sender call in a thread so that an implementation that
ignores its timeout fails the test instead of hanging the suite; the worker pool
raises the same `HarnessError` when a worker does not answer in time. Both are
failures about time (verdict.TooSlow): re-checked at a larger timescale first.
"""

from __future__ import annotations

import threading
import time

from .verdict import HarnessError

__all__ = ["HarnessError", "bounded"]


def bounded(fn, *args, limit: float, what: str = "call", **kwargs):
    """Run a sender call in a thread; fail (not hang) if it has not returned after `limit` s."""
    box: dict = {}

    def run():
        try:
            box["value"] = fn(*args, **kwargs)
        except BaseException as e:  # noqa: BLE001
            box["error"] = e

    t = threading.Thread(target=run, name="conformance-bounded", daemon=True)
    t0 = time.monotonic()
    t.start()
    t.join(limit)
    if t.is_alive():
        raise HarnessError(f"{what} did not return within {limit:.1f} s, the bound the suite allows it here")
    box["elapsed"] = time.monotonic() - t0
    if "error" in box:
        raise box["error"]
    return box["value"]
