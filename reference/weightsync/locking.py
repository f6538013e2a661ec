"""The sender's lock as a call holds it: the context `Hub.locked` returns, and a notify that survives losing it.

Apart from hub.py so that close(), which takes the lock by hand when a call left it held
(LIFE-9), uses the same two pieces as every other call.
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING

from .rwlock import unlock

if TYPE_CHECKING:
    from typing import Self

log = logging.getLogger("weightsync")


class Held:
    """What `with hub.locked(...)` holds: releases the lock on exit."""

    __slots__ = ("_mu",)

    def __init__(self, mu: threading.Lock):
        self._mu = mu

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        unlock(self._mu)


def notify_all(cv: threading.Condition) -> None:
    """Wakes the callers that wait for the sender; without the lock (an interrupted wait lost it) there is none to wake."""
    if not cv._waiters:  # type: ignore[attr-defined]  # nobody waits, the common case: no call to make
        return
    try:
        cv.notify_all()
    except RuntimeError:
        log.debug("the sender's lock was not held to notify")
