"""Bug: with the default `max_slots`, the sender bounds each slot group by its own readers (the receivers whose
slots are in that group, plus two) instead of by N+2 for every group. A bf16 worker beside several fp32 ones
(`Sender(..., dtypes=[None, None, torch.bfloat16])`) gets a group of three slots; once it falls two versions
behind (a pull worker that polls between episodes), every send to anyone waits for it and fails with
SyncTimeoutError (nothing published) although its group is below the bound. A careful implementer could have
written it from the rationale under SLOT-3, "The default bound N+2 lets every receiver hold one slot while the
latest version occupies another and one more is written; a device read by fewer receivers needs fewer", read as
a rule that sizes each device's default to the receivers reading it (saving a model's worth of memory per slot)
rather than as the reason why N+2 suffices everywhere ("so the same bound serves every device"). Breaks SLOT-3
("a send MUST NOT wait for a slot on a device that holds fewer slots than the bound"; the reference bound is
"`max_slots` (default N+2 ...)"; "At the bound it waits for acks").
"""
import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync.sender import Sender as _Sender
from weightsync.sending import free_slot
from weightsync.slots import SlotPool

VIOLATES = ("SLOT-3",)

_init = _Sender.__init__


def __init__(self, weights, num_workers, *, max_slots=None, **kwargs):
    _init(self, weights, num_workers, max_slots=max_slots, **kwargs)
    if max_slots is None:  # BUG: the default bound is sized per group: its readers + 2, not N + 2
        hub = self._hub
        for group in hub.pool.groups.values():
            readers = sum(1 for p in hub.peers if p.group is group)
            group.bound = min(hub.pool.max_slots, readers + 2)


def choose(self, group, pins):
    sid = free_slot([s.id for s in group.slots], group.latest.id if group.latest else None, pins)
    if sid is not None:
        return group.slot(sid)
    if len(group.slots) < getattr(group, "bound", self.max_slots):
        return self._allocate(group)
    return None


_Sender.__init__ = __init__
SlotPool.choose = choose
