"""A zero-copy receiver with a module target checks the module against the manifest only at connect: later applies
rebind its tensors by name without re-checking them (the implementer reasoned that a rebind replaces whatever the
caller put there anyway), so a parameter the caller reshaped is silently rebound and the version acked ok."""
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync import layout
from weightsync.apply import ZeroCopy

VIOLATES = ("ACK-7", "INIT-3", "ACK-6")


def _buggy_apply(self, views, mapped):
    mapped.ready()
    self.fence.wait()
    if self.target is not None:
        flat = layout.flatten(self.target, detach=False)  # BUG: the target is not checked as it is now (ACK-7)
        for name, view in zip(self.checker.names, views):
            dst = flat[name]
            dst.data = view
            if dst.requires_grad:
                dst.requires_grad_(False)
    self._views = views


ZeroCopy.apply = _buggy_apply
