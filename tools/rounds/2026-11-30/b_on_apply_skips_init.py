"""`Receiver(on_apply=fn)` is told only the versions that came by Receive, not the Init's version applied at
connect (the implementer wired the hook into the apply loop only), so a worker that counts or logs its versions
through on_apply never hears of the one it starts from."""
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync.receiver import Receiver

VIOLATES = ("API-11",)

_orig_connect = Receiver.connect


def _buggy_connect(self, timeout=None):
    applier = self._applier
    hook, applier._on_apply = applier._on_apply, None  # BUG: on_apply is not called for the Init's version
    try:
        return _orig_connect(self, timeout)
    finally:
        applier._on_apply = hook


Receiver.connect = _buggy_connect
