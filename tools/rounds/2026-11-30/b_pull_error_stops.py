"""A pull receiver whose apply failed (poll() raised ReceiverError after its Ack(error)) takes itself as stopped,
as if the failure ended the connection (the implementer read Ack(error) as the receiver's "failed" state), so a
worker's `while not receiver.stopped:` loop ends and no later version can repair it."""
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync.receiver import Receiver
from weightsync.errors import ReceiverError as _RE

VIOLATES = ("SM-R-8", "ACK-6")

_orig_poll = Receiver.poll


def _buggy_poll(self, timeout=0.0):
    try:
        return _orig_poll(self, timeout)
    except _RE:
        self._machine.channel_closed()  # BUG: an Ack(error) moves the receiver out of live; it should stay live
        raise


Receiver.poll = _buggy_poll
