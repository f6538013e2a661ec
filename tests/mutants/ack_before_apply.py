"""Mutant: the receiver sends Ack(v) before it applies v. Violates ACK-4."""

from weightsync import *  # noqa: F401,F403
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync import Receiver as _Receiver
from weightsync.protocol import ERROR, OK, Ack

VIOLATES = "ACK-4"


class Receiver(_Receiver):
    def _apply_and_ack(self, msg):
        self._send(Ack(self.id, msg.version, OK, ""))
        try:
            self._apply(msg.version, msg.slot)
        except Exception as e:  # noqa: BLE001
            self._version = None
            return ERROR, str(e)
        return OK, ""
