"""Bug: a send looks for a free slot (and writes the new version) only in the slot groups its targets read,
not in every group. An implementer with cast slots (LAYOUT-3: an fp32 group for most workers, a bf16 group for
the workers that asked) reasons that a subset send to the fp32 workers has no reason to convert and copy the
version into bf16 slots nobody of this send reads, nor to wait for a free bf16 slot (SLOT-3 counts per group).
But the other group's "latest" slot then still holds an older version, while the sender's version moved on:
a bf16 receiver restarted (LIFE-2) or joining late (LIFE-1) after such sends gets an Init naming the latest
version number over the bytes of an older one, answers Ready(ok, v) and reports `version == v` while its
weights are those of a version long gone (INIT-4, ACK-3).
"""
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__  # noqa: F401

VIOLATES = ("LIFE-2", "LIFE-1", "INIT-4")

from weightsync import publishing as _publishing  # noqa: E402
from weightsync.errors import FIX  # noqa: E402
from weightsync.errors import SyncTimeoutError as _STE  # noqa: E402
from weightsync.sending import outbox_full, readers  # noqa: E402


def free_slots(self, targets, deadline):
    """A free slot per group, waiting (bounded) for acks and for slow readers' channels (SLOT-3, SEC-3)."""
    hub, peers, first = self.hub, self.hub.peers, True
    while True:
        if not first:  # a target may have gone while this call waited (SEND-4)
            self.check_targets(targets)
        first = False
        stuck = [i for i in targets if (ch := peers[i].channel) is not None and outbox_full(ch.out_bytes)]
        chosen = {}
        full = None
        # THE BUG: only the groups this send's targets read (was: every group of the pool).
        for group in dict.fromkeys(peers[i].group for i in targets):
            slot = hub.pool.choose(group, [p.machine.pins() for p in peers if p.group is group])
            if slot is None:
                full = group
                break
            chosen[group] = slot
        if full is None and not stuck:
            return chosen
        if deadline.expired():
            if stuck:
                raise _STE(stuck, None, hint="it does not read its channel; nothing was published (SEC-3)")
            machines = [p.machine for p in peers if p.group is full]
            blocking = sorted({i for s in full.slots for i in readers(s.id, machines)})
            raise _STE(
                blocking, None,
                hint=f"every one of {hub.pool.max_slots} slots is held by them; nothing was published (SLOT-3). "
                     f"{FIX}sender.drop(i) frees a stuck receiver's slots; else pass a longer timeout= or a larger "
                     "max_slots=",
            )
        hub.wait_for_events(deadline)


_publishing.Publisher.free_slots = free_slots
