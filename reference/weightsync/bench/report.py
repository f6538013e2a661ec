"""What a run writes: results.json (the raw figures) and results.md (the tables).

results.md wraps its tables between `--8<-- [start:tables]` and `--8<-- [end:tables]`
markers, which docs/benchmark.md uses to include them; the plots stay outside, since the
page shows its own. Both files come from the same results dict, so the markdown can be
remade from a results.json.
"""

from __future__ import annotations

import datetime
import math
import os
import platform

import torch

from . import casts, memory, network, startup
from .baselines import torchrl_version
from .cases import LAYOUTS, LLM_LAYOUTS, Case, fmt_params, lookup
from .systems import COLUMNS, VARIANTS, best_weightsync


def json_safe(row: dict) -> dict:
    """NaN (a case that did not run, a throughput that does not apply) becomes null."""
    return {k: None if isinstance(v, float) and math.isnan(v) else v for k, v in row.items()}


def machine() -> dict:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "gpu": gpu,
        "os": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
        "torch": torch.__version__,
        "torchrl": torchrl_version(),
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
    }


def _ms(c: Case | None) -> str:
    if c is None:
        return "-"
    return f"{c.p50 * 1e3:.3f}" if c.p50 < 1 else f"{c.p50 * 1e3:.0f}"


def _groups(cases: list[Case], device: str) -> list[tuple]:
    """(params, layout, tensors, receivers) of the device's cases, by layout (fewest tensors first)."""
    order = {name: i for i, name in enumerate(LAYOUTS)}
    keys = {(c.params, c.layout, c.tensors, c.receivers) for c in cases if c.device == device}
    return sorted(keys, key=lambda k: (order.get(k[1], len(order)), k[1], k[0], k[3]))


def _network_table(cases: list[Case], idx: dict) -> list[str]:
    """Send latency over TCP and gloo next to the raw gloo transfer of the same bytes (the floor)."""
    keys = sorted({(c.params, c.tensors, c.receivers) for c in cases if c.device == "tcp"})
    if not keys:
        return []
    cols = [network.FLOOR, *network.VARIANTS]
    lines = ["", "### Across machines: TCP channel, gloo data plane (127.0.0.1), p50 ms and ratio to the floor", "",
             "| params | tensors | receivers | " + " | ".join(cols) + " | "
             + " | ".join(f"{s.removeprefix('weightsync ')} / gloo" for s in network.VARIANTS) + " |",
             "|---:|---:|---:|" + "---:|" * (len(cols) + len(network.VARIANTS))]
    for p, nt, n in keys:
        k = ("tcp", p, "few", n)
        floor = idx.get((*k, network.FLOOR))
        ratios = [f"{idx[(*k, s)].p50 / floor.p50:.2f}" if floor and (*k, s) in idx else "-" for s in network.VARIANTS]
        lines.append(f"| {fmt_params(p)} | {nt} | {n} | " + " | ".join(_ms(idx.get((*k, s))) for s in cols)
                     + " | " + " | ".join(ratios) + " |")
    return lines


_LLM_NAMES = {"llm": "dense, 24 layers", "moe": "experts, 16 layers x 60"}
_LLM_COLS = [("copy", "copy"), ("weightsync push zero-copy", "push zero-copy"),
             ("weightsync pull zero-copy", "pull zero-copy"), ("weightsync push", "push (copying)"),
             ("weightsync pull", "pull (copying)"), ("weightsync push zero-copy packed", "packed"),
             ("torchrl", "TorchRL"), ("queue", "Queue")]


def _short(system: str) -> str:
    """A column's name in a table of weightsync variants: the mode, without the package's name."""
    return system.removeprefix("weightsync ")


