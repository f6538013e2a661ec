"""Before any test, the program under test (--receiver-cmd, --sender-cmd) is started once: does it speak?

A program that cannot start (its executable is missing, it fails to import its array library) would end every
test as a check that names no requirement, each after waiting out its bound, and hide what the program wrote to
standard error (the tests discard it). So the controlling process starts it once, against the cheapest peer that
proves it speaks, and a program that exits first is a usage error of the run (pytest's exit status 4): its command,
its exit status and the last lines of its standard error, and no test runs.

"Speaks": a receiver program connects to the URL of a scripted sender (its join begins; nothing of it is judged
here); a sender program writes the first byte of its output (`url 0 ...`) for a layout of one array. Once it
speaks it is killed: whatever it does after that is the tests' to judge, as before.

A program that neither speaks nor exits within `start_bound` (the bound each test gives it to start, 60 s at
timescale 1) is a usage error too: every test would miss the same bound, be re-checked at three times it, and end
inconclusive, after the whole run waited it out.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from . import timing as tm
from .peers import readable

#: How many of the last lines of the program's standard error (and output) the usage error shows.
TAIL_LINES = 20
#: How long a program that closed its output is given to exit, for its exit status.
EXIT_GRACE = 1.0
#: The layout of the sender program's start: one small array (what a layout may hold is the tests' to judge).
LAYOUT = [["w", "float32", [4]]]


def start_bound() -> float:
    """How long a program may take to start and speak: test_receiver_wire.start_bound, the bound of every test."""
    return 60.0 * tm.SCALE


def preflight(config) -> None:
    """Start the program under test once, in the controlling process; pytest.UsageError if it does not speak."""
    if hasattr(config, "workerinput") or config.option.help or config.option.collectonly:
        return
    for option, role in (("--receiver-cmd", "receiver"), ("--sender-cmd", "sender")):
        cmd = config.getoption(option)
        if cmd:
            problem = check(role, cmd, start_bound())
            if problem:
                raise pytest.UsageError(f"{option}={cmd!r}: {problem}\nNo test was run: make the program start "
                                        "(its command, or what it needs installed) and run again.")


def check(role: str, cmd: str, bound: float) -> str | None:
    """None once the `role` program of `cmd` spoke; else what went wrong, with the end of what it wrote."""
    with tempfile.TemporaryDirectory(prefix="conformance-preflight-") as tmp:
        if role == "receiver":
            from .peers import ScriptedSender

            peer = ScriptedSender()
            try:
                return _run(role, cmd, {"{url}": peer.url(0)}, bound, tmp, lambda p: _joined(peer, p))
            finally:
                peer.close()
        layout = Path(tmp) / "layout.json"
        layout.write_text(json.dumps(LAYOUT))
        return _run(role, cmd, {"{layout}": str(layout), "{receivers}": "1"}, bound, tmp, _printed)


def _joined(peer, proc) -> bool:
    """The receiver program connected to the scripted sender (a join pending on its socket)."""
    return readable(peer.sock, 0.05)


def _printed(proc) -> bool | None:
    """The sender program wrote to its output: True; closed it without a byte: None (it exited, or will)."""
    fd = proc.stdout.fileno()
    if not readable(fd, 0.05):
        return False
    return True if os.read(fd, 4096) else None


def _run(role: str, cmd: str, fill: dict[str, str], bound: float, tmp: str, spoke) -> str | None:
    try:
        argv = shlex.split(cmd)
    except ValueError as e:
        return f"the command cannot be split as a shell would ({e})"
    for key, value in fill.items():
        argv = [a.replace(key, value) for a in argv]
    err_path = Path(tmp) / "stderr"
    out_path = Path(tmp) / "stdout"
    stdout = subprocess.PIPE if role == "sender" else out_path.open("wb")
    try:
        with err_path.open("wb") as err:
            # Its own process group, so that a wrapper (a shell, `cargo run`) goes with it.
            proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=stdout, stderr=err, start_new_session=True)
    except OSError as e:
        return f"the {role} program cannot be started: {e.strerror or e} ({argv[0] if argv else 'an empty command'})"
    finally:
        if stdout is not subprocess.PIPE:
            stdout.close()
    t0 = time.monotonic()
    try:
        while True:
            said = spoke(proc)
            if said:
                return None
            status = proc.poll()
            if said is None and status is None:
                try:
                    status = proc.wait(EXIT_GRACE)
                except subprocess.TimeoutExpired:
                    return (f"the {role} program closed its standard output before it printed a line (still "
                            f"running {EXIT_GRACE:g} s later){_tails(err_path, out_path)}")
            if status is not None:
                what = "joined the suite's scripted sender" if role == "receiver" else "printed its first line"
                return f"the {role} program exited ({_status(status)}) before it {what}{_tails(err_path, out_path)}"
            if time.monotonic() - t0 > bound:
                what = "join the suite's scripted sender" if role == "receiver" else "print its first line"
                return (f"the {role} program did not {what} within {bound:.0f} s, the bound every test gives it to "
                        f"start (on a slow machine, or for a slow start, add --conformance-timescale=FACTOR)"
                        f"{_tails(err_path, out_path)}")
    finally:
        _end(proc)


def _end(proc) -> None:
    """Kill the program and its process group; it spoke, or will not."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        pass
    proc.wait()
    for stream in (proc.stdin, proc.stdout):
        if stream is not None:
            try:
                stream.close()
            except OSError:
                pass


def _status(code: int) -> str:
    return f"status {code}" if code >= 0 else f"killed by signal {-code}"


def _tails(err_path: Path, out_path: Path) -> str:
    text = ""
    for name, path in (("standard error", err_path), ("standard output", out_path)):
        lines = path.read_text(errors="replace").splitlines() if path.exists() else []
        if lines:
            shown = lines[-TAIL_LINES:]
            head = f"the last {len(shown)} lines of its {name}" if len(shown) < len(lines) else f"its {name}"
            text += f"\n{head}:\n" + "\n".join("    " + line for line in shown)
        elif name == "standard error":
            text += "\n(it wrote nothing to standard error)"
    return text
