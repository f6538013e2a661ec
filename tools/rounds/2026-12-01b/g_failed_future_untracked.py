"""Bug: the sender stops tracking a send's future at its first failure: the publisher keeps each future in its
table of versions to settle only while the outcome is open, and the implementer took a target's Ack(error) (or
death) as the moment the outcome is known ("wait() will raise ReceiverError whatever the others answer"), so
the future leaves the table there, as a completed one does. The other targets' later answers then settle
nothing: `done()` never turns true though every target answered (API-2), `future.figures` never shows their
answers (API-11: final once done), and `sender.close()` does not settle it either (LIFE-8: once close()
returns, done() is true for every future). A trainer that polls `done()` to know when each worker has
answered, before it restarts the failed one, waits for good.
"""
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__  # noqa: F401

from weightsync import publishing as _publishing
from weightsync.messages import OK

VIOLATES = ("API-2", "API-11", "LIFE-8")


def settle(self, version: int, rid: int, cause: str, detail: str) -> None:
    """One receiver's outcome for one version, from the hub (ACK-2, SM-S-9)."""
    future = self.futures.get(version)
    if future is not None:
        future._settle(rid, cause, detail)
        if future._complete or cause != OK:  # BUG: a failure decides it: nothing more to settle
            del self.futures[version]


_publishing.Publisher.settle = settle
