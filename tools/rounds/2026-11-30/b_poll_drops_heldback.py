"""In pull mode, a version that `reading()` blocks in other threads hold back past poll()'s timeout is taken
off the receiver's queue and not put back (the implementer treated a Receive read from the channel as consumed),
so the next poll() returns None, the version is never applied nor acked, and the trainer's send times out."""
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync.pending import ChannelPending

VIOLATES = ("ACK-1", "API-3")


def _buggy_untake(self, msg):
    pass  # BUG: the version the readers held back is dropped instead of waiting for the next poll()


ChannelPending.untake = _buggy_untake
