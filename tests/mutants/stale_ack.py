"""Mutant: the receiver acks the version before the one it applied (a stale version). Violates ACK-1."""

from weightsync import *  # noqa: F401,F403
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync import Receiver as _Receiver
from weightsync.protocol import ERROR, OK, Ack

VIOLATES = "ACK-1"


class Receiver(_Receiver):
    def _apply_and_ack(self, msg):
        status, detail = OK, ""
        try:
            self._apply(msg.version, msg.slot)
        except Exception as e:  # noqa: BLE001
            self._version = None
            status, detail = ERROR, str(e)
        self._send(Ack(self.id, msg.version - 1, status, detail))
        return status, detail
