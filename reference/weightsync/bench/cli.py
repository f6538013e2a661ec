"""The command: its options, the plan of cases they select, and the run that measures them.

`run()` walks devices, sizes, layouts and receiver counts, measures each group of cases
with the floors first, prints one line per case as it finishes, and writes the report.
A failed case is recorded with its error and the run goes on; an interrupt writes what
was measured so far.
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

from . import casts, memory, network, startup
from .baselines import (
    QUEUE_MAX_TENSORS,
    bench_pipe,
    bench_queue,
    bench_tensor_copy,
    bench_torchrl,
    copier,
    torchrl_version,
)
from .cases import (
    LAYOUT_SIZES,
    LAYOUTS,
    LLM_LAYOUTS,
    RECEIVERS,
    SIZES,
    Case,
    fill,
    fmt_params,
    make_weights,
    model_weights,
    runs_at,
    timed,
)
from .plots import plot
from .pool import Pool
from .report import in_words, json_safe, machine, markdown
from .systems import COLUMNS, FLOORS, VARIANTS, bench_weightsync, cuda_supported
from .targets import evaluate

# The quick run leaves out the huge layout: its 1e6-parameter cases add about 25 s on 2 cores,
# most of it in building and connecting senders of 10,000 tensors.
QUICK = dict(sizes=(1e3, 1e6, 1e7), receivers=(1, 4), layouts=("few", "many"), budget=0.25, min_reps=5, max_reps=40,
             net_sizes=(1e6, 1e7), net_receivers=(1, 4))
FULL = dict(sizes=SIZES, receivers=RECEIVERS, layouts=tuple(LAYOUTS), budget=1.5, min_reps=5, max_reps=300,
            net_sizes=network.SIZES, net_receivers=network.RECEIVERS)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--quick", action="store_true", help="a shorter run (a few minutes on two cores): fewer sizes, receivers and sends")
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


def measure_group(pool, device, weights, params, layout, n, variants, use_queue, use_torchrl, reps, record) -> None:
    """Every system for one model of about `params` parameters on one device to `n` receivers, floors first."""
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
    if use_torchrl and device == "cpu":
        runs["torchrl"] = lambda: (bench_torchrl(pool.ctx, weights, n, budget, lo, hi), None)
    for name, measure in runs.items():
        case = Case(**base, system=name)
        if name == "queue" and len(weights) > QUEUE_MAX_TENSORS:
            record(case, error=f"not run: torch's Queue passes a file descriptor per tensor, "
                               f"and {len(weights)} tensors run out of descriptors")
            continue
        try:
            times, case.fds = measure()
        except Exception as e:  # noqa: BLE001 - one failed case must not end the run
            record(case, error=f"{type(e).__name__}: {e}")
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


def receivers_for(layout: str, receivers: tuple[int, ...]) -> list[int]:
    """The receiver counts a layout runs with: all, or up to its cap (LLM-shaped models are large)."""
    cap = LLM_LAYOUTS.get(layout)
    return [n for n in receivers if cap is None or n <= cap]


def _config(args: argparse.Namespace) -> dict:
    cfg = dict(QUICK if args.quick else FULL)
    if args.sizes:  # for the network cases too
        cfg["sizes"] = cfg["net_sizes"] = tuple(float(s) for s in args.sizes.split(","))
    if args.receivers:
        cfg["receivers"] = cfg["net_receivers"] = tuple(int(r) for r in args.receivers.split(","))
    if args.layouts:
        cfg["layouts"] = tuple(s.strip() for s in args.layouts.split(","))
    if args.budget is not None:
        cfg["budget"] = args.budget
    if args.max_reps is not None:
        cfg["max_reps"] = args.max_reps
        cfg["min_reps"] = min(cfg["min_reps"], args.max_reps)
    return cfg


def run(args: argparse.Namespace) -> int:
    cfg = _config(args)
    systems = [s.strip() for s in args.systems.split(",")] if args.systems else None
    known = set(COLUMNS) | {network.FLOOR, *network.VARIANTS}
    unknown = sorted(set(systems or ()) - known) + sorted(set(cfg["layouts"]) - set(LAYOUTS))
    if unknown:
        print(f"unknown system or layout: {unknown}; systems are {COLUMNS}, layouts {list(LAYOUTS)}", file=sys.stderr)
        return 2
    variants = {k: v for k, v in VARIANTS.items() if systems is None or k in systems}
    layouts = {k: v for k, v in LAYOUTS.items() if k in cfg["layouts"]}
    models = [(p, lay) for p in cfg["sizes"] for lay in layouts if lay not in LLM_LAYOUTS and runs_at(lay, p)]
    models += [(p, lay) for lay in layouts if lay in LLM_LAYOUTS for p in LAYOUT_SIZES[lay]
               if args.sizes is None or p in cfg["sizes"]]
    for lay in sorted(set(layouts) - {lay for _, lay in models}):
        sizes = ", ".join(fmt_params(p) for p in LAYOUT_SIZES[lay])
        print(f"layout {lay} runs only at {sizes} params, which this run does not include", file=sys.stderr)
    use_queue = systems is None or "queue" in systems
    use_torchrl = (systems is None or "torchrl" in systems) and torchrl_version() is not None
    devices = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    if args.devices:
        devices = [d for d in devices if d in {s.strip() for s in args.devices.split(",")}]
    cuda_ok = cuda_supported()
    budget, lo, hi = cfg["budget"], cfg["min_reps"], cfg["max_reps"]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    info = machine()
    info["sender_threads"] = args.threads
    groups = sum(len(receivers_for(lay, cfg["receivers"])) for _, lay in models)
    per_group = {"cpu": len(FLOORS) + len(variants) + use_queue + use_torchrl,
                 "cuda": len(FLOORS) + len(variants) + (use_queue if cuda_ok else 0)}
    net_variants = {} if args.no_network else {k: v for k, v in network.VARIANTS.items()
                                                if systems is None or k in systems}
    net_cases = [(int(p), n) for p in cfg["net_sizes"] for n in cfg["net_receivers"] if n <= max(cfg["receivers"])]
    total = groups * sum(per_group[d] for d in devices) + (len(net_cases) * (1 + len(net_variants)) if net_variants else 0)
    print(f"weightsync bench: {info['cpu']}, {info['cores']} cores, torch {info['torch']}, "
          f"torchrl {info['torchrl'] or 'not installed'}; {total} cases{' (quick)' if args.quick else ''}", flush=True)

    # A parallel copy waits for every OpenMP thread; on a machine whose cores the receivers
    # keep busy, one descheduled thread costs a scheduler quantum (ms) and the figure
    # measures the scheduler. One thread per process is the default for that reason.
    torch.set_num_threads(args.threads)
    ctx = mp.get_context("spawn")
    t_start = time.perf_counter()
    started = slots = cast = None
    if not args.no_startup:  # before the pool, which would share the cores with it
        started = startup.measure(sorted({1, max(cfg["receivers"])}), tries=1 if args.quick else 3)
        print(f"start-up: import torch {started['import_s']['torch']:.2f} s, weightsync adds "
              f"{started['import_added_s']:.2f} s; spawn, import and connect of N workers: "
              + ", ".join(f"{n}: {t:.2f} s" for n, t in started["connect_s"].items()), flush=True)
        slots = memory.measure(sorted({1, max(cfg["receivers"])}))
        print("slot memory: " + ", ".join(f"{n} workers: {k} slots, {b / 1e6:.0f} MB"
                                          for n, (k, b) in slots["rows"].items()), flush=True)
    pool = Pool(max(cfg["receivers"]), ctx)
    print(f"started {len(pool.procs)} worker processes in {time.perf_counter() - t_start:.1f} s", flush=True)
    cases: list[Case] = []
    done = [0]

    def record(case: Case, times=None, error: str = "") -> None:
        done[0] += 1
        if times:
            fill(case, times)
        if error:
            case.note = error
        cases.append(case)
        what = f"{fmt_params(case.params)} params x {case.tensors} tensors, {case.receivers} receivers, {case.device}"
        if error:
            result = error if error.startswith("not run:") else f"FAILED: {error}"
        else:
            result = f"p50 {case.p50 * 1e3:9.3f} ms  p90 {case.p90 * 1e3:9.3f} ms  ({case.reps} sends)"
        print(f"[{done[0]:3d}/{total}] {what:<45} {case.system:<26} {result}", flush=True)

    try:
        for device in devices:
            for p, lay in models:
                nt = layouts[lay]
                if device != "cpu" and not cuda_ok:  # the rows say so rather than vanish
                    for n in receivers_for(lay, cfg["receivers"]):
                        for system in [*FLOORS, *variants]:
                            record(Case(device, int(p), lay, min(nt, int(p)), int(p) * 4, n, system),
                                   error="this binding has no CUDA slots")
                    continue
                weights = model_weights(int(p), lay, device)
                for n in receivers_for(lay, cfg["receivers"]):
                    measure_group(pool, device, weights, int(p), lay, n, variants, use_queue, use_torchrl,
                                  (budget, lo, hi), record)
                del weights
        if net_variants:
            measure_network(pool, net_cases, net_variants, (budget, lo, hi), record)
        if not args.no_startup:  # the dtype path, from fp32 weights (LAYOUT-3)
            cast = casts.measure(pool, int(1e6 if args.quick else 1e7), sorted({1, max(cfg["receivers"])}),
                                 (budget, lo, hi))
            print("dtype path: " + "; ".join(f"{n} workers: " + ", ".join(f"{k} {v * 1e3:.2f} ms" for k, v in row.items())
                                            for n, row in cast["rows"].items()), flush=True)
    except KeyboardInterrupt:
        print("interrupted: writing what was measured", file=sys.stderr)
    finally:
        pool.close()
    elapsed = time.perf_counter() - t_start
    cases[:] = in_column_order(cases)
    targets = evaluate(cases)
    results = {
        "machine": info,
        "config": {**{k: list(v) if isinstance(v, tuple) else v for k, v in cfg.items()}, "quick": bool(args.quick),
                   "layouts": layouts, "systems": [*FLOORS, *variants, *(["queue"] if use_queue else []),
                                                   *(["torchrl"] if use_torchrl else []),
                                                   *([network.FLOOR, *net_variants] if net_variants else [])]},
        "command": " ".join(["python -m weightsync bench", *argv_shown(args)]),
        "elapsed_s": round(elapsed, 1),
        "startup": started,
        "memory": slots,
        "casts": cast,
        "cases": [json_safe({**asdict(c), "throughput": c.throughput}) for c in cases],
        "targets": targets,
    }
    (out / "results.json").write_text(json.dumps(results, indent=1, allow_nan=False) + "\n")
    plots = plot(cases, out)
    (out / "results.md").write_text(markdown(results, plots))
    print(f"done in {elapsed:.0f} s; wrote {out / 'results.md'}, {out / 'results.json'} and {len(plots)} plots")
    for t in targets:
        print(f"  target {t['name']}: {t['value']} (limit {t['limit']}) {t['verdict']}")
    for line in in_words(cases):
        print(f"  {line}")
    return 0
