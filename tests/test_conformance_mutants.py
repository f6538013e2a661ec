"""The conformance suite, judged: it passes the reference and fails every mutant, naming what it broke.

Each mutant in tests/mutants/ breaks one requirement (its `VIOLATES`: one ID, or a
tuple of IDs when one bug honestly breaks several) by overriding one small seam of
the reference. The suite runs in a subprocess, exactly as a user runs it, and its
closing line "requirements violated: ..." must name at least one of those IDs. A
mutant that survives is a gap in the suite: strengthen the suite, never drop the mutant.

To stay fast, a mutant run stops at the first failing test (`-x`), and the test the
mutant names in `KILLED_BY` runs first (tests/mutants/_first.py). Only the order
changes: if that test does not kill the mutant, the rest of the suite still runs,
and whatever then fails first is what the closing line names. A suite run that
takes longer than MUTANT_TIMEOUT is a hang, itself a finding: the failure names
the test that was running and, where py-spy is installed, where it waited. A
killing test that ends inconclusive (the machine too busy to judge, even at the
re-check) stops the run, which `kill` starts again, up to KILL_TRIES times.
"""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.mutants._first import STOPPED_INCONCLUSIVE

ROOT = Path(__file__).resolve().parent.parent
MUTANTS_DIR = Path(__file__).resolve().parent / "mutants"
MUTANTS = sorted(p.stem for p in MUTANTS_DIR.glob("*.py") if not p.stem.startswith("_"))
#: Sender programs with one bug each (the reference sender program over a patched reference), for --sender-cmd.
SENDER_MUTANTS_DIR = Path(__file__).resolve().parent / "sender_mutants"
SENDER_MUTANTS = sorted(p.stem for p in SENDER_MUTANTS_DIR.glob("*.py") if not p.stem.startswith("_"))
#: Receiver programs with one bug each (the NumPy receiver with one line replaced), for --receiver-cmd.
RECEIVER_MUTANTS_DIR = Path(__file__).resolve().parent / "receiver_mutants"
RECEIVER_MUTANTS = sorted(p.stem for p in RECEIVER_MUTANTS_DIR.glob("*.py") if not p.stem.startswith("_"))
VIOLATED_LINE = re.compile(r"^requirements violated: (.*)$", re.MULTILINE)
SPEC_ID = re.compile(r"\*\*([A-Z]+(?:-[A-Z])?-\d+)\*\*")
#: The default profile of the whole suite, with room for a loaded machine.
SUITE_TIMEOUT = 900
#: One mutant's run: its killing test, or at worst most of the suite, on a loaded two-core machine.
MUTANT_TIMEOUT = 300
#: The suite's exit status when nothing was violated and some test was inconclusive (conformance/conftest.py).
INCONCLUSIVE_EXIT = 6
#: Runs of a mutant whose killing test was inconclusive: the slow layer shares two cores between two suites.
KILL_TRIES = 3


@dataclass(frozen=True)
class Mutant:
    name: str
    doc: str
    violates: tuple[str, ...]
    killed_by: tuple[str, ...]


def declared(name: str, directory: Path = MUTANTS_DIR) -> Mutant:
    """A mutant's docstring, VIOLATES and KILLED_BY, read from its source without importing it."""
    tree = ast.parse((directory / f"{name}.py").read_text())
    values = {}
    for node in tree.body:
        target = node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else None
        if isinstance(target, ast.Name) and target.id in ("VIOLATES", "KILLED_BY"):
            values[target.id] = ast.literal_eval(node.value)
    return Mutant(name, ast.get_docstring(tree) or "", _ids(values.get("VIOLATES", ())),
                  _ids(values.get("KILLED_BY", ())))


def _ids(value) -> tuple[str, ...]:
    return (value,) if isinstance(value, str) else tuple(value)


def spec_ids() -> set[str]:
    return {m for p in (ROOT / "spec").glob("*.md") for m in SPEC_ID.findall(p.read_text())}


def run_suite(impl: str, *extra: str, timeout: float = SUITE_TIMEOUT,
              extra_path: str = "") -> tuple[int | None, str, list[str], float]:
    """The suite in a subprocess, as a user runs it: (exit code, output, IDs it names violated, seconds).

    The exit code is None when the run outlived `timeout`; it is then killed, with the
    worker processes it started (its own process group), and the output says where it hung.
    """
    return Run(impl, *extra, extra_path=extra_path).result(timeout)


