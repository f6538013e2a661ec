"""Soak the state machine: many seeds, many examples each, some beside busy processes; count every verdict.

    python conformance/tools/soak.py                           # 30 seeds x 100 examples, the last third busy
    python conformance/tools/soak.py --seeds 5 --examples 20   # a short one
    python conformance/tools/soak.py --impl mypkg_shim --jobs 2 --busy 6 --busy-seeds 10

A false verdict of the model on a correct implementation is the worst thing the suite can do, and a
default run draws only 15 examples. This runs `test_protocol_state_machine` once per seed (each with
`--hypothesis-seed=SEED --conformance-examples=N`, no example database), `--jobs` seeds at a time,
with `--busy` CPU-bound processes beside the last `--busy-seeds` seeds. Each run's JSON report is kept
under --out; the summary gives per seed its outcome, examples, seconds and whether the machine was
busy, then the totals. Exit status 1 if any seed was violated, 6 if any was inconclusive, else 0.
A violated seed is reproduced by the command in its report (`--hypothesis-seed=SEED`).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import random
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TEST = "conformance/test_state_machine.py::test_protocol_state_machine"


def busy() -> None:
    while True:
        pass


def run_seed(seed: int, args, out: Path, env: dict, loaded: bool) -> dict:
    report = out / f"seed-{seed}.json"
    cmd = [sys.executable, "-m", "pytest", TEST, f"--impl={args.impl}", "-n", "0", "-q", "-p", "no:cacheprovider",
           f"--hypothesis-seed={seed}", f"--conformance-examples={args.examples}", f"--conformance-json={report}"]
    t0 = time.monotonic()
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=args.limit)
    wall = time.monotonic() - t0
    (out / f"seed-{seed}.log").write_text(proc.stdout + proc.stderr)
    row = {"seed": seed, "busy": loaded, "exit": proc.returncode, "seconds": round(wall, 1), "outcome": "error",
           "examples": 0, "blamed": [], "reason": None}
    if report.exists():
        test = json.loads(report.read_text())["tests"].get(TEST, {})
        row.update(outcome=test.get("outcome"), examples=test.get("properties", {}).get("examples", 0),
                   blamed=test.get("blamed", []), reason=(test.get("reason") or "")[:300] or None)
    return row


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--impl", default="weightsync", help="--impl of the suite (default weightsync)")
    p.add_argument("--seeds", type=int, default=30, help="distinct seeds (default 30)")
    p.add_argument("--first-seed", type=int, default=None, help="seeds are consecutive from this (default: random)")
    p.add_argument("--examples", type=int, default=100, help="state-machine examples per seed (default 100)")
    p.add_argument("--jobs", type=int, default=3, help="seeds run at once (default 3)")
    p.add_argument("--busy", type=int, default=4, help="CPU-bound processes beside the busy seeds (default 4)")
    p.add_argument("--busy-seeds", type=int, default=None, help="how many of the last seeds run busy (default a third)")
    p.add_argument("--limit", type=float, default=3600, help="seconds one seed's run may take (default 3600)")
    p.add_argument("--out", default="soak", help="folder for reports and logs (default ./soak)")
    args = p.parse_args()
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    first = args.first_seed if args.first_seed is not None else random.SystemRandom().randrange(2**30)
    seeds = list(range(first, first + args.seeds))
    n_busy = args.seeds // 3 if args.busy_seeds is None else args.busy_seeds
    quiet, loaded = seeds[: len(seeds) - n_busy], seeds[len(seeds) - n_busy:]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT / "reference"), str(ROOT),
                                                                   os.environ.get("PYTHONPATH", "")])),
               WEIGHTSYNC_CONFORMANCE_START="forkserver")  # workers start in ms after each SIGKILL
    print(f"soak of {args.impl}: seeds {first}..{first + args.seeds - 1}, {args.examples} examples each, "
          f"{args.jobs} at a time; the last {n_busy} beside {args.busy} busy processes", flush=True)
    rows: list[dict] = []
    t0 = time.monotonic()

    def run(group: list[int], is_busy: bool) -> None:
        with ThreadPoolExecutor(args.jobs) as ex:
            for row in ex.map(lambda s: run_seed(s, args, out, env, is_busy), group):
                rows.append(row)
                print(f"seed {row['seed']}: {row['outcome']}, {row['examples']} examples, {row['seconds']} s"
                      f"{' (busy)' if is_busy else ''}{': ' + row['reason'] if row['reason'] else ''}", flush=True)

    run(quiet, False)
    hogs = [mp.get_context("spawn").Process(target=busy, daemon=True) for _ in range(args.busy if loaded else 0)]
    for h in hogs:
        h.start()
    try:
        run(loaded, True)
    finally:
        for h in hogs:
            h.terminate()
    wall = time.monotonic() - t0
    total = sum(r["examples"] for r in rows)
    counts: dict[str, int] = {}
    for r in rows:
        counts[r["outcome"]] = counts.get(r["outcome"], 0) + 1
    summary = {"impl": args.impl, "seeds": seeds, "examples_per_seed": args.examples, "examples": total,
               "busy_seeds": loaded, "busy_processes": args.busy, "jobs": args.jobs, "seconds": round(wall),
               "outcomes": counts, "runs": rows}
    (out / "summary.json").write_text(json.dumps(summary, indent=2))
    print(f"\n{total} examples over {len(rows)} seeds ({len(loaded)} beside {args.busy} busy processes) in "
          f"{wall / 60:.1f} min: " + ", ".join(f"{n} {k}" for k, n in sorted(counts.items())), flush=True)
    if counts.get("violated") or counts.get("error"):
        return 1
    return 6 if counts.get("inconclusive") else 0


if __name__ == "__main__":
    sys.exit(main())
