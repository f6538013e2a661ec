"""What a run measures: the full grid, the quick one, and the options that narrow either.

`make()` turns the options into the list of groups to run (one model on one device to N
receivers, and which baselines run beside it), the network cases, and a `targets.Plan`,
so that a target the run cannot compute says why (a --quick run, an option, no CUDA
device). `--quick` cuts only what the quick run covers; the full run is unchanged.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field

import torch

from . import network
from .baselines import torchrl_version
from .cases import LAYOUT_SIZES, LAYOUTS, LLM_LAYOUTS, RECEIVERS, SIZES, fmt_params
from .systems import COLUMNS, FLOORS, VARIANTS, cuda_supported
from .targets import Plan

# The quick run: the float32 models of 6 tensors at three sizes and of 500 tensors at 1e6 (what the
# many-tensor targets compare), to 1 and 4 receivers. The slow baselines run where they are cheap:
# the Queue on 6 tensors only (at 500 it takes seconds a case), TorchRL in one group (each of its
# cases spawns and imports its own workers: 5 s with one, 15-30 s with four on 2 cores).
QUICK = dict(sizes=(1e3, 1e6, 1e7), receivers=(1, 4), layouts=("few", "many"), layout_sizes={"many": (1e6,)},
             budget=0.25, min_reps=5, max_reps=40, queue_layouts=("few",), torchrl_groups=((1e6, "few", 1),),
             net_sizes=(1e7,), net_receivers=(1, 4), startup_workers="most")
FULL = dict(sizes=SIZES, receivers=RECEIVERS, layouts=tuple(LAYOUTS), layout_sizes={}, budget=1.5, min_reps=5,
            max_reps=300, queue_layouts=None, torchrl_groups=None, net_sizes=network.SIZES,
            net_receivers=network.RECEIVERS, startup_workers="one and most")

#: What --help says of --quick, and how long it takes (85 cases: 87 s on 2 cores with other work beside it).
QUICK_HELP = ("a shorter run, about a minute and a half on two cores: 1e3, 1e6 and 1e7 params in 6 tensors and 1e6 in 500, "
              "to 1 and 4 receivers, 0.25 s of sends per case; the Queue baseline on 6 tensors only, TorchRL once "
              "(1e6 params, 1 receiver), the network cases at 1e7 params. It leaves out the 10,000-tensor, "
              "LLM-shaped and 1e8-param models, whose targets then say so")


@dataclass
class Group:
    """One model on one device to `receivers` receivers, and the baselines that run beside its variants."""

    device: str
    params: int
    layout: str
    receivers: int
    queue: bool
    torchrl: bool

    def systems(self, variants: dict, cuda_ok: bool) -> list[str]:
        if self.device != "cpu" and not cuda_ok:  # recorded as not run, the floors and variants only
            return [*FLOORS, *variants]
        return [*FLOORS, *variants, *(["queue"] if self.queue else []), *(["torchrl"] if self.torchrl else [])]


@dataclass
class RunPlan:
    cfg: dict
    variants: dict  # name -> (mode, zero_copy, packed)
    layouts: dict[str, int]  # name -> tensors
    models: list[tuple[float, str]]  # (params, layout), in the order they run
    groups: list[Group]
    net_variants: dict  # name -> (mode, zero_copy); empty: no network cases
    net_cases: list[tuple[int, int]]  # (params, receivers)
    cuda_ok: bool
    use_queue: bool
    use_torchrl: bool
    startup_workers: list[int]
    targets: Plan = field(default_factory=Plan)
    notes: list[str] = field(default_factory=list)  # what the options left out, for stderr

    @property
    def total(self) -> int:
        """The cases the run will record: every system of every group, and the network cases."""
        cases = sum(len(g.systems(self.variants, self.cuda_ok)) for g in self.groups)
        return cases + (len(self.net_cases) * (1 + len(self.net_variants)) if self.net_variants else 0)


def config(args: argparse.Namespace) -> dict:
    """QUICK or FULL, with the options given on top: an option given wins over what --quick leaves out."""
    cfg = dict(QUICK if args.quick else FULL)
    if args.sizes:  # for the network cases too
        cfg["sizes"] = cfg["net_sizes"] = tuple(float(s) for s in args.sizes.split(","))
    if args.receivers:
        cfg["receivers"] = cfg["net_receivers"] = tuple(int(r) for r in args.receivers.split(","))
    if args.layouts:
        cfg["layouts"] = tuple(s.strip() for s in args.layouts.split(","))
    if args.sizes or args.layouts:
        cfg["layout_sizes"] = {}
    if args.systems:  # a baseline named is run wherever it can be
        cfg["queue_layouts"] = cfg["torchrl_groups"] = None
    if args.budget is not None:
        cfg["budget"] = args.budget
    if args.max_reps is not None:
        cfg["max_reps"] = args.max_reps
        cfg["min_reps"] = min(cfg["min_reps"], args.max_reps)
    return cfg


def receivers_for(layout: str, receivers: tuple[int, ...]) -> list[int]:
    """The receiver counts a layout runs with: all, or up to its cap (LLM-shaped models are large)."""
    cap = LLM_LAYOUTS.get(layout)
    return [n for n in receivers if cap is None or n <= cap]


def make(args: argparse.Namespace) -> RunPlan | str:
    """The run these options ask for, or why there is none (an unknown name)."""
    cfg = config(args)
    systems = [s.strip() for s in args.systems.split(",")] if args.systems else None
    known = set(COLUMNS) | {network.FLOOR, *network.VARIANTS}
    unknown = sorted(set(systems or ()) - known) + sorted(set(cfg["layouts"]) - set(LAYOUTS))
    if unknown:
        return f"unknown system or layout: {unknown}; systems are {COLUMNS}, layouts {list(LAYOUTS)}"
    variants = {k: v for k, v in VARIANTS.items() if systems is None or k in systems}
    layouts = {k: v for k, v in LAYOUTS.items() if k in cfg["layouts"]}
    sizes_of = {**LAYOUT_SIZES, **cfg["layout_sizes"]}
    models = [(p, lay) for p in cfg["sizes"] for lay in layouts
              if lay not in LLM_LAYOUTS and p in sizes_of.get(lay, (p,))]
    models += [(p, lay) for lay in layouts if lay in LLM_LAYOUTS for p in LAYOUT_SIZES[lay]
               if args.sizes is None or p in cfg["sizes"]]
    notes = [f"layout {lay} runs only at {', '.join(fmt_params(p) for p in LAYOUT_SIZES[lay])} params, "
             "which this run does not include" for lay in sorted(set(layouts) - {lay for _, lay in models})]
    use_queue = systems is None or "queue" in systems
    torchrl = torchrl_version()
    use_torchrl = (systems is None or "torchrl" in systems) and torchrl is not None
    present = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    devices = present
    if args.devices:
        devices = [d for d in present if d in {s.strip() for s in args.devices.split(",")}]
    cuda_ok = cuda_supported()
    queue_layouts, torchrl_groups = cfg["queue_layouts"], cfg["torchrl_groups"]
    groups = [Group(d, int(p), lay, n, use_queue and (queue_layouts is None or lay in queue_layouts),
                    use_torchrl and (torchrl_groups is None or (p, lay, n) in torchrl_groups))
              for d in devices for p, lay in models for n in receivers_for(lay, cfg["receivers"])]
    net_variants = {} if args.no_network else {k: v for k, v in network.VARIANTS.items()
                                                if systems is None or k in systems}
    net_cases = [(int(p), n) for p in cfg["net_sizes"] for n in cfg["net_receivers"] if n <= max(cfg["receivers"])]
    most = max(cfg["receivers"])
    plan = RunPlan(cfg, variants, layouts, models, groups, net_variants, net_cases, cuda_ok, use_queue, use_torchrl,
                   [most] if cfg["startup_workers"] == "most" else sorted({1, most}), notes=notes)
    # What the targets are told: the groups and systems planned, and the devices left out whole.
    plan.targets.quick = bool(args.quick)
    for g in groups:
        plan.targets.groups[(g.device, g.params, g.layout, g.receivers)] = set(g.systems(variants, cuda_ok))
    if net_variants:
        plan.targets.groups.update({("tcp", p, "few", n): {network.FLOOR, *net_variants} for p, n in net_cases})
    else:
        plan.targets.skipped["tcp"] = ("the network cases were left out (--no-network)" if args.no_network
                                       else "no network system in --systems")
    if "cuda" not in present:
        plan.targets.skipped["cuda"] = "no CUDA device on this machine"
    elif "cuda" not in devices:
        plan.targets.skipped["cuda"] = "not in this run: --devices left out cuda"
    return plan
