"""Bug: the SEC-8 flood budget (a token bucket of 64, refilled at 64 a second) is spent by every frame a peer
sends, not by Heartbeats alone, so a peer is cut off as a violator once it has answered more than 64 messages in
a burst: a trainer with a small model that publishes faster than 64 versions a second (a send costs tens of
microseconds; an RL loop that sends after every step) loses every worker within its first second, with a
ReceiverError (cause "violation") or ReceiverDiedError that no worker deserved. The implementer read SEC-8's
"One peer's legal traffic MUST NOT starve the others ... A side MAY treat more as a violation" as a rate limit on
the channel, and put the bucket where every frame is read, "so that no kind of frame can flood".

Breaks SEC-8 ("Every frame a receiver sends answers one the sender sent ... except Heartbeat, so Heartbeats alone
are budgeted") and SEND-1 ("A synchronous send returns the new version only when every targeted receiver acked
it").
"""
import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__, wire  # noqa: F401
from weightsync.errors import RemoteProtocolError
from weightsync.messages import handle_count
from weightsync.session import Session
from weightsync.timers import HeartbeatBudget

VIOLATES = ("SEC-8", "SEND-1")


def next_message(self, now):
    if self.frame.since is None and not self._reader.partial:
        return None
    data = self._reader.next()
    self.frame.update(self._reader.partial, now)
    if data is None:
        return None
    msg = wire.decode(data, self.allowed)
    n = handle_count(msg) if self._takes_handles else 0
    if len(self._fds) < n:
        raise RemoteProtocolError(f"the frame lists {n} handles, {len(self._fds)} came with it",
                                  event="recv frame", requirement="WIRE-4")
    fds = [self._fds.popleft() for _ in range(n)] if n else []
    if self._fds and not self._reader.partial:
        self.orphans.extend(fds)
        raise RemoteProtocolError("handles came with no frame that lists them", event="recv frame",
                                  requirement="WIRE-4")
    if self.liveness is not None:
        self.liveness.hear(now)
    # BUG: every frame spends from the flood budget, not Heartbeats alone
    if self._beats is None:
        self._beats = HeartbeatBudget(now)
    self._beats.spend(now)
    return msg, fds


Session.next_message = next_message
