"""Filter a cosmic-ray session: skip CUDA-only lines, then keep a seeded uniform sample.

    python sample.py CONFIG SESSION [--listing PATH]

Like cosmic-ray's own filters (cr-filter-lines, cr-filter-pragma), it records a
SKIPPED result for every work item that must not run, so `cosmic-ray exec` only
runs the sample. Settings come from [cosmic-ray.filters.weightsync-sample] in CONFIG.
The population is every work item not on a CUDA-only line and not inside a type
annotation, ordered by (module path, operator, occurrence), which is independent of
the random job ids, so one seed always picks the same mutants from the same source.

Annotations are left out because every module starts with
`from __future__ import annotations`: an annotation is never evaluated, so a mutant
of one is equivalent by construction (29 of the 38 equivalents in the first run).
"""

from __future__ import annotations

import argparse
import ast
import json
import random
import sys

from cosmic_ray.config import load_config
from cosmic_ray.work_db import WorkDB, use_db
from cosmic_ray.work_item import WorkerOutcome, WorkResult


def ranges(specs):
    out = []
    for spec in specs:
        a, _, b = spec.partition("-")
        out.append((int(a), int(b or a)))
    return out


def annotation_spans(path: str) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    """(start, end) as (line, column) of every annotation in the module at `path`."""
    with open(path) as f:
        tree = ast.parse(f.read())
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.returns is not None:
            found.append(node.returns)
        elif isinstance(node, ast.arg) and node.annotation is not None:
            found.append(node.annotation)
        elif isinstance(node, ast.AnnAssign):
            found.append(node.annotation)
    return [((a.lineno, a.col_offset), (a.end_lineno, a.end_col_offset)) for a in found]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("config")
    p.add_argument("session")
    p.add_argument("--listing", help="write the sampled work items here as JSON")
    args = p.parse_args(argv)

    cfg = load_config(args.config).sub("filters", "weightsync-sample")
    seed, size = int(cfg["seed"]), int(cfg["size"])
    cuda = {path: ranges(specs) for path, specs in cfg.get("cuda-only", {}).items()}

    spans: dict[str, list] = {}

    def on_cuda_line(m):
        return any(a <= m.start_pos[0] <= b for a, b in cuda.get(str(m.module_path), ()))

    def in_annotation(m):
        path = str(m.module_path)
        if path not in spans:
            spans[path] = annotation_spans(path)
        return any(a <= tuple(m.start_pos) < b for a, b in spans[path])

    with use_db(args.session, WorkDB.Mode.open) as db:
        if db.num_results:
            sys.exit("session already has results; run `cosmic-ray init --force` first")
        items = db.work_items
        key = lambda it: tuple((str(m.module_path), m.operator_name, m.occurrence) for m in it.mutations)
        excluded = sorted((it for it in items if any(on_cuda_line(m) for m in it.mutations)), key=key)
        cuda_ids = {it.job_id for it in excluded}
        annotations = sorted((it for it in items
                              if it.job_id not in cuda_ids and any(in_annotation(m) for m in it.mutations)), key=key)
        left_out = cuda_ids | {it.job_id for it in annotations}
        population = sorted((it for it in items if it.job_id not in left_out), key=key)
        if size > len(population):
            sys.exit(f"sample size {size} exceeds the population {len(population)}")
        sample = random.Random(seed).sample(population, size)
        chosen = {it.job_id for it in sample}
        db.set_multiple_results(
            [it.job_id for it in excluded],
            WorkResult(output="Filtered weightsync-sample: CUDA-only line", worker_outcome=WorkerOutcome.SKIPPED),
        )
        db.set_multiple_results(
            [it.job_id for it in annotations],
            WorkResult(output="Filtered weightsync-sample: inside a type annotation (never evaluated)",
                       worker_outcome=WorkerOutcome.SKIPPED),
        )
        db.set_multiple_results(
            [it.job_id for it in population if it.job_id not in chosen],
            WorkResult(output=f"Filtered weightsync-sample: not in the sample (seed {seed})",
                       worker_outcome=WorkerOutcome.SKIPPED),
        )
    print(f"work items: {len(items)}; CUDA-only (skipped): {len(excluded)}; in annotations (skipped): "
          f"{len(annotations)}; population: {len(population)}; "
          f"sampled with seed {seed}: {size}")
    if args.listing:
        rows = [
            {"job_id": it.job_id, "module": str(m.module_path), "line": m.start_pos[0], "col": m.start_pos[1],
             "operator": m.operator_name, "occurrence": m.occurrence}
            for it in sorted(sample, key=key) for m in it.mutations
        ]
        cuda_rows = [
            {"module": str(m.module_path), "line": m.start_pos[0], "operator": m.operator_name, "occurrence": m.occurrence}
            for it in excluded for m in it.mutations
        ]
        with open(args.listing, "w") as f:
            json.dump({"seed": seed, "size": size, "work_items": len(items), "population": len(population),
                       "annotations_excluded": len(annotations), "cuda_only_excluded": cuda_rows, "sample": rows},
                      f, indent=1)


if __name__ == "__main__":
    main()