class Run:
    """One run of the suite in a subprocess, started now and judged by `result` (its output goes to a file, so a run
    nobody reads yet never blocks on a full pipe)."""

    def __init__(self, impl: str, *extra: str, extra_path: str = "", start: str | None = None):
        env = dict(os.environ)
        if start is not None:  # how the suite starts its receiver processes (conformance/pool.py)
            env["WEIGHTSYNC_CONFORMANCE_START"] = start
        # Spawned receiver processes import the mutant by name too.
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), extra_path, env.get("PYTHONPATH", "")) if p)
        cmd = [sys.executable, "-m", "pytest", "conformance", f"--impl={impl}", "-p", "no:cacheprovider",
               "--conformance-profile=ci", *extra]
        self.out = tempfile.TemporaryFile("w+")
        self.t0 = time.monotonic()
        self.proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=self.out, stderr=subprocess.STDOUT, text=True,
                                     start_new_session=True)

    def result(self, timeout: float = SUITE_TIMEOUT) -> tuple[int | None, str, list[str], float]:
        where = None
        try:
            rc: int | None = self.proc.wait(timeout=max(1.0, self.t0 + timeout - time.monotonic()))
        except subprocess.TimeoutExpired:
            where = _where_it_waits(self.proc.pid)
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
            rc = None
        self.out.seek(0)
        out = self.out.read()
        self.out.close()
        if where is not None:
            out += f"\n---- killed after {timeout:.0f} s; {_running_test(out)}\n{where}"
        m = VIOLATED_LINE.search(out)
        named = [] if m is None or m.group(1) == "none" else m.group(1).split(", ")
        return rc, out, named, time.monotonic() - self.t0


def kill(impl: str, killed_by, *extra: str, extra_path: str = "") -> tuple[int | None, str, list[str], float]:
    """A mutant's run (run_suite, -x, its KILLED_BY first), run again while its killing test is inconclusive."""
    first = [f"--run-first={node}" for node in killed_by]
    for _ in range(KILL_TRIES):
        rc, out, named, elapsed = run_suite(impl, "-x", "-v", "-p", "tests.mutants._first", *first, *extra,
                                            timeout=MUTANT_TIMEOUT, extra_path=extra_path)
        if rc == 1 or STOPPED_INCONCLUSIVE not in out:  # judged (killed, passed or hung): not run again
            break
    return rc, out, named, elapsed


def _running_test(out: str) -> str:
    """Where the run was when it was killed, from -v output: a test's call, or the teardown after one."""
    lines = [line for line in out.splitlines() if line.startswith("conformance/") and "::" in line]
    if not lines:
        return "no test had started (collection, or the session's setup)"
    done = re.search(r" (PASSED|FAILED|SKIPPED|NOT IMPLEMENTED|INCONCLUSIVE|ERROR|XFAIL|XPASS)\b", lines[-1])
    if done:
        return f"it hung after {lines[-1][:done.start()]} {done.group(1)}: in its teardown, or the session's"
    return f"it hung in {lines[-1].strip()}"


def _where_it_waits(pid: int) -> str:
    """py-spy's stacks of the suite's process, when py-spy is at hand."""
    spy = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    if not Path(spy).exists():
        return "(no py-spy here to show where it waited)"
    try:
        return subprocess.run([spy, "dump", "--pid", str(pid)], capture_output=True, text=True, timeout=30,
                              check=False).stdout
    except (OSError, subprocess.SubprocessError) as e:
        return f"(py-spy failed: {e})"


def test_every_mutant_declares_its_requirement():
    assert len(MUTANTS) >= 10 and len(SENDER_MUTANTS) >= 3 and len(RECEIVER_MUTANTS) >= 3
    known = spec_ids()
    for name, directory in [*((n, MUTANTS_DIR) for n in MUTANTS), *((n, SENDER_MUTANTS_DIR) for n in SENDER_MUTANTS),
                            *((n, RECEIVER_MUTANTS_DIR) for n in RECEIVER_MUTANTS)]:
        m = declared(name, directory)
        assert m.violates, f'tests/mutants/{name}.py has no VIOLATES = "ID" (or a tuple of IDs)'
        for rid in m.violates:
            assert rid in known, f"tests/mutants/{name}.py: VIOLATES names {rid}, which spec/ does not define"
            assert rid in m.doc, f"tests/mutants/{name}.py: the docstring does not name {rid}"
        assert m.killed_by, f"tests/mutants/{name}.py has no KILLED_BY = (conformance test node ids)"
        for node in m.killed_by:
            path, _, test = node.partition("::")
            func = test.partition("[")[0]
            assert (ROOT / path).is_file() and f"def {func}(" in (ROOT / path).read_text(), (
                f"tests/mutants/{name}.py: KILLED_BY names {node}, which does not exist"
            )


