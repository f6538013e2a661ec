"""Bug: `Receiver(on_apply=fn)` also calls `fn(version)` for a version whose apply failed (Ack(error)
sent, poll() raising ReceiverError): a worker that re-jits or logs "now on version v" in its callback
acts on weights that are undefined. API-11: on_apply calls fn(version) after each version the receiver
applied *and answered ok for*. Plausible: the callback was put in the `finally` that releases the apply
lock, so that it runs "once the apply's lock is released".

Seam: weightsync.receiver.Receiver._apply_released.
"""
from weightsync import *  # noqa: F403
from weightsync import CAPABILITIES, __all__, sender  # noqa: F401
from weightsync import receiver as _receiver

VIOLATES = "API-11"


def _apply_released(self, msg, pending):
    status, detail = "error", "the apply did not finish"
    try:
        status, detail = self._apply_and_ack(msg)
    finally:
        self._lock.release_write()
        pending.applied(msg, status == "ok")
        self._applied(msg.version)
    return status, detail


_receiver.Receiver._apply_released = _apply_released