def _llm_table(cases: list[Case], idx: dict) -> list[str]:
    """The LLM-shaped models first, with the three ratios a user choosing a mode reads."""
    lines: list[str] = []
    for device in sorted({c.device for c in cases if c.layout in LLM_LAYOUTS}):
        keys = sorted({(c.layout, c.params, c.tensors, c.receivers) for c in cases
                       if c.device == device and c.layout in LLM_LAYOUTS})
        lines += ["", f"### LLM-shaped models, bf16, {device} (p50 ms)", "",
                  "Zero-copy workers read the sender's slot in place: a send costs about one copy of the model "
                  "whatever the number of workers. Copying workers each copy the slot again into their own "
                  "weights, in parallel. `zero-copy / (copy+pipe)` is the price of consistency over the floor; "
                  "`copying / zero-copy` what copying workers cost; `TorchRL / zero-copy` above 1 means weightsync "
                  "is faster.", "",
                  "| model | params | tensors | receivers | " + " | ".join(name for _, name in _LLM_COLS)
                  + " | zero-copy / (copy+pipe) | copying / zero-copy | TorchRL / zero-copy |",
                  "|---|---:|---:|---:|" + "---:|" * (len(_LLM_COLS) + 3)]
        for lay, p, nt, n in keys:
            k = (device, p, lay, n)
            zc, copying = idx.get((*k, "weightsync push zero-copy")), idx.get((*k, "weightsync push"))
            copy, pipe, trl = idx.get((*k, "copy")), idx.get((*k, "pipe")), idx.get((*k, "torchrl"))
            ratios = [f"{zc.p50 / (copy.p50 + pipe.p50):.2f}" if zc and copy and pipe else "-",
                      f"{copying.p50 / zc.p50:.2f}" if zc and copying else "-",
                      f"{trl.p50 / zc.p50:.2f}" if zc and trl else "-"]
            lines.append(f"| {_LLM_NAMES.get(lay, lay)} | {fmt_params(p)} | {nt} | {n} | "
                         + " | ".join(_ms(idx.get((*k, s))) for s, _ in _LLM_COLS) + " | " + " | ".join(ratios) + " |")
    return lines


def in_words(cases: list[Case]) -> list[str]:
    """One sentence per LLM-shaped model (its largest size, most receivers, per device) for a reader choosing a mode."""
    idx = lookup(cases)
    out = []
    for device in sorted({c.device for c in cases if c.layout in LLM_LAYOUTS}):
        for lay in LLM_LAYOUTS:
            got = [c for c in cases if c.device == device and c.layout == lay and c.system == "weightsync push zero-copy"
                   and c.p50 == c.p50]
            if not got:
                continue
            zc = max(got, key=lambda c: (c.params, c.receivers))
            k = (device, zc.params, lay, zc.receivers)
            copy, copying, trl = idx.get((*k, "copy")), idx.get((*k, "weightsync push")), idx.get((*k, "torchrl"))
            line = (f"{_LLM_NAMES[lay].capitalize()} ({fmt_params(zc.params)} bf16 parameters in {zc.tensors} tensors) "
                    f"to {zc.receivers} workers on {device}: a zero-copy send takes {_ms(zc)} ms")
            if copy:
                line += f", {zc.p50 / copy.p50:.2f}x one plain copy of its bytes"
            if copying:
                line += (f"; copying workers take {_ms(copying)} ms ({copying.p50 / zc.p50:.1f}x: each copies the "
                         "slot again into its own weights)")
            if trl:
                line += (f"; TorchRL's SharedMem takes {_ms(trl)} ms ({trl.p50 / zc.p50:.1f}x weightsync zero-copy), "
                         "and its workers may read a half-written update")
            out.append(line + ".")
    return out


