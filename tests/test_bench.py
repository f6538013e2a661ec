"""The benchmark runs, tiny, end to end; nothing here looks at its figures.

The tests that start worker processes are marked `processes` (.ci/run's second layer); the
rest (the plan, the targets and their reasons, the report, what a run prints) run in the
fast layer.
"""

from __future__ import annotations

import argparse
import importlib.util
import io
import json
import math
import os
import re
import subprocess
import sys
from dataclasses import asdict

import pytest
import torch

from weightsync.bench import baselines, cases, casts, cli, network, plan, plots, report, systems, targets
from weightsync.bench.pool import Pool
from weightsync.bench.progress import Progress

processes = pytest.mark.processes  # real worker processes: .ci/run's second layer


def _bench(out, *options) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "weightsync", "bench", *options, "--budget", "0.01", "--max-reps", "3", "--out", str(out)],
        capture_output=True, text=True, timeout=280,
    )


@processes
@pytest.mark.timeout(300)
def test_bench_runs_tiny(tmp_path):
    out = tmp_path / "results"
    proc = _bench(out, "--sizes", "1e3", "--receivers", "1,2")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    results = json.loads((out / "results.json").read_text())
    found = {c["system"] for c in results["cases"]}
    assert {*systems.FLOORS, "queue", *systems.VARIANTS, network.FLOOR, *network.VARIANTS} <= found
    assert not [c for c in results["cases"] if c["note"]], "a case failed"
    # 1e3 params x {6, 500} tensors (huge runs at 1e6 only, llm and moe at their own sizes) x 2 receiver
    # counts x (4 floors, the variants, the queue and torchrl), and the network cases: 1e3 params x 2
    # receiver counts x (the gloo floor + the TCP variants)
    expected = 2 * 2 * (len(systems.FLOORS) + len(systems.VARIANTS) + 1 + (baselines.torchrl_version() is not None))
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
    assert f"; {expected} cases" in proc.stdout.splitlines()[0]  # the count announced is the count run
    md = (out / "results.md").read_text()
    assert "### Targets" in md and "--8<-- [start:tables]" in md and "--8<-- [end:tables]" in md
    assert [t["name"] for t in results["targets"]] == [t.name for t in targets.TARGETS]
    if importlib.util.find_spec("matplotlib") is None:  # plots are optional
        return
    assert sorted(p.name for p in out.glob("*.png")) == ["latency-cpu-few.png", "latency-cpu-many.png",
                                                          "latency-tcp-few.png"]  # the TCP cases drawn too


@processes
@pytest.mark.timeout(300)
def test_bench_runs_the_huge_layout_at_1e6_only(tmp_path):
    out = tmp_path / "results"
    proc = _bench(out, "--sizes", "1e3,1e6", "--layouts", "huge", "--receivers", "1", "--no-startup",
                  "--systems", "weightsync push zero-copy,queue", "--no-network")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    results = json.loads((out / "results.json").read_text())
    assert [(c["params"], c["tensors"], c["system"]) for c in results["cases"]] == [
        (1_000_000, 10_000, s) for s in (*systems.FLOORS, "weightsync push zero-copy", "queue")]
    queue = results["cases"][-1]
    assert queue["p50"] is None and queue["note"].startswith("not run:")  # too many descriptors for a Queue
    assert all(c["p50"] > 0 for c in results["cases"][:-1])
    verdicts = {t["name"].split(" (")[0]: t for t in results["targets"]}
    assert verdicts["very many tensors"]["verdict"] == "not measured"  # no 6-tensor case to compare with
    assert verdicts["very many tensors"]["reason"] == "not in this run: needs the few layout (6 tensors) at 1e6 params; --layouts adds it"
    assert "receiver 0 is gone" not in proc.stderr  # the bench ends its own receivers in order


def test_make_weights_spreads_params_over_the_tensors():
    w = cases.make_weights(1_000_000, cases.LAYOUTS["huge"])
    assert len(w) == 10_000 and {t.numel() for t in w.values()} == {100}
    w = cases.make_weights(1_000_007, 10_000)
    assert sum(t.numel() for t in w.values()) == 1_000_007 and {t.numel() for t in w.values()} == {100, 101}
    w = cases.make_weights(1000, 10_000)  # fewer tensors rather than empty ones
    assert len(w) == 1000 and {t.numel() for t in w.values()} == {1}
    assert cases.runs_at("huge", 1e6) and not cases.runs_at("huge", 1e3) and cases.runs_at("many", 1e3)


