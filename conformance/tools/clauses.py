"""The clause inventory over several runs: which clauses no run of one implementation exercised.

    python conformance/tools/clauses.py REPORT.json [REPORT.json ...] [--strict]

One run of the suite exercises only the clauses its subject lets it reach: a run of a module
(`--impl`) never reads a sender's frames with a scripted receiver, a run of a sender program
(`--sender-cmd`) never calls the binding. Give it the JSON reports (`--conformance-json`) of the
runs of one implementation, each role it has: it prints how many clauses of the inventory the
runs exercised together, and each clause none of them did, with its condition (and, where the
inventory says why no test makes it true yet, that too). Clauses no test can observe are left
out, as in one run's report. With `--strict` it exits 1 when any clause is left.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run as a script from a checkout
from conformance.clauses import never, never_line  # noqa: E402


def merged(reports: list[dict]) -> dict[str, dict]:
    """Clause -> its entry in the first report, `exercised` true where any report exercised it and `runs` the
    number that did. Every report must come from the same inventory (the same clause IDs)."""
    out: dict[str, dict] = {}
    for i, report in enumerate(reports):
        clauses = report.get("clauses") or {}
        if out and set(clauses) != set(out):
            raise ValueError(f"report {i + 1} was made with another clause inventory "
                             f"({len(set(clauses) ^ set(out))} clause IDs differ): compare runs of one suite")
        for cid, entry in clauses.items():
            row = out.setdefault(cid, {**entry, "exercised": False, "runs": 0})
            if entry.get("exercised"):
                row["exercised"] = True
                row["runs"] += 1
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("reports", nargs="+", type=Path, help="JSON reports (--conformance-json) of runs of one subject")
    p.add_argument("--strict", action="store_true", help="exit 1 if any clause was exercised by no run")
    args = p.parse_args(argv)
    reports = []
    for path in args.reports:
        data = json.loads(path.read_text())
        if not data.get("clauses"):
            print(f"{path}: no clauses in this report (a suite without spec/clauses/, or a run that ended early)",
                  file=sys.stderr)
            return 2
        reports.append(data)
    try:
        result = merged(reports)
    except ValueError as e:
        print(e, file=sys.stderr)
        return 2
    left = never(result)
    print(f"clauses exercised by {len(reports)} run(s) together: {len(result) - len(left)} of {len(result)}")
    for cid in left:
        print(never_line(cid, result[cid]))
    return 1 if args.strict and left else 0


if __name__ == "__main__":
    sys.exit(main())