@pytest.mark.parametrize("package,names", [("tests.mutants", MUTANTS), ("tests.sender_mutants", SENDER_MUTANTS)],
                         ids=["mutants", "sender_mutants"])
def test_every_mutant_patches_what_the_reference_has(package, names):
    """A mutant whose seam the reference renamed carries no bug any more: it must fail here, not pass the suite
    (issue 42). tests/mutant_seams.py imports each mutant and lists the names it added instead of replacing; the
    sender programs' mutants patch the reference too."""
    proc = subprocess.run([sys.executable, str(ROOT / "tests" / "mutant_seams.py"), package, *names],
                          cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    stale = json.loads(proc.stdout.splitlines()[-1])
    assert not stale, f"mutants whose seam the reference no longer has (rename them with the reference): {stale}"


def test_every_receiver_mutant_fits_the_numpy_receiver():
    """A receiver mutant replaces one line of the NumPy receiver; a line that moved would make it fail for the wrong
    reason (its program exits at start), so each must occur exactly once."""
    source = (ROOT / "interop" / "numpy" / "weightsync_numpy.py").read_text()
    for name in RECEIVER_MUTANTS:
        tree = ast.parse((RECEIVER_MUTANTS_DIR / f"{name}.py").read_text())
        old = next(ast.literal_eval(n.value) for n in tree.body if isinstance(n, ast.Assign)
                   and isinstance(n.targets[0], ast.Name) and n.targets[0].id == "OLD")
        assert source.count(old) == 1, f"tests/receiver_mutants/{name}.py: its OLD line occurs {source.count(old)} times"


def test_every_mutant_is_listed_in_the_docs():
    """docs/conformance.md tells users which bugs the suite is known to catch: every shipped mutant."""
    page = (ROOT / "docs" / "conformance.md").read_text()
    missing = [name for name in MUTANTS + SENDER_MUTANTS + RECEIVER_MUTANTS if f"`{name}`" not in page]
    assert not missing, f"docs/conformance.md does not list these mutants: {missing}"


#: The suite's run against the reference that test_suite_passes_the_reference judges. tests/conftest.py starts it
#: once collection has chosen that test, so that it runs beside the rest of the fast layer, not after it.
_reference: dict = {}


def start_reference_run() -> None:
    report = Path(tempfile.mkdtemp(prefix="weightsync-suite-")) / "report.json"
    # As a stranger runs it: receiver processes forked from a server that imported torch once (the default).
    _reference.update(run=Run("weightsync", "-q", f"--conformance-json={report}"), report=report)


def stop_reference_run() -> None:
    """At the session's end: a run nobody judged (the test deselected by -k, or the session interrupted) is ended."""
    run = _reference.pop("run", None)
    if run is not None and run.proc.poll() is None:
        os.killpg(run.proc.pid, signal.SIGKILL)
        run.proc.wait()


@pytest.mark.timeout(SUITE_TIMEOUT + 60)
def test_suite_passes_the_reference():
    """Nothing violated. An inconclusive test (exit status 6: the machine was too busy even for the
    re-check) says nothing against the reference, so it does not fail this test; it is reported.
    A failure shows each failing test's own report (the falsifying example of a property), not only the table."""
    if "run" not in _reference:
        start_reference_run()
    run, report = _reference.pop("run"), _reference["report"]
    rc, out, named, _ = run.result()
    if rc not in (0, INCONCLUSIVE_EXIT) or named:
        tests = json.loads(report.read_text())["tests"] if report.exists() else {}
        failing = "\n\n".join(f"{n}: {t['reason']}\n{(t.get('details') or '')[-3000:]}"
                                for n, t in tests.items() if t["outcome"] == "violated")
        where = out.rfind("=== FAILURES ===")
        raise AssertionError(f"the conformance suite fails the reference (exit {rc}, naming {named}):\n{failing}\n"
                             f"{out[where:where + 12000] if where >= 0 else out[-6000:]}")
    if rc == INCONCLUSIVE_EXIT:
        warnings.warn(f"the conformance suite was inconclusive on the reference:\n{out[-3000:]}", stacklevel=1)
    tests = json.loads(report.read_text())["tests"]
    untimed = [n for n, t in tests.items() if not (isinstance(t.get("seconds"), float) and t["seconds"] >= 0
                                                   and isinstance(t.get("process"), str))]
    assert not untimed, f"the JSON report gives no seconds or process for {len(untimed)} tests, e.g. {untimed[:3]}"
    slowest = max(tests.values(), key=lambda t: t["seconds"])
    assert slowest["seconds"] > 1, "the JSON report's seconds do not add up what each test took"
    # The suite's checks of itself decide nothing about a machine's load: inconclusive there is a broken inventory.
    broken = {n: t["reason"] for n, t in tests.items() if "test_traceability.py" in n and t["outcome"] != "passed"}
    assert not broken, f"the suite's traceability (spec, tests, clause inventory) does not hold: {broken}"
    missed = claimed_but_not_exercised(json.loads(report.read_text()))
    assert not missed, ("clauses spec/clauses/ says a test makes true, yet this run against the reference did not "
                        f"(the test passed without the condition occurring): {missed}")


def claimed_but_not_exercised(report: dict) -> list[str]:
    """The probed clauses whose listed tests passed in this run without the harness seeing the condition occur: the
    inventory claims a condition those tests do not make true. (A clause whose tests did not run here, say those of
    sender programs only, or were skipped, is not exercised in this run, and says nothing of the inventory.)"""
    from conformance import clauses

    inventory = clauses.load()
    passed = [n for n, t in report["tests"].items() if t["outcome"] == "passed"]
    out = []
    for cid, r in report.get("clauses", {}).items():
        c = inventory.get(cid)
        if r["exercised"] or c is None or not c.probe:
            continue
        if any(clauses.matches(e, n) for e in c.tests for n in passed):
            out.append(f"{cid} ({r['condition']})")
    return out


@pytest.mark.slow  # the slow layer: .ci/run runs it after the README's command, over two processes
@pytest.mark.timeout(KILL_TRIES * MUTANT_TIMEOUT + 60)
@pytest.mark.parametrize("name", MUTANTS)
def test_suite_kills_mutant(name):
    m = declared(name)
    rc, out, named, elapsed = kill(f"tests.mutants.{name}", m.killed_by)
    what = f"mutant {name} ({', '.join(m.violates)})"
    assert rc is not None, f"{what}: the suite hung (a finding: a call or a teardown that does not end):\n{out[-8000:]}"
    assert rc == 1, f"{what} survived or broke the run (exit {rc}, {elapsed:.0f} s):\n{out[-8000:]}"
    # A mutant that no longer fits the reference's internals fails for the wrong reason.
    assert "AttributeError" not in out and "NameError" not in out, f"{what} is out of date:\n{out[-8000:]}"
    assert set(named) & set(m.violates), (
        f"{what}: the suite names {named or 'nothing'} ({elapsed:.0f} s):\n{out[-8000:]}"
    )


_DIES_IN_RECEIVERS = '''
import multiprocessing
import os

if multiprocessing.parent_process() is not None:
    os._exit(3)  # no receiver process can import it: the harness fails, which decides nothing

from weightsync import *
from weightsync import CAPABILITIES, __all__
'''


@pytest.mark.slow
@pytest.mark.timeout(KILL_TRIES * 60 + 60)
def test_a_killing_test_that_is_inconclusive_stops_the_run_which_is_run_again(tmp_path, monkeypatch):
    """CI, stop 56: a mutant's killing test was inconclusive on a busy machine, the rest of the suite ran serially in
    its place and outlived MUTANT_TIMEOUT, which read as a hang. Now the run stops at that test and is run again."""
    (tmp_path / "dies_in_receivers.py").write_text(_DIES_IN_RECEIVERS)
    runs = []
    real = run_suite
    monkeypatch.setattr(sys.modules[__name__], "run_suite", lambda *a, **k: runs.append(a) or real(*a, **k))
    killer = "conformance/test_consistency.py::test_a_waiting_apply_holds_new_readers_back"
    rc, out, named, _ = kill("dies_in_receivers", [killer], extra_path=str(tmp_path))
    assert rc == 2 and not named and f"{STOPPED_INCONCLUSIVE} ({killer})" in out, f"exit {rc}:\n{out[-3000:]}"
    assert "1 inconclusive in" in out, f"more than the killing test ran:\n{out[-3000:]}"
    assert len(runs) == KILL_TRIES, f"{len(runs)} runs"


def test_unknown_impl_fails_at_once():
    code, out, _, _ = run_suite("no_such_module_xyz", "-q")
    assert code == 4, out[-2000:]
    assert "--impl=no_such_module_xyz: cannot import it" in out
    assert "Traceback" not in out


def test_module_missing_a_name_fails_at_once():
    code, out, _, _ = run_suite("json", "-q")
    assert code == 4, out[-2000:]
    assert "does not expose the weightsync binding: missing Sender" in out


def test_a_module_a_program_is_not_tested_by_is_refused_at_once():
    """Named on the command line, pytest collects a module whatever the suite leaves out; one that needs the
    binding would run for a receiver program and decide nothing (every test inconclusive): a usage error."""
    code, out, _, _ = run_suite("weightsync", "-q", "conformance/test_network.py", "--receiver-cmd",
                                "python conformance/receivers/reference_receiver.py {url}")
    assert code == 4, out[-2000:]
    assert "test_network.py: not run for a receiver program, which is tested by test_receiver_wire.py alone" in out


def test_a_module_of_one_role_needs_that_roles_class_only(tmp_path):
    """API-12: a module naming `receiver` need not export Sender, but must export Receiver."""
    (tmp_path / "half_shim.py").write_text(
        "from tests.one_role.sender_only import *  # noqa: F403\n"
        "from tests.one_role.sender_only import CAPABILITIES as _C\n"
        "CAPABILITIES = (_C - {'sender'}) | {'receiver'}\n")
    code, out, _, _ = run_suite("half_shim", "-q", "--collect-only", extra_path=str(tmp_path))
    assert code == 4, out[-2000:]
    assert "missing Receiver" in out and "Sender" not in out.partition("missing")[2].partition("(")[0], out[-2000:]


#: A one-role module (API-12): a requirement of its role that passes, and one of the other role, not implemented.
ONE_ROLE = {"sender": ("ZC-2", "INIT-3"), "receiver": ("INIT-2", "SEND-1")}


@pytest.mark.slow
@pytest.mark.timeout(MUTANT_TIMEOUT + 60)
@pytest.mark.parametrize("role", sorted(ONE_ROLE))
def test_a_module_of_one_role_is_tested_with_scripted_peers(tmp_path, role):
    """The reference's Sender alone, or its Receiver alone (API-12), passes against the suite's scripted peers of
    the other role, with that role's requirements reported not implemented."""
    report = tmp_path / "report.json"
    rc, out, named, _ = run_suite(f"tests.one_role.{role}_only", "-q", f"--conformance-json={report}",
                                  timeout=MUTANT_TIMEOUT)
    assert rc in (0, INCONCLUSIVE_EXIT) and not named, f"the {role}-only shim fails (exit {rc}):\n{out[-6000:]}"
    data = json.loads(report.read_text())
    mine, other = ONE_ROLE[role]
    assert data["roles"] == [role], data["roles"]
    assert data["requirements"][mine]["status"] == "passed", data["requirements"][mine]
    assert data["requirements"][other]["status"] == "not implemented", data["requirements"][other]
    assert f"({role} only)" in out


#: Each program mode: its option, a program that passes, one test of its module, and a requirement that test checks.
PROGRAM_MODES = {
    "receiver": ("--receiver-cmd", "interop/numpy/weightsync_numpy.py {url}", "test_versions_arrive_bit_for_bit",
                 "ACK-3", "receiver_cmd"),
    "sender": ("--sender-cmd", "conformance/senders/reference_sender.py {layout} {receivers}",
               "test_a_joined_receiver_gets_the_layout_and_version_0", "INIT-1", "sender_cmd"),
}


@pytest.mark.parametrize("role", sorted(PROGRAM_MODES))
def test_program_mode_imports_neither_torch_nor_a_binding(tmp_path, role):
    """--receiver-cmd and --sender-cmd judge a program over the wire: the suite's process imports no torch and no
    implementation, starts no receiver pool, and still writes the JSON report, with the other role's tests not
    implemented."""
    option, program, test, checked, key = PROGRAM_MODES[role]
    report = tmp_path / "report.json"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "reference"), str(ROOT)]))
    cmd = [sys.executable, "-X", "importtime", "-m", "pytest", "conformance", "-p", "no:cacheprovider", "-n", "0",
           "-k", test, f"--conformance-json={report}", option, f"{sys.executable} {program}"]
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    imported = {line.rpartition("|")[2].strip() for line in proc.stderr.splitlines() if line.startswith("import time:")}
    heavy = sorted(m for m in imported if m.split(".")[0] in ("torch", "weightsync", "tensordict"))
    assert not heavy, f"program mode imported {heavy[:5]}"
    data = json.loads(report.read_text())
    assert data[key] and data["violated"] == [] and data["requirements"][checked]["status"] == "passed"
    other = "SEND-1" if role == "receiver" else "INIT-3"
    assert data["requirements"][other]["status"] == "not implemented", data["requirements"][other]



