"""Bug: `send()` and `send_async()` take a negative `timeout` for a deadline already passed (clamped to 0), as
`threading.Event.wait` and `select` do, instead of refusing it: with a free slot, `send_async(timeout=-1)`
publishes a new version and `send(timeout=-1)` publishes one and then raises SyncTimeoutError for its acks.
A trainer whose budget arithmetic went negative (`timeout=deadline - time.monotonic()` computed late) silently
ships weights and consumes versions it never meant to, where the spec promised a ValueError and no change.
The implementer read section 10's "a timeout of 0 bounds each wait at zero" as covering every timeout already
spent, and normalised the argument once at the top of the two calls that publish. Breaks API-7 ("a negative
timeout raises ValueError before the call changes anything (it publishes, applies, connects, drops and runs
nothing)").
"""
import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync.clock import Deadline
from weightsync.sender import Sender

VIOLATES = ("API-7",)


def _deadline(self, timeout):
    # BUG: a negative timeout is a deadline already passed, not an error.
    if timeout is not None and timeout < 0:
        timeout = 0.0
    return Deadline(timeout, self._hub.clock)


def send(self, weights=None, *, workers=None, timeout=None):
    deadline = _deadline(self, timeout)
    with self._hub.locked(deadline):
        future = self._publisher.publish(weights, workers, deadline)
        return self._publisher.await_answers(future, deadline)


def send_async(self, weights=None, *, workers=None, timeout=None):
    deadline = _deadline(self, timeout)
    with self._hub.locked(deadline):
        return self._publisher.publish(weights, workers, deadline)


Sender.send = send
Sender.send_async = send_async
