"""The state machine's rules a user may switch off (--xfails-file, issue 40): the list matches the machine."""

from __future__ import annotations

import inspect

from hypothesis.stateful import RULE_MARKER, RuleBasedStateMachine

from conformance.names import STATE_MACHINE_RULES, rules_off
from conformance.test_state_machine import Protocol


def _rules(machine) -> set[str]:
    """The rules Hypothesis runs: found as it finds them, by the marker its @rule leaves on a method."""
    return {name for name, f in inspect.getmembers(machine) if getattr(f, RULE_MARKER, None) is not None}


def test_every_rule_is_switchable_but_the_protocol_itself():
    assert set(STATE_MACHINE_RULES) <= _rules(Protocol)
    assert _rules(Protocol) - set(STATE_MACHINE_RULES) == {"send", "send_async", "wait", "idle"}


def test_a_rule_is_switched_off_by_name_or_by_its_requirement():
    assert rules_off({"Protocol.drop", "test_x.py::test_y"}, set()) == {"drop"}
    assert rules_off(set(), {"LIFE-6", "ACK-3"}) == {"closed_sender_calls"}
    off = rules_off({"Protocol.handle_of_live"}, {"API-9"})
    machine = type("Protocol", (Protocol,), dict.fromkeys(off))
    assert issubclass(machine, RuleBasedStateMachine)
    assert _rules(machine) == _rules(Protocol) - {"handle_of_live", "drop"}


def test_shrinking_a_failure_is_bounded_by_the_suite():
    """A failing implementation's run ends in minutes: Hypothesis shrinks one failure for at most SHRINK_SECONDS
    (scaled), not its own 300 s (the state machine against TorchRL's scheme spent 300 s there)."""
    from hypothesis.internal.conjecture import engine

    from conformance import seeds
    from conformance import timing as tm

    before = engine.MAX_SHRINKING_SECONDS
    try:
        engine.MAX_SHRINKING_SECONDS = 300
        seeds._bound_shrinking()
        assert engine.MAX_SHRINKING_SECONDS == min(300, seeds.SHRINK_SECONDS * tm.SCALE)
    finally:
        engine.MAX_SHRINKING_SECONDS = before


def test_the_leak_checks_collect_only_what_tests_made():
    """freeze_imports (run once the suite's collection is done) keeps later collections off the imports' objects,
    and a test's garbage made afterwards is still collected before a leak check looks."""
    import subprocess
    import sys
    import textwrap

    code = textwrap.dedent("""
        import gc, weakref
        import torch  # noqa: F401 - the objects a leak check's collection walked each time
        from conformance.probes import freeze_imports
        freeze_imports()
        assert gc.get_freeze_count() > 10_000, gc.get_freeze_count()
        class Held:
            pass
        a, b = Held(), Held()
        a.other, b.other = b, a  # a cycle: only a collection frees it
        gone = weakref.ref(a)
        del a, b
        gc.collect()
        assert gone() is None, "garbage made after the freeze was not collected"
        print("ok")
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


def test_a_thread_s_stack_is_read_with_collection_paused(monkeypatch):
    """`probes.stack_of` reads another thread's frames with the collector off and puts it back as it was: on
    CPython 3.11 a collection inside `sys._current_frames()` can deadlock the whole process (a suite run beside
    busy processes hung in it), and the suite reads stacks in loops."""
    import gc
    import sys
    import threading

    from conformance import probes

    seen = []
    real = sys._current_frames

    def recording():
        seen.append(gc.isenabled())
        return real()

    monkeypatch.setattr(sys, "_current_frames", recording)
    here = threading.get_ident()
    for was_enabled in (True, False):
        (gc.enable if was_enabled else gc.disable)()
        try:
            frames = probes.stack_of(here)
            assert gc.isenabled() is was_enabled
        finally:
            gc.enable()
        names = [f.f_code.co_name for f in frames]
        assert "stack_of" in names and "test_a_thread_s_stack_is_read_with_collection_paused" in names
    assert seen == [False, False]
    assert probes.stack_of(None) == []


def test_the_suite_reads_thread_stacks_only_through_the_probe():
    """Every `sys._current_frames()` of the suite goes through `probes.stack_of`, the one place that pauses the
    collector around it."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    callers = sorted(str(p.relative_to(root)) for folder in ("conformance", "tests", "reference")
                     for p in (root / folder).rglob("*.py")
                     if "_current_frames()" in p.read_text() and p.name != "test_suite_rules.py")
    assert callers == ["conformance/probes.py"], callers


