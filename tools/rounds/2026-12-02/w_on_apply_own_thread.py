"""Bug: `Receiver(on_apply=fn)` calls `fn(version)` from a notifier thread of its own, fed by a queue, instead of
in the thread that applied the version. `receiver.connect()` and `poll()` return before the hook has run (a pull
worker that logs or counts its versions through on_apply, or swaps its inference model in it, reads stale state
right after `poll()` returned the new version), and the hook runs concurrently with the worker's own code in a
thread it does not know. A careful implementer could have written it: API-11 says an exception from `fn` "changes
nothing else" and that it runs "once the apply's lock is released", which they read as "user code must never delay
the apply thread or the ack", and they moved the hook off the applying thread, as logging handlers and event
buses do. Breaks API-11 ("`Receiver(..., on_apply=fn)` calls `fn(version)` after each version the receiver
applied and answered ok for (the Init's included), in the thread that applied it").
"""
import logging
import queue
import threading

import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__, applier  # noqa: F401

VIOLATES = ("API-11",)
log = logging.getLogger("weightsync")


def _notify(self):
    while True:
        version = self._hook_queue.get()
        try:
            self._on_apply(version)
        except Exception:  # noqa: BLE001
            log.exception("receiver %d: on_apply(%d) raised", self.id, version)


def applied(self, version):
    """on_apply(version), off the applying thread: the hook never delays an apply or an ack (API-11)."""
    if self._on_apply is None:
        return
    if getattr(self, "_hook_queue", None) is None:
        self._hook_queue = queue.SimpleQueue()
        threading.Thread(target=_notify, args=(self,), name=f"weightsync-on-apply-{self.id}", daemon=True).start()
    self._hook_queue.put(version)  # BUG: told from the notifier thread, some time after the apply returned


applier.Applier.applied = applied
