"""The command: its options, and the run that measures the plan they select (plan).

`run()` walks the plan's groups (one model on one device to N receivers), measures each
with the floors first, shows its progress (one line on a terminal, a line per case
elsewhere), and writes the report; then it prints each target's figure, or why it has
none. A failed case is recorded with its error and the run goes on; an interrupt writes
what was measured so far.
"""

from __future__ import annotations

import argparse
import functools
import json
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path

import torch
import torch.multiprocessing as mp

from . import casts, memory, network, plots, startup, targets
from .baselines import (
    QUEUE_MAX_TENSORS,
    bench_pipe,
    bench_queue,
    bench_tensor_copy,
    bench_torchrl,
    copier,
)
from .cases import (
    LAYOUTS,
    Case,
    fill,
    fmt_params,
    make_weights,
    model_weights,
    timed,
)
from .plan import FULL, QUICK, QUICK_HELP, RunPlan, make, receivers_for
from .pool import Pool
from .progress import Progress
from .report import in_words, json_safe, machine, markdown
from .systems import COLUMNS, FLOORS, bench_weightsync

__all__ = ["FULL", "QUICK", "add_arguments", "in_column_order", "measure_group", "measure_network",
           "receivers_for", "run"]

#: Models up to this many bytes cost about their two wake-ups a send, and a wake-up costs twice as much at one
#: moment as at the next: their weightsync variants are measured twice, as the floors that wait on wake-ups are.
WAKE_BOUND_BYTES = 64 << 10
#: How to get TorchRL's column, where it is not installed.
TORCHRL_HINT = "pip install torchrl==0.14.1 adds its baseline"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--quick", action="store_true", help=QUICK_HELP)
    parser.add_argument("--out", default="bench-results", help="directory for results.md, results.json and plots")
    parser.add_argument("--sizes", help="comma-separated parameter counts, e.g. 1e3,1e6 (default: 1e3..1e8)")
    parser.add_argument("--receivers", help="comma-separated receiver counts (default: 1,2,4,8)")
    parser.add_argument("--layouts", help="comma-separated subset of few (6 tensors), many (500 tensors), huge "
                        "(10,000 tensors, at 1e6 params only), llm (bf16, shaped like a dense LLM, 290 tensors) and "
                        "moe (bf16, a mixture of experts, 3,042 tensors); llm and moe run at 1e8 and 5e8 params and "
                        "at most 4 receivers (default: all; quick: few,many)")
    parser.add_argument("--systems", help="comma-separated subset of: " + ", ".join(COLUMNS)
                        + " (the floors copy, tensor copy, pipe and copy then pipe always run)")
    parser.add_argument("--budget", type=float, help="seconds of timed sends per case (default 1.5, quick 0.25)")
    parser.add_argument("--max-reps", type=int, help="most timed sends per case")
    parser.add_argument("--threads", type=int, default=1,
                        help="torch intra-op threads of the sending process (default 1; receivers use 1)")
    parser.add_argument("--devices", help="comma-separated subset of cpu and cuda (default: cpu, and cuda when present)")
    parser.add_argument("--no-startup", action="store_true",
                        help="leave out the start-up figures (import time, connect time of N spawned workers), the "
                             "slots' shared memory per worker count and the fp32 -> bf16 path")
    parser.add_argument("--no-network", action="store_true",
                        help="leave out the network profile's cases (TCP and gloo next to a raw gloo transfer)")


def argv_shown(args: argparse.Namespace) -> list[str]:
    """The options of this run as typed, --out left out (it says where, not what)."""
    out = (["--quick"] if args.quick else []) + (["--no-network"] if args.no_network else [])
    for name in ("sizes", "receivers", "layouts", "systems", "devices", "budget", "max_reps", "threads"):
        value = getattr(args, name)
        if value is not None and not (name == "threads" and value == 1):
            out.append(f"--{name.replace('_', '-')} {value}")
    return out


