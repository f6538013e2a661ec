"""Bug: when a send looks for a free slot, it counts only the slots its own targets may read (their pending
versions and held slots), not those of every receiver of the group. A send to a subset of the workers
(`send(workers=[0])`) may then overwrite the slot of a version still pending at a worker it does not target (a
pull worker that has not polled yet, a push worker busy inside `reading()`) or the slot a zero-copy worker views:
that worker later applies (and acks as version v) the bytes of a newer version, or its zero-copy weights change
under it without any send to it. A careful implementer could have written it from SLOT-2 and SLOT-3 read with the
send in mind: "a slot ... not read by any receiver the version goes to" is the natural reading of "may be read"
when one thinks of a send as a conversation with its targets; CONS-5's promise about the others reads as being
kept by not sending them a Receive. Breaks CONS-5 ("A send to a subset of receivers leaves every other
receiver's version and weights unchanged"), SLOT-2 (the sender never writes a slot that may be read), ACK-3
("Ack(r, v, ok) promises that r's weights equal, bit for bit, the bytes the sender published as version v") and
ZC-2 ("MUST NOT write the slot a zero-copy receiver holds until that receiver acked a newer version").
"""
import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__, publishing  # noqa: F401
from weightsync.errors import FIX, SyncTimeoutError
from weightsync.sending import outbox_full, readers
from weightsync.slots import Group, Slot

VIOLATES = ("CONS-5", "SLOT-2", "ACK-3", "ZC-2")


def free_slots(self, targets: list, deadline) -> dict:
    hub, peers, first = self.hub, self.hub.peers, True
    while True:
        if not first:
            self.check_targets(targets)
        first = False
        stuck = [i for i in targets if (ch := peers[i].channel) is not None and outbox_full(ch.out_bytes)]
        chosen: dict[Group, Slot] = {}
        full = None
        for group in hub.pool.groups.values():
            # BUG: only the send's targets are asked which slots they may read
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
            machines = [p.machine for p in peers if p.group is full]
            blocking = sorted({i for s in full.slots for i in readers(s.id, machines)})
            raise SyncTimeoutError(blocking, None, hint=f"every one of {hub.pool.max_slots} slots is held by them; "
                                   f"nothing was published (SLOT-3). {FIX}pass a longer timeout=")
        hub.wait_for_events(deadline)


publishing.Publisher.free_slots = free_slots
