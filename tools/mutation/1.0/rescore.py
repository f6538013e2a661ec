"""Re-run the "gap" survivors of the cosmic-ray run against the current suite.

    python conformance/mutation/rescore.py [--repo /tmp/rescore] [--out rescore.json]
                                           [--wait-file /tmp/go-mutants] [--wait-max 2400]

The mutation run (results.json) was made against revision 8b9743d. This script takes
every survivor classified "gap" there, applies its one-line mutation to the *current*
reference in a throw-away clone (``--repo``, made with ``git clone -q <this repo> REPO``),
runs the current conformance suite once per mutant, and restores the file with
``git checkout`` after each run.

Applying a mutation: the removed line of the recorded diff ("- ...") is looked up by its
exact text in the current module; if it occurs more than once, the occurrence nearest
the recorded line number is taken; if it no longer occurs, the mutant is recorded as
"no longer applies" and not run. That line is replaced by the diff's added line
("+ ..."), and ``git diff --numstat`` must then show exactly one line changed. As a
cross-check, ``patch --dry-run -p1 -F3`` is run with the recorded diff and where it
would apply the hunk is stored next to the chosen line.

Test command (per mutant, and once unmutated as the baseline, which must pass; a failing
baseline is re-run once), in REPO with PYTHONPATH=REPO/reference:REPO:

    rm -rf .hypothesis && timeout 300 python -m pytest conformance -x -q \
        -p no:cacheprovider --conformance-profile=ci

non-zero exit = killed (124 = killed by the 300 s timeout). The line starting with
"requirements violated:" and the first FAILED/ERROR line of the output are recorded.
Each run gets its own process group, which is killed after the run in case a worker
process outlived pytest.

Before the first run the script waits for --wait-file (checked every 60 s, up to
--wait-max seconds): the machine is shared with a CI run that creates it when done.

Score: killed = 98 (the original run's kills, timeouts included) + gaps killed now;
denominator 126 = 170 sampled - 5 incompetent - 38 equivalent - 1 unreachable; gaps that
no longer apply are counted as neither, so the score is also given with them taken out
of the denominator.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
TEST_CMD = (
    "rm -rf .hypothesis && timeout 300 python -m pytest conformance -x -q "
    "-p no:cacheprovider --conformance-profile=ci"
)
ORIGINAL_KILLED = 98  # 96 killed + 2 timeouts in results.json
ORIGINAL_DENOMINATOR = 126  # 170 - 5 incompetent - 38 equivalent - 1 unreachable
HUNK_RE = re.compile(r"Hunk #1 succeeded at (\d+)(?: with fuzz \d+)?(?: \(offset (-?\d+) lines?\))?")


def now() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout


def env_for(repo: Path) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = f"{repo}/reference:{repo}"
    return env


def module_path(repo: Path, module: str) -> Path:
    return repo / "reference" / "weightsync" / module


def locate(repo: Path, s: dict) -> dict:
    """Where the survivor's removed line is in the current module (or why it is not)."""
    removed, added = s["mutation"][0][1:], s["mutation"][1][1:]
    rel = f"reference/weightsync/{s['module']}"
    lines = module_path(repo, s["module"]).read_text().splitlines()
    hits = [i + 1 for i, ln in enumerate(lines) if ln == removed]
    where = {"removed": removed, "added": added, "file": rel, "matches": hits}
    if not hits:
        where["applies"] = False
    else:
        where["applies"] = True
        where["line_now"] = min(hits, key=lambda n: (abs(n - s["line"]), n))
    # Cross-check: where patch(1) would put the recorded hunk (fuzz up to 3).
    diff = s["diff"].split("\n", 1)[1] if s["diff"].startswith("--- mutation diff ---") else s["diff"]
    p = subprocess.run(
        ["patch", "--dry-run", "-p1", "-F3", "-f"],
        cwd=repo, input=diff + "\n", capture_output=True, text=True,
    )
    m = HUNK_RE.search(p.stdout)
    where["patch_dry_run"] = {
        "rc": p.returncode,
        # the recorded line moved by patch's offset (no "Hunk" line: applied where recorded)
        "line_at": (s["line"] + int(m.group(2) or 0) if m else s["line"]) if p.returncode == 0 else None,
        "output": p.stdout.strip().splitlines()[-1] if p.stdout.strip() else "",
    }
    return where


