"""Bug: after an apply fails (Ack(error) sent, poll() raises ReceiverError), `receiver.version` still
reports the last version applied ok, although the failed copy may have left the weights half
written. ACK-6: after Ack(error) r's weights are undefined and `receiver.version` is None until its
next ok ack. Plausible: "the old weights are still there" holds for the common failure (a target check
that fails before any byte is written), so the version is restored on error.

Seam: weightsync.receiver.Receiver._apply_and_ack (wrapped).
"""
from weightsync import *  # noqa: F403
from weightsync import CAPABILITIES, __all__, sender  # noqa: F401
from weightsync import receiver as _receiver

VIOLATES = "ACK-6"

_orig = _receiver.Receiver._apply_and_ack


def _apply_and_ack(self, msg):
    before = self._version
    status, detail = _orig(self, msg)
    if status != "ok":
        self._version = before  # nothing was written: keep what we had
    return status, detail


_receiver.Receiver._apply_and_ack = _apply_and_ack
