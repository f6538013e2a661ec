"""Mutant, written apart from the suite: in pull mode poll() applies at once, without waiting for reading() blocks
open in other threads ("pull mode applies only when the worker asks, so no lock is needed").
Violates CONS-2 (an apply happens only at a safe point, in both modes) and so CONS-1."""

from weightsync import *  # noqa: F401,F403
from weightsync import CAPABILITIES, ProtocolError, ReceiverError, __all__  # noqa: F401
from weightsync import Receiver as _Receiver
from weightsync import transport
from weightsync.protocol import OK, RECEIVER_TABLE, step
from weightsync.protocol import ReceiverState as _S

VIOLATES = "CONS-2"


class Receiver(_Receiver):
    def poll(self, timeout=0.0):
        self._check_open()
        if self.mode != "pull":
            raise ProtocolError("poll() is for mode='pull'; push mode applies in the background")
        if self._state is _S.NEW:
            raise ProtocolError(f"receiver {self.id}: call connect() before poll() (SM-R)")
        if self._lock.reading_here():
            raise ProtocolError("poll() inside reading() would change the weights being read (CONS-1)")
        if self.stopped:
            return None
        try:
            if not self._channel.poll(timeout):
                return None
        except transport.ChannelClosed:
            self._state = step(RECEIVER_TABLE, self._state, "channel closed")
            return None
        try:
            msg = self._take()
        except ProtocolError as e:
            self._broken(e)
            raise
        if msg is None:
            return None
        status, detail = self._apply_and_ack(msg)  # BUG: no self._lock.write(...)
        if status != OK:
            raise ReceiverError([self.id], msg.version, {self.id: detail})
        return msg.version