def apply(repo: Path, s: dict, where: dict) -> None:
    path = module_path(repo, s["module"])
    text = path.read_text()
    lines = text.split("\n")
    i = where["line_now"] - 1
    assert lines[i] == where["removed"], (lines[i], where["removed"])
    lines[i] = where["added"]
    path.write_text("\n".join(lines))
    numstat = git(repo, "diff", "--numstat").split()
    assert numstat[:2] == ["1", "1"] and numstat[2] == where["file"] and len(numstat) == 3, numstat


def restore(repo: Path, s: dict) -> None:
    git(repo, "checkout", "--", f"reference/weightsync/{s['module']}")
    assert git(repo, "status", "--porcelain", "--", "reference").strip() == "", "reference not restored"


def run_suite(repo: Path) -> dict:
    t0 = time.monotonic()
    proc = subprocess.Popen(
        ["bash", "-c", TEST_CMD], cwd=repo, env=env_for(repo),
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True,
    )
    out, _ = proc.communicate()
    wall = time.monotonic() - t0
    try:  # anything of this run still alive (a worker that outlived a timed-out pytest)
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    violated = next((ln.strip() for ln in out.splitlines() if ln.startswith("requirements violated:")), None)
    failed = next((ln.strip() for ln in out.splitlines() if ln.startswith(("FAILED ", "ERROR "))), None)
    summary = next((ln.strip() for ln in reversed(out.splitlines()) if re.search(r"\d+ (passed|failed|error)", ln)), None)
    return {
        "rc": proc.returncode,
        "killed": proc.returncode != 0,
        "timeout": proc.returncode in (124, 137),
        "violated_line": violated,
        "first_failure": failed,
        "summary": summary,
        "wall_s": round(wall, 1),
        "output_tail": out[-3000:],
    }


