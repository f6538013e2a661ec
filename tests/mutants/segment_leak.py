"""Mutant: close() releases the channels and the slots' descriptors but keeps every slot's shared memory
mapped: a cache of slot tensors ("for a quick restart") outlives the sender. Violates LIFE-4.

Seam: Sender.close, which first puts every slot's buffer tensor in a module-level cache.
"""

from weightsync import *
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync import Sender as _Sender

VIOLATES = "LIFE-4"
KILLED_BY = ("conformance/test_lifecycle.py::test_sender_close_stops_everyone_and_releases_everything",)
_CACHE: list = []


class Sender(_Sender):
    def close(self):
        for group in self._hub.pool.groups.values():
            _CACHE.extend(getattr(s, "buffer", s).tensor for s in group.slots)  # BUG: the mappings stay
        super().close()