def test_llm_weights_are_shaped_like_a_transformer_in_bf16():
    for layout, tensors, params in (("llm", 290, 10**8), ("moe", 3042, 10**8), ("llm", 290, 5 * 10**8)):
        w = cases.llm_weights(params, layout, "meta")
        d = w["model.norm.weight"].numel()
        assert len(w) == cases.LAYOUTS[layout] == tensors and d % 64 == 0
        assert {t.dtype for t in w.values()} == {torch.bfloat16}
        assert 0 <= params - sum(t.numel() for t in w.values()) < d  # within one hidden size of the count
        assert w["model.layers.0.self_attn.k_proj.weight"].shape == (d // 4, d)
        assert ("model.layers.15.mlp.experts.59.down_proj.weight" in w) == (layout == "moe")
    assert cases.model_weights(1000, "few").keys() == cases.make_weights(1000, 6).keys()
    assert cli.receivers_for("llm", (1, 2, 4, 8)) == [1, 2, 4] and cli.receivers_for("few", (1, 8)) == [1, 8]


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
        _case("copy then pipe", 1.25e-2, params=10**7),  # the floor as one sequence: slower than the sum
        _case(zc, 1.1e-2, params=10**7), _case("weightsync pull zero-copy", 1.3e-2, params=10**7),
        _case("weightsync push", 5e-3, params=10**7),  # faster, but not the variant the target names
        # against torch's batched copy of the same tensors
        _case("tensor copy", 2.9e-3, params=m, layout="huge"), _case("pipe", 1e-4, params=m, layout="huge"),
        # LLM-shaped: zero-copy over copy + pipe; experts over the dense shape
        _case("copy", 1e-1, params=5 * 10**8, layout="llm"), _case("pipe", 1e-4, params=5 * 10**8, layout="llm"),
        _case(zc, 1.1e-1, params=5 * 10**8, layout="llm"), _case("weightsync push", 2e-1, params=5 * 10**8, layout="llm"),
        _case(zc, 1.32e-1, params=5 * 10**8, layout="moe"),
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
    assert row("many tensors, packed")["verdict"] == "not measured"  # no packed 500-tensor case in this run
    assert row("many tensors, packed")["reason"] == "not in this run: needs one of weightsync push zero-copy packed at 1e6 params in 500 tensors; --systems adds it"
    apart, sequence = row("large model (1e7 params, 4 receivers) send p50 / (copy +"), row("large model (1e7 params, 4 "
                                                                                         "receivers) send p50 / (copy then")
    assert apart["value"] == 1.1 and apart["verdict"] == "met" and "pull zero-copy 1.300" in apart["detail"]
    assert sequence["value"] == 0.88 and "pull zero-copy 1.040" in sequence["detail"]
    assert row("large model (1e8")["verdict"] == "not measured" and row("large model (1e8")["value"] is None
    assert row("descriptors")["value"] == 9 and row("descriptors")["verdict"] == "met"
    assert row("10,000 tensors")["value"] == 1.333 and row("10,000 tensors")["verdict"] == "met"
    assert row("500 tensors")["verdict"] == "not measured"  # no tensor copy measured beside the 500-tensor cases
    assert row("LLM-shaped (5e8 bf16 params, 290")["value"] == round(1.1e-1 / (1e-1 + 1e-4), 3)
    assert row("LLM-shaped (5e8 bf16 params):")["value"] == 1.2 and row("LLM-shaped (5e8 bf16 params):")["verdict"] == "met"

    md = report.markdown(_results([{**asdict(c), "throughput": c.throughput} for c in run], list(found.values())), [])
    assert "| 1e3 | 6 | 4 |" in md and "| 1e6 | 10000 | 4 |" in md and "1.50" in md
    assert md.index("| 1e6 | 500 | 4 |") < md.index("| 1e6 | 10000 | 4 |")  # layouts by tensor count
    llm = md.index("### LLM-shaped models, bf16, cpu")  # before every other table but the targets
    assert md.index("### Targets") < llm < md.index("### Send latency p50, cpu")
    assert "| dense, 24 layers | 5e8 | 290 | 4 | 100.000 | 110.000 | - | 200.000 |" in md and "| 1.10 | 1.82 | - |" in md
    assert ("- Dense, 24 layers (5e8 bf16 parameters in 290 tensors) to 4 workers on cpu: a zero-copy send takes "
            "110.000 ms, 1.10x one plain copy of its bytes; copying workers take 200.000 ms (1.8x") in md


def test_targets_of_an_empty_run_are_all_not_measured_and_say_why():
    found = targets.evaluate([])
    assert {t["verdict"] for t in found} == {"not measured"} and all(t["reason"] for t in found)


def test_throughput_is_bytes_delivered_per_second():
    assert _case("weightsync push", 0.5).throughput == 1000 * 4 * 4 / 0.5
    assert math.isnan(_case("pipe", 0.5).throughput)


@processes
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
        assert pool.heal() == []
        pool.procs[0].kill()  # as the kernel's OOM killer would
        pool.procs[0].join(10)
        assert pool.heal() == [0]  # a new worker in its place, and the next case runs
        assert len(baselines.bench_pipe(pool, 1, 0.0, 1, 1)) == 1
    finally:
        pool.close()


class _Healthy:
    """A pool whose workers are all alive: measure_group's heal() replaces none."""

    def heal(self):
        return []


def _measured(weights, params: int, variants: dict) -> dict[str, list[float]]:
    """What measure_group records for one receiver, by system, over a healthy pool (no worker process)."""
    recorded: dict[str, list[float]] = {}
    cli.measure_group(_Healthy(), "cpu", weights, params, "few", 1, variants, False, False, (0.0, 1, 1),
                      lambda case, times=None, error="": recorded.setdefault(case.system, times))
    return recorded


def test_the_floors_that_wait_on_wake_ups_keep_the_quieter_of_two_measurements(monkeypatch):
    """pipe and copy then pipe are measured before and after the variants; each is recorded once, with the
    samples of the measurement whose median is lower, whichever came first."""
    medians = iter([50e-6, 90e-6, 20e-6, 95e-6])  # pipe, copy then pipe (before); pipe, copy then pipe (after)

    def fake_pipe(pool, n, budget, lo, hi, before=None):
        return [next(medians)] * 3

    monkeypatch.setattr(cli, "bench_pipe", fake_pipe)
    recorded = _measured(cases.make_weights(100, 3), 100, {})
    assert recorded["pipe"] == [20e-6] * 3 and recorded["copy then pipe"] == [90e-6] * 3
    assert list(recorded) == ["copy", "tensor copy", "pipe", "copy then pipe"]


@pytest.mark.parametrize("params, twice", [(100, True), (100_000, False)])
def test_a_small_models_variants_keep_the_quieter_of_two_measurements(monkeypatch, params, twice):
    """A model of at most WAKE_BOUND_BYTES costs about its wake-ups a send: each weightsync variant is measured
    again after the floors' second measurement and keeps its quieter run, as those floors do. A larger model's
    variants are measured once. A second measurement that fails leaves the first."""
    monkeypatch.setattr(cli, "bench_pipe", lambda pool, n, budget, lo, hi, before=None: [1e-5])
    runs = {"weightsync push": iter([[80e-6] * 3, [40e-6] * 3]), "weightsync pull": iter([[30e-6] * 3])}

    def fake_weightsync(pool, weights, n, mode, zc, budget, lo, hi, packed):
        return next(runs[f"weightsync {mode}"]), 0  # pull's second measurement raises StopIteration

    monkeypatch.setattr(cli, "bench_weightsync", fake_weightsync)
    variants = {"weightsync push": ("push", False, False), "weightsync pull": ("pull", False, False)}
    weights = cases.make_weights(params, 3)
    assert (sum(t.numel() * t.element_size() for t in weights.values()) <= cli.WAKE_BOUND_BYTES) is twice
    recorded = _measured(weights, params, variants)
    assert recorded["weightsync push"] == [(40e-6 if twice else 80e-6)] * 3
    assert recorded["weightsync pull"] == [30e-6] * 3
    assert next(runs["weightsync push"], None) == (None if twice else [40e-6] * 3)  # measured twice, or once


def test_the_small_policy_targets_count_copying_receivers_only():
    """Issue 44's small policy: the fastest variant whose receivers copy, over the pipe; a zero-copy variant,
    however fast, is the other target's."""
    run = [_case("pipe", 1e-4, receivers=1), _case("weightsync push zero-copy", 0.5e-4, receivers=1),
           _case("weightsync push", 2.5e-4, receivers=1), _case("weightsync pull", 1.9e-4, receivers=1),
           _case("pipe", 1e-4), _case("weightsync push zero-copy", 0.5e-4), _case("weightsync push", 2.6e-4)]
    found = {t["name"]: t for t in targets.evaluate(run)}
    one, four = (found[f"small policy (1e3 params) to {n} send p50 / pipe round trip"]
                 for n in ("1 copying receiver:", "4 copying receivers:"))
    assert (one["value"], one["verdict"], one["limit"]) == (1.9, "met", 2.0) and one["detail"].endswith("weightsync pull")
    assert (four["value"], four["verdict"], four["limit"]) == (2.6, "missed", 2.5)
    assert found["small model (1e3 params, 1 receiver) send p50 / pipe round trip"]["value"] == 0.5


def test_a_failed_case_is_reported_and_serialises():
    failed = cases.Case("cpu", 1000, "few", 6, 4000, 1, "weightsync push", note="RuntimeError: boom")
    rows = [report.json_safe({**asdict(c), "throughput": c.throughput}) for c in (_case("pipe", 1e-4), failed)]
    json.dumps(rows, allow_nan=False)  # strict JSON: no NaN
    assert "RuntimeError: boom" in report.markdown(_results(rows, targets.evaluate([failed])), [])


@processes
@pytest.mark.timeout(120)
@pytest.mark.parametrize("kind", ["own", "packed", "packed parameters"])
def test_stages_profiles_each_kind_of_weights(kind):
    """`python -m weightsync.bench.stages` times every stage of a send for each kind of weights its table shows."""
    from weightsync.bench import stages

    p50 = stages.profile(1_000, 10, 20, weights_kind=kind)
    assert set(p50) == {*stages.STAGES, "total"}, p50
    # each stage lies inside its send, so its median cannot pass the sends' (their sum can: medians do not add)
    assert all(0 < p50[s] <= p50["total"] for s in stages.STAGES), p50


@processes
@pytest.mark.timeout(120)
@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="needs sched_setaffinity")
def test_stages_pairs_a_receivers_marks_with_its_send_on_one_core():
    """On one core the sender can return and start its next send before the receiver runs on past its Ack: the
    stage table pairs the receiver's marks with a send by version, so no stage comes out negative."""
    from weightsync.bench import stages

    cores = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {min(cores)})  # the spawned receiver inherits it
    try:
        p50 = stages.profile(1_000, 10, 20)
    finally:
        os.sched_setaffinity(0, cores)
    assert set(p50) == {*stages.STAGES, "total"}, p50
    assert all(0 < p50[s] <= p50["total"] for s in stages.STAGES), p50