def wait_for(path: str, every: int, limit: int) -> dict:
    t0 = time.monotonic()
    checks = 0
    while True:
        checks += 1
        if os.path.exists(path):
            return {"file": path, "found": True, "waited_s": round(time.monotonic() - t0), "checks": checks}
        if time.monotonic() - t0 >= limit:
            return {"file": path, "found": False, "waited_s": round(time.monotonic() - t0), "checks": checks}
        print(f"[{now()}] waiting for {path} ({round(time.monotonic() - t0)} s)", flush=True)
        time.sleep(every)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repo", default="/tmp/rescore")
    ap.add_argument("--results", default=str(HERE / "results.json"))
    ap.add_argument("--out", default=str(HERE / "rescore.json"))
    ap.add_argument("--wait-file", default="/tmp/go-mutants")
    ap.add_argument("--wait-every", type=int, default=60)
    ap.add_argument("--wait-max", type=int, default=2400)
    ap.add_argument("--plan-only", action="store_true", help="only show where each mutation applies; run nothing")
    ap.add_argument("--only", default=None, help="comma-separated survivor ids (for a partial re-run)")
    a = ap.parse_args()
    repo = Path(a.repo).resolve()
    results = json.loads(Path(a.results).read_text())
    gaps = [s for s in results["survivors"] if s["class"] == "gap"]
    if a.only:
        keep = set(a.only.split(","))
        gaps = [s for s in gaps if s["id"] in keep]
    assert git(repo, "status", "--porcelain").strip() == "", "the clone must be clean"
    imported = subprocess.run(
        [sys.executable, "-c", "import weightsync; print(weightsync.__file__)"],
        cwd=repo, env=env_for(repo), capture_output=True, text=True, check=True,
    ).stdout.strip()
    assert imported == str(repo / "reference" / "weightsync" / "__init__.py"), imported
    versions = subprocess.run(
        [sys.executable, "-c", "import sys,torch,hypothesis,pytest;print(sys.version.split()[0],torch.__version__,"
         "hypothesis.__version__,pytest.__version__)"], capture_output=True, text=True, check=True,
    ).stdout.split()

    report = {
        "what": "the gap survivors of results.json, each applied to the current reference and run against the current suite",
        "revision": git(repo, "rev-parse", "HEAD").strip(),
        "mutated_revision_of_results_json": "8b9743d",
        "repo": str(repo),
        "imports": imported,
        "environment": dict(zip(["python", "torch", "hypothesis", "pytest"], versions)) | {"cpus": os.cpu_count()},
        "test_command": TEST_CMD,
        "started": now(),
    }
    plan = []
    for s in gaps:
        where = locate(repo, s)
        plan.append((s, where))
        print(f"{s['id']}: {'line ' + str(where['line_now']) if where['applies'] else 'NO LONGER APPLIES'}"
              f" (patch: {where['patch_dry_run']['output']!r})", flush=True)

    if a.plan_only:
        return 0
    report["wait"] = wait_for(a.wait_file, a.wait_every, a.wait_max)
    if not report["wait"]["found"]:
        print(f"{a.wait_file} did not appear; running anyway", flush=True)
    t_all = time.monotonic()

    baseline = [run_suite(repo)]
    print(f"[{now()}] baseline rc={baseline[0]['rc']} {baseline[0]['wall_s']} s {baseline[0]['violated_line']}", flush=True)
    if baseline[0]["rc"] != 0:
        baseline.append(run_suite(repo))
        print(f"[{now()}] baseline rerun rc={baseline[1]['rc']} {baseline[1]['wall_s']} s", flush=True)
    report["baseline"] = baseline

    rows = []
    for s, where in plan:
        row = {k: s[k] for k in ("id", "module", "line", "operator", "occurrence", "mutation", "why")}
        row["where_now"] = where
        if not where["applies"]:
            row["outcome"] = "no longer applies"
        else:
            apply(repo, s, where)
            try:
                r = run_suite(repo)
            finally:
                restore(repo, s)
            row["run"] = r
            row["outcome"] = ("killed (timeout)" if r["timeout"] else "killed") if r["killed"] else "survived"
            print(f"[{now()}] {s['id']} -> {row['outcome']} rc={r['rc']} {r['wall_s']} s | {r['violated_line']}"
                  f" | {r['first_failure']}", flush=True)
        rows.append(row)
        Path(a.out).write_text(json.dumps(report | {"gaps": rows}, indent=1) + "\n")  # progress

    report["mutant_runs_s"] = round(time.monotonic() - t_all, 1)
    report["finished"] = now()
    applied = [r for r in rows if r["outcome"] != "no longer applies"]
    killed_now = [r for r in applied if r["outcome"].startswith("killed")]
    gone = len(rows) - len(applied)
    k = ORIGINAL_KILLED + len(killed_now)
    report["gaps"] = rows
    report["counts"] = {
        "gaps": len(rows),
        "applied": len(applied),
        "no_longer_applies": gone,
        "killed_now": len(killed_now),
        "killed_now_by_timeout": sum(r["outcome"] == "killed (timeout)" for r in applied),
        "still_surviving": len(applied) - len(killed_now),
    }
    report["score"] = {
        "formula": "(98 original kills + gaps killed now) / denominator",
        "killed": k,
        "denominator": ORIGINAL_DENOMINATOR,
        "value": round(k / ORIGINAL_DENOMINATOR, 4),
        "denominator_without_no_longer_applies": ORIGINAL_DENOMINATOR - gone,
        "value_without_no_longer_applies": round(k / (ORIGINAL_DENOMINATOR - gone), 4),
        "original": {"killed": ORIGINAL_KILLED, "denominator": ORIGINAL_DENOMINATOR,
                     "value": round(ORIGINAL_KILLED / ORIGINAL_DENOMINATOR, 4)},
    }
    Path(a.out).write_text(json.dumps(report, indent=1) + "\n")
    print(json.dumps(report["counts"]), json.dumps(report["score"]), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
