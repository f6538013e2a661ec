"""Mutant (the outside round of 2026-11-29, written without reading the suite): `Receiver(on_apply=fn)` also calls `fn(version)` for a version whose apply failed (Ack(error)
sent, poll() raising ReceiverError): a worker that re-jits or logs "now on version v" in its callback
acts on weights that are undefined. API-11: on_apply calls fn(version) after each version the receiver
applied *and answered ok for*. Plausible: the callback was put in the `finally` that releases the apply
lock, so that it runs "once the apply's lock is released".

Seam: weightsync.applier.Applier.apply_released (the Receiver's applier).
"""
from weightsync import *  # noqa: F403
from weightsync import CAPABILITIES, __all__, sender  # noqa: F401
from weightsync import applier as _applier

VIOLATES = "API-11"
KILLED_BY = ('conformance/test_binding.py::test_on_apply_is_told_each_version_applied[push]',)


def _apply_released(self, msg, pending):
    status, detail = "error", "the apply did not finish"
    try:
        status, detail = self._apply_and_ack(msg)
    finally:
        self._lock.release_write()
        pending.applied(msg, status == "ok")
        self.applied(msg.version)
    return status, detail


_applier.Applier.apply_released = _apply_released
