"""The dtype path (LAYOUT-3): fp32 weights sent to bf16 workers, next to the same workers in fp32.

The cast happens in the sender's copy into the slot, so a bf16 send should cost about an
fp32 one (the copy converts as it goes, and writes half the bytes), and zero-copy bf16
workers about nothing more.
"""

from __future__ import annotations

import torch

from .cases import LAYOUTS, make_weights
from .systems import bench_weightsync

#: label -> (zero_copy, slot dtype or None for the weights' own)
PATHS = {"fp32 zero-copy": (True, None), "bf16 zero-copy": (True, torch.bfloat16), "bf16 copy": (False, torch.bfloat16)}


def measure(pool, params: int, workers: list[int], reps: tuple) -> dict:
    """{"params", "rows": {N: {label: p50 seconds}}} of push sends from fp32 weights."""
    budget, lo, hi = reps
    weights = make_weights(params, LAYOUTS["few"], "cpu")
    rows: dict[int, dict[str, float]] = {}
    for n in workers:
        rows[n] = {}
        for label, (zero_copy, dtype) in PATHS.items():
            times, _ = bench_weightsync(pool, weights, n, "push", zero_copy, budget, lo, hi, dtypes=dtype)
            rows[n][label] = sorted(times)[len(times) // 2]
    return {"params": params, "rows": rows}


def markdown(casts: dict) -> list[str]:
    lines = ["### fp32 trainer, bf16 workers", "",
             f"{casts['params']:.0e} fp32 parameters, push, p50 of a send (ms): the cast happens in the sender's "
             "copy into the slot (LAYOUT-3).", "",
             "| workers | " + " | ".join(PATHS) + " |", "|---:|" + "---:|" * len(PATHS)]
    for n, row in casts["rows"].items():
        lines.append(f"| {n} | " + " | ".join(f"{row[label] * 1e3:.2f}" for label in PATHS) + " |")
    return lines
