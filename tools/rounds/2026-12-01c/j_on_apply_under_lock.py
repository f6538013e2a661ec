"""Bug: `on_apply(version)` is called for a version that came by Receive while the apply's write lock
is still held: the implementer told the hook right after the Ack was sent, inside the same
`try` as the apply ("applied and answered ok" is true from that moment), and released the lock
in the `finally` after it. The Init's version, applied in connect() outside any lock, is told
correctly, so a hook that only logs works. But a hook that reads the weights it is told about
(`with receiver.reading(): snapshot(...)`, the natural thing to do on a new version) waits for the
apply that is calling it: with a timeout it raises SyncTimeoutError for every version, without one
the push thread deadlocks and no later version is ever applied or acked.

Breaks API-11: "`Receiver(..., on_apply=fn)` calls `fn(version)` ... in the thread that applied it,
once the apply's lock is released (so `fn` may open `reading()`)".
"""
import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync import applier as _applier
from weightsync.messages import OK

VIOLATES = ("API-11",)


def apply_released(self, msg, pending):
    """Applies a taken version with the write lock held, then releases both (the lock and the version)."""
    status, detail = "error", "the apply did not finish"
    try:
        status, detail = self._apply_and_ack(msg)
        if status == OK:
            self.applied(msg.version)  # BUG: told while the write lock is still held
    finally:
        self._lock.release_write()
        pending.applied(msg, status == OK)
    return status, detail


_applier.Applier.apply_released = apply_released
