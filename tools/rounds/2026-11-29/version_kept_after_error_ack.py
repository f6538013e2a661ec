"""Bug: after an apply fails (Ack(error) sent, poll() raises ReceiverError), `receiver.version` still
reports the last version applied ok, although the failed copy may have left the weights half
written. ACK-6: after Ack(error) r's weights are undefined and `receiver.version` is None until its
next ok ack. Plausible: "the old weights are still there" holds for the common failure (a target check
that fails before any byte is written), so the version is restored on error.

Seam: weightsync.applier.Applier._apply_and_ack (wrapped; Receiver._apply_and_ack when the round ran).
"""
from weightsync import *  # noqa: F403
from weightsync import CAPABILITIES, __all__, sender  # noqa: F401
from weightsync import applier as _applier

VIOLATES = "ACK-6"

_orig = _applier.Applier._apply_and_ack


def _apply_and_ack(self, msg):
    before = self.version
    status, detail = _orig(self, msg)
    if status != "ok":
        self.version = before  # nothing was written: keep what we had
    return status, detail


_applier.Applier._apply_and_ack = _apply_and_ack
