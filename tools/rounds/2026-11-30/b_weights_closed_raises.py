"""Reading `receiver.weights` after `close()` raises ClosedError (the implementer guarded every public accessor
with the closed check), though a closed receiver keeps the version it held readable for the worker to finish with."""
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync.receiver import Receiver

VIOLATES = ("LIFE-6", "LIFE-5")

_orig_weights = Receiver.weights.fget


def _buggy_weights(self):
    self._check_open()  # BUG: reading weights is one of the calls LIFE-6 allows on a closed receiver
    return _orig_weights(self)


Receiver.weights = property(_buggy_weights, doc=Receiver.weights.__doc__)
