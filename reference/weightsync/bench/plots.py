"""The latency plots: one PNG per device and layout, when matplotlib is installed.

Each shows send latency p50 against model size, log-log, one panel per receiver count
(two a row) and one line per system, the floors dashed, the legend below the panels. matplotlib is the benchmark's only optional
dependency (the `bench` extra); without it a run writes its tables and no plots.
"""

from __future__ import annotations

import sys
from pathlib import Path

from . import network
from .cases import LAYOUTS, LLM_LAYOUTS, Case
from .systems import COLUMNS


def plot(cases: list[Case], out: Path) -> list[str]:
    """Writes the plots under `out`; returns their file names."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no plots (pip install 'weightsync[bench]')", file=sys.stderr)
        return []
    names = []
    good = [c for c in cases if c.p50 == c.p50]
    order = [*COLUMNS, network.FLOOR, *network.VARIANTS]  # every system, the network ones included
    floors = ("copy", "tensor copy", "pipe", network.FLOOR)
    for device in sorted({c.device for c in good}):
        for lay in sorted({c.layout for c in good if c.device == device}):
            sub = [c for c in good if c.device == device and c.layout == lay]
            recv = sorted({c.receivers for c in sub})
            systems = [s for s in order if any(c.system == s for c in sub)]
            cols = min(2, len(recv))  # at most two panels a row: each stays readable in a page's width
            rows = -(-len(recv) // cols)
            fig, axes = plt.subplots(rows, cols, figsize=(5.5 * cols, 4 * rows + 0.8), sharey=True, squeeze=False)
            for k, n in enumerate(recv):
                ax = axes[k // cols][k % cols]
                for system in systems:
                    pts = sorted((c.params, c.p50 * 1e3) for c in sub if c.receivers == n and c.system == system)
                    if pts:
                        ax.plot(*zip(*pts), "--" if system in floors else "-", marker="o", markersize=3,
                                label=system)
                ax.set_xscale("log")
                ax.set_yscale("log")
                ax.set_title(f"{n} receiver{'s' if n > 1 else ''}")
                ax.set_xlabel(f"parameters ({sub[0].dtype})")
                ax.set_ylabel("send latency p50 (ms)")
                ax.grid(True, which="major", alpha=0.3)
            for k in range(len(recv), rows * cols):
                axes[k // cols][k % cols].set_visible(False)
            handles, labels = axes[0][0].get_legend_handles_labels()
            fig.legend(handles, labels, loc="lower center", ncol=min(len(labels), 5), fontsize=8, frameon=False)
            shaped = " (LLM-shaped)" if lay in LLM_LAYOUTS else ""
            fig.suptitle(f"{device}, {LAYOUTS.get(lay, lay)} tensors per model{shaped}")
            fig.tight_layout(rect=(0, 0.07 if len(labels) <= 5 else 0.12, 1, 1))  # the legend below, off the data
            name = f"latency-{device}-{lay}.png"
            fig.savefig(out / name, dpi=110)
            plt.close(fig)
            names.append(name)
    return names
