"""The benchmark's targets, as one table, and their verdicts for a run.

Each row of TARGETS names a target, its limit (the value must not exceed it), a function
that computes the value from the run's CPU cases, and a line on how the value is taken.
The function also says which case the value came from when there is a choice; it returns
None when the run lacks the cases (a narrowed or quick run), and the verdict is then n/a.
Every target lives here and nowhere else.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from . import network
from .cases import Case, lookup
from .systems import VARIANTS, best_weightsync

Found = tuple[float, str] | None  # the value, and which case it came from ("" when none to name)


@dataclass(frozen=True)
class Target:
    name: str
    limit: float
    value: Callable[[dict], Found]  # from lookup() of the run's cases
    detail: str


def _receivers(idx: dict) -> list[int]:
    return sorted({k[3] for k in idx if k[0] == "cpu"})


def _small(n: int) -> Callable[[dict], Found]:
    """The fastest variant over the pipe round trip, 1e3 params in 6 tensors to `n` receivers."""

    def value(idx: dict) -> Found:
        key = ("cpu", 1000, "few", n)
        ws, pipe = best_weightsync(idx, key), idx.get((*key, "pipe"))
        if ws is None or pipe is None:
            return None
        return ws.p50 / pipe.p50, ws.system

    return value


def _tensors(layout: str, packed: bool) -> Callable[[dict], Found]:
    """1e6 params in `layout` over the same in 6 tensors, the worst over receivers and the variants
    that send the trainer's own tensors (general) or its packed weights (API-8)."""
    systems = [s for s, (_, _, pk) in VARIANTS.items() if pk == packed]

    def value(idx: dict) -> Found:
        worst = None
        for n in _receivers(idx):
            for s in systems:
                a, b = idx.get(("cpu", 1_000_000, layout, n, s)), idx.get(("cpu", 1_000_000, "few", n, s))
                if a and b and (worst is None or a.p50 / b.p50 > worst[0]):
                    worst = (a.p50 / b.p50, f"{n} receivers, {s}")
        return worst

    return value


def _per_tensor_floor(layout: str) -> Callable[[dict], Found]:
    """The general path at 1e6 params in `layout` over its floor: torch's batched copy of the same
    tensors (`tensor copy`) plus the pipe round trip, the worst over receivers and the zero-copy
    variants (a copying receiver's own copy is not the sender's per-tensor work)."""
    systems = [s for s, (_, zc, pk) in VARIANTS.items() if zc and not pk]

    def value(idx: dict) -> Found:
        worst = None
        for n in _receivers(idx):
            key = ("cpu", 1_000_000, layout, n)
            floor, pipe = idx.get((*key, "tensor copy")), idx.get((*key, "pipe"))
            for s in systems:
                c = idx.get((*key, s))
                if c and floor and pipe and (worst is None or c.p50 / (floor.p50 + pipe.p50) > worst[0]):
                    worst = (c.p50 / (floor.p50 + pipe.p50), f"{n} receivers, {s}")
        return worst

    return value


def _llm_tensors(params: int) -> Callable[[dict], Found]:
    """Push zero-copy of the mixture of experts (3,042 tensors) over the dense LLM shape (290) of as many
    bf16 parameters, the worst over receivers."""

    def value(idx: dict) -> Found:
        worst = None
        for n in sorted({k[3] for k in idx if k[:3] == ("cpu", params, "moe")}):
            a = idx.get(("cpu", params, "moe", n, "weightsync push zero-copy"))
            b = idx.get(("cpu", params, "llm", n, "weightsync push zero-copy"))
            if a and b and (worst is None or a.p50 / b.p50 > worst[0]):
                worst = (a.p50 / b.p50, f"{n} receivers")
        return worst

    return value


def _large(params: int, device: str = "cpu", layout: str = "few", sequence: bool = False) -> Callable[[dict], Found]:
    """Push zero-copy over one copy (on `device`) plus the pipe, timed apart (or, with `sequence`, as one
    sequence: `copy then pipe`), to 4 receivers; pull zero-copy beside it."""

    def value(idx: dict) -> Found:
        key = (device, params, layout, 4)
        copy, pipe = idx.get((*key, "copy")), idx.get((*key, "pipe"))
        both = idx.get((*key, "copy then pipe"))
        push, pull = idx.get((*key, "weightsync push zero-copy")), idx.get((*key, "weightsync pull zero-copy"))
        if push is None or copy is None or pipe is None or (sequence and both is None):
            return None
        floor = both.p50 if sequence and both is not None else copy.p50 + pipe.p50
        return push.p50 / floor, f"pull zero-copy {pull.p50 / floor:.3f}" if pull else "pull zero-copy -"

    return value


