"""Mutant, written apart from the suite: when no slot is free in time, SyncTimeoutError names the send's
targets instead of the receivers that hold the slots. Violates SLOT-3.

Seam: Sender._free_slots (the bounded wait for a free slot), whose SyncTimeoutError is re-raised naming the targets.
"""

from weightsync import *
from weightsync import CAPABILITIES, SyncTimeoutError, __all__  # noqa: F401
from weightsync import Sender as _Sender

VIOLATES = "SLOT-3"
KILLED_BY = ("conformance/test_versions.py::test_slot_timeout_names_only_the_receivers_that_hold_slots",)


class Sender(_Sender):
    def _free_slots(self, targets, deadline):
        try:
            return super()._free_slots(targets, deadline)
        except SyncTimeoutError:
            raise SyncTimeoutError(targets, None, hint="no free slot in time; nothing was published (SLOT-3)") from None
