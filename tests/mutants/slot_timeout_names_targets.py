"""Mutant, written apart from the suite: when no slot is free in time, SyncTimeoutError names the send's
targets instead of the receivers that hold the slots. Violates SLOT-3.

Seam: Publisher.free_slots (the bounded wait for a free slot), whose SyncTimeoutError is re-raised naming the targets.
"""

from weightsync import *
from weightsync import CAPABILITIES, SyncTimeoutError, __all__  # noqa: F401
from weightsync.publishing import Publisher

VIOLATES = "SLOT-3"
KILLED_BY = ("conformance/test_versions.py::test_slot_timeout_names_only_the_receivers_that_hold_slots",)


_free_slots = Publisher.free_slots


def _free_slots_naming_targets(self, targets, deadline):
    try:
        return _free_slots(self, targets, deadline)
    except SyncTimeoutError:
        raise SyncTimeoutError(targets, None, hint="no free slot in time; nothing was published (SLOT-3)") from None


Publisher.free_slots = _free_slots_naming_targets
