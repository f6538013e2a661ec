"""Mutant: receiver.close() leaves its apply thread running: close() does not wait for it, and the thread
does not end once its loop is over. Violates LIFE-5 ("stops its apply thread").

Seams: weightsync.applier.Applier.run (the apply thread's body) and Receiver._thread, which close() joins.
"""

import threading

from weightsync import *
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync import Receiver as _Receiver
from weightsync import applier as _applier

VIOLATES = "LIFE-5"
KILLED_BY = ("conformance/test_lifecycle.py::test_receiver_close_is_idempotent_and_leaves_nothing[push]",)
_FOREVER = threading.Event()
_run = _applier.Applier.run


def _run_forever(self, pending):
    _run(self, pending)
    _FOREVER.wait()  # BUG: the thread outlives close()


_applier.Applier.run = _run_forever


class Receiver(_Receiver):
    def close(self):
        self._thread = None  # BUG: close() no longer waits for it
        super().close()
