"""Run the conformance suite (or any command) beside CPU-bound busy processes, to prove its verdicts hold.

    python conformance/tools/under_load.py                     # 5 runs against the reference, 6 busy processes
    python conformance/tools/under_load.py --runs 3 --impl tests.mutants.torn_write
    python conformance/tools/under_load.py -- python -m pytest -m slow -n 2     # any command, once

A correct implementation must never be reported violated, however busy the machine: a
slow machine may make a run inconclusive (exit status 6), never wrong. Each run's JSON
report is kept under --out; the summary gives wall time, timescale, outcomes and the
requirements named violated or inconclusive per run.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def busy() -> None:
    """Burns a core until its parent is gone: a run stopped by SIGKILL leaves no busy process behind."""
    parent = os.getppid()
    while os.getppid() == parent:
        for _ in range(1_000_000):
            pass


def _stop(signum, frame) -> None:
    raise SystemExit(128 + signum)  # SIGTERM ends the run as Ctrl-C does: the suite's run and the busy ones end


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--busy", type=int, default=6, help="CPU-bound processes beside the run (default 6)")
    p.add_argument("--runs", type=int, default=5, help="suite runs (default 5)")
    p.add_argument("--impl", default="weightsync", help="--impl of the suite (default weightsync)")
    p.add_argument("--out", default="under-load", help="folder for the JSON reports (default ./under-load)")
    p.add_argument("command", nargs="*", help="after --: a command to run once instead of the suite")
    args = p.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT / "reference"), str(ROOT),
                                                                   os.environ.get("PYTHONPATH", "")])))
    signal.signal(signal.SIGTERM, _stop)
    hogs = [mp.get_context("spawn").Process(target=busy, daemon=True) for _ in range(args.busy)]
    for h in hogs:
        h.start()
    rows, worst = [], 0
    try:
        if args.command:
            t0 = time.monotonic()
            rc = subprocess.call(args.command, cwd=ROOT, env=env)
            print(f"under {args.busy} busy processes: exit {rc} in {time.monotonic() - t0:.0f} s")
            return rc
        for k in range(1, args.runs + 1):
            report = out.resolve() / f"run{k}.json"
            t0 = time.monotonic()
            proc = subprocess.run([sys.executable, "-m", "pytest", "conformance", f"--impl={args.impl}", "-q",
                                   "-p", "no:cacheprovider", f"--conformance-json={report}"],
                                  cwd=ROOT, env=env, capture_output=True, text=True)
            wall = time.monotonic() - t0
            (out / f"run{k}.log").write_text(proc.stdout + proc.stderr)
            data = json.loads(report.read_text()) if report.exists() else {}
            counts: dict[str, int] = {}
            for t in data.get("tests", {}).values():
                counts[t["outcome"]] = counts.get(t["outcome"], 0) + 1
            # The tests, not only the requirements: a requirement that other tests passed is not listed as
            # inconclusive, so the inconclusive tests are what tells which bound a run could not judge.
            unsure = sorted(n.rsplit("/", 1)[-1] for n, t in data.get("tests", {}).items()
                            if t["outcome"] == "inconclusive")
            rows.append((k, proc.returncode, wall, data.get("timescale"), counts, data.get("violated"),
                         data.get("inconclusive"), unsure))
            worst = max(worst, 1 if proc.returncode == 1 else 0)
            print(f"run {k}: exit {proc.returncode}, {wall:.0f} s, timescale {data.get('timescale')}, {counts}, "
                  f"violated {data.get('violated')}, inconclusive {data.get('inconclusive')}"
                  + (f", inconclusive tests {unsure}" if unsure else ""), flush=True)
    finally:
        for h in hogs:
            h.kill()
    (out / "summary.json").write_text(json.dumps(rows, indent=1))
    return worst


if __name__ == "__main__":
    sys.exit(main())