def _network(params: int) -> Callable[[dict], Found]:
    """The fastest TCP variant over a raw gloo transfer of the same bytes, worst over receiver counts (NET-2)."""

    def value(idx: dict) -> Found:
        worst = None
        for n in sorted({k[3] for k in idx if k[0] == "tcp"}):
            key = ("tcp", params, "few", n)
            floor = idx.get((*key, network.FLOOR))
            found = [idx[(*key, s)] for s in network.VARIANTS if (*key, s) in idx]
            if floor and found:
                best = min(found, key=lambda c: c.p50)
                if worst is None or best.p50 / floor.p50 > worst[0]:
                    worst = (best.p50 / floor.p50, f"{n} receivers, {best.system}")
        return worst

    return value


def _descriptors(idx: dict) -> Found:
    fds = [c.fds for c in idx.values() if c.device == "cpu" and c.tensors == 500 and c.receivers == 4
           and c.fds is not None]
    return (max(fds), "") if fds else None


TARGETS = [
    Target("small model (1e3 params, 1 receiver) send p50 / pipe round trip", 1.5, _small(1),
           "fastest weightsync variant"),
    Target("small model (1e3 params, 4 receivers) send p50 / pipe round trip", 1.5, _small(4),
           "fastest weightsync variant"),
    Target("many tensors (1e6 params): 500 tensors / 6 tensors, send p50", 1.5, _tensors("many", False),
           "general path, worst over receivers and variants"),
    Target("many tensors, packed (1e6 params): 500 tensors / 6 tensors, send p50", 1.5, _tensors("many", True),
           "weights packed by weightsync.pack, worst over receivers"),
    Target("very many tensors (1e6 params): 10,000 tensors / 6 tensors, send p50", 3.0, _tensors("huge", False),
           "general path, worst over receivers and variants"),
    Target("very many tensors, packed (1e6 params): 10,000 tensors / 6 tensors, send p50", 3.0,
           _tensors("huge", True), "weights packed by weightsync.pack, worst over receivers"),
    Target("500 tensors (1e6 params): send p50 / (torch's batched copy of those tensors + pipe)", 1.5,
           _per_tensor_floor("many"), "general path, zero-copy, worst over receivers"),
    Target("10,000 tensors (1e6 params): send p50 / (torch's batched copy of those tensors + pipe)",
           1.5, _per_tensor_floor("huge"), "general path, zero-copy, worst over receivers"),
    Target("LLM-shaped (5e8 bf16 params, 290 tensors, 4 receivers) send p50 / (copy + pipe)", 1.15,
           _large(500_000_000, layout="llm"), "weightsync push zero-copy"),
    Target("LLM-shaped (5e8 bf16 params): 3,042 tensors (experts) / 290 tensors, send p50", 1.2,
           _llm_tensors(500_000_000), "weightsync push zero-copy, worst over receivers"),
    Target("large model (1e7 params, 4 receivers) send p50 / (copy + pipe)", 1.15, _large(10_000_000),
           "weightsync push zero-copy"),
    Target("large model (1e8 params, 4 receivers) send p50 / (copy + pipe)", 1.15, _large(100_000_000),
           "weightsync push zero-copy"),
    Target("large model (1e7 params, 4 receivers) send p50 / (copy then pipe, one timed sequence)", 1.15,
           _large(10_000_000, sequence=True), "weightsync push zero-copy; the floor with the copy's cold caches"),
    Target("CUDA large model (1e8 params, 4 receivers) send p50 / (device-to-device copy + pipe)", 1.3,
           _large(100_000_000, "cuda"), "weightsync push zero-copy, slots on the weights' GPU"),
    Target("descriptors the sender holds (500 tensors, 4 receivers)", 20, _descriptors,
           "max over sizes and variants, counted in /proc/self/fd"),
    Target("network (1e7 params) send p50 / raw gloo transfer", 1.2, _network(10_000_000),
           "fastest TCP variant, worst over receiver counts"),
    Target("network (1e8 params) send p50 / raw gloo transfer", 1.2, _network(100_000_000),
           "fastest TCP variant, worst over receiver counts"),
]


def evaluate(cases: list[Case]) -> list[dict]:
    """Every target's value, limit and verdict (met, missed or n/a) for these cases."""
    idx = lookup(cases)
    out = []
    for t in TARGETS:
        value, which = t.value(idx) or (None, "")
        verdict = "n/a" if value is None else ("met" if value <= t.limit else "missed")
        out.append({"name": t.name, "value": None if value is None else round(value, 3), "limit": t.limit,
                    "verdict": verdict, "detail": f"{t.detail}; {which}" if which else t.detail})
    return out
