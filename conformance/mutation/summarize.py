"""Counts, score and survivors of a finished session, as JSON (results.json).

    python summarize.py SESSION --sample sample.json --exec-time exec-time.txt --out results.json \
        [--classes classifications.json]

Outcomes: cosmic-ray records a timeout, and any non-zero exit of the test command, as
"killed". The test command prints MUTANT-TIMEOUT when its own `timeout 300` fired, and
cosmic-ray's own timeout leaves the output "timeout"; both are counted as timeouts here,
apart from the other kills. A run the suite called inconclusive (exit status 6) exits 0
with MUTANT-INCONCLUSIVE: a survivor, counted apart too. Classifications of survivors are
read from --classes (module:line:operator:occurrence -> {class, why}) when it exists;
score = (killed + timeouts) / (sampled - incompetent - equivalent - unreachable);
mutants that do not compile are counted as incompetent, not killed.
"""

from __future__ import annotations

import argparse
import json
import re
from importlib.metadata import version
from pathlib import Path

import cosmic_ray.plugins
from cosmic_ray.mutating import mutate_code
from cosmic_ray.work_db import WorkDB, use_db
from cosmic_ray.work_item import TestOutcome, WorkerOutcome

HERE = Path(__file__).resolve().parent
FAILED_RE = re.compile(r"^(?:FAILED|ERROR) (\S+)", re.M)
VIOLATED_RE = re.compile(r"^requirements violated: (.+)$", re.M)


def key(m) -> str:
    return f"{Path(m.module_path).name}:{m.start_pos[0]}:{m.operator_name}:{m.occurrence}"


def compiles(m, root: Path) -> bool:
    """Whether the mutated module is valid Python (cosmic-ray counts a SyntaxError as a kill)."""
    src = (root / m.module_path).read_text()
    code = mutate_code(src, cosmic_ray.plugins.get_operator(m.operator_name)(**m.operator_args), m.occurrence)
    try:
        compile(code, str(m.module_path), "exec")
    except SyntaxError:
        return False
    return True


def diff_lines(diff: str) -> list[str]:
    return [l for l in (diff or "").splitlines() if l[:1] in "+-" and not l.startswith(("---", "+++"))]


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("session")
    p.add_argument("--sample")
    p.add_argument("--exec-time")
    p.add_argument("--out", default="results.json")
    p.add_argument("--classes", default="classifications.json", help="survivor classifications (JSON)")
    p.add_argument("--root", default=".", help="the unmutated tree the module paths are relative to")
    p.add_argument("--table", help="also write the survivor table (markdown) here")
    args = p.parse_args(argv)

    cls_path = Path(args.classes)
    classes = json.loads(cls_path.read_text()) if cls_path.exists() else {}
    sample = json.loads(Path(args.sample).read_text()) if args.sample else {}

    counts = dict(sampled=0, killed=0, timeout=0, survived=0, inconclusive=0, incompetent=0, other=0,
                  skipped_cuda_only=0, skipped_not_sampled=0, pending=0)
    mutants, survivors = [], []
    with use_db(args.session, WorkDB.Mode.open) as db:
        counts["pending"] = len(db.pending_work_items)
        for item, result in db.completed_work_items:
            (m,) = item.mutations
            if result.worker_outcome == WorkerOutcome.SKIPPED:
                counts["skipped_cuda_only" if "CUDA" in (result.output or "") else "skipped_not_sampled"] += 1
                continue
            counts["sampled"] += 1
            out = result.output or ""
            if result.worker_outcome != WorkerOutcome.NORMAL:
                outcome = "other"
            elif result.test_outcome == TestOutcome.SURVIVED:
                outcome = "inconclusive" if "MUTANT-INCONCLUSIVE" in out else "survived"
            elif result.test_outcome == TestOutcome.INCOMPETENT or not compiles(m, Path(args.root)):
                outcome = "incompetent"  # cosmic-ray's own, or a mutant that is not valid Python
            elif out == "timeout" or "MUTANT-TIMEOUT" in out:
                outcome = "timeout"
            else:
                outcome = "killed"
            counts[outcome] += 1
            row = {
                "id": key(m), "job_id": item.job_id, "module": Path(m.module_path).name, "line": m.start_pos[0],
                "operator": m.operator_name, "occurrence": m.occurrence, "outcome": outcome,
                "mutation": diff_lines(result.diff),
            }
            if outcome in ("killed", "timeout"):
                row["first_failure"] = FAILED_RE.findall(out)[:1]
                v = VIOLATED_RE.findall(out)
                row["requirements_violated"] = v[-1] if v else None
            mutants.append(row)
            if outcome in ("survived", "inconclusive"):
                c = classes.get(key(m), {})
                survivors.append({**row, "diff": result.diff, "class": c.get("class", "unclassified"),
                                  "why": c.get("why", "")})
    mutants.sort(key=lambda r: (r["module"], r["line"], r["operator"], r["occurrence"]))
    survivors.sort(key=lambda r: (r["module"], r["line"], r["operator"], r["occurrence"]))
    by_class = {}
    for s in survivors:
        by_class[s["class"]] = by_class.get(s["class"], 0) + 1
    killed = counts["killed"] + counts["timeout"]
    eq_unr = by_class.get("equivalent", 0) + by_class.get("unreachable here", 0)
    denom = counts["sampled"] - counts["incompetent"] - eq_unr
    literal = counts["sampled"] - eq_unr
    exec_time = Path(args.exec_time).read_text().strip() if args.exec_time and Path(args.exec_time).exists() else None
    res = {
        "tool": f"cosmic-ray {version('cosmic-ray')}",
        "seed": sample.get("seed"), "sample_size": sample.get("size"), "work_items": sample.get("work_items"),
        "population_after_cuda_filter": sample.get("population"), "exec_time": exec_time,
        "counts": counts, "survivor_classes": by_class,
        "score": {"killed_incl_timeouts": killed, "denominator": denom,
                  "value": round(killed / denom, 4) if denom else None,
                  "formula": "(killed + timeouts) / (sampled - incompetent - equivalent - unreachable here)",
                  "with_incompetent_as_killed": round((killed + counts["incompetent"]) / literal, 4) if literal else None},
        "survivors": survivors,
        "mutants": mutants,
        "cuda_only_excluded": sample.get("cuda_only_excluded", []),
    }
    Path(args.out).write_text(json.dumps(res, indent=1) + "\n")
    if args.table:
        rows = ["| # | module:line | operator (occurrence) | mutation | class | why |", "|---|---|---|---|---|---|"]
        for n, s in enumerate(survivors, 1):
            mut = " / ".join(f"`{l[0]} {l[1:].strip()}`" for l in s["mutation"]).replace("|", "\\|")
            why = s["why"].replace("|", "\\|").replace("\n", " ")
            rows.append(f"| {n} | {s['module']}:{s['line']} | {s['operator'].removeprefix('core/')} ({s['occurrence']}) "
                        f"| {mut} | {s['class']} | {why} |")
        Path(args.table).write_text("\n".join(rows) + "\n")
    print(json.dumps({k: res[k] for k in ("counts", "survivor_classes", "score")}, indent=1))


if __name__ == "__main__":
    main()
