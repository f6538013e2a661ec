"""The latency plots: one PNG per device and layout, when matplotlib is installed.

Each shows send latency p50 against model size, log-log, one panel per receiver count
and one line per system, the floors dashed. matplotlib is the benchmark's only optional
dependency (the `bench` extra); without it a run writes its tables and no plots.
"""

from __future__ import annotations

import sys
from pathlib import Path

from .cases import LAYOUTS, Case
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
    for device in sorted({c.device for c in good}):
        for lay in sorted({c.layout for c in good if c.device == device}):
            sub = [c for c in good if c.device == device and c.layout == lay]
            recv = sorted({c.receivers for c in sub})
            fig, axes = plt.subplots(1, len(recv), figsize=(4 * len(recv), 3.6), sharey=True, squeeze=False)
            for ax, n in zip(axes[0], recv):
                for system in COLUMNS:
                    pts = sorted((c.params, c.p50 * 1e3) for c in sub if c.receivers == n and c.system == system)
                    if pts:
                        style = "--" if system in ("copy", "pipe") else "-"
                        ax.plot(*zip(*pts), style, marker="o", markersize=3, label=system)
                ax.set_xscale("log")
                ax.set_yscale("log")
                ax.set_title(f"{n} receiver{'s' if n > 1 else ''}")
                ax.set_xlabel("parameters (float32)")
                ax.grid(True, which="major", alpha=0.3)
            axes[0][0].set_ylabel("send latency p50 (ms)")
            axes[0][-1].legend(fontsize=7)
            fig.suptitle(f"{device}, {LAYOUTS.get(lay, lay)} tensors per model")
            fig.tight_layout()
            name = f"latency-{device}-{lay}.png"
            fig.savefig(out / name, dpi=110)
            plt.close(fig)
            names.append(name)
    return names
