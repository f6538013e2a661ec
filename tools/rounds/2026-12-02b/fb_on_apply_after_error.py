"""Bug: `Receiver(on_apply=fn)` calls `fn(version)` after every apply that was attempted, a failed one too
(Ack(error) sent, `poll()` about to raise ReceiverError): a worker that swaps its inference copy, bumps its
"current policy version" metric or logs "now running version v" through on_apply is told of a version its weights
do not hold (they are undefined after the failure, and `receiver.version` is None). A careful implementer could have
written it by putting the hook where the apply ends, beside the release of the lock ("once the apply's lock is
released (so fn may open reading())"), i.e. in the `finally` that releases the lock and the version, reading
"after each version the receiver applied" as "after each apply". Breaks API-11 ("`Receiver(..., on_apply=fn)`
calls `fn(version)` after each version the receiver applied and answered ok for").
"""
import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__, applier  # noqa: F401
from weightsync.messages import ERROR

VIOLATES = ("API-11",)


def apply_released(self, msg, pending):
    status, detail = ERROR, "the apply did not finish"
    try:
        status, detail = self._apply_and_ack(msg)
    finally:
        self._lock.release_write()
        pending.applied(msg, status == "ok")
        self.applied(msg.version)  # BUG: told of every apply that ended, failed ones included
    return status, detail


applier.Applier.apply_released = apply_released