@pytest.mark.slow
@pytest.mark.timeout(KILL_TRIES * MUTANT_TIMEOUT + 60)
@pytest.mark.parametrize("name", SENDER_MUTANTS)
def test_sender_program_suite_kills_mutant(name):
    """--sender-cmd judges a program by the wire alone: a sender program with one bug is named for it."""
    m = declared(name, SENDER_MUTANTS_DIR)
    program = f"{sys.executable} tests/sender_mutants/{name}.py {{layout}} {{receivers}}"
    rc, out, named, elapsed = kill("weightsync", m.killed_by, "--sender-cmd", program)
    what = f"sender mutant {name} ({', '.join(m.violates)})"
    assert rc == 1, f"{what} survived or broke the run (exit {rc}, {elapsed:.0f} s):\n{out[-8000:]}"
    assert set(named) & set(m.violates), f"{what}: the suite names {named or 'nothing'}:\n{out[-8000:]}"


@pytest.mark.slow
@pytest.mark.timeout(KILL_TRIES * MUTANT_TIMEOUT + 60)
@pytest.mark.parametrize("name", RECEIVER_MUTANTS)
def test_receiver_program_suite_kills_mutant(name):
    """--receiver-cmd judges a program by the wire and its report alone: a receiver program with one bug is named
    for it."""
    m = declared(name, RECEIVER_MUTANTS_DIR)
    program = f"{sys.executable} tests/receiver_mutants/{name}.py {{url}}"
    rc, out, named, elapsed = kill("weightsync", m.killed_by, "--receiver-cmd", program)
    what = f"receiver mutant {name} ({', '.join(m.violates)})"
    assert rc == 1, f"{what} survived or broke the run (exit {rc}, {elapsed:.0f} s):\n{out[-8000:]}"
    assert set(named) & set(m.violates), f"{what}: the suite names {named or 'nothing'}:\n{out[-8000:]}"


