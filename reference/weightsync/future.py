"""SendFuture: one published version and what each target answered (SEND-5, SEND-7).

The sender settles a future as answers arrive; the future turns its outcomes
into the one error a failed wait raises, naming every receiver at fault.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from .clock import Deadline
from .errors import TIMEOUT, ClosedError, WeightSyncError, receivers_error
from .messages import OK
from .protocol import SettleWindow

RESTART_HINT = ("restart it (sender.handle(i) or its URL, then sender.connect(workers=[i])), "
                "or leave it out of workers=")


class SendFuture:
    """The outcome of one send per targeted receiver: `wait()` for all of them, `done()` to look."""

    def __init__(self, version: int, workers: list[int], refresh: Callable[[], None],
                 wait: Callable[[SendFuture, Deadline], int]):
        #: What the sender lends a future: read the answers that arrived (never blocks), and wait for this one.
        self._refresh, self._wait = refresh, wait
        self.version = version
        self.workers = list(workers)
        self._outcome: dict[int, tuple[str, str]] = {}  # worker -> (OK or a failure cause, detail)
        self._window = SettleWindow()  # opened by the first failure (SEND-7)
        self._closed_on: list[int] | None = None  # the targets that had not answered when close() ran

    def done(self) -> bool:
        """True once every targeted receiver has answered (acked, failed or gone). Never blocks.

        It reads the answers that have arrived itself, unless another thread is busy
        in the sender, which then reads them (API-2).
        """
        if not self.complete:
            self._refresh()
        return self.complete

    def wait(self, timeout: float | None = None) -> int:
        """The version once every target acked it ok; else the error of SEND-2. May be called again."""
        if self.complete:  # every answer is known (close() may have settled the rest): no need of the sender (LIFE-8)
            error = self.error(timed_out=False)
            if error is not None:
                raise error
            return self.version
        return self._wait(self, Deadline(timeout))

    def close(self) -> None:
        """The sender closed: targets that have not answered never will (LIFE-8)."""
        self._closed_on = [w for w in self.workers if w not in self._outcome]

    @property
    def complete(self) -> bool:
        return len(self._outcome) == len(self.workers) or self._closed_on is not None

    def settle(self, worker: int, cause: str, detail: str) -> None:
        """Records the first answer of `worker` (OK, or errors.ANSWERED_ERROR, VIOLATION, DIED)."""
        if worker in self._outcome or worker not in self.workers:
            return
        self._outcome[worker] = (cause, detail)
        if cause != OK:
            self._window.failed(time.monotonic())

    def settle_by(self) -> float | None:
        """When a wait should stop collecting answers and raise the failures it knows (SEND-7)."""
        return self._window.closes

    def error(self, timed_out: bool) -> WeightSyncError | None:
        """The one error for what is known: every failed target and, once timed out, every silent one."""
        if self._closed_on:
            return ClosedError(f"the sender was closed before receiver(s) {self._closed_on} answered version "
                               f"{self.version} (LIFE-8)")
        if self._window.closes is None and not timed_out:
            return None
        causes = {w: c for w, (c, _) in self._outcome.items() if c != OK}
        details = {w: d for w, (c, d) in self._outcome.items() if c != OK}
        if timed_out:
            for w in self.workers:
                if w not in self._outcome:
                    causes[w], details[w] = TIMEOUT, "no answer before the timeout"
        if not causes:
            return None
        hint = RESTART_HINT if set(causes.values()) - {TIMEOUT} else "it may still ack later: wait() again"
        return receivers_error(causes, details, self.version, hint)

    def __repr__(self) -> str:
        return f"SendFuture(version={self.version}, workers={self.workers}, done={self.complete})"
