"""Mutant (the outside round of 2026-11-29, written without reading the suite): a receiver that finds several Receives pending keeps the first one it read and drops the
later ones, so a pull worker that polls after two send_async() calls applies the older version, acks
it, and never answers the newer Receive: the trainer's future for the newer version hangs until some
later version's ack happens to cover it. ACK-1 says each Receive MUST be answered by an Ack of that
version or a newer one; ACK-2 lets a receiver coalesce pending Receives only toward the newest.
Plausible: the coalescing slot was written like `untake` ("keep it unless one is already waiting"),
which reads as harmless because Receives arrive in order.

Seam: weightsync.receiving.Newest.offer.
"""
from weightsync import *  # noqa: F403
from weightsync import CAPABILITIES, __all__, sender  # noqa: F401
from weightsync import receiving as _receiving

VIOLATES = ("ACK-1", "ACK-2")
KILLED_BY = ('conformance/test_versions.py::test_pull_newest_wins_and_answers_older',)


def _offer(self, msg):
    if self.pending is None:
        self.pending = msg


_receiving.Newest.offer = _offer