def _args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    cli.add_arguments(parser)
    return parser.parse_args(list(argv))


def _every_case_of(run: plan.RunPlan) -> list[cases.Case]:
    """One made-up case per system of every group and network case the plan holds, as if all ran."""
    out = [_case(s, 1e-3, params=g.params, layout=g.layout, receivers=g.receivers, fds=9)
           for g in run.groups for s in g.systems(run.variants, run.cuda_ok)]
    for p, n in run.net_cases:
        out += [cases.Case("tcp", p, "few", 6, p * 4, n, s, p50=1e-3, p90=1e-3, reps=5)
                for s in (network.FLOOR, *run.net_variants)]
    return out


def test_the_quick_plan_is_small_and_leaves_the_full_run_alone():
    quick, full = plan.make(_args("--quick")), plan.make(_args())
    assert isinstance(quick, plan.RunPlan) and isinstance(full, plan.RunPlan)
    assert {(g.params, g.layout) for g in quick.groups} == {(1000, "few"), (10**6, "few"), (10**7, "few"),
                                                            (10**6, "many")}
    assert not any(g.queue for g in quick.groups if g.layout == "many")  # seconds a case at 500 tensors
    assert [(g.params, g.layout, g.receivers) for g in quick.groups if g.torchrl] == (
        [(10**6, "few", 1)] if baselines.torchrl_version() else [])
    assert quick.net_cases == [(10**7, 1), (10**7, 4)] and quick.startup_workers == [4]
    assert quick.total <= 90 and full.total > 4 * quick.total
    # the full run: every size, layout and receiver count, every baseline in every group
    assert {g.layout for g in full.groups} == set(cases.LAYOUTS) and all(g.queue for g in full.groups)
    assert {(g.params, g.layout) for g in full.groups if g.layout == "huge"} == {(10**6, "huge")}
    assert len(full.net_cases) == 9 and full.startup_workers == [1, 8]
    # an option given wins over what --quick leaves out
    assert {g.layout for g in plan.make(_args("--quick", "--sizes", "1e3")).groups} == {"few", "many"}
    assert all(g.queue for g in plan.make(_args("--quick", "--systems", "queue")).groups)