@pytest.mark.slow
@pytest.mark.timeout(MUTANT_TIMEOUT + 60)
def test_a_known_gap_listed_in_an_xfails_file_is_reported_not_failed(tmp_path):
    """--xfails-file: a listed requirement's violation is xfail and fails nothing, an unlisted one still fails the
    run, and a listed test that passes is reported xpass (array-api-tests' convention)."""
    passing = "test_sender_signature_and_context_manager"
    selection = ("-k", f"{passing} or test_a_tensor_given_data_of_another_shape_is_refused_at_the_next_send")
    (tmp_path / "known.txt").write_text(f"BAD-2   # the shape check\n{passing}\n")
    report = tmp_path / "report.json"
    rc, out, named, _ = run_suite("tests.mutants.broadcast_shape", "-q", *selection,
                                  f"--xfails-file={tmp_path / 'known.txt'}", f"--conformance-json={report}")
    assert rc == 0 and not named, f"a listed gap failed the run (exit {rc}):\n{out[-4000:]}"
    data = json.loads(report.read_text())
    assert data["xfail"] == ["BAD-2"] and data["requirements"]["BAD-2"]["status"] == "xfail", data["xfail"]
    assert [n.rpartition("::")[2] for n in data["xpass"]] == [passing], data["xpass"]
    (tmp_path / "other.txt").write_text("BAD-1\n")
    rc, out, named, _ = run_suite("tests.mutants.broadcast_shape", "-q", *selection,
                                  f"--xfails-file={tmp_path / 'other.txt'}")
    assert rc == 1 and named == ["BAD-2"], f"an unlisted violation passed (exit {rc}, {named}):\n{out[-4000:]}"


