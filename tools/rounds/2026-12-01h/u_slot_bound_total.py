"""Bug: the sender bounds the number of slots it holds in total, over every slot group, instead of per slot
device (per group): it compares its slot-id counter, which every group draws from, with `max_slots`. With one
group (the common case: every receiver on the weights' device and dtype) that is the same number; with cast
slots (`Sender(..., dtypes=[None, torch.bfloat16])`: an fp32 group and a bf16 group, LAYOUT-3) or slots on
several devices, the groups' two initial slots each already reach the default bound N+2 for two workers, so no
group may ever grow: as soon as receivers lag one version behind, every send waits for acks and fails with
SyncTimeoutError, "every slot is held", where it should allocate a slot. A careful implementer could have
written it from the reference's own design: slot ids are unique across groups and drawn from one counter, so
"the next id" reads as "how many slots exist", and `max_slots` as "how many slots the sender may hold". Breaks
SLOT-3 ("up to a bound on the slots of each slot device, counted per slot device, not in total ...: a sender
with slots on k devices holds up to k times that bound, and a send MUST NOT wait for a slot on a device that
holds fewer slots than the bound") and SEND-5 (send_async raises although a slot could be allocated).
"""
import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__, slots  # noqa: F401
from weightsync.sending import free_slot

VIOLATES = ("SLOT-3", "SEND-5")


def choose(self, group, pins):
    """A slot nobody may read, a new one while the sender is under its bound, else None (SLOT-2, SLOT-3)."""
    sid = free_slot([s.id for s in group.slots], group.latest.id if group.latest else None, pins)
    if sid is not None:
        return group.slot(sid)
    if self._next_id < self.max_slots:  # BUG: slot ids run over every group: the counter counts them all
        return self._allocate(group)
    return None


slots.SlotPool.choose = choose
