"""Mutant (the outside round of 2026-11-29, written without reading the suite): a pull-mode receiver's `stopped` only turns true inside `poll()`: a worker loop
`while not receiver.stopped:` that polls rarely (or only on some condition) never notices that the
trainer closed, and keeps running on its last weights forever. LIFE-7: a pull receiver's `stopped`
MUST also turn true without a `poll()` once its channel has ended, by looking at the channel without
taking a message. Plausible: "pull mode reads its channel only in poll()" is said in the same section,
and the property just reports the state machine.

Seam: weightsync.receiver.Receiver._notice_end.
"""
from weightsync import *  # noqa: F403
from weightsync import CAPABILITIES, __all__, sender  # noqa: F401
from weightsync import receiver as _receiver

VIOLATES = "LIFE-7"
KILLED_BY = ('conformance/test_lifecycle.py::test_a_pull_receiver_sees_the_trainer_close_without_polling',)


def _notice_end(self):
    return None  # the channel is read in poll() only


_receiver.Receiver._notice_end = _notice_end