@pytest.mark.slow
@pytest.mark.timeout(MUTANT_TIMEOUT + 60)
def test_protocol_version_1_0_leaves_out_what_1_1_added(tmp_path):
    """--protocol-version 1.0: every test naming a requirement of spec/README.md's 'Added in 1.1' list is not
    implemented, and the 1.0 requirements are still checked."""
    report = tmp_path / "report.json"
    rc, out, named, _ = run_suite("weightsync", "-q", "--protocol-version=1.0", "-k", "test_wire or test_versions",
                                  f"--conformance-json={report}")
    assert rc in (0, INCONCLUSIVE_EXIT) and not named, out[-4000:]
    data = json.loads(report.read_text())
    rows = data["requirements"]
    assert data["protocol_version"] == "1.0"
    assert rows["WIRE-1"]["status"] == "not implemented" and rows["ACK-2"]["status"] == "passed", (
        rows["WIRE-1"], rows["ACK-2"])
    added = re.search(r"^Added in 1\.1: (.*)$", (ROOT / "spec" / "README.md").read_text(), re.M).group(1)
    ran = [n for n, t in data["tests"].items() if t["outcome"] == "passed" and set(t["ids"]) & set(
        re.findall(r"`([A-Z]+(?:-[A-Z])?-\d+)`", added))]
    assert not ran, f"tests of requirements 1.1 added ran for 1.0: {ran[:5]}"
    # The state machine runs every rule 1.0 defines (issue 40): 1.1's rules are off and 1.1's IDs not counted.
    rc, out, named, _ = run_suite("weightsync", "-q", "--protocol-version=1.0", "-k", "test_protocol_state_machine",
                                  "--conformance-examples=5", f"--conformance-json={report}")
    assert rc in (0, INCONCLUSIVE_EXIT) and not named, out[-4000:]
    machine = next(t for n, t in json.loads(report.read_text())["tests"].items() if "test_protocol_state_machine" in n)
    assert machine["outcome"] == "passed" and machine["ids"] and not set(machine["ids"]) & set(
        re.findall(r"`([A-Z]+(?:-[A-Z])?-\d+)`", added)), machine
    assert "drop" in machine.get("properties", {}).get("rules_off", []), machine


