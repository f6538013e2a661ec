"""The benchmark runs, tiny, end to end; nothing here looks at its figures."""

from __future__ import annotations

import importlib.util
import json
import math
import subprocess
import sys
from dataclasses import asdict

import pytest

from weightsync.bench import baselines, cases, casts, network, report, systems, targets
from weightsync.bench.pool import Pool

pytestmark = pytest.mark.processes  # real worker processes: .ci/run's second layer


def _bench(out, *options) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "weightsync", "bench", *options, "--budget", "0.01", "--max-reps", "3", "--out", str(out)],
        capture_output=True, text=True, timeout=280,
    )


@pytest.mark.timeout(300)
def test_bench_runs_tiny(tmp_path):
    out = tmp_path / "results"
    proc = _bench(out, "--sizes", "1e3", "--receivers", "1,2")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    results = json.loads((out / "results.json").read_text())
    found = {c["system"] for c in results["cases"]}
    assert {"copy", "pipe", "queue", *systems.VARIANTS, network.FLOOR, *network.VARIANTS} <= found
    assert not [c for c in results["cases"] if c["note"]], "a case failed"
    # 1e3 params x {6, 500} tensors (huge runs at 1e6 only) x 2 receiver counts x 7 systems (8 with torchrl),
    # and the network cases: 1e3 params x 2 receiver counts x (the gloo floor + the TCP variants)
    expected = 2 * 2 * (2 + len(systems.VARIANTS) + 1 + (baselines.torchrl_version() is not None))
    expected += 2 * (1 + len(network.VARIANTS))
    assert len(results["cases"]) == expected
    assert {c["layout"] for c in results["cases"]} == {"few", "many"}
    assert "### Across machines" in (out / "results.md").read_text()
    started = results["startup"]  # issue 24: import and connect time are in every run
    assert started["import_s"]["torch"] > 0 and started["import_added_s"] < started["import_s"]["torch"]
    assert sorted(started["connect_s"]) == ["1", "2"] and all(t > 0 for t in started["connect_s"].values())
    assert "### Start-up" in (out / "results.md").read_text()
    rows = results["memory"]["rows"]  # issue 24: slots held per worker count, within SLOT-3's default bound
    assert sorted(rows) == ["1", "2"] and all(2 <= k <= int(n) + 2 for n, (k, _) in rows.items()), rows
    assert results["memory"]["large"]["copies"] == {"1": 3, "2": 3}
    assert all(v > 0 for row in results["memory"]["at_bound"].values() for v in row.values())  # and the waits
    assert "### Shared memory of the slots" in (out / "results.md").read_text()
    path = results["casts"]["rows"]  # issue 24: the fp32 -> bf16 path, beside fp32
    assert sorted(path) == ["1", "2"] and all(set(r) == set(casts.PATHS) and min(r.values()) > 0 for r in path.values())
    assert "### fp32 trainer, bf16 workers" in (out / "results.md").read_text()
    assert all(c["p50"] > 0 and c["p90"] >= c["p50"] for c in results["cases"])
    assert all(c["fds"] is not None for c in results["cases"] if c["system"] in systems.VARIANTS)
    assert sum(line.startswith("[") for line in proc.stdout.splitlines()) == expected  # one line per case
    md = (out / "results.md").read_text()
    assert "### Targets" in md and "--8<-- [start:tables]" in md and "--8<-- [end:tables]" in md
    assert [t["name"] for t in results["targets"]] == [t.name for t in targets.TARGETS]
    if importlib.util.find_spec("matplotlib") is None:  # plots are optional
        return
    assert sorted(p.name for p in out.glob("*.png")) == ["latency-cpu-few.png", "latency-cpu-many.png",
                                                          "latency-tcp-few.png"]  # the TCP cases drawn too


@pytest.mark.timeout(300)
def test_bench_runs_the_huge_layout_at_1e6_only(tmp_path):
    out = tmp_path / "results"
    proc = _bench(out, "--sizes", "1e3,1e6", "--layouts", "huge", "--receivers", "1", "--no-startup",
                  "--systems", "weightsync push zero-copy,queue", "--no-network")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    results = json.loads((out / "results.json").read_text())
    assert [(c["params"], c["tensors"], c["system"]) for c in results["cases"]] == [
        (1_000_000, 10_000, s) for s in ("copy", "pipe", "weightsync push zero-copy", "queue")]
    queue = results["cases"][-1]
    assert queue["p50"] is None and queue["note"].startswith("not run:")  # too many descriptors for a Queue
    assert all(c["p50"] > 0 for c in results["cases"][:-1])
    verdicts = {t["name"].split(" (")[0]: t["verdict"] for t in results["targets"]}
    assert verdicts["very many tensors"] == "n/a"  # no 6-tensor case to compare with


def test_make_weights_spreads_params_over_the_tensors():
    w = cases.make_weights(1_000_000, cases.LAYOUTS["huge"])
    assert len(w) == 10_000 and {t.numel() for t in w.values()} == {100}
    w = cases.make_weights(1_000_007, 10_000)
    assert sum(t.numel() for t in w.values()) == 1_000_007 and {t.numel() for t in w.values()} == {100, 101}
    w = cases.make_weights(1000, 10_000)  # fewer tensors rather than empty ones
    assert len(w) == 1000 and {t.numel() for t in w.values()} == {1}
    assert cases.runs_at("huge", 1e6) and not cases.runs_at("huge", 1e3) and cases.runs_at("many", 1e3)


