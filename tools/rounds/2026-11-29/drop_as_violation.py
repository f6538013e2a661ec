"""Bug: `sender.drop(i)` cuts the receiver off as if it had broken the protocol: the versions pending
on it fail with ReceiverError (cause "violation") instead of ReceiverDiedError (cause "died"), so a
caller's `except ReceiverDiedError:` restart path never runs for a dropped worker and the error tells
it to look for a protocol bug. API-9: every version pending on it fails for it with ReceiverDiedError
(cause `died`, its detail saying that the trainer dropped it). Plausible: "cut off" is the word SM-S-9
uses for violations, and the violation path already closes the channel and fails what is pending.

Seam: weightsync.sender.Sender.drop.
"""
from weightsync import *  # noqa: F403
from weightsync import CAPABILITIES, __all__, sender  # noqa: F401
from weightsync import sender as _sender
from weightsync import transport as _transport
from weightsync.clock import Deadline as _Deadline
from weightsync.errors import RemoteProtocolError as _RPE
from weightsync.messages import Stop as _Stop

VIOLATES = "API-9"


def _drop(self, i, timeout=None):
    deadline = _Deadline(timeout)
    with self._locked(deadline):
        peer = self._peers[self._check_id(i)]
        with self._quiet(deadline):
            if not peer.machine.active:
                return
            if peer.channel is not None:
                try:
                    peer.channel.send(_Stop())
                except _transport.ChannelClosed:
                    pass
            self._violation(peer, _RPE("dropped by the trainer: sender.drop() (API-9)", state=peer.machine.state.value,
                                       event="drop", requirement="API-9"))


_sender.Sender.drop = _drop
