"""Bug: the future of `send_async(..., timeout=t)` keeps the call's deadline, and a `wait()` given no
timeout of its own (`wait()`, `wait(None)`, and the thread behind done callbacks and `await`)
stops there: it raises SyncTimeoutError t seconds after the send_async call, although None
waits without bound. The implementer took the timeout of an async send to bound the send as
send()'s does, only split over two calls ("wait(timeout) narrows it; with none, the send's
own deadline still holds"). A trainer that publishes with `send_async(timeout=5)` (to bound a
stall on slots) and collects with `f.wait()` later sees its receivers' slow applies reported
as timeouts, and its callbacks are told of a timeout that was never asked for.

Breaks API-2: "`send_async`'s `timeout` bounds only the wait for a free slot", and the binding's
rule that "`None` waits without bound" (section 10).
"""
import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync import sender as _sender
from weightsync.clock import Deadline

VIOLATES = ("API-2", "SEND-5")


def send_async(self, weights=None, *, workers=None, timeout=None):
    deadline = Deadline(timeout, self._hub.clock)
    with self._hub.locked(deadline):
        future = self._publisher.publish(weights, workers, deadline)
    publisher = self._publisher

    def wait(f, d):  # BUG: a wait without a timeout of its own keeps the deadline of the send_async call
        return publisher.wait(f, d if d.at is not None else deadline)

    if timeout is not None:
        future._wait = wait
    return future


_sender.Sender.send_async = send_async
