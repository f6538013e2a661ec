"""Bug: when no slot frees before a send's timeout (SLOT-3), the SyncTimeoutError names the send's targets
instead of the receivers that hold the slots: a `send(workers=[1])` blocked by receiver 0, a pull worker that
stopped polling and pins every slot, blames receiver 1, which has nothing pending. The trainer follows the
error's remedy and drops or restarts the healthy worker 1, while the stuck worker 0 keeps every slot pinned
and the next send fails the same way. The implementer made every SyncTimeoutError of a send name "the targets
that have not answered", as the ack timeout of SEND-2 does, and took a send that could not get a slot for one
whose targets were too slow. Breaks SLOT-3 ("At the bound it waits for acks, bounded by the send's timeout,
then fails with SyncTimeoutError naming the receivers that hold slots on that device, with `.version` None"),
SEND-7 ("MUST name every receiver at fault that is known when it is raised").
"""
import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync.errors import FIX, SyncTimeoutError
from weightsync.publishing import Publisher
from weightsync.sending import outbox_full

VIOLATES = ("SLOT-3", "SEND-7")


def free_slots(self, targets, deadline):
    hub, peers, first = self.hub, self.hub.peers, True
    while True:
        if not first:
            self.check_targets(targets)
        first = False
        stuck = [i for i in targets if (ch := peers[i].channel) is not None and outbox_full(ch.out_bytes)]
        chosen = {}
        full = None
        for group in hub.pool.groups.values():
            slot = hub.pool.choose(group, [p.machine.pins() for p in peers if p.group is group])
            if slot is None:
                full = group
                break
            chosen[group] = slot
        if full is None and not stuck:
            return chosen
        if deadline.expired():
            if stuck:
                raise SyncTimeoutError(stuck, None, hint="it does not read its channel; nothing was published (SEC-3)")
            # BUG: the send's targets are named, as for an ack timeout, not the receivers holding the slots.
            raise SyncTimeoutError(
                list(targets), None,
                hint=f"every one of {hub.pool.max_slots} slots is held; nothing was published (SLOT-3). "
                     f"{FIX}sender.drop(i) frees a stuck receiver's slots; else pass a longer timeout= or a larger "
                     "max_slots=",
            )
        hub.wait_for_events(deadline)


Publisher.free_slots = free_slots
