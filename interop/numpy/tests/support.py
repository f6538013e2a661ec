"""Test support: receiver processes started with subprocess, their stdout read with bounded waits."""
import os
import queue
import subprocess
import sys
import threading
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
NUMPY_DIR = HERE.parent
MODULE = NUMPY_DIR / "weightsync_numpy.py"
WORKER = HERE / "worker.py"


def receiver_env() -> dict:
    """Only interop/numpy on the path: the receiver side never needs the reference."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(NUMPY_DIR)
    return env


class Proc:
    """A child process whose stdout lines arrive in a queue, read with a timeout."""

    def __init__(self, *argv: str):
        self.p = subprocess.Popen([sys.executable, *argv], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True, env=receiver_env(), cwd=NUMPY_DIR)
        self.lines: queue.Queue = queue.Queue()
        self.reader = threading.Thread(target=self._pump, daemon=True)
        self.reader.start()

    def _pump(self):
        for line in self.p.stdout:
            self.lines.put(line.rstrip("\n"))
        self.lines.put(None)

    def line(self, timeout: float = 60) -> str | None:
        """The next stdout line; None at end of output; fails the test after `timeout`."""
        try:
            return self.lines.get(timeout=timeout)
        except queue.Empty:
            pytest.fail(f"no output from the receiver process within {timeout} s")

    def ask(self, command: str, timeout: float = 60) -> list[str]:
        self.p.stdin.write(command + "\n")
        self.p.stdin.flush()
        line = self.line(timeout)
        assert line is not None, f"receiver exited: {self.stderr()}"
        return line.split(" ")

    def wait(self, timeout: float = 60) -> int:
        return self.p.wait(timeout)

    def stderr(self) -> str:
        if self.p.poll() is None:
            return "(still running)"
        return self.p.stderr.read()

    def kill(self):
        if self.p.poll() is None:
            self.p.kill()
        self.p.wait(30)
        self.p.stdin.close()
