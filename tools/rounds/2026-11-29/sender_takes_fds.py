"""Bug: the sender reads its receivers' channels with a control buffer, as receivers read theirs, so
a descriptor a receiver attaches to a frame reaches the sender; the session then finds a handle that
no frame lists and cuts the receiver off as a violation, and a receiver can make the trainer hold its
descriptors. WIRE-4: handles travel only from sender to receiver; a sender MUST NOT take descriptors
from a receiver (reading without a control buffer makes the kernel discard them), and section 13.3
says a receiver that passes descriptors to the sender gets "nothing". Plausible: one Channel set-up
(recvmsg with room for SCM_RIGHTS) for both ends.

Seam: weightsync.transport.Channel.__init__ (takes_handles forced on the sender's side).
"""
from weightsync import *  # noqa: F403
from weightsync import CAPABILITIES, __all__, sender  # noqa: F401
from weightsync import transport as _transport
from weightsync import wire as _wire

VIOLATES = "WIRE-4"

_orig = _transport.Channel.__init__


def _init(self, sock, *, allowed, max_in, takes_handles=False, **kw):
    if allowed == _wire.FROM_RECEIVER:
        takes_handles = True
    _orig(self, sock, allowed=allowed, max_in=max_in, takes_handles=takes_handles, **kw)


_transport.Channel.__init__ = _init
