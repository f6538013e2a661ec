"""Mutant: a KeyboardInterrupt that reaches poll() while it waits for another thread's reading() block drops the
version poll() had found, where a timeout of that wait leaves it pending; once the reader leaves, the next poll()
finds nothing, and the version is never applied nor acked. Violates LIFE-9 (the reference's own bug until an
eleventh outside round found it).

Seam: ChannelPending.untake and NetworkPending.untake, which do nothing while a KeyboardInterrupt is being handled.
"""

import sys

from weightsync import *
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync import pending as _pending

VIOLATES = "LIFE-9"
KILLED_BY = ("conformance/test_lifecycle.py::test_an_interrupt_while_a_call_waits_leaves_the_object_working[reader]",)


def _dropping(untake):
    def patched(self, msg):
        if isinstance(sys.exc_info()[1], KeyboardInterrupt):  # BUG: the interrupted poll()'s version is dropped
            return None
        return untake(self, msg)

    return patched


_pending.ChannelPending.untake = _dropping(_pending.ChannelPending.untake)
_pending.NetworkPending.untake = _dropping(_pending.NetworkPending.untake)
