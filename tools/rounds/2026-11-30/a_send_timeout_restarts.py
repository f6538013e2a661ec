"""Bug: send(timeout=t) gives the wait for a free slot and the wait for acks t seconds each, instead of t
for the whole call: a send that waited for a slot then waits its full timeout again for the acks, so it
can return or raise up to twice its timeout after the call."""
from weightsync import *  # noqa: F401,F403
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync.clock import Deadline
from weightsync.sender import Sender

VIOLATES = ("SEND-2", "API-2", "API-7")


def _send(self, weights=None, *, workers=None, timeout=None):
    deadline = Deadline(timeout, self._hub.clock)
    with self._hub.locked(deadline):
        future = self._publisher.publish(weights, workers, deadline)
        # BUG: the ack wait starts a new timeout of its own once the version is published
        return self._publisher.await_answers(future, Deadline(timeout, self._hub.clock))


Sender.send = _send
