"""A closing zero-copy receiver copies the version it holds for its `weights`, but leaves a module target's
rebound tensors viewing the slot (the implementer made `detach` copy only the receiver's own views), so once the
sender writes that slot again the module's parameters change under the worker after close()."""
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync.apply import ZeroCopy

VIOLATES = ("LIFE-5", "ZC-3")


def _buggy_detach(self):
    self.fence.wait()
    self._views = [v.clone() for v in self._views]  # BUG: a module target's tensors are left viewing the slot


ZeroCopy.detach = _buggy_detach
