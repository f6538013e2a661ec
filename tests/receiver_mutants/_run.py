"""Runs the NumPy receiver program (interop/numpy/weightsync_numpy.py) with one line of its source replaced.

A mutant names the line it changes (`OLD`, which must occur exactly once: a mutant that no longer fits the
program fails at start, not for the wrong reason) and what replaces it (`NEW`).
"""

import sys
import types
from pathlib import Path

SOURCE = Path(__file__).resolve().parents[2] / "interop" / "numpy" / "weightsync_numpy.py"


def main(old: str, new: str) -> None:
    text = SOURCE.read_text()
    if text.count(old) != 1:
        sys.exit(f"receiver mutant out of date: {old!r} occurs {text.count(old)} times in {SOURCE}")
    module = types.ModuleType("weightsync_numpy")
    module.__file__ = str(SOURCE)
    sys.modules["weightsync_numpy"] = module
    exec(compile(text.replace(old, new), str(SOURCE), "exec"), module.__dict__)  # noqa: S102 - our own source
    sys.exit(module.main(sys.argv))