def _target_lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip().startswith("target ")]


@pytest.mark.parametrize("argv", [("--quick",), ("--quick", "--no-network"), ("--layouts", "huge", "--sizes", "1e6"),
                                  ("--receivers", "1",)])
def test_target_lines_are_a_figure_or_a_sentence_on_why_not(argv, tmp_path, monkeypatch, capsys):
    """Issue: a quick run printed `None ... n/a` and called targets it never measured "missed"; and it drew no
    plot without matplotlib, silently. Every planned case made up, so no worker runs."""
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # `import matplotlib` raises ImportError
    run = plan.make(_args(*argv))
    assert isinstance(run, plan.RunPlan)
    made = _every_case_of(run)
    cli.conclude(_results([], []), made, run.targets, tmp_path)
    out = capsys.readouterr().out
    lines = _target_lines(out)
    assert len(lines) == len(targets.TARGETS)
    quick = "--quick" in argv
    for line, t in zip(lines, targets.TARGETS):
        assert line.startswith(f"target {t.name}: "), line
        said = line.removeprefix(f"target {t.name}: ")
        assert "None" not in said and "n/a" not in said, line
        figure = re.fullmatch(r"[0-9.]+ \(limit [0-9.]+\) (met|missed)", said)
        why = said.split(": ", 1)[0]
        assert figure or why in ("not run in --quick" if quick else "not in this run", "no CUDA device on this machine",
                                 "the network cases were left out (--no-network)"), line
    assert sum("not measured" in line for line in out.splitlines() if line.strip().startswith("targets:")) == 1
    hints = [line for line in out.splitlines() if "matplotlib" in line]
    assert hints == [plots.MISSING] and "pip install matplotlib" in plots.MISSING
    found = json.loads((tmp_path / "results.json").read_text())["targets"]
    assert all((t["value"] is None) == (t["verdict"] == "not measured") == bool(t.get("reason")) for t in found)
    md = (tmp_path / "results.md").read_text()
    assert "| n/a |" not in md and "None: matplotlib was not installed" in md


