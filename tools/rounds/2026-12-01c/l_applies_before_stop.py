"""Bug: a receiver that finds a Receive and then Stop in its channel still applies (and acks) that version:
`take()` hands over the newest pending Receive whenever one is pending, and looks at Stop only when none is.
The implementer read Table 1's Stop, "The sender closes; no further version will come", as being about
versions *after* the Stop: the Receive came before it, the sender published it for this worker, so applying
it looked like the faithful thing to do. But the sender that sent Stop has settled that version already
(LIFE-8: ClosedError for a target that had not answered), so a pull worker that polls after the trainer
closed changes its weights to a version its trainer counts as never delivered, and a push worker applies
one after `stopped` turned true.

Breaks LIFE-7: "After Stop or end of the sender's channel, `receiver.stopped` is true, `poll()` returns None
and no version is applied. ... Versions still unread in the channel are then not applied." (SM-R-3: "Stop
... moves a receiver in new or live to stopped: no further version is applied".)
"""
import weightsync.pending as _pending
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__  # noqa: F401

VIOLATES = ("LIFE-7", "SM-R-3")


def take(self, deadline):
    """The newest Receive not yet applied, reading the channel until `deadline` for one."""
    while True:
        self._read(deadline)
        if self._newest.pending is not None:  # BUG: a version that came before Stop is still applied
            return self._newest.take()
        if self._closing() or self._machine.stopped:
            return None
        if deadline.expired():
            return self._newest.take()


_pending.ChannelPending.take = take
