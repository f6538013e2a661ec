"""Bug: the slot bound (`max_slots`, default N+2) is counted over all slots of the sender instead of
per slot group. A sender whose receivers read two groups (two devices, or `dtypes=` casting some
receivers' slots) starts with 2+2 slots, so with the default bound N+2 = 4 for two receivers it can
never allocate another one: as soon as both slots of a group are pinned (pending Receives of a
worker that has not polled yet) the next send waits and fails with SyncTimeoutError. SLOT-3: the
bound applies per slot device, "counted per slot device, not in total". Plausible: one counter is the
obvious way to cap memory.

Seam: weightsync.slots.SlotPool.choose.
"""
from weightsync import *  # noqa: F403
from weightsync import CAPABILITIES, __all__, sender  # noqa: F401
from weightsync import slots as _slots

VIOLATES = "SLOT-3"
KILLED_BY = ("conformance/test_versions.py::test_a_full_slot_group_names_only_its_own_receivers",)


def _choose(self, group, pins):
    sid = _slots.free_slot([s.id for s in group.slots], group.latest.id if group.latest else None, pins)
    if sid is not None:
        return group.slot(sid)
    if sum(len(g.slots) for g in self.groups.values()) < self.max_slots:
        return self._allocate(group)
    return None


_slots.SlotPool.choose = _choose
