"""Bug: `future.done()` only reports answers some other call has read: with no `wait()`, `send()` or
other call running, a future stays not-done forever even though every target acked long ago, so a
trainer that polls `done()` between training steps (the point of send_async) never sees its sends
complete. API-2: `future.done()` never blocks and turns true, with no other call made, within the
reaction bound of the last target's answer arriving: it reads the answers that have arrived itself.
Plausible: done() as a plain getter of the future's state, as in concurrent.futures.

Seam: weightsync.future.SendFuture.done.
"""
from weightsync import *  # noqa: F403
from weightsync import CAPABILITIES, __all__, sender  # noqa: F401
from weightsync import future as _future

VIOLATES = "API-2"


def _done(self):
    return self._complete


_future.SendFuture.done = _done