def measure_group(pool, device, weights, params, layout, n, variants, use_queue, use_torchrl, reps, record,
                  announce: Callable[[str], None] | None = None) -> None:
    """Every system for one model of about `params` parameters on one device to `n` receivers, floors first;
    `announce` hears the name of each system before it is measured."""
    budget, lo, hi = reps
    pool.heal()
    nbytes = sum(t.numel() * t.element_size() for t in weights.values())
    dtype = str(next(iter(weights.values())).dtype).removeprefix("torch.")
    base = dict(device=device, params=params, layout=layout, tensors=len(weights), nbytes=nbytes, receivers=n,
                dtype=dtype)
    # The floors are measured next to each group, so that they share its moment's load.
    copy = copier(weights, device)  # one pair of buffers for both floors that copy, made and filled once
    record(Case(**base, system="copy"), timed(copy, budget, lo, hi))
    record(Case(**base, system="tensor copy"), bench_tensor_copy(weights, budget, lo, hi))
    # The two floors that wait on wake-ups are measured again after the variants (below): a wake-up
    # on a virtual machine costs twice as much at one moment as at the next.
    woken = {"pipe": [bench_pipe(pool, n, budget, lo, hi)], "copy then pipe": [bench_pipe(pool, n, budget, lo, hi, copy)]}
    del copy  # its buffers (twice the model's bytes) go before the variants run
    runs: dict[str, Callable[[], tuple]] = {
        name: functools.partial(bench_weightsync, pool, weights, n, mode, zc, budget, lo, hi, packed)
        for name, (mode, zc, packed) in variants.items()}
    if use_queue:  # the naive baseline is slow: fewer sends
        runs["queue"] = lambda: (bench_queue(pool, weights, device, n, budget, min(lo, 3),
                                             hi if nbytes < 1e8 else min(hi, 10)), None)
    if use_torchrl:
        runs["torchrl"] = lambda: (bench_torchrl(pool.ctx, weights, n, budget, lo, hi), None)
    # A model this small is sent in about the time of its wake-ups: its variants are measured twice as well,
    # the second time after the floors' second measurement, and each keeps its quieter run as the floors do.
    again: dict[str, tuple[Case, list[float]]] = {}
    for name, measure in runs.items():
        case = Case(**base, system=name)
        if announce is not None:
            announce(name)
        if name == "queue" and len(weights) > QUEUE_MAX_TENSORS:
            record(case, error=f"not run: torch's Queue passes a file descriptor per tensor, "
                               f"and {len(weights)} tensors run out of descriptors")
            continue
        try:
            times, case.fds = measure()
        except Exception as e:  # noqa: BLE001 - one failed case must not end the run
            record(case, error=f"{type(e).__name__}: {e}")
        else:
            if nbytes <= WAKE_BOUND_BYTES and name in variants:
                again[name] = (case, times)
            else:
                record(case, times)
    try:
        pool.heal()
        copy = copier(weights, device)
        woken["pipe"].append(bench_pipe(pool, n, budget, lo, hi))
        woken["copy then pipe"].append(bench_pipe(pool, n, budget, lo, hi, copy))
        del copy
    except Exception as e:  # noqa: BLE001 - the floors measured first stand alone
        print(f"the floors' second measurement failed ({type(e).__name__}: {e}); the first stands", file=sys.stderr)
    for name, runs_of_floor in woken.items():  # the quieter moment's: a floor the variants are not flattered by
        record(Case(**base, system=name), min(runs_of_floor, key=statistics.median))
    for name, (case, times) in again.items():
        try:
            second, _ = runs[name]()
        except Exception as e:  # noqa: BLE001 - the first measurement stands alone
            print(f"{name}'s second measurement failed ({type(e).__name__}: {e}); the first stands", file=sys.stderr)
            second = times
        record(case, min(times, second, key=statistics.median))


def in_column_order(cases: list[Case]) -> list[Case]:
    """Each group's cases in the report's column order, groups as they ran: the floors that wait on
    wake-ups are recorded after the variants (measure_group), and read first."""
    groups: dict[tuple, int] = {}
    order = {name: i for i, name in enumerate(COLUMNS)}

    def key(c: Case) -> tuple:
        group = groups.setdefault((c.device, c.params, c.layout, c.receivers, c.dtype), len(groups))
        return group, order.get(c.system, len(order))

    return sorted(cases, key=key)


