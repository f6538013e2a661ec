"""What one benchmark case is and how it is timed.

This module owns the Case record (one system sending one model to N receivers), the
grid of sizes, receiver counts and layouts that cases are drawn from, the construction
of a model's weights, and the timing loop every system shares, so that floors,
baselines and weightsync variants are measured the same way.
"""

from __future__ import annotations

import math
import os
import statistics
import time
from dataclasses import dataclass

import torch

SIZES = (1e3, 1e5, 1e6, 1e7, 1e8)
RECEIVERS = (1, 2, 4, 8)
LAYOUTS = {"few": 6, "many": 500, "huge": 10000}  # tensors per model
# A layout named here runs only at these sizes: 10,000 tensors need enough parameters to be
# more than a handful each, and each larger size would lengthen the full run.
LAYOUT_SIZES = {"huge": (1e6,)}
#: How long any step of a benchmark may wait on a worker before the run fails.
TIMEOUT = 120.0


@dataclass
class Case:
    device: str
    params: int
    layout: str
    tensors: int
    nbytes: int
    receivers: int
    system: str
    p50: float = math.nan  # seconds
    p90: float = math.nan
    reps: int = 0
    fds: int | None = None  # descriptors the sender holds (weightsync only)
    note: str = ""

    @property
    def throughput(self) -> float:
        """Bytes delivered per second: every receiver gets the whole model (copy and pipe: n/a)."""
        if self.system in ("copy", "pipe") or not self.p50 > 0:
            return math.nan
        return self.nbytes * self.receivers / self.p50


def lookup(cases: list[Case]) -> dict[tuple, Case]:
    """The cases that produced a figure, by (device, params, layout, receivers, system)."""
    return {(c.device, c.params, c.layout, c.receivers, c.system): c for c in cases if c.p50 == c.p50}


def runs_at(layout: str, params: float) -> bool:
    return params in LAYOUT_SIZES.get(layout, (params,))


def make_weights(params: int, tensors: int, device: str = "cpu") -> dict[str, torch.Tensor]:
    """`params` float32 parameters in `tensors` tensors of nearly equal size.

    Sizes differ by at most one element and add up to `params` exactly, so a layout changes
    only the number of tensors, never the bytes. With fewer parameters than tensors there
    are fewer tensors (one element each) rather than empty ones.
    """
    tensors = min(tensors, params)
    base, extra = divmod(params, tensors)
    return {f"w{i:03d}": torch.empty(base + (i < extra), device=device).uniform_() for i in range(tensors)}


def sync(device: str) -> None:
    if device != "cpu":
        torch.cuda.synchronize()


def fd_count() -> int:
    return len(os.listdir("/proc/self/fd"))


def timed(fn, budget: float, min_reps: int, max_reps: int, measure_self: bool = False) -> list[float]:
    """Warm-up calls, then timed calls until `budget` seconds pass (within the bounds on their number).

    Two warm-up calls, or one when it alone took a third of the budget (a slow baseline).
    With `measure_self`, `fn` returns the seconds to count (it leaves its own setup out).
    """
    t = time.perf_counter()
    fn()
    if time.perf_counter() - t < budget / 3:
        fn()
    out: list[float] = []
    start = time.perf_counter()
    while len(out) < min_reps or (len(out) < max_reps and time.perf_counter() - start < budget):
        t = time.perf_counter()
        got = fn()
        out.append(got if measure_self else time.perf_counter() - t)
    return out


def fill(case: Case, times: list[float]) -> Case:
    s = sorted(times)
    case.p50 = statistics.median(s)
    case.p90 = s[min(len(s) - 1, int(0.9 * len(s)))]
    case.reps = len(s)
    return case


def fmt_params(p: float) -> str:
    """1000 -> 1e3, 2000000 -> 2e6; small counts as they are."""
    if p < 100:
        return str(int(p))
    mantissa, exponent = f"{p:.0e}".split("e")
    return f"{mantissa}e{int(exponent)}"
