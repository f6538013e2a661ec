"""Bug: `receiver.stopped` is true after Stop, end of channel, a violation and close(), but stays false
after `connect()` refused the Init (Ready(error) sent: state failed). The implementer read `stopped` as
"the sender stopped us" (Stop or its channel's end) and took a refusal for the worker's own, recoverable
mistake, so the failed state was left out. A worker that logs connect()'s WeightsMismatchError and enters
`while not receiver.stopped:` then spins forever on a receiver that can never get a version."""
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync.protocol import ReceiverState
from weightsync.receiver import Receiver

VIOLATES = ("SM-R-8",)

_orig = Receiver.stopped


def _buggy(self):
    if self._machine.state is ReceiverState.FAILED:  # a refusal: the sender did not stop us
        return False
    return _orig.fget(self)


Receiver.stopped = property(_buggy, doc=_orig.__doc__)
