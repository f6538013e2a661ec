"""SendFuture: one published version and what each target answered (SEND-5, SEND-7).

The sender settles a future as answers arrive; the future turns its outcomes
into the one error a failed wait raises, naming every receiver at fault.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from .errors import TIMEOUT, _ReceiversError, receivers_error
from .messages import OK
from .transport import Deadline

if TYPE_CHECKING:
    from .sender import Sender

#: After the first failure among a send's targets, how long a wait still collects the others'
#: answers, so that receivers failing together are reported together (SEND-7); well inside SEND-2's 10 s.
SETTLE = 1.0
RESTART_HINT = ("restart it (sender.handle(i) or its URL, then sender.connect(workers=[i])), "
                "or leave it out of workers=")


class SendFuture:
    """The outcome of one send per targeted receiver: `wait()` for all of them, `done()` to look."""

    def __init__(self, sender: Sender, version: int, workers: list[int]):
        self._sender = sender
        self.version = version
        self.workers = list(workers)
        self._outcome: dict[int, tuple[str, str]] = {}  # worker -> (OK or a failure cause, detail)
        self._failed_at: float | None = None

    def done(self) -> bool:
        """True once every targeted receiver has answered (acked, failed or gone). Never blocks.

        It reads the answers that have arrived itself, unless another thread is busy
        in the sender, which then reads them (API-2).
        """
        if not self.complete:
            self._sender._refresh()
        return self.complete

    def wait(self, timeout: float | None = None) -> int:
        """The version once every target acked it ok; else the error of SEND-2. May be called again."""
        return self._sender._wait(self, Deadline(timeout))

    @property
    def complete(self) -> bool:
        return len(self._outcome) == len(self.workers)

    def settle(self, worker: int, cause: str, detail: str) -> None:
        """Records the first answer of `worker` (OK, or errors.ERROR, VIOLATION, DIED)."""
        if worker in self._outcome or worker not in self.workers:
            return
        self._outcome[worker] = (cause, detail)
        if cause != OK and self._failed_at is None:
            self._failed_at = time.monotonic()

    def settle_by(self) -> float | None:
        """When a wait should stop collecting answers and raise the failures it knows (SEND-7)."""
        return None if self._failed_at is None else self._failed_at + SETTLE

    def error(self, timed_out: bool) -> _ReceiversError | None:
        """The one error for what is known: every failed target and, once timed out, every silent one."""
        if self._failed_at is None and not timed_out:
            return None
        causes = {w: c for w, (c, _) in self._outcome.items() if c != OK}
        details = {w: d for w, (c, d) in self._outcome.items() if c != OK}
        if timed_out:
            for w in self.workers:
                if w not in self._outcome:
                    causes[w], details[w] = TIMEOUT, "no answer before the timeout; it may still ack later"
        if not causes:
            return None
        hint = RESTART_HINT if set(causes.values()) - {TIMEOUT} else "it may still ack later: wait() again"
        return receivers_error(causes, details, self.version, hint)

    def __repr__(self) -> str:
        return f"SendFuture(version={self.version}, workers={self.workers}, done={self.complete})"
