"""Bug: when a send finds no free slot before its timeout (SLOT-3), its SyncTimeoutError names the send's own
targets instead of the receivers that hold the slots. A trainer whose one stuck worker (a pull worker that
stopped polling, a hung apply) pins every slot sees its sends to the *other* workers fail with errors that name
those healthy workers, so it restarts or drops the wrong ones and the stuck one keeps every slot. The
implementer read SEND-2's "SyncTimeoutError (no answer before the timeout). Each names the receivers" and 8.4's
"The targets that have not answered" as the rule for every SyncTimeoutError of a send, the slot wait's included:
a send that timed out names whom it was sending to.

Breaks SLOT-3 ("At the bound it waits for acks, bounded by the send's timeout, then fails with SyncTimeoutError
naming the receivers that hold slots on that device") and SEC-5 ("once it pins every slot SLOT-3 allows, a send
to the others raises SyncTimeoutError naming it").
"""
import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync.errors import FIX, SyncTimeoutError
from weightsync.publishing import Publisher
from weightsync.sending import outbox_full

VIOLATES = ("SLOT-3", "SEC-5")


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
            # BUG: the send timed out, so it names the receivers it was sending to
            raise SyncTimeoutError(
                sorted(targets), None,
                hint=f"every one of {hub.pool.max_slots} slots is held; nothing was published (SLOT-3). "
                     f"{FIX}pass a longer timeout= or a larger max_slots=",
            )
        hub.wait_for_events(deadline)


Publisher.free_slots = free_slots
