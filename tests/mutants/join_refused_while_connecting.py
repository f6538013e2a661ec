"""Mutant (written by a colleague who had not read the suite; it survived until the suite was
strengthened): a valid Join is refused "receiver i is live" whenever the receiver is active, i.e. also while it
is only connecting (Init sent, no Ready yet). A joiner that took Init and then hung or crashed without its
host closing the connection (a frozen process, a lost TCP peer) keeps its id: the restarted process with the
same URL is refused until the old connection happens to end. Violates RDV-5 ("a valid Join for a receiver
that is unconnected, connecting, failed or gone takes its place ... the sender answers Welcome and sends
Init at once"; only a live receiver is refused).

Seam: Hub.can_join (why receiver rid may not join now), which tests `machine.active` instead of LIVE.
"""

from weightsync import *
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync.hub import Hub

VIOLATES = "RDV-5"
KILLED_BY = ("conformance/test_rendezvous.py::test_a_join_takes_the_place_of_one_still_connecting",)


def _can_join(self, rid):
    if self.closed:
        return "refused: the sender is closing"
    if self.peers[rid].machine.active:  # BUG: connecting counts as live
        return f"refused: receiver {rid} is live in another process; one connection per receiver (RDV-5)"
    return None


Hub.can_join = _can_join
