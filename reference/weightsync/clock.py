"""Time, in one place: the clock every timing rule reads, and Deadline, the bound of a blocking call.

The clock is `time.monotonic` unless a test swaps in a FakeClock, so that the
timing rules of the core (WIRE-7's frame bound, NET-4's lease and heartbeat,
SEND-7's window) run in milliseconds in unit tests instead of real seconds.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

Clock = Callable[[], float]
monotonic: Clock = time.monotonic


class FakeClock:
    """A clock that moves only when told to: `clock()` is now, `clock.advance(s)` moves it on."""

    def __init__(self, start: float = 1000.0):
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


class ShiftedClock:
    """The monotonic clock plus the jumps a test makes: `clock.advance(s)` moves it on at once.

    For drivers, which block in poll() and on locks: their waits still end in real time,
    while a lease, a join bound or a settle window sees the jump and falls due at once,
    so a test of a 5 s lease takes milliseconds. (A FakeClock, which never moves by itself,
    suits the pure core: a driver's wait on it would never end.)
    """

    def __init__(self) -> None:
        self.offset = 0.0

    def __call__(self) -> float:
        return time.monotonic() + self.offset

    def advance(self, seconds: float) -> None:
        self.offset += seconds


class Deadline:
    """A point in time after which blocking calls stop; a timeout of None waits forever.

    A negative or NaN timeout is a caller's error (ValueError), as section 10 says.
    """

    __slots__ = ("at", "clock")

    def __init__(self, timeout: float | None, clock: Clock = monotonic):
        if timeout is not None and not timeout >= 0:
            raise ValueError(f"timeout must be >= 0 or None, got {timeout}")
        self.clock = clock
        self.at = None if timeout is None else clock() + timeout

    @classmethod
    def until(cls, at: float | None, clock: Clock = monotonic) -> Deadline:
        """The deadline at the time `at` of `clock` (None: forever)."""
        d = cls(None, clock)
        d.at = at
        return d

    def earlier(self, at: float | None) -> Deadline:
        """This deadline, or the time `at` if that comes first."""
        if at is None:
            return self
        return Deadline.until(at if self.at is None else min(self.at, at), self.clock)

    def left(self) -> float | None:
        return None if self.at is None else max(0.0, self.at - self.clock())

    def expired(self) -> bool:
        return self.at is not None and self.clock() >= self.at

    def cap(self, seconds: float) -> float:
        """The time left, at most `seconds`."""
        left = self.left()
        return seconds if left is None else min(left, seconds)


def millis(timeout: float | None) -> int:
    """A timeout as poll() takes it: whole milliseconds rounded up, -1 for none."""
    return -1 if timeout is None else math.ceil(max(0.0, timeout) * 1000)
