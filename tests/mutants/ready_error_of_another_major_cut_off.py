"""Mutant: the sender judges a Ready's protocol before its status, so a Ready(error) in another major version (a
receiver refusing the Init for its major) is cut off as a violation instead of taken as the refusal it is.
Violates INIT-2 ("sender.connect raises ReceiverError naming that receiver"; the cause is "error").

Seam: protocol.PeerMachine.handle, which checks Ready's protocol only for Ready(ok) (SM-S-2).
"""

from weightsync import *
from weightsync import CAPABILITIES, __all__, protocol  # noqa: F401

VIOLATES = "INIT-2"
KILLED_BY = ("conformance/test_handshake.py::test_a_ready_error_in_another_major_version_is_a_refusal_the_sender_"
             "names",)

_handle = protocol.PeerMachine.handle


def _protocol_first(self, msg):
    if isinstance(msg, protocol.Ready) and not protocol.same_major(msg.protocol, protocol.PROTOCOL_VERSION):
        raise self._bad(protocol.message_event(msg), f"receiver {self.id} answered Ready in protocol "
                        f"{msg.protocol}", "SM-S-2")  # BUG: whatever its status
    return _handle(self, msg)


protocol.PeerMachine.handle = _protocol_first
