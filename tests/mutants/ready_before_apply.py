"""Mutant, written apart from the suite: the receiver answers Ready(ok) first and then copies the Init's version
out of its slot ("answer the handshake quickly"). The sender then considers the Init slot
released and may rewrite it while the receiver is still reading it. Violates INIT-4."""

import threading

from weightsync import *  # noqa: F401,F403
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync import ClosedError, ProtocolError, SyncTimeoutError, WeightsMismatchError
from weightsync import Receiver as _Receiver
from weightsync import transport
from weightsync.protocol import ERROR, OK, RECEIVER_TABLE, Init, Ready, Stop, message_event, step
from weightsync.protocol import ReceiverState as _S

VIOLATES = "INIT-4"


class Receiver(_Receiver):
    def connect(self, timeout=None):
        self._check_open()
        if self._state is not _S.NEW:
            raise ProtocolError(f"receiver {self.id} is {self._state.value}; connect() is called once (SM-R)")
        deadline = transport.Deadline(timeout)
        try:
            if not self._channel.poll(deadline.left()):
                raise SyncTimeoutError([self.id], None, hint="no Init from the sender")
            msg = self._channel.recv()
        except transport.ChannelClosed:
            self._state = step(RECEIVER_TABLE, self._state, "channel closed")
            raise ClosedError(f"receiver {self.id}: the sender is gone before the handshake") from None
        if isinstance(msg, Stop):
            self._state = step(RECEIVER_TABLE, self._state, "recv Stop")
            raise ClosedError(f"receiver {self.id}: the sender closed before the handshake")
        if not isinstance(msg, Init):
            step(RECEIVER_TABLE, self._state, message_event(msg), f"receiver {self.id}")
        self._map(msg.slots)
        try:
            self._bind(msg)
        except (WeightsMismatchError, ProtocolError) as e:
            if self._send(Ready(self.id, None, ERROR, str(e))):
                self._state = step(RECEIVER_TABLE, self._state, "recv Init(mismatch)")
            raise
        self._received = msg.version
        # BUG: Ready goes out before the version is applied.
        if not self._send(Ready(self.id, msg.version, OK, holds_slot=self.zero_copy)):
            raise ClosedError(f"receiver {self.id}: the sender closed during the handshake")
        self._apply(msg.version, msg.slot)
        self._state = step(RECEIVER_TABLE, self._state, "recv Init(match)")
        if self.mode == "push":
            self._thread = threading.Thread(target=self._run, name=f"weightsync-receiver-{self.id}", daemon=True)
            self._thread.start()
        return msg.version
