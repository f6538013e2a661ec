"""The benchmark's targets, as one table, and their verdicts for a run.

Each row of TARGETS names a target, its limit (the value must not exceed it), a function
that computes the value from the run's CPU cases, a line on how the value is taken, and
the cases it needs (`Needs`). The function also says which case the value came from when
there is a choice; it returns None when the run lacks the cases (a narrowed or quick run).
The verdict is then "not measured", never "missed", with one sentence saying why: the
plan of the run did not hold those cases (and which option would add them), or they
failed, or the run was interrupted first. Every target lives here and nowhere else.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from . import network
from .cases import LAYOUTS, Case, fmt_params, lookup
from .systems import VARIANTS, best_weightsync

Found = tuple[float, str] | None  # the value, and which case it came from ("" when none to name)
Group = tuple[str, int, str, int]  # (device, params, layout, receivers): the cases one model to N receivers makes

MET, MISSED, NOT_MEASURED = "met", "missed", "not measured"


@dataclass(frozen=True)
class Needs:
    """The cases a target is computed from: on `device`, each (params, layout) of `models` (params None: any
    size), to `receivers` (None: any count), with every system of `systems` and at least one of `any_of`."""

    device: str
    models: tuple[tuple[int | None, str], ...]
    receivers: int | None = None
    systems: tuple[str, ...] = ()
    any_of: tuple[str, ...] = ()


@dataclass
class Plan:
    """What a run set out to measure, for the reasons of the targets it could not compute.

    `groups` maps each (device, params, layout, receivers) it planned to the systems it
    ran there, `skipped` gives a reason per device it left out whole (no CUDA device,
    --no-network), and `quick` says whether it was `--quick` (else options narrowed it).
    """

    groups: dict[Group, set[str]] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)
    quick: bool = False


@dataclass(frozen=True)
class Target:
    name: str
    limit: float
    value: Callable[[dict], Found]  # from lookup() of the run's cases
    detail: str
    needs: Needs


def _receivers(idx: dict) -> list[int]:
    return sorted({k[3] for k in idx if k[0] == "cpu"})


def _small(n: int, systems: tuple[str, ...] | None = None) -> Callable[[dict], Found]:
    """The fastest variant (of `systems`, by default any) over the pipe round trip, 1e3 params in 6 tensors to `n`
    receivers."""

    def value(idx: dict) -> Found:
        key = ("cpu", 1000, "few", n)
        if systems is None:
            ws = best_weightsync(idx, key)
        else:
            found = [idx[(*key, s)] for s in systems if (*key, s) in idx]
            ws = min(found, key=lambda c: c.p50) if found else None
        pipe = idx.get((*key, "pipe"))
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


_GENERAL = tuple(s for s, (_, _, pk) in VARIANTS.items() if not pk)
_PACKED = tuple(s for s, (_, _, pk) in VARIANTS.items() if pk)
_GENERAL_ZC = tuple(s for s, (_, zc, pk) in VARIANTS.items() if zc and not pk)
_COPYING = tuple(s for s, (_, zc, _) in VARIANTS.items() if not zc)  # workers that copy each version into their own
_ZC = "weightsync push zero-copy"
_M = 1_000_000


def _few_and(layout: str) -> tuple[tuple[int | None, str], ...]:
    return ((_M, layout), (_M, "few"))


TARGETS = [
    Target("small model (1e3 params, 1 receiver) send p50 / pipe round trip", 1.5, _small(1),
           "fastest weightsync variant", Needs("cpu", ((1000, "few"),), 1, ("pipe",), tuple(VARIANTS))),
    Target("small model (1e3 params, 4 receivers) send p50 / pipe round trip", 1.5, _small(4),
           "fastest weightsync variant", Needs("cpu", ((1000, "few"),), 4, ("pipe",), tuple(VARIANTS))),
    Target("small policy (1e3 params) to 1 copying receiver: send p50 / pipe round trip", 2.0, _small(1, _COPYING),
           "fastest variant whose receivers copy", Needs("cpu", ((1000, "few"),), 1, ("pipe",), _COPYING)),
    Target("small policy (1e3 params) to 4 copying receivers: send p50 / pipe round trip", 2.5, _small(4, _COPYING),
           "fastest variant whose receivers copy", Needs("cpu", ((1000, "few"),), 4, ("pipe",), _COPYING)),
    Target("many tensors (1e6 params): 500 tensors / 6 tensors, send p50", 1.5, _tensors("many", False),
           "general path, worst over receivers and variants", Needs("cpu", _few_and("many"), any_of=_GENERAL)),
    Target("many tensors, packed (1e6 params): 500 tensors / 6 tensors, send p50", 1.5, _tensors("many", True),
           "weights packed by weightsync.pack, worst over receivers", Needs("cpu", _few_and("many"), any_of=_PACKED)),
    Target("very many tensors (1e6 params): 10,000 tensors / 6 tensors, send p50", 3.0, _tensors("huge", False),
           "general path, worst over receivers and variants", Needs("cpu", _few_and("huge"), any_of=_GENERAL)),
    Target("very many tensors, packed (1e6 params): 10,000 tensors / 6 tensors, send p50", 3.0,
           _tensors("huge", True), "weights packed by weightsync.pack, worst over receivers",
           Needs("cpu", _few_and("huge"), any_of=_PACKED)),
    Target("500 tensors (1e6 params): send p50 / (torch's batched copy of those tensors + pipe)", 1.5,
           _per_tensor_floor("many"), "general path, zero-copy, worst over receivers",
           Needs("cpu", ((_M, "many"),), None, ("tensor copy", "pipe"), _GENERAL_ZC)),
    Target("10,000 tensors (1e6 params): send p50 / (torch's batched copy of those tensors + pipe)",
           1.5, _per_tensor_floor("huge"), "general path, zero-copy, worst over receivers",
           Needs("cpu", ((_M, "huge"),), None, ("tensor copy", "pipe"), _GENERAL_ZC)),
    Target("LLM-shaped (5e8 bf16 params, 290 tensors, 4 receivers) send p50 / (copy + pipe)", 1.15,
           _large(500_000_000, layout="llm"), "weightsync push zero-copy",
           Needs("cpu", ((500 * _M, "llm"),), 4, ("copy", "pipe", _ZC))),
    Target("LLM-shaped (5e8 bf16 params): 3,042 tensors (experts) / 290 tensors, send p50", 1.2,
           _llm_tensors(500_000_000), "weightsync push zero-copy, worst over receivers",
           Needs("cpu", ((500 * _M, "moe"), (500 * _M, "llm")), None, (_ZC,))),
    Target("large model (1e7 params, 4 receivers) send p50 / (copy + pipe)", 1.15, _large(10_000_000),
           "weightsync push zero-copy", Needs("cpu", ((10 * _M, "few"),), 4, ("copy", "pipe", _ZC))),
    Target("large model (1e8 params, 4 receivers) send p50 / (copy + pipe)", 1.15, _large(100_000_000),
           "weightsync push zero-copy", Needs("cpu", ((100 * _M, "few"),), 4, ("copy", "pipe", _ZC))),
    Target("large model (1e7 params, 4 receivers) send p50 / (copy then pipe, one timed sequence)", 1.15,
           _large(10_000_000, sequence=True), "weightsync push zero-copy; the floor with the copy's cold caches",
           Needs("cpu", ((10 * _M, "few"),), 4, ("copy then pipe", _ZC))),
    Target("CUDA large model (1e8 params, 4 receivers) send p50 / (device-to-device copy + pipe)", 1.3,
           _large(100_000_000, "cuda"), "weightsync push zero-copy, slots on the weights' GPU",
           Needs("cuda", ((100 * _M, "few"),), 4, ("copy", "pipe", _ZC))),
    Target("descriptors the sender holds (500 tensors, 4 receivers)", 20, _descriptors,
           "max over sizes and variants, counted in /proc/self/fd",
           Needs("cpu", ((None, "many"),), 4, any_of=tuple(VARIANTS))),
    Target("network (1e7 params) send p50 / raw gloo transfer", 1.2, _network(10_000_000),
           "fastest TCP variant, worst over receiver counts",
           Needs("tcp", ((10 * _M, "few"),), None, (network.FLOOR,), tuple(network.VARIANTS))),
    Target("network (1e8 params) send p50 / raw gloo transfer", 1.2, _network(100_000_000),
           "fastest TCP variant, worst over receiver counts",
           Needs("tcp", ((100 * _M, "few"),), None, (network.FLOOR,), tuple(network.VARIANTS))),
]

#: How a narrowed run gets what it lacks, by kind.
_OPTION = {"params": "--sizes adds it", "layout": "--layouts adds it", "receivers": "--receivers adds it",
           "systems": "--systems adds it", "device": "--devices adds it", "network": "a run without --no-network has them"}


def _layout_words(layout: str) -> str:
    return f"the {layout} layout ({LAYOUTS[layout]:,} tensors)" if layout in LAYOUTS else f"the {layout} layout"


def _lacking(needs: Needs, groups: dict[Group, set[str]]) -> tuple[str, str] | None:
    """What of `needs` these groups (and the systems in each) lack, in words, and which kind of option adds it;
    None if nothing."""
    mine = [g for g in groups if g[0] == needs.device]
    if not mine:
        if needs.device == "tcp":
            return "needs the network cases", "network"
        return f"needs {needs.device} cases", "device"
    for params, layout in needs.models:
        at_layout = [g for g in mine if g[2] == layout]
        if not at_layout:
            at = f" at {fmt_params(params)} params" if params is not None else ""
            return f"needs {_layout_words(layout)}{at}", "layout"
        model = f"{fmt_params(params)} params in {LAYOUTS.get(layout, 0):,} tensors" if params is not None \
            else f"{LAYOUTS.get(layout, 0):,} tensors"
        at_size = [g for g in at_layout if params is None or g[1] == params]
        if not at_size:
            return f"needs {model}", "params"
        if needs.receivers is not None:
            at_size = [g for g in at_size if g[3] == needs.receivers]
            if not at_size:
                return f"needs {needs.receivers} receivers", "receivers"
        systems = set().union(*(groups[g] for g in at_size))
        missing = [s for s in needs.systems if s not in systems]
        if missing:
            return f"needs {', '.join(missing)} at {model}", "systems"
        if needs.any_of and not systems & set(needs.any_of):
            return f"needs one of {', '.join(needs.any_of)} at {model}", "systems"
    return None


def _matches(needs: Needs, c: Case) -> bool:
    return c.device == needs.device and any((p is None or c.params == p) and c.layout == lay
                                            for p, lay in needs.models) \
        and (needs.receivers is None or c.receivers == needs.receivers)


def why_not(needs: Needs, cases: Iterable[Case], plan: Plan | None = None) -> str:
    """One sentence on why a target has no value in this run."""
    cases = list(cases)
    if plan is not None and needs.device in plan.skipped:
        return plan.skipped[needs.device]
    if plan is not None:
        lack = _lacking(needs, plan.groups)
    else:  # what the cases themselves show: every case that ran or failed
        groups: dict[Group, set[str]] = {}
        for c in cases:
            groups.setdefault((c.device, c.params, c.layout, c.receivers), set()).add(c.system)
        lack = _lacking(needs, groups)
    if lack is not None:
        what, kind = lack
        if plan is not None and plan.quick:
            return f"not run in --quick: {what}, which the full run measures"
        return f"not in this run: {what}; {_OPTION[kind]}"
    failed = [c for c in cases if c.note and _matches(needs, c)]
    failed = [c for c in failed if c.system in (*needs.systems, *needs.any_of)] or failed
    if failed:
        c = failed[0]
        return (f"its cases did not run: {c.system} at {fmt_params(c.params)} params, {c.receivers} receivers: "
                f"{c.note.removeprefix('not run: ')}")
    return "its cases did not finish (the run was interrupted or a case failed)"


def evaluate(cases: list[Case], plan: Plan | None = None) -> list[dict]:
    """Every target's value, limit and verdict (met, missed or not measured) for these cases; a target not
    measured has a `reason` instead of a value."""
    idx = lookup(cases)
    out = []
    for t in TARGETS:
        value, which = t.value(idx) or (None, "")
        row = {"name": t.name, "value": None if value is None else round(value, 3), "limit": t.limit,
               "verdict": NOT_MEASURED if value is None else (MET if value <= t.limit else MISSED),
               "detail": f"{t.detail}; {which}" if which else t.detail}
        if value is None:
            row["reason"] = why_not(t.needs, cases, plan)
        out.append(row)
    return out


def line(t: dict) -> str:
    """A target as the run prints it: its figure and verdict, or why it has none."""
    if t["value"] is None:
        return f"target {t['name']}: {t.get('reason') or NOT_MEASURED}"
    return f"target {t['name']}: {t['value']} (limit {t['limit']}) {t['verdict']}"


def summary(found: list[dict]) -> str:
    counts = {v: sum(t["verdict"] == v for t in found) for v in (MET, MISSED, NOT_MEASURED)}
    return f"targets: {counts[MET]} met, {counts[MISSED]} missed, {counts[NOT_MEASURED]} not measured in this run"
