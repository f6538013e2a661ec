"""The suite's side of the worker processes: `Pool` of `Worker`s, each driven over a pipe.

Workers are spawned once per session and reused across tests and Hypothesis
examples; the suite talks to one with `Worker.call(cmd, ...)`, or `submit` +
`result` when the test must do something on the sender side before the worker
can answer (connect). Every wait for an answer is bounded: a worker that stops
answering raises `HarnessError` (a matter of time, re-checked), one that cannot
start or dies raises `WorkerLost` (no verdict); either is replaced. A command
that failed in the worker raises `RemoteFailure`, carrying its `RemoteError`.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import signal

from . import server
from . import timing as tm
from .remote import RemoteError
from .verdict import HarnessError, WorkerLost


class Worker:
    """One receiver process and its control pipe."""

    def __init__(self, ctx, impl: str, index: int):
        self.impl = impl
        self.index = index
        self.ctrl, child = ctx.Pipe()
        self.proc = ctx.Process(target=server.main, args=(impl, child), name=f"conformance-worker-{index}", daemon=True)
        self.proc.start()
        child.close()
        self.started = False
        self.waiting: str | None = None
        self.broken = False

    @property
    def pid(self) -> int:
        return self.proc.pid

    def _ensure_started(self) -> None:
        if self.started:
            return
        try:
            status, value = self._recv(tm.START_BOUND, "start")
        except HarnessError as e:
            raise WorkerLost(f"worker {self.index} did not start within {tm.START_BOUND:.0f} s (the machine is "
                             "too busy, or importing the implementation hangs)") from e
        if status != "ok":
            self.broken = True
            raise WorkerLost(f"worker {self.index} could not start: {value}")
        self.started = True

    def _recv(self, bound: float | None, what: str):
        bound = tm.BOUND if bound is None else bound
        try:
            ready = self.ctrl.poll(bound)
        except (OSError, EOFError):
            ready = True
        if not ready:
            self.broken = True
            raise HarnessError(f"worker {self.index} gave no answer to {what!r} within {bound} s")
        try:
            return self.ctrl.recv()
        except (EOFError, OSError) as e:
            self.broken = True
            code = self.proc.exitcode
            raise WorkerLost(f"worker {self.index} died during {what!r} (exit code {code}): the implementation "
                             "crashed the process, or the system killed it") from e

    def submit(self, cmd: str, *args, **kwargs) -> None:
        self._ensure_started()
        if self.waiting is not None:
            raise WorkerLost(f"worker {self.index}: {cmd!r} sent while {self.waiting!r} is unanswered")
        try:
            self.ctrl.send((cmd, args, kwargs, tm.SCALE))
        except (OSError, EOFError) as e:
            self.broken = True
            raise WorkerLost(f"worker {self.index} is gone (exit code {self.proc.exitcode})") from e
        self.waiting = cmd

    def result(self, bound: float | None = None):
        """The answer: ('ok', value) or ('err', RemoteError)."""
        what, self.waiting = self.waiting, None
        return self._recv(bound, what)

    def call(self, cmd: str, *args, bound: float | None = None, **kwargs):
        """Run a command; return its value or raise RemoteFailure carrying the RemoteError."""
        self.submit(cmd, *args, **kwargs)
        status, value = self.result(bound)
        if status != "ok":
            raise RemoteFailure(value)
        return value

    def outcome(self, cmd: str, *args, bound: float | None = None, **kwargs):
        self.submit(cmd, *args, **kwargs)
        return self.result(bound)

    def kill(self) -> None:
        """SIGKILL the process and wait (bounded) until it is gone."""
        if self.proc.is_alive():
            os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.join(tm.BOUND)
        self.broken = True
        self.ctrl.close()

    def stop(self) -> None:
        try:
            self.ctrl.close()
        except OSError:
            pass
        self.proc.join(2.0)
        if self.proc.is_alive():
            self.proc.kill()
            self.proc.join(tm.BOUND)


class RemoteFailure(AssertionError):
    def __init__(self, error: RemoteError):
        super().__init__(str(error))
        self.error = error


class Pool:
    """Worker processes for a session. After the first replacement a spare is kept started, so that
    the next one is quick; a session that never replaces a worker never starts one."""

    def __init__(self, impl: str, size: int, start: str = "forkserver"):
        self.impl = impl
        self.ctx = mp.get_context(start)
        if start == "forkserver":
            # Each worker forks from a server that imported torch and this module once: a worker (one after every
            # SIGKILL of the state machine) starts in milliseconds, not the second a torch import takes. Never the
            # implementation: its import may not survive a fork (a CUDA context, threads), so each worker imports
            # it as a spawned one would. Importing torch touches no CUDA.
            self.ctx.set_forkserver_preload(["torch", server.__name__])
        self._count = 0
        self.workers = [self._new() for _ in range(size)]
        self.spare: Worker | None = None

    def _new(self) -> Worker:
        self._count += 1
        return Worker(self.ctx, self.impl, self._count)

    def get(self, k: int) -> list[Worker]:
        """The first k workers, each with no receiver open; broken ones are replaced."""
        out = []
        for i in range(k):
            w = self.workers[i]
            if w.broken or not w.proc.is_alive():
                w = self.replace(w)
            else:
                try:
                    w.call("discard")
                except (HarnessError, WorkerLost, RemoteFailure):
                    w = self.replace(w)
            out.append(w)
        return out

    def replace(self, w: Worker) -> Worker:
        """Kill `w` if it lives, put the spare in its place and start a new spare."""
        if w.proc.is_alive():
            w.kill()
        i = self.workers.index(w) if w in self.workers else None
        new, self.spare = self.spare or self._new(), self._new()
        if i is not None:
            self.workers[i] = new
        return new

    def pids(self) -> set[int]:
        return {w.pid for w in self._all()}

    def _all(self) -> list[Worker]:
        return [*self.workers, *([self.spare] if self.spare is not None else [])]

    def close(self) -> None:
        for w in self._all():
            w.stop()
