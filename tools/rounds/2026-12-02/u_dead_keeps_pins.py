"""Bug: a receiver whose channel ended (its worker crashed, was killed, or closed its Receiver) keeps pinning the
slots of the Receives it had not answered, and the slot it held if zero-copy, until it is restarted (a new handle
or join). A worker that dies with versions pending (a pull worker between polls, a push worker mid-apply) takes
those slots out of rotation: a trainer that goes on with the survivors (`send(workers=alive)`, as 8.4 advises)
finds, once the dead worker's pins and the latest slot fill the bound (at once with `max_slots=2`, the setting
for a large model; after a few sends with the default), that every send waits its whole timeout and raises
SyncTimeoutError naming the dead worker, though nobody reads those slots. A careful implementer could have
written it from LIFE-5 ("memory that zero-copy weights still view stays mapped until the last such tensor is
freed") and SLOT-4: an end of channel may come from a process that is still alive and still reading (it closed
its Receiver, or only its socket), so playing safe, its slots stay pinned until the trainer restarts that id;
only `drop()`, the trainer's explicit word, frees them at once. Breaks SLOT-2 ("A receiver the sender saw gone
holds nothing and has nothing pending"), SLOT-3 (a send waits for, and names, a receiver that holds no slot) and
SEC-5 ("a receiver that ... dies leaves every other receiver's ... pending sends as they were; sends that do not
target it proceed as if it did not exist").
"""
import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__, protocol  # noqa: F401
from weightsync.protocol import PeerMachine, PeerState

VIOLATES = ("SLOT-2", "SLOT-3", "SEC-5")

_init, _channel_closed = PeerMachine.__init__, PeerMachine.channel_closed


def __init__(self, rid):
    _init(self, rid)
    self.left_pins = set()  # a new incarnation (new handle, join) starts with none


def channel_closed(self, why):
    kept = {*self.pending.values(), *self.held}
    failed = _channel_closed(self, why)
    self.left_pins = kept  # BUG: its process may still read them: kept until it is restarted
    return failed


def pins(self):
    """The slots it may read: those named by unanswered messages, and the one it holds (SLOT-2)."""
    if self.active:
        return {*self.pending.values(), *self.held}
    return set(self.left_pins) if self.state is PeerState.GONE else set()


PeerMachine.__init__ = __init__
PeerMachine.channel_closed = channel_closed
PeerMachine.pins = pins
