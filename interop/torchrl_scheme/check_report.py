"""Compare a suite run against TorchRL's scheme with the verdicts on record in report.json.

    python interop/torchrl_scheme/check_report.py RUN.json [--report PATH]

RUN.json is the suite's `--conformance-json` of a run with `--impl=torchrl_scheme_binding`. CI's TorchRL
layer runs this after that run, since the run itself always exits 1 (TorchRL violates the spec).

Exit 1, printing each, for what needs a person: a requirement the run finds violated that report.json
does not record as violated (a new gap, or a suite change that blames something new), an inconclusive
test (the suite could not decide), and a run that was interrupted or holds no test. A requirement that
report.json records as violated and the run does not (it passed, or was not run) is printed as a note
only, exit 0: update report.json when it holds.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def first_line(text: str | None) -> str:
    return (text or "").strip().splitlines()[0][:200] if (text or "").strip() else ""


def compare(run: dict, recorded: dict) -> tuple[list[str], list[str]]:
    """(problems, notes): problems make the exit status 1, notes do not."""
    problems, notes = [], []
    tests = run.get("tests") or {}
    if run.get("interrupted"):
        problems.append("the run was interrupted: not every test ran")
    if not tests:
        problems.append("the run holds no test")
    for node, t in sorted(tests.items()):
        if t.get("outcome") == "inconclusive":
            problems.append(f"inconclusive: {node}: {first_line(t.get('reason'))}")
    was_violated = {rid for rid, r in recorded["requirements"].items() if r.get("status") == "violated"}
    now = run.get("requirements") or {}
    for rid, r in sorted(now.items()):
        if r.get("status") == "violated" and rid not in was_violated:
            by = r.get("violated_tests") or [n for n, t in tests.items() if rid in (t.get("blamed") or [])]
            why = [f"{n}: {first_line(tests.get(n, {}).get('reason'))}" for n in sorted(by)]
            problems.append(f"new violation: {rid}" + "".join(f"\n    {w}" for w in why))
    for rid in sorted(was_violated):
        status = (now.get(rid) or {}).get("status", "absent")
        if status != "violated":
            notes.append(f"note: {rid} is {status} in this run; report.json records it violated "
                         f"({recorded['requirements'][rid].get('observable', '')})")
    return problems, notes


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run", type=Path, help="the suite's --conformance-json of a run against the adapter")
    ap.add_argument("--report", type=Path, default=HERE / "report.json", help="the verdicts on record")
    args = ap.parse_args(argv)
    run = json.loads(args.run.read_text(encoding="utf-8"))
    recorded = json.loads(args.report.read_text(encoding="utf-8"))
    if run.get("impl") not in (None, "torchrl_scheme_binding"):
        print(f"note: the run judged --impl={run.get('impl')}, not torchrl_scheme_binding")
    problems, notes = compare(run, recorded)
    for line in notes + problems:
        print(line)
    if problems:
        print(f"{len(problems)} problem(s) against {args.report}")
        return 1
    print(f"as recorded: {sum(1 for r in run.get('requirements', {}).values() if r.get('status') == 'violated')} "
          f"requirements violated, none new, no inconclusive test")
    return 0


if __name__ == "__main__":
    sys.exit(main())
