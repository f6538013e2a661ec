"""Mutant: a send checks its targets when it is called and not again after it waited for a free slot, so a target
that goes during the wait (its death is what frees the slots it pinned) is sent to as if it died after publication:
the version is published, `sender.version` moves on, and the error carries the new version where nothing should
have been written. Violates SEND-4 (a send that targets a receiver known to be gone raises before anything is
written, `.version` None) and VER-2. From a fourteenth outside round.

Seam: publishing.Publisher.free_slots.
"""
import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__, publishing  # noqa: F401

VIOLATES = ("SEND-4", "VER-2")
KILLED_BY = ("conformance/test_failures.py::"
             "test_a_target_gone_while_the_send_waits_for_a_slot_is_refused_and_nothing_is_published",)

_free_slots = publishing.Publisher.free_slots


def free_slots(self, targets, deadline):
    self.check_targets = lambda targets: None  # BUG: the targets were checked when the send was called
    try:
        return _free_slots(self, targets, deadline)
    finally:
        del self.check_targets


publishing.Publisher.free_slots = free_slots
