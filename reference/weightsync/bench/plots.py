"""The latency plots: one PNG per device and layout, when matplotlib is installed.

Each shows send latency p50 (log scale: the systems span decades) with one line per
system, the floors dashed, the legend below the panels. A layout run at several sizes
(few, many, the LLM shapes) gets latency against model size, log-log, one panel per
receiver count (two a row). A layout run at one size (huge: 10,000 tensors at 1e6
parameters only; a narrowed run) gets latency against the receiver count in one panel,
so that each system is a line rather than a column of dots at one size; with one
receiver count too, one bar per system. matplotlib is the benchmark's only optional
dependency (the `bench` extra); without it a run writes its tables and says, in
`MISSING`, how to get the plots.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from . import network
from .cases import LAYOUTS, LLM_LAYOUTS, Case, fmt_params
from .systems import COLUMNS

#: The one line a run prints when it cannot draw.
MISSING = ("plots: none, matplotlib is not installed; pip install matplotlib (or the bench extra: "
           "pip install -e '.[bench]') draws them in the next run")

DASHED = ("copy", "tensor copy", "pipe", "copy then pipe", network.FLOOR)  # the floors
ORDER = [*COLUMNS, network.FLOOR, *network.VARIANTS]  # every system, the network ones included


def _pyplot() -> Any | None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    return plt


#: A colour per system, the same in every plot: a zero-copy variant dark, its copying twin light, floors dashed.
COLOURS = {"copy": "#1f77b4", "tensor copy": "#9ecae1", "pipe": "#ff7f0e", "copy then pipe": "#fdae6b",
           "weightsync push zero-copy": "#2ca02c", "weightsync push": "#98df8a", "weightsync pull zero-copy": "#d62728",
           "weightsync pull": "#ff9896", "weightsync push zero-copy packed": "#9467bd", "queue": "#7f7f7f",
           "torchrl": "#8c564b", network.FLOOR: "#1f77b4", "weightsync tcp push zero-copy": "#2ca02c",
           "weightsync tcp push": "#98df8a"}


def _styles(systems: list[str]) -> dict[str, dict]:
    """One colour and marker per system, kept across panels and plots; the floors dashed."""
    markers = "os^vD<>ph*XP8d"
    return {s: dict(color=COLOURS.get(s, "black"), marker=markers[ORDER.index(s) % len(markers)] if s in ORDER else "o",
                    markersize=4, linestyle="--" if s in DASHED else "-", linewidth=1.2 if s in DASHED else 1.6)
            for s in systems}


def _ms_ticks(axis, values: list[float]) -> None:
    """Tick labels in plain ms (0.01, 1, 100) on a log axis; the minor ticks labelled too where the values
    span less than a decade, which would otherwise show no label or 6x10^1."""
    from matplotlib.ticker import FuncFormatter, NullFormatter

    plain = FuncFormatter(lambda v, _: f"{v:g}")
    axis.set_major_formatter(plain)
    axis.set_minor_formatter(plain if values and max(values) < 10 * min(values) else NullFormatter())


def _null_locator() -> Any:
    from matplotlib.ticker import NullLocator

    return NullLocator()


def _ylabel(ax) -> None:
    ax.set_ylabel("send latency p50 (ms, log)")
    ax.grid(True, which="major", alpha=0.35)
    ax.grid(True, which="minor", axis="y", alpha=0.12)


def _by_size(plt, sub: list[Case], systems: list[str], style: dict) -> Any:
    """Latency against model size, one panel per receiver count."""
    recv = sorted({c.receivers for c in sub})
    cols = min(2, len(recv))  # at most two panels a row: each stays readable in a page's width
    rows = -(-len(recv) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(5.5 * cols, 4 * rows + 1.0), sharey=True, squeeze=False)
    for k, n in enumerate(recv):
        ax = axes[k // cols][k % cols]
        for system in systems:
            pts = sorted((c.params, c.p50 * 1e3) for c in sub if c.receivers == n and c.system == system)
            if pts:
                ax.plot(*zip(*pts), label=system, **style[system])
        ax.set_xscale("log")
        ax.set_yscale("log")
        sizes = sorted({c.params for c in sub})
        ax.set_xticks(sizes, [fmt_params(p) for p in sizes])
        ax.xaxis.set_minor_locator(_null_locator())
        _ms_ticks(ax.yaxis, [c.p50 * 1e3 for c in sub])
        ax.set_title(f"{n} receiver{'s' if n > 1 else ''}")
        ax.set_xlabel(f"model size (parameters, {sub[0].dtype}, log)")
        _ylabel(ax)
    for k in range(len(recv), rows * cols):
        axes[k // cols][k % cols].set_visible(False)
    return fig


def _by_receivers(plt, sub: list[Case], systems: list[str], style: dict) -> Any:
    """One model size: latency against the receiver count, one panel."""
    recv = sorted({c.receivers for c in sub})
    fig, ax = plt.subplots(figsize=(8, 5.2))
    for system in systems:
        pts = sorted((c.receivers, c.p50 * 1e3) for c in sub if c.system == system)
        if pts:
            ax.plot(*zip(*pts), label=system, **style[system])
    ax.set_xscale("log", base=2)
    ax.set_xticks(recv, [str(n) for n in recv])
    ax.xaxis.set_minor_locator(_null_locator())
    ax.set_yscale("log")
    _ms_ticks(ax.yaxis, [c.p50 * 1e3 for c in sub])
    ax.set_xlabel("receivers (worker processes)")
    ax.set_title(f"{fmt_params(sub[0].params)} parameters ({sub[0].dtype})", fontsize=10)
    _ylabel(ax)
    return fig


def _bars(plt, sub: list[Case], systems: list[str], style: dict) -> Any:
    """One model size to one receiver count: one bar per system."""
    fig, ax = plt.subplots(figsize=(8, 0.4 * len(systems) + 1.6))
    got = [(s, next(c.p50 * 1e3 for c in sub if c.system == s)) for s in systems]
    bars = ax.barh([s for s, _ in got], [v for _, v in got], color=[style[s]["color"] for s, _ in got])
    ax.bar_label(bars, labels=[f"{v:.3g} ms" for _, v in got], padding=3, fontsize=8)  # a log bar's length says little
    ax.set_xlim(min(v for _, v in got) / 3, max(v for _, v in got) * 3)
    ax.invert_yaxis()
    ax.set_xscale("log")
    _ms_ticks(ax.xaxis, list(ax.get_xlim()))
    ax.set_xlabel("send latency p50 (ms, log)")
    ax.grid(True, axis="x", which="major", alpha=0.35)
    c = sub[0]
    ax.set_title(f"{fmt_params(c.params)} parameters ({c.dtype}), {c.receivers} receiver{'s' if c.receivers > 1 else ''}",
                 fontsize=10)
    return fig


def plot(cases: list[Case], out: Path) -> list[str] | None:
    """Writes the plots under `out`; returns their file names, or None when matplotlib is not installed."""
    plt = _pyplot()
    if plt is None:
        return None
    names = []
    good = [c for c in cases if c.p50 == c.p50]
    for device in sorted({c.device for c in good}):
        for lay in sorted({c.layout for c in good if c.device == device}):
            sub = [c for c in good if c.device == device and c.layout == lay]
            systems = [s for s in ORDER if any(c.system == s for c in sub)]
            style = _styles(systems)
            one_size, one_count = len({c.params for c in sub}) == 1, len({c.receivers for c in sub}) == 1
            if not one_size:
                fig = _by_size(plt, sub, systems, style)
            elif not one_count:
                fig = _by_receivers(plt, sub, systems, style)
            else:
                fig = _bars(plt, sub, systems, style)
            shaped = " (LLM-shaped)" if lay in LLM_LAYOUTS else ""
            tensors = f"{LAYOUTS[lay]:,}" if lay in LAYOUTS else lay
            fig.suptitle(f"{device}: {tensors} tensors per model{shaped}, send latency by system")
            if one_size and one_count:  # the bars name their systems
                fig.tight_layout()
            else:  # the legend below the panels, off the data
                handles, labels = fig.axes[0].get_legend_handles_labels()
                ncol = min(len(labels), 4)
                fig.legend(handles, labels, loc="lower center", ncol=ncol, fontsize=8, frameon=False)
                legend_rows = -(-len(labels) // ncol)
                fig.tight_layout(rect=(0, min(0.3, 0.03 + 0.035 * legend_rows * (5.2 / fig.get_figheight())), 1, 1))
            name = f"latency-{device}-{lay}.png"
            fig.savefig(out / name, dpi=110)
            plt.close(fig)
            names.append(name)
    return names
