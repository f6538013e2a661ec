"""Bug: `sender.drop(i)` takes receiver i out of the targets of the sends still pending on it, instead of failing
them for it: a `send()` waiting for a stuck worker returns its version once the others acked, a future's `.workers`
loses i and its `wait()` returns, as if i had never been targeted. The trainer goes on believing that version is
held by every worker it named, and its usual restart path (`except ReceiverDiedError: handle(i) ... connect(workers=
[i])`) never runs for the dropped worker. A careful implementer could have written it reading API-9's "the trainer
needs a way to stop waiting for it" as "the sends stop waiting for it", that is, a drop withdraws the receiver from
what is in flight, as cancelling a participant does. Breaks API-9 ("every version pending on it fails for it with
ReceiverDiedError (cause `died`, its detail saying that the trainer dropped it)") and SEND-1 ("A synchronous send
returns the new version only when every targeted receiver acked it").
"""
import weightsync  # noqa: F401
import weightsync.sender as _sender
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__, options  # noqa: F401
from weightsync.clock import Deadline

VIOLATES = ("API-9", "SEND-1")


def drop(self, i, timeout=None):
    hub = self._hub
    deadline = Deadline(timeout, hub.clock)
    with hub.locked(deadline):
        peer = hub.peers[options.check_id(i, len(hub.peers))]
        with hub.quiet(deadline):
            if peer.machine.active:
                publisher = self._publisher
                for v in list(peer.machine.pending):  # BUG: withdrawn from what is in flight, not failed for it
                    future = publisher.futures.get(v)
                    if future is not None and i in future.workers:
                        future.workers.remove(i)
                        if future._complete:
                            del publisher.futures[v]
                hub.drop(peer, "dropped by the trainer: sender.drop() (API-9)")


_sender.Sender.drop = drop
