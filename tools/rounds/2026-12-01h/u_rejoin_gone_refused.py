"""Bug: a listening sender lets a process join as receiver i only while i has never been connected (unconnected):
a valid Join for a receiver that is gone (its worker crashed or was killed) or failed is refused with "receiver i
is already connected", so a worker restarted with the same URL, which is how URL workers are restarted, gets
RefusedError from `connect()` and can never take its place again; only a `sender.handle(i)` on the trainer's side,
which URL deployments do not call, would reset it. A careful implementer could have written it from RDV-5's
"One connection per receiver id": a receiver that has had its connection keeps its id, and the join is read as
a receiver's first arrival, the restart being `handle(i)`'s business as in LIFE-2. Breaks RDV-5 ("A valid Join
for a receiver that is unconnected, connecting, failed or gone takes its place ... A restart is therefore a new
process given the same URL") and LIFE-2 (a receiver that failed or is gone can be restarted).
"""
import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__, protocol  # noqa: F401
from weightsync.protocol import PeerState

VIOLATES = ("RDV-5", "LIFE-2")


def refuses_join(self, closing: bool):
    """Why a valid Join for this receiver is refused, or None: one connection per id (RDV-5)."""
    if closing:
        return "refused: the sender is closing"
    if self.state is not PeerState.UNCONNECTED:  # BUG: gone and failed receivers keep their id taken
        return f"refused: receiver {self.id} is already connected; one connection per receiver (RDV-5)"
    return None


protocol.PeerMachine.refuses_join = refuses_join