def test_a_thread_s_uncaught_exception_is_kept_in_one_line_without_a_traceback(monkeypatch, capsys):
    """The suite's `threading.excepthook` keeps a line naming the thread and its exception, formats no traceback
    and writes nothing while tests run: on CPython 3.11 formatting one parses source with `ast`, whose recursion
    count every thread shares, and a thread doing so while pytest parses a failing test stopped a CI run with an
    internal error; and a test that reads the process's output (API-6) must not find the suite's own lines."""
    import threading
    import traceback

    from conformance import stops

    def refuse(*args, **kwargs):
        raise AssertionError("a traceback was formatted")

    for name in ("format_exception", "print_exception", "format_exc", "print_exc", "format_tb"):
        monkeypatch.setattr(traceback, name, refuse)
    monkeypatch.setattr(traceback.TracebackException, "__init__", refuse)
    monkeypatch.setattr(threading, "excepthook", stops.thread_ended)
    monkeypatch.setattr(stops, "ENDED", [])

    def crash():
        raise OSError("the channel went away")

    t = threading.Thread(target=crash, name="helper-7")
    t.start()
    t.join(10)
    out = capsys.readouterr()
    assert out.err == "" and out.out == "", out
    assert stops.ENDED == ["thread helper-7 ended by OSError: the channel went away"], stops.ENDED


def test_the_suite_s_thread_hook_stands_in_front_of_pytest_s_and_is_taken_down_after():
    import threading

    from conformance import stops

    assert stops.pytest_configure.pytest_impl["trylast"]  # configured after pytest's threadexception plugin
    cleanups = []
    config = type("Config", (), {"add_cleanup": lambda self, f: cleanups.append(f)})()
    before = threading.excepthook
    try:
        stops.pytest_configure(config)
        assert threading.excepthook is stops.thread_ended
    finally:
        for f in cleanups:
            f()
    assert threading.excepthook is before


def test_with_the_suite_configured_a_traceback_formatted_in_any_thread_parses_no_source(monkeypatch):
    """Fifteenth round: an implementation's thread that logged an exception formatted its traceback while pytest
    formatted a failure, and CPython 3.11's shared AST recursion count stopped the run (SystemError). Under the
    suite's configuration no traceback calls `ast.parse`; after it, traceback is as it was."""
    import ast
    import threading
    import traceback

    from conformance import stops

    def raising():
        return [1][2] + 0  # a line whose carets would be computed from its source

    try:
        raising()
    except IndexError as e:
        error = e
    cleanups = []
    config = type("Config", (), {"add_cleanup": lambda self, f: cleanups.append(f)})()
    before = [owner.__dict__.get(name) for owner, name, _ in stops.CARETS]
    parsed = []
    real_parse = ast.parse
    monkeypatch.setattr(ast, "parse", lambda *a, **k: parsed.append(a) or real_parse(*a, **k))
    try:
        stops.pytest_configure(config)
        out: list = []
        t = threading.Thread(target=lambda: out.append("".join(traceback.format_exception(error))))
        t.start()
        t.join(10)
        assert out and "IndexError" in out[0], out
        assert parsed == [], f"formatting a traceback parsed source {len(parsed)} time(s)"
    finally:
        for f in cleanups:
            f()
    assert [owner.__dict__.get(name) for owner, name, _ in stops.CARETS] == before
    if any(before):  # the carets are back: the same formatting parses the line again
        traceback.format_exception(error)
        assert parsed, "after the suite's cleanup, traceback's carets were not restored"
