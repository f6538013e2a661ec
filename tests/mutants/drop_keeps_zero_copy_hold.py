"""Mutant: `sender.drop(i)` of a zero-copy receiver fails its pending versions and closes its channel but keeps the
slot that receiver held pinned (the dropped process is alive and its views still read it), so with the pool at its
bound the next send to the others finds no free slot and names the receiver just dropped. Violates API-9 (the slots
a dropped receiver pinned are free for the next send) and SLOT-2 (a receiver seen gone holds nothing). From a
twelfth outside round.

Seam: PeerMachine.drop and PeerMachine.pins.
"""
import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync.protocol import PeerMachine

VIOLATES = ("API-9", "SLOT-2")
KILLED_BY = ("conformance/test_failures.py::test_drop_ends_the_hold_of_a_zero_copy_receiver",)

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
