"""Mutant: when a slot group is full, SyncTimeoutError names every receiver that holds a slot of any group
(the receivers are gathered over the whole sender, not over the full group), so a receiver of a group that
has room is blamed and restarted for nothing. Violates SLOT-3 ("fails with SyncTimeoutError naming the
receivers that hold slots on that device").

Seam: Publisher.free_slots (the bounded wait for a free slot in every group), whose SyncTimeoutError is
re-raised naming the receivers that may read any slot.
"""

from weightsync import *
from weightsync import CAPABILITIES, SyncTimeoutError, __all__  # noqa: F401
from weightsync.publishing import Publisher

VIOLATES = "SLOT-3"
KILLED_BY = ("conformance/test_versions.py::test_a_full_slot_group_names_only_its_own_receivers",)


_free_slots = Publisher.free_slots


def _free_slots_naming_every_group(self, targets, deadline):
    try:
        return _free_slots(self, targets, deadline)
    except SyncTimeoutError as e:
        if e.version is not None or "SLOT-3" not in str(e):
            raise
        holders = sorted(p.machine.id for p in self.hub.peers if p.machine.pins())  # BUG: every group's
        raise SyncTimeoutError(holders, None, hint="no free slot in time; nothing was published (SLOT-3)") from None


Publisher.free_slots = _free_slots_naming_every_group
