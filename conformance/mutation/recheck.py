"""Run the survivors of a mutation run again, against the current suite and reference.

    python conformance/mutation/recheck.py tools/mutation/1.1/results.json --out tools/mutation/1.1/recheck.json

For each survivor of results.json (summarize.py's output) whose class is not "equivalent", its
recorded one-line diff is applied to a throw-away clone of this repository's HEAD (--clone,
default /tmp/weightsync-recheck) with `git apply` (falling back to `patch -F3`), the suite runs
as run.sh's test command runs it (`-x --conformance-profile=ci`, exit 6 = inconclusive, not a
kill), and the file is restored. A diff that no longer applies is recorded as such. The score of
the run is then re-stated with the survivors the current suite kills (summary at the end).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
VIOLATED = re.compile(r"^requirements violated: (.+)$", re.M)
FAILED = re.compile(r"^(?:FAILED|ERROR) (\S+)", re.M)


def run(cmd, cwd, **kw):
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, **kw)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("results")
    p.add_argument("--out", required=True)
    p.add_argument("--clone", default="/tmp/weightsync-recheck")
    p.add_argument("--only", nargs="*", help="ids (module:line:operator:occurrence) to re-check; default all")
    args = p.parse_args()
    res = json.loads(Path(args.results).read_text())
    todo = [s for s in res["survivors"] if s["class"] != "equivalent" and (not args.only or s["id"] in args.only)]
    clone = Path(args.clone)
    shutil.rmtree(clone, ignore_errors=True)
    run(["git", "clone", "-q", str(REPO), str(clone)], cwd="/", check=True)
    head = run(["git", "rev-parse", "--short", "HEAD"], cwd=clone).stdout.strip()
    env = dict(os.environ, PYTHONPATH=f"{clone / 'reference'}{os.pathsep}{clone}", PYTHONDONTWRITEBYTECODE="1")
    rows = []
    for s in todo:
        patch = clone / "mutant.diff"
        patch.write_text(s["diff"].split("--- mutation diff ---", 1)[-1].lstrip("\n"))
        applied = run(["git", "apply", "--recount", str(patch)], cwd=clone).returncode == 0 or \
            run(["patch", "-p1", "-F3", "-i", str(patch)], cwd=clone).returncode == 0
        patch.unlink()
        row = {"id": s["id"], "class_in_run": s["class"], "mutation": s["mutation"]}
        if not applied:
            rows.append({**row, "outcome": "no longer applies"})
            print(f"{s['id']}: no longer applies", flush=True)
            continue
        shutil.rmtree(clone / ".hypothesis", ignore_errors=True)
        t0 = time.monotonic()
        proc = run([sys.executable, "-m", "pytest", "conformance", "-x", "-q", "-p", "no:cacheprovider",
                    "--conformance-profile=ci"], cwd=clone, env=env, timeout=420)
        out = proc.stdout + proc.stderr
        v = VIOLATED.findall(out)
        outcome = {0: "survived", 6: "inconclusive"}.get(proc.returncode, "killed")
        rows.append({**row, "outcome": outcome, "exit": proc.returncode, "seconds": round(time.monotonic() - t0),
                     "requirements_violated": v[-1] if v else None, "first_failure": FAILED.findall(out)[:1]})
        print(f"{s['id']}: {outcome} ({rows[-1]['requirements_violated']})", flush=True)
        run(["git", "checkout", "-q", "--", "reference"], cwd=clone, check=True)
    killed_now = sum(r["outcome"] == "killed" for r in rows)
    score = res["score"]
    summary = {"suite_revision": head, "rechecked": len(rows), "killed_now": killed_now,
               "no_longer_applies": sum(r["outcome"] == "no longer applies" for r in rows),
               "score_in_run": score, "killed_with_recheck": score["killed_incl_timeouts"] + killed_now}
    summary["score_with_recheck"] = round(summary["killed_with_recheck"] / score["denominator"], 4)
    Path(args.out).write_text(json.dumps({"summary": summary, "rows": rows}, indent=1) + "\n")
    print(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
