"""`python -m weightsync bench`: send latency next to its floors and baselines, in one run.

Every case runs the sender in this process and the receivers in worker processes that
are spawned once and reused (pool). Next to each weightsync variant (systems) the same
run measures the floors and two baselines (baselines), all timed alike (cases), over the
grid its options select (plan: the full run, or --quick); the run (cli) shows its
progress (progress), checks its figures against the targets (targets, each a figure or
why there is none) and writes results.md, results.json (report) and one latency plot per
layout (plots) under --out.

Every process uses one torch thread unless --threads says otherwise. No figure here is
asserted anywhere: the tests only run the benchmark tiny.
"""

from .cli import add_arguments, run

__all__ = ["add_arguments", "run"]