def _case(system, p50, params=1000, layout="few", receivers=4, fds=None):
    return cases.Case("cpu", params, layout, cases.LAYOUTS[layout], params * 4, receivers, system, p50=p50,
                      p90=p50, reps=5, fds=fds)


def _results(rows: list[dict], found: list[dict]) -> dict:
    return {"machine": report.machine(), "config": {"quick": True}, "command": "python -m weightsync bench",
            "elapsed_s": 1.0, "cases": rows, "targets": found}


def test_targets_and_report_from_synthetic_cases():
    m, zc = 1_000_000, "weightsync push zero-copy"
    run = [
        # small model: pipe 1e-4 at 1 and 4 receivers; the fastest variant counts
        _case("pipe", 1e-4), _case("copy", 1e-6), _case("weightsync push", 1.5e-4), _case("weightsync pull", 3e-4),
        _case("pipe", 1e-4, receivers=1), _case("weightsync pull", 1.2e-4, receivers=1),
        # tensors: the worst ratio over receivers and variants
        _case(zc, 1e-3, params=m), _case(zc, 2e-3, params=m, layout="many", fds=9),
        _case("weightsync push", 1e-3, params=m, receivers=1), _case("weightsync push", 1.2e-3, params=m,
                                                                     layout="many", receivers=1, fds=7),
        _case(zc, 4e-3, params=m, layout="huge"),
        # packed: its own rows, not mixed into the general path's
        _case(zc + " packed", 1e-3, params=m), _case(zc + " packed", 1.1e-3, params=m, layout="huge"),
        # large model: push zero-copy over copy + pipe, pull zero-copy beside it
        _case("copy", 8e-3, params=10**7), _case("pipe", 2e-3, params=10**7),
        _case(zc, 1.1e-2, params=10**7), _case("weightsync pull zero-copy", 1.3e-2, params=10**7),
        _case("weightsync push", 5e-3, params=10**7),  # faster, but not the variant the target names
    ]
    found = {t["name"]: t for t in targets.evaluate(run)}
    assert list(found) == [t.name for t in targets.TARGETS]

    def row(prefix):
        (t,) = [t for name, t in found.items() if name.startswith(prefix)]
        return t

    assert row("small model (1e3 params, 1 receiver)")["value"] == 1.2
    assert row("small model (1e3 params, 1 receiver)")["verdict"] == "met"
    assert row("small model (1e3 params, 4 receivers)")["value"] == 1.5
    assert row("small model (1e3 params, 4 receivers)")["detail"].endswith("weightsync push")
    assert row("many tensors (1e6")["value"] == 2.0 and row("many tensors (1e6")["verdict"] == "missed"
    assert "4 receivers, weightsync push zero-copy" in row("many tensors (1e6")["detail"]
    assert row("very many tensors (1e6")["value"] == 4.0 and row("very many tensors (1e6")["limit"] == 3.0
    assert row("very many tensors, packed")["value"] == 1.1 and row("very many tensors, packed")["verdict"] == "met"
    assert row("many tensors, packed")["verdict"] == "n/a"  # no packed 500-tensor case in this run
    assert row("large model (1e7")["value"] == 1.1 and row("large model (1e7")["verdict"] == "met"
    assert "pull zero-copy 1.300" in row("large model (1e7")["detail"]
    assert row("large model (1e8")["verdict"] == "n/a" and row("large model (1e8")["value"] is None
    assert row("descriptors")["value"] == 9 and row("descriptors")["verdict"] == "met"

    md = report.markdown(_results([{**asdict(c), "throughput": c.throughput} for c in run], list(found.values())), [])
    assert "| 1e3 | 6 | 4 |" in md and "| 1e6 | 10000 | 4 |" in md and "1.50" in md
    assert md.index("| 1e6 | 500 | 4 |") < md.index("| 1e6 | 10000 | 4 |")  # layouts by tensor count


def test_targets_of_an_empty_run_are_all_na():
    assert {t["verdict"] for t in targets.evaluate([])} == {"n/a"}


def test_throughput_is_bytes_delivered_per_second():
    assert _case("weightsync push", 0.5).throughput == 1000 * 4 * 4 / 0.5
    assert math.isnan(_case("pipe", 0.5).throughput)


@pytest.mark.timeout(120)
def test_a_failed_case_leaves_the_workers_usable():
    import torch.multiprocessing as mp

    pool = Pool(1, mp.get_context("spawn"))
    try:
        weights = cases.make_weights(100, 3)
        with pytest.raises(Exception):  # noqa: B017 - whatever the worker raised for a mode it does not know
            systems.bench_weightsync(pool, weights, 1, "bogus", False, 0.0, 1, 1)  # the worker refuses the mode
        times, fds = systems.bench_weightsync(pool, weights, 1, "push", False, 0.0, 1, 1)
        assert len(times) == 1 and fds > 0
    finally:
        pool.close()


def test_a_failed_case_is_reported_and_serialises():
    failed = cases.Case("cpu", 1000, "few", 6, 4000, 1, "weightsync push", note="RuntimeError: boom")
    rows = [report.json_safe({**asdict(c), "throughput": c.throughput}) for c in (_case("pipe", 1e-4), failed)]
    json.dumps(rows, allow_nan=False)  # strict JSON: no NaN
    assert "RuntimeError: boom" in report.markdown(_results(rows, targets.evaluate([failed])), [])
