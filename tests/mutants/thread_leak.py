"""Mutant: receiver.close() leaves its apply thread running. Violates LIFE-5."""

import threading

from weightsync import *  # noqa: F401,F403
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync import Receiver as _Receiver

VIOLATES = "LIFE-5"
_FOREVER = threading.Event()


class Receiver(_Receiver):
    def _run(self):
        super()._run()
        _FOREVER.wait()  # the thread outlives close()

    def close(self):
        self._thread = None  # close() no longer waits for it
        super().close()
