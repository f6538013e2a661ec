"""Mutant: the sender chooses the slot to write without the receivers' pins: it reuses a slot that a
receiver has been told to read (a Receive or Init not yet answered) or that a zero-copy receiver holds,
so a receiver can copy a version whose bytes are being overwritten. Violates SLOT-2 (and so ZC-2 and CONS-1,
and ACK-3: the receiver then holds bytes that are not its version's, which is how the state machine sees it
when the focused test's race is lost on a busy machine).

Seam: SlotPool.choose (SLOT-2's free_slot over the pins the receivers' machines report), given no pins.
"""

import functools

from weightsync import *
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync import Sender as _Sender

VIOLATES = ("SLOT-2", "ZC-2", "CONS-1", "ACK-3")
KILLED_BY = ("conformance/test_consistency.py::test_a_slot_named_by_an_unanswered_receive_is_not_rewritten",)


class Sender(_Sender):
    @functools.wraps(_Sender.__init__)  # the public signature stays the reference's (API-1)
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        choose = self._hub.pool.choose
        self._hub.pool.choose = lambda group, pins: choose(group, [])  # BUG: only the latest slot is kept