def markdown(results: dict, plots: list[str] | None) -> str:
    """results.md; `plots` are the PNGs beside it, None when matplotlib could not draw them."""
    m = results["machine"]
    cases = [Case(**{k: (math.nan if v is None and k in ("p50", "p90") else v)  # type: ignore[arg-type]  # JSON fields
                     for k, v in c.items() if k != "throughput"}) for c in results["cases"]]
    idx = lookup(cases)
    failed = [c for c in cases if c.note]
    lines = [
        "# weightsync benchmark results",
        "",
        "<!-- --8<-- [start:tables] -->",
        f"Machine: {m['cpu']}, {m['cores']} cores, GPU {m['gpu'] or 'none'}; {m['os']}; Python {m['python']}, "
        f"torch {m['torch']}, torchrl {m['torchrl'] or 'not installed'}; torch threads: sender "
        f"{m.get('sender_threads', '?')}, receivers 1. Run {m['date']}: "
        f"`{results['command']}`, {results['elapsed_s']:.0f} s.",
        "",
        "### Targets",
        "",
        "| Target | Value | Limit | Verdict | Detail |",
        "|---|---|---|---|---|",
    ]
    for t in results["targets"]:  # one not measured says why instead of how it is taken
        if t["value"] is None:
            lines.append(f"| {t['name']} | - | {t['limit']} | {t['verdict']} | {t.get('reason') or t['detail']} |")
        else:
            lines.append(f"| {t['name']} | {t['value']} | {t['limit']} | {t['verdict']} | {t['detail'] or ''} |")
    lines += _llm_table(cases, idx)
    words = in_words(cases)
    if words:
        lines += ["", *[f"- {w}" for w in words]]
    if results.get("startup"):
        lines += ["", *startup.markdown(results["startup"])]
    if results.get("memory"):
        lines += ["", *memory.markdown(results["memory"])]
    if results.get("casts"):
        lines += ["", *casts.markdown(results["casts"])]
    present = [s for s in COLUMNS if any(c.system == s for c in cases)]
    ws_cols = [s for s in VARIANTS if s in present]
    for device in sorted({c.device for c in cases} - {"tcp"}):
        groups = _groups(cases, device)
        lines += ["", f"### Send latency p50, {device} (ms)", "",
                  "`copy`, `tensor copy`, `pipe` and `copy then pipe` (the two timed as one sequence) are the "
                  "floors; the weightsync variants are named by mode "
                  "(`push`, `pull`; `zero-copy` workers read the slot in place; `packed`: weights made by "
                  "`weightsync.pack`); `queue` and `torchrl` are the baselines.", "",
                  "| params | tensors | receivers | " + " | ".join(_short(s) for s in present) + " |",
                  "|---:|---:|---:|" + "---:|" * len(present)]
        for p, lay, nt, n in groups:
            row = [_ms(idx.get((device, p, lay, n, s))) for s in present]
            lines.append(f"| {fmt_params(p)} | {nt} | {n} | " + " | ".join(row) + " |")
        lines += ["", f"### Ratios, {device}", "",
                  "Each weightsync p50 over its floors, one table each: over a pipe round trip (what a notification "
                  "costs), then over a plain copy of the bytes plus the round trip. `queue / ws` and `torchrl / ws` are "
                  "a baseline's p50 over the fastest weightsync variant (above 1: weightsync is faster). Throughput is "
                  "bytes delivered per second (model bytes x receivers / p50) of the fastest variant."]
        for floor in ("pipe", "(copy+pipe)"):
            lines += ["", "| params | tensors | receivers | " + " | ".join(f"{_short(s)} / {floor}" for s in ws_cols)
                      + (" | queue / ws | torchrl / ws | GB/s |" if floor == "pipe" else " |"),
                      "|---:|---:|---:|" + "---:|" * (len(ws_cols) + (3 if floor == "pipe" else 0))]
            for p, lay, nt, n in groups:
                k = (device, p, lay, n)
                pipe, copy, best = idx.get((*k, "pipe")), idx.get((*k, "copy")), best_weightsync(idx, k)
                if floor == "pipe":
                    row = [f"{idx[(*k, s)].p50 / pipe.p50:.2f}" if pipe and (*k, s) in idx else "-" for s in ws_cols]
                    row += [f"{idx[(*k, b)].p50 / best.p50:.2f}" if best and (*k, b) in idx else "-"
                            for b in ("queue", "torchrl")]
                    row.append(f"{best.throughput / 1e9:.2f}" if best else "-")
                else:
                    row = [f"{idx[(*k, s)].p50 / (pipe.p50 + copy.p50):.2f}" if pipe and copy and (*k, s) in idx else "-"
                           for s in ws_cols]
                lines.append(f"| {fmt_params(p)} | {nt} | {n} | " + " | ".join(row) + " |")
    lines += _network_table(cases, idx)
    if failed:
        lines += ["", "### Cases that did not run", ""]
        lines += [f"- {c.device} {fmt_params(c.params)} params x {c.tensors} tensors, {c.receivers} receivers, "
                  f"{c.system}: {c.note}" for c in failed]
    lines.append("<!-- --8<-- [end:tables] -->")
    if plots:
        lines += ["", "### Plots", ""] + [f"![{p}]({p})" for p in plots]
    elif plots is None:
        lines += ["", "### Plots", "", "None: matplotlib was not installed for this run "
                  "(`pip install matplotlib`, or the `bench` extra)."]
    return "\n".join(lines) + "\n"
