"""Bug: `sender.drop(i)` of a zero-copy receiver fails its pending versions and closes its channel, but keeps the
slot that receiver held pinned until the receiver is restarted (a new handle or join resets it). A trainer whose
zero-copy worker got stuck (it stopped polling, its inference hangs) and pinned the slots drops it precisely to
free them, as API-9 says; here the next send to the other workers still finds no free slot and fails with
SyncTimeoutError naming the receiver it just dropped. A careful implementer could have written it out of caution:
a dropped process is alive (unlike a dead one, whose hold `channel closed` clears), its read-only views of the
slot still exist, and ZC-2 says the slot a zero-copy receiver holds is not written until it acks a newer version,
which a dropped receiver never will. But API-9 makes dropping the trainer's way to stop waiting for it: what the
dropped worker holds is no longer covered by ACK-3. Breaks API-9 ("every version pending on it fails ..., the
slots it pinned are free for the next send"), SLOT-2 ("A receiver the sender saw gone holds nothing and has
nothing pending") and SLOT-3 (at the bound a send waits for acks and fails "naming the receivers that hold slots").
"""
import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync.protocol import PeerMachine

VIOLATES = ("API-9", "SLOT-2", "SLOT-3")

_drop = PeerMachine.drop


def drop(self, why):
    viewed = set(self.held)  # BUG: the dropped process is alive, and its zero-copy views still read this slot
    failed = _drop(self, why)
    self.held = viewed
    return failed


def pins(self):
    if self.active:
        return {*self.pending.values(), *self.held}
    return set(self.held)  # a dropped zero-copy worker's hold lasts until a new handle or join replaces it


PeerMachine.drop = drop
PeerMachine.pins = pins
