"""SendFuture: one published version and what each target answered (SEND-5, SEND-7).

The sender settles a future as answers arrive; the future turns its outcomes
into the one error a failed wait raises, naming every receiver at fault.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from typing import Any

from .clock import Clock, Deadline, monotonic
from .errors import FIX, RESTART, TIMEOUT, ClosedError, WeightSyncError, receivers_error
from .messages import OK
from .timers import SettleWindow

log = logging.getLogger("weightsync")

#: A receiver refused at connect, or known failed or gone, is restarted (LIFE-2): the next send does not repair it.
RESTART_HINT = FIX + RESTART


@dataclass(frozen=True)
class SendFigures:
    """What one send cost, as far as it is known: `future.figures`, final once the future is done (API-11).

    Attributes:
        version: the version sent.
        nbytes: bytes written into slots for it.
        publish_s: seconds from the call to its publication: checks, copies, the Receive to
            each target.
        answered_s: per target that answered, seconds from publication to its answer.
        causes: per target that answered, "ok" or its failure cause ("error", "violation",
            "died", "timeout").
    """

    version: int
    nbytes: int  # bytes written into slots for this version
    publish_s: float  # from the call to the publication: checks, copies, Receives
    answered_s: dict[int, float] = field(default_factory=dict)  # target -> seconds from publication to its answer
    causes: dict[int, str] = field(default_factory=dict)  # target -> "ok" or its failure cause


class SendFuture:
    """One published version and each target's answer, from `sender.send_async()` (SEND-5).

    `wait()` for every answer, `done()` to look without waiting, `add_done_callback()` to
    be called, or, in asyncio, `await future`, which gives what `wait()` gives without
    blocking the event loop (bound it with `asyncio.wait_for`).

    Attributes:
        version (int): the published version.
        workers (list[int]): the targeted receiver ids.
    """

    def __init__(self, version: int, workers: list[int], refresh: Callable[[], None],
                 wait: Callable[[SendFuture, Deadline], int], nbytes: int = 0, clock: Clock = monotonic):
        #: What the sender lends a future: read the answers that arrived (never blocks), and wait for this one.
        self._refresh, self._wait, self._clock = refresh, wait, clock
        self.version = version
        self.workers = list(workers)
        self._outcome: dict[int, tuple[str, str]] = {}  # worker -> (OK or a failure cause, detail)
        self._window = SettleWindow()  # opened by the first failure (SEND-7)
        self._closed_on: list[int] | None = None  # the targets that had not answered when close() ran
        self._nbytes, self._publish_s, self._published = nbytes, 0.0, clock()
        self._answered: dict[int, float] = {}
        # Callbacks not yet run, or None once they ran; changed only under _calls, held for list operations only.
        self._callbacks: list[Callable[[SendFuture], Any]] | None = []
        self._calls = threading.Lock()
        self._watcher: threading.Thread | None = None
        self._seen: tuple[int | None, Exception | None] = (None, None)  # what the watcher's wait() decided

    def done(self) -> bool:
        """True once every targeted receiver has answered (acked, failed or gone). Never blocks.

        It reads the answers that have arrived itself, unless another thread is busy
        in the sender, which then reads them (API-2).
        """
        if not self._complete:
            self._refresh()
        return self._complete

    def wait(self, timeout: float | None = None) -> int:
        """The version once every target acked it ok; else the error of SEND-2. May be called again.

        Args:
            timeout: seconds to wait for the answers; None (the default) waits without bound.

        Returns:
            The future's version.

        Raises:
            ReceiverError, ReceiverDiedError: one error naming every target at fault, with its cause.
            SyncTimeoutError: targets that did not answer in time, named; they may still ack: wait again.
            ClosedError: the sender closed before every target answered.
        """
        deadline = Deadline(timeout, self._clock)  # first: a negative timeout is refused whatever is known (API-7)
        if self._complete:  # every answer is known (close() may have settled the rest): no need of the sender (LIFE-8)
            error = self._error(timed_out=False)
            if error is not None:
                raise error
            return self.version
        return self._wait(self, deadline)

    def _close(self) -> None:
        """The sender closed: targets that have not answered never will (LIFE-8)."""
        self._closed_on = [w for w in self.workers if w not in self._outcome]

    @property
    def _complete(self) -> bool:
        return len(self._outcome) == len(self.workers) or self._closed_on is not None

    def _settle(self, worker: int, cause: str, detail: str) -> None:
        """Records the first answer of `worker` (OK, or errors.ANSWERED_ERROR, VIOLATION, DIED)."""
        if worker in self._outcome or worker not in self.workers:
            return
        self._outcome[worker] = (cause, detail)
        self._answered[worker] = self._clock() - self._published
        if cause != OK:
            self._window.failed(self._clock())

    def _settle_by(self) -> float | None:
        """When a wait should stop collecting answers and raise the failures it knows (SEND-7)."""
        return self._window.closes

    def _error(self, timed_out: bool) -> WeightSyncError | None:
        """The one error for what is known: every failed target and, once timed out, every silent one; after
        close(), a failure wins over the targets close() left unanswered (LIFE-8)."""
        if self._window.closes is None and not timed_out and not self._closed_on:
            return None  # no target failed (the first failure opens the window): the common answer, kept cheap
        causes = {w: c for w, (c, _) in self._outcome.items() if c != OK}
        details = {w: d for w, (c, d) in self._outcome.items() if c != OK}
        if self._closed_on and not causes:
            return ClosedError(f"the sender was closed before receiver(s) {self._closed_on} answered version "
                               f"{self.version} (LIFE-8)")
        if timed_out:
            for w in self.workers:
                if w not in self._outcome:
                    causes[w], details[w] = TIMEOUT, "no answer before the timeout"
        if not causes:
            return None
        hint = "" if set(causes.values()) - {TIMEOUT} else "it may still ack later"  # the remedies: by cause
        return receivers_error(causes, details, self.version, hint)

    def _published_after(self, seconds: float) -> None:
        """The sender wrote every Receive: answers are timed from now."""
        self._publish_s, self._published = seconds, self._clock()

    @property
    def figures(self) -> SendFigures:
        """Bytes, publish time, and each answer's time and cause, as known now (API-11)."""
        return SendFigures(self.version, self._nbytes, self._publish_s, dict(self._answered),
                           {w: c for w, (c, _) in self._outcome.items()})

    def add_done_callback(self, fn: Callable[[SendFuture], Any]) -> None:
        """Call `fn(future)` once, as soon as the outcome of `wait()` is decided (API-11).

        `fn` runs in a thread of the binding, never under the sender's lock, so it may call
        the sender; `future.wait(0)` then gives the outcome. Added after the callbacks ran,
        `fn` is called at once, in this thread. An exception from `fn` is logged.

        Args:
            fn: called with this future.
        """
        with self._calls:
            pending = self._callbacks
            if pending is not None:
                pending.append(fn)
                if self._watcher is None:  # someone must read the answers: a thread that waits, as wait() does
                    self._watcher = threading.Thread(target=self._watch, name=f"weightsync-future-{self.version}",
                                                     daemon=True)
                    self._watcher.start()
        if pending is None:
            _call(fn, self)

    def _watch(self) -> None:
        try:
            self._seen = (self.wait(None), None)
        except Exception as e:  # noqa: BLE001 - decided: SEND-2, SEND-7, the sender closed (LIFE-8), or a bug of ours
            self._seen = (None, e)
        with self._calls:
            callbacks, self._callbacks = self._callbacks or [], None
        for fn in callbacks:
            _call(fn, self)

    def __await__(self) -> Generator[Any, None, int]:
        """`await future` in asyncio: wait()'s version or error, without blocking the event loop (API-11)."""
        import asyncio

        loop = asyncio.get_running_loop()
        result: asyncio.Future[int] = loop.create_future()

        def settle() -> None:
            if result.cancelled():
                return
            version, error = self._seen  # what the watcher's wait() decided, before the callbacks ran
            if error is not None or version is None:
                result.set_exception(error or RuntimeError("the watcher decided nothing"))
            else:
                result.set_result(version)

        def wake(_: SendFuture) -> None:
            try:
                loop.call_soon_threadsafe(settle)
            except RuntimeError:  # the caller's loop closed first (its await was cancelled): nobody to tell (API-11)
                pass

        self.add_done_callback(wake)
        return result.__await__()

    def __repr__(self) -> str:
        return f"SendFuture(version={self.version}, workers={self.workers}, done={self._complete})"


def _call(fn: Callable[[SendFuture], Any], future: SendFuture) -> None:
    try:
        fn(future)
    except Exception:  # noqa: BLE001 - a caller's callback changes nothing of ours (API-11)
        log.exception("a done callback of version %d raised", future.version)