def measure_network(pool, cases, variants, reps, record) -> None:
    """The network profile (device "tcp"): the raw gloo floor, then each weightsync variant, per size and count."""
    budget, lo, hi = reps
    for p, n in cases:
        pool.heal()
        weights = make_weights(p, LAYOUTS["few"])
        nbytes = sum(t.numel() * t.element_size() for t in weights.values())
        base = dict(device="tcp", params=p, layout="few", tensors=len(weights), nbytes=nbytes, receivers=n)
        runs = {network.FLOOR: lambda b=nbytes, k=n: (network.bench_gloo(pool, b, k, budget, lo, hi), None)}
        runs.update({name: (lambda m=mode, z=zc, w=weights, k=n: network.bench_tcp(pool, w, k, m, z, budget, lo, hi))
                     for name, (mode, zc) in variants.items()})
        for name, measure in runs.items():
            case = Case(**base, system=name)
            try:
                times, case.fds = measure()
            except Exception as e:  # noqa: BLE001 - one failed case must not end the run
                pool.drain(n)
                record(case, error=f"{type(e).__name__}: {e}")
            else:
                record(case, times)


def _startup(plan: RunPlan, quick: bool, show: Progress) -> tuple[dict, dict]:
    """Import and connect times, then the slots' shared memory, before the pool takes the cores."""
    workers = plan.startup_workers
    show.status(f"start-up: import times, then spawning and connecting {' and '.join(map(str, workers))} workers ...")
    started = startup.measure(workers, tries=1 if quick else 3)
    show.line(f"start-up: import torch {started['import_s']['torch']:.2f} s, weightsync adds "
              f"{started['import_added_s']:.2f} s; spawn, import and connect of N workers: "
              + ", ".join(f"{n}: {t:.2f} s" for n, t in started["connect_s"].items()))
    show.status("slot memory: pinning every slot pull workers can hold ...")
    slots = memory.measure(sorted({1, max(plan.cfg["receivers"])}))
    show.line("slot memory: " + ", ".join(f"{n} workers: {k} slots, {b / 1e6:.0f} MB"
                                          for n, (k, b) in slots["rows"].items()))
    return started, slots