_SWALLOWS = '''"""A sender whose constructor swallows every exception in a loop: pytest-timeout cannot end the test."""
import time

from weightsync import *  # noqa: F403
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync import Sender as _Sender


class Sender(_Sender):
    def __init__(self, *args, **kwargs):
        while True:
            try:
                time.sleep(0.05)
            except BaseException:  # the bug: the suite's timeout and Ctrl-C are swallowed too
                pass
'''


@pytest.mark.slow
@pytest.mark.timeout(MUTANT_TIMEOUT)
@pytest.mark.parametrize("processes", ["1", "0"])
def test_a_hang_the_timeout_cannot_end_is_judged_and_the_run_goes_on(tmp_path, processes):
    """Issue 40: the suite bounds itself whatever the implementation does (conformance/backstop.py). A call that
    swallows pytest-timeout's exception is judged a hang of its requirement; under xdist the run goes on in a new
    process (the second test is judged too), without it the run ends with its report written."""
    (tmp_path / "swallows_everything.py").write_text(_SWALLOWS)
    report = tmp_path / "report.json"
    tests = "test_version_is_int or test_send_with_explicit_weights"
    rc, out, named, _ = run_suite("swallows_everything", "-q", "-n", processes, "--conformance-budget=2", "-k", tests,
                                  f"--conformance-json={report}", extra_path=str(tmp_path), timeout=240)
    assert rc == 1 and named == ["API-1"], f"exit {rc}, named {named}:\n{out[-4000:]}"
    data = json.loads(report.read_text())
    judged = {n.rpartition("::")[2]: (t["outcome"], t["blamed"]) for n, t in data["tests"].items()}
    if processes == "1":  # both judged: the run went on after the first hang
        assert judged == dict.fromkeys(["test_version_is_int", "test_send_with_explicit_weights"],
                                       ("violated", ["API-1"])), judged
    else:  # the first hang ends the run, with its report
        assert list(judged.values()) == [("violated", ["API-1"])] and data["interrupted"], (judged, data["interrupted"])
    assert "the implementation's call never returned" in out
