"""Bug: a receiver keeps handles that came beside a frame beyond the ones it lists queued for the next frame that
lists slots, instead of treating them as a violation. A sender (or whoever answers at a URL's address and proved
the secret, or a buggy sender of another language) that attaches one descriptor too many to an Init is taken at
its word: `connect()` succeeds, the stray descriptor stays open in the worker, and the next Receive that introduces
a slot is paired with the stray descriptor instead of its own, so the worker maps the wrong buffer, applies bytes
the sender never published in that slot, and acks them ok; each of its own descriptors then lags one frame behind.
The implementer knew that handles ride on a frame's first bytes (WIRE-4), so that a reader can hold handles before
the frame that lists them is complete, and took queued handles without a frame for ones that belong to the frame
still to come ("A receiver queues handles in arrival order and gives each frame, once complete, the first ones
queued, as many as it lists").

Breaks WIRE-4 ("fewer queued than listed, handles queued while no unread byte of any frame remains, and a control
message cut short (`MSG_CTRUNC`) are violations") and SM-R-7 ("the receiver MUST stop ... and MUST raise
RemoteProtocolError ... from `connect()` for a message that comes instead of Init").
"""
import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__, wire  # noqa: F401
from weightsync.errors import RemoteProtocolError
from weightsync.messages import Heartbeat, handle_count
from weightsync.session import Session
from weightsync.timers import HeartbeatBudget

VIOLATES = ("WIRE-4", "SM-R-7")


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
    # BUG: handles left over belong to a frame still to come; they wait for it
    if self.liveness is not None:
        self.liveness.hear(now)
    if type(msg) is Heartbeat:
        if self._beats is None:
            self._beats = HeartbeatBudget(now)
        self._beats.spend(now)
    return msg, fds


Session.next_message = next_message