def run(args: argparse.Namespace) -> int:
    plan = make(args)
    if isinstance(plan, str):
        print(plan, file=sys.stderr)
        return 2
    for note in plan.notes:
        print(note, file=sys.stderr)
    cfg, total = plan.cfg, plan.total
    budget, lo, hi = cfg["budget"], cfg["min_reps"], cfg["max_reps"]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    info = machine()
    info["sender_threads"] = args.threads
    show = Progress()
    show.line(f"weightsync bench: {info['cpu']}, {info['cores']} cores, torch {info['torch']}, "
              f"torchrl {info['torchrl'] or 'not installed (' + TORCHRL_HINT + ')'}; "
              f"{total} cases{' (quick)' if args.quick else ''}")

    # A parallel copy waits for every OpenMP thread; on a machine whose cores the receivers
    # keep busy, one descheduled thread costs a scheduler quantum (ms) and the figure
    # measures the scheduler. One thread per process is the default for that reason.
    torch.set_num_threads(args.threads)
    ctx = mp.get_context("spawn")
    t_start = time.perf_counter()
    started = slots = cast = None
    if not args.no_startup:  # before the pool, which would share the cores with it
        started, slots = _startup(plan, args.quick, show)
    show.status(f"starting {max(cfg['receivers'])} worker processes ...")
    pool = Pool(max(cfg["receivers"]), ctx)
    show.line(f"started {len(pool.procs)} worker processes in {time.perf_counter() - t_start:.1f} s")
    cases: list[Case] = []
    done = [0]
    what = [""]  # the group under way, for the progress line

    def record(case: Case, times=None, error: str = "") -> None:
        done[0] += 1
        if times:
            fill(case, times)
        if error:
            case.note = error
        cases.append(case)
        if error:
            result = error if error.startswith("not run:") else f"FAILED: {error}"
        else:
            result = f"p50 {case.p50 * 1e3:9.3f} ms  p90 {case.p90 * 1e3:9.3f} ms  ({case.reps} sends)"
        label = f"{fmt_params(case.params)} params x {case.tensors} tensors, {case.receivers} receivers, {case.device}"
        show.case(f"[{done[0]:3d}/{total}] {label:<45} {case.system:<26} {result}")

    def announce(system: str) -> None:
        show.status(f"[{done[0] + 1:3d}/{total}] {what[0]}: {system} ...")

    try:
        weights, held = None, None
        for g in plan.groups:
            nt = plan.layouts[g.layout]
            what[0] = f"{fmt_params(g.params)} params x {nt} tensors, {g.receivers} receivers, {g.device}"
            if g.device != "cpu" and not plan.cuda_ok:  # the rows say so rather than vanish
                for system in g.systems(plan.variants, plan.cuda_ok):
                    record(Case(g.device, g.params, g.layout, min(nt, g.params), g.params * 4, g.receivers, system),
                           error="this binding has no CUDA slots")
                continue
            if held != (g.device, g.params, g.layout):  # one model for all its receiver counts
                weights = held = None
                show.status(f"[{done[0] + 1:3d}/{total}] {what[0]}: making the model ...")
                weights, held = model_weights(g.params, g.layout, g.device), (g.device, g.params, g.layout)
            announce("floors")
            measure_group(pool, g.device, weights, g.params, g.layout, g.receivers, plan.variants, g.queue, g.torchrl,
                          (budget, lo, hi), record, announce)
        weights = None
        if plan.net_variants:
            what[0] = "network"
            announce("gloo and TCP")
            measure_network(pool, plan.net_cases, plan.net_variants, (budget, lo, hi), record)
        if not args.no_startup:  # the dtype path, from fp32 weights (LAYOUT-3)
            show.status("dtype path: fp32 weights to bf16 workers ...")
            cast = casts.measure(pool, int(1e6 if args.quick else 1e7), sorted({1, max(cfg["receivers"])}),
                                 (budget, lo, hi))
            show.line("dtype path: " + "; ".join(f"{n} workers: " + ", ".join(f"{k} {v * 1e3:.2f} ms"
                                                                            for k, v in row.items())
                                                 for n, row in cast["rows"].items()))
    except KeyboardInterrupt:
        show.done()
        print("interrupted: writing what was measured", file=sys.stderr)
    except BaseException:
        pool.close()
        raise
    finally:
        show.done()
    pool.stop()  # the workers end while the report is written
    elapsed = time.perf_counter() - t_start
    cases[:] = in_column_order(cases)
    results = {
        "machine": info,
        "config": {**{k: list(v) if isinstance(v, tuple) else v for k, v in cfg.items()}, "quick": bool(args.quick),
                   "layouts": plan.layouts,
                   "systems": [*FLOORS, *plan.variants, *(["queue"] if plan.use_queue else []),
                               *(["torchrl"] if plan.use_torchrl else []),
                               *([network.FLOOR, *plan.net_variants] if plan.net_variants else [])]},
        "command": " ".join(["python -m weightsync bench", *argv_shown(args)]),
        "elapsed_s": round(elapsed, 1),
        "startup": started,
        "memory": slots,
        "casts": cast,
    }
    try:
        conclude(results, cases, plan.targets, out)
    finally:
        pool.close()
    return 0


def conclude(results: dict, cases: list[Case], plan: targets.Plan | None, out: Path) -> None:
    """Writes results.json, the plots and results.md under `out`, then prints what a reader looks for: where
    they are (or the one line on how to get plots), every target's figure or why it has none, and the
    LLM-shaped models in words."""
    results["cases"] = [json_safe({**asdict(c), "throughput": c.throughput}) for c in cases]
    results["targets"] = found = targets.evaluate(cases, plan)
    (out / "results.json").write_text(json.dumps(results, indent=1, allow_nan=False) + "\n")
    drawn = plots.plot(cases, out)
    (out / "results.md").write_text(markdown(results, drawn))
    if drawn is None:
        print(plots.MISSING)
    print(f"done in {results['elapsed_s']:.0f} s; wrote {out / 'results.md'}, {out / 'results.json'}"
          + (f" and {len(drawn)} plots" if drawn else ""))
    for t in found:
        print(f"  {targets.line(t)}")
    print(f"  {targets.summary(found)}")
    for line in in_words(cases):
        print(f"  {line}")
