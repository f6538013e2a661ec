"""Bug: a receiver checks that each Receive's version is newer than the last version it *answered* (the Init's
Ready, its last Ack), not newer than every version named to it before. The implementer read VER-3 as a guard
for what the receiver holds ("a version not greater than the one I hold or answered is stale") and kept one
number, updated when an answer goes out. A pull worker that has not polled yet has Receives pending and not
answered: a sender that names version 2 and then version 1 (a sender bug, or a stale frame replayed on the
channel) is not cut off; the worker's coalescing keeps the last Receive read, so poll() applies and acks
version 1 and returns it, while version 2, also named, is never answered. VER-3: a Receive whose version is not
greater than every version named to it before on its channel, "applied or not", is a protocol violation
(SM-R-7: poll() raises RemoteProtocolError and the receiver stops).
"""
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__  # noqa: F401

from weightsync import receiving as _receiving
from weightsync.messages import Receive

VIOLATES = ("VER-3", "SM-R-7")


def _receive(self, msg: Receive) -> Receive:
    """A Receive: a newer version (VER-3), in a slot whose handle came (SLOT-1), introducing new ones (SLOT-5)."""
    event = "recv Receive"
    nxt = self._step(event)
    if self.answered is not None and msg.version <= self.answered:  # BUG: the last version answered, not named
        raise self._bad(event, f"Receive of version {msg.version} after version {self.answered}", "VER-3")
    self._introduce(event, msg.new_slots)
    if msg.slot not in self.known:
        raise self._bad(event, f"Receive names slot {msg.slot}, whose handle never came", "SLOT-1")
    self.received = msg.version
    self.state = nxt
    return msg


_receiving.ReceiverMachine._receive = _receive
