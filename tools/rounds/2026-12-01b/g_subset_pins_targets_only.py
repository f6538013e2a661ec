"""Bug: a send looks for a free slot among the pins of its own targets only: the slots named by their
unanswered Receives and the slots they hold (zero-copy), the latest slot aside. The implementer read SLOT-2's
"a slot named by a Receive or Init not yet answered; a slot a zero-copy receiver holds" through CONS-5 ("a send
to a subset leaves every other receiver unchanged"): receivers this send leaves out are not told about the new
version, so their pins were taken as none of its business. But a receiver left out still reads its slots: a
zero-copy worker keeps viewing the slot of the version it holds, and a worker that has not yet applied an
earlier Receive still has to copy from that slot. After two sends to `workers=[0]`, the second one writes the
slot a zero-copy receiver 1 views: receiver 1's weights change to a version that was never sent to it, while
`receiver.version` still says the old one (CONS-5, ZC-2, SLOT-2).
"""
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__  # noqa: F401

from weightsync import publishing as _publishing
from weightsync.clock import Deadline
from weightsync.errors import FIX, SyncTimeoutError
from weightsync.sending import outbox_full, readers
from weightsync.slots import Group, Slot

VIOLATES = ("CONS-5", "ZC-2", "SLOT-2")


def free_slots(self, targets: list[int], deadline: Deadline) -> dict[Group, Slot]:
    """A free slot per group, waiting (bounded) for acks and for slow readers' channels (SLOT-3, SEC-3)."""
    hub, peers, first = self.hub, self.hub.peers, True
    while True:
        if not first:  # a target may have gone while this call waited (SEND-4)
            self.check_targets(targets)
        first = False
        stuck = [i for i in targets if (ch := peers[i].channel) is not None and outbox_full(ch.out_bytes)]
        chosen: dict[Group, Slot] = {}
        full: Group | None = None
        for group in hub.pool.groups.values():
            # BUG: only this send's targets' pins count (the others are not told of this version)
            slot = hub.pool.choose(group, [peers[i].machine.pins() for i in targets if peers[i].group is group])
            if slot is None:
                full = group
                break
            chosen[group] = slot
        if full is None and not stuck:
            return chosen
        if deadline.expired():
            if stuck:
                raise SyncTimeoutError(stuck, None, hint="it does not read its channel; nothing was published (SEC-3)")
            assert full is not None, "a group without a free slot is why none was chosen"
            machines = [p.machine for p in peers if p.group is full]
            blocking = sorted({i for s in full.slots for i in readers(s.id, machines)})
            raise SyncTimeoutError(
                blocking, None,
                hint=f"every one of {hub.pool.max_slots} slots is held by them; nothing was published (SLOT-3). "
                     f"{FIX}sender.drop(i) frees a stuck receiver's slots; else pass a longer timeout= or a larger "
                     "max_slots=",
            )
        hub.wait_for_events(deadline)


_publishing.Publisher.free_slots = free_slots
