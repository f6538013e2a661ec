"""The benchmark runs, tiny, end to end; nothing here looks at its figures."""

from __future__ import annotations

import importlib.util
import json
import math
import subprocess
import sys

import pytest

from weightsync import bench

pytestmark = pytest.mark.processes  # real worker processes: .ci/run's second layer


@pytest.mark.timeout(300)
def test_bench_runs_tiny(tmp_path):
    out = tmp_path / "results"
    proc = subprocess.run(
        [sys.executable, "-m", "weightsync", "bench", "--sizes", "1e3", "--receivers", "1,2",
         "--budget", "0.01", "--max-reps", "3", "--out", str(out)],
        capture_output=True, text=True, timeout=280,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    results = json.loads((out / "results.json").read_text())
    systems = {c["system"] for c in results["cases"]}
    assert {"copy", "pipe", "queue", *bench.VARIANTS} <= systems
    assert not [c for c in results["cases"] if c["note"]], "a case failed"
    # 1e3 params x {6, 500} tensors x 2 receiver counts x 7 systems (torchrl is not installed here)
    expected = 2 * 2 * (2 + len(bench.VARIANTS) + 1 + (bench.torchrl_version() is not None))
    assert len(results["cases"]) == expected
    assert all(c["p50"] > 0 and c["p90"] >= c["p50"] for c in results["cases"])
    assert all(c["fds"] is not None for c in results["cases"] if c["system"].startswith("weightsync"))
    assert sum(line.startswith("[") for line in proc.stdout.splitlines()) == expected  # one line per case
    md = (out / "results.md").read_text()
    assert "### Targets" in md and "--8<-- [start:tables]" in md and "--8<-- [end:tables]" in md
    assert {t["name"].split(" ")[0] for t in results["targets"]} >= {"small", "large", "descriptors"}
    if importlib.util.find_spec("matplotlib") is None:  # plots are optional
        return
    assert sorted(p.name for p in out.glob("*.png")) == ["latency-cpu-few.png", "latency-cpu-many.png"]


def _case(system, p50, params=1000, layout="few", receivers=4, fds=None):
    return bench.Case("cpu", params, layout, bench.LAYOUTS[layout], params * 4, receivers, system, p50=p50,
                      p90=p50, reps=5, fds=fds)


def test_targets_and_report_from_synthetic_cases(tmp_path):
    cases = [
        _case("pipe", 1e-4), _case("copy", 1e-6), _case("weightsync push", 1.5e-4), _case("weightsync pull", 3e-4),
        _case("weightsync push", 2e-4, layout="many", fds=9),
    ]
    found = {t["name"].split(" ")[0]: t for t in bench.targets(cases)}
    assert found["small"]["verdict"] == "met" and math.isclose(found["small"]["value"], 1.5)
    assert found["descriptors"]["value"] == 9
    results = {"machine": bench.machine(), "config": {"quick": True}, "command": "python -m weightsync bench",
               "elapsed_s": 1.0, "cases": [{**bench.asdict(c), "throughput": c.throughput} for c in cases],
               "targets": bench.targets(cases)}
    md = bench.markdown(results, [])
    assert "| 1e3 | 6 | 4 |" in md and "1.50" in md


def test_throughput_is_bytes_delivered_per_second():
    assert _case("weightsync push", 0.5).throughput == 1000 * 4 * 4 / 0.5
    assert math.isnan(_case("pipe", 0.5).throughput)


@pytest.mark.timeout(120)
def test_a_failed_case_leaves_the_workers_usable():
    import torch.multiprocessing as mp

    pool = bench.Pool(1, mp.get_context("spawn"))
    try:
        weights = bench.make_weights(100, 3)
        with pytest.raises(Exception):
            bench.bench_weightsync(pool, weights, 1, "bogus", False, 0.0, 1, 1)  # the worker refuses the mode
        times, fds = bench.bench_weightsync(pool, weights, 1, "push", False, 0.0, 1, 1)
        assert len(times) == 1 and fds > 0
    finally:
        pool.close()


def test_a_failed_case_is_reported_and_serialises():
    failed = bench.Case("cpu", 1000, "few", 6, 4000, 1, "weightsync push", note="RuntimeError: boom")
    rows = [bench._json_safe({**bench.asdict(c), "throughput": c.throughput}) for c in (_case("pipe", 1e-4), failed)]
    json.dumps(rows, allow_nan=False)  # strict JSON: no NaN
    results = {"machine": bench.machine(), "config": {"quick": True}, "command": "python -m weightsync bench",
               "elapsed_s": 1.0, "cases": rows, "targets": bench.targets([failed])}
    assert "RuntimeError: boom" in bench.markdown(results, [])
