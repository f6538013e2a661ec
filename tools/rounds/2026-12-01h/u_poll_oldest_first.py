"""Bug: a receiver keeps the Receives it has not applied yet in a first-in, first-out queue and takes the oldest
each time, so `poll()` applies (and acks) the *oldest* pending version, not the newest. A pull worker that polls
once per episode while the trainer publishes faster falls further behind at every poll: it runs stale weights
although a newer version sits in its channel, its `poll()` returns a version older than one it was already sent,
and the versions it has not reached keep their slots pinned, until the trainer's sends wait for slots (SLOT-3).
A careful implementer could have written it from ACK-2's "A receiver with several pending Receives MAY apply only
the newest": coalescing read as an optional optimisation, they applied every version in order, as a message
queue does (which push mode may do). But the binding fixes what poll() does. Breaks API-3 ("poll(timeout)
applies the newest pending version and returns it") and LIFE-9 ("a later poll() applies the newest pending
version").
"""
import collections

import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__, pending, receiving  # noqa: F401

VIOLATES = ("API-3", "LIFE-9")


class Newest:
    """The Receives received and not yet applied, in arrival order."""

    __slots__ = ("queue",)

    def __init__(self) -> None:
        self.queue = collections.deque()

    @property
    def pending(self):
        return self.queue[0] if self.queue else None

    def offer(self, msg) -> None:
        self.queue.append(msg)  # VER-3: each Receive is newer than the last

    def take(self):
        return self.queue.popleft() if self.queue else None  # BUG: the oldest, one version per take

    def untake(self, msg) -> None:
        self.queue.appendleft(msg)


receiving.Newest = Newest
pending.Newest = Newest