def test_the_quick_run_names_what_each_unmeasured_target_needs(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    run = plan.make(_args("--quick"))
    assert isinstance(run, plan.RunPlan)
    found = {t["name"]: t for t in targets.evaluate(_every_case_of(run), run.targets)}
    assert found["descriptors the sender holds (500 tensors, 4 receivers)"]["verdict"] == "met"
    huge = found["very many tensors (1e6 params): 10,000 tensors / 6 tensors, send p50"]
    assert huge["reason"] == "not run in --quick: needs the huge layout (10,000 tensors) at 1e6 params, which the full run measures"
    large = found["large model (1e8 params, 4 receivers) send p50 / (copy + pipe)"]
    assert large["reason"] == "not run in --quick: needs 1e8 params in 6 tensors, which the full run measures"
    failed = _every_case_of(run)
    zc = next(c for c in failed if c.system == "weightsync push zero-copy" and c.params == 10**7 and c.receivers == 4)
    zc.p50, zc.note = math.nan, "RuntimeError: boom"
    found = {t["name"]: t for t in targets.evaluate(failed, run.targets)}
    assert found["large model (1e7 params, 4 receivers) send p50 / (copy + pipe)"]["reason"] == (
        "its cases did not run: weightsync push zero-copy at 1e7 params, 4 receivers: RuntimeError: boom")


def test_progress_is_one_line_on_a_terminal_and_plain_lines_elsewhere():
    plain, tty = io.StringIO(), io.StringIO()
    for stream, is_tty in ((plain, False), (tty, True)):
        show = Progress(stream, tty=is_tty)
        show.status("starting 4 worker processes ...")
        show.case("[  1/2] copy")
        show.case("[  2/2] pipe")
        show.done()
        show.line("done")
    assert plain.getvalue() == "[  1/2] copy\n[  2/2] pipe\ndone\n"  # a log keeps every case, no escapes
    assert tty.getvalue().count("\n") == 1 and tty.getvalue().endswith("\r\x1b[Kdone\n")
    assert "[  2/2] pipe" in tty.getvalue()


def test_a_plot_of_one_model_size_draws_a_line_per_system(tmp_path):
    """Issue: the 10,000-tensor plot (one size) was columns of dots; it now draws latency against receivers."""
    pytest.importorskip("matplotlib")
    m = 1_000_000
    run = [_case(s, 1e-3 * k * n, params=m, layout="huge", receivers=n)
           for k, s in enumerate(("copy", "pipe", "weightsync push zero-copy"), 1) for n in (1, 2, 4, 8)]
    run += [_case("copy", 1e-3, params=p) for p in (1000, m)] + [_case("copy", 1e-3, layout="many")]
    assert plots.plot(run, tmp_path) == ["latency-cpu-few.png", "latency-cpu-huge.png", "latency-cpu-many.png"]
    assert all((tmp_path / n).stat().st_size > 10_000 for n in ("latency-cpu-few.png", "latency-cpu-huge.png"))
