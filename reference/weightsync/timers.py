"""The protocol's timing rules, pure: each takes the time as an argument and reads no clock itself.

`FrameTimer` is WIRE-7 (a frame begun must end within the frame bound), `HeartbeatBudget`
SEC-8 (Heartbeats are the only frames a peer sends unasked), `Liveness` NET-4 (a lease on
the peer's silence, a Heartbeat after our own), `SettleWindow` SEND-7 (a wait collects the
other answers for a moment after the first failure). The drivers feed them the time of the
clock they were given, so a test runs a 5 s lease in microseconds.
"""

from __future__ import annotations

from . import limits
from .errors import RemoteProtocolError


class FrameTimer:
    """WIRE-7: a frame that has started must be finished within the frame bound, or the peer broke the protocol."""

    __slots__ = ("since", "bound")

    def __init__(self, bound: float = limits.FRAME_BOUND):
        self.since: float | None = None  # when the unfinished frame's first byte was read
        self.bound = bound

    def update(self, partial: bool, now: float) -> None:
        """After a read: whether part of a frame is buffered now."""
        if not partial:
            self.since = None
        elif self.since is None:
            self.since = now

    def overdue(self, now: float) -> bool:
        return self.since is not None and now - self.since > self.bound

    def left(self, now: float) -> float | None:
        """Seconds until the frame in progress is overdue; None when no frame is in progress."""
        return None if self.since is None else max(0.0, self.since + self.bound - now)

    def violation(self, state: str = "") -> RemoteProtocolError:
        return RemoteProtocolError(f"a frame was started and not finished within {self.bound:g} s", state=state,
                                   event="recv frame", requirement="WIRE-7")


class HeartbeatBudget:
    """SEC-8 for one channel: a token bucket of Heartbeats, the frames a peer sends unasked.

    Every other frame answers something (an Ack a Receive, Ready an Init), so the rest of a
    peer's traffic is already bounded by what it was sent; Heartbeats alone could flood.
    """

    def __init__(self, now: float, burst: int = limits.HEARTBEAT_BURST, rate: float = limits.HEARTBEAT_RATE):
        self.burst, self.rate = burst, rate
        self.tokens, self.at = float(burst), now

    def spend(self, now: float) -> None:
        """One Heartbeat arrived; RemoteProtocolError (SEC-8) once the peer sent more than the budget."""
        self.tokens = min(float(self.burst), self.tokens + (now - self.at) * self.rate)
        self.at = now
        if self.tokens < 1.0:
            raise RemoteProtocolError(f"more than {self.burst} Heartbeats at once, or {self.rate:g} a second",
                                      event="recv frame", requirement="SEC-8")
        self.tokens -= 1.0


class Liveness:
    """NET-4 for one channel: say Heartbeat after `heartbeat` seconds of silence, give up after `lease` of the peer's."""

    HEARTBEAT_DUE = "heartbeat"
    EXPIRED = "expired"

    def __init__(self, now: float, lease: float = limits.LEASE, heartbeat: float = limits.HEARTBEAT):
        self.lease, self.heartbeat = lease, heartbeat
        self.heard = self.spoke = now

    def hear(self, now: float) -> None:
        """A frame arrived: any frame counts, Heartbeat included (MSG-4)."""
        self.heard = now

    def speak(self, now: float) -> None:
        self.spoke = now

    def due(self, now: float) -> str | None:
        """EXPIRED once the peer was silent longer than the lease, HEARTBEAT_DUE once we were silent long enough."""
        if now - self.heard > self.lease:
            return self.EXPIRED
        if now - self.spoke >= self.heartbeat:
            return self.HEARTBEAT_DUE
        return None

    def left(self, now: float) -> float:
        """Seconds until something falls due."""
        return max(0.0, min(self.heard + self.lease - now, self.spoke + self.heartbeat - now))

    def expiry(self) -> str:
        return f"nothing heard for {self.lease:g} s: its lease expired (NET-4)"


class SettleWindow:
    """SEND-7: after a wait's first failure it collects the other targets' answers for a short window, then raises."""

    __slots__ = ("closes", "length")

    def __init__(self, length: float | None = None):
        self.closes: float | None = None
        self.length = limits.SETTLE_WINDOW if length is None else length

    def failed(self, now: float) -> None:
        """A target failed; the first failure opens the window."""
        if self.closes is None:
            self.closes = now + self.length

    def over(self, now: float) -> bool:
        return self.closes is not None and now >= self.closes
