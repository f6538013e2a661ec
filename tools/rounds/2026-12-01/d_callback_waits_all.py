"""Bug: done callbacks (API-11) run once the future is done(), that is once every target has answered,
as concurrent.futures callbacks run when a future completes; the implementer took "done" and "the outcome
of wait() is decided" for the same moment. They are not: once a target fails, wait() raises after SEND-7's
one-second window even while another target stays silent. With one receiver that answered Ack(error) and
one that never answers, `wait()` raises ReceiverError, but the callback (and `await future`) never fires,
so a trainer that restarts failed workers from a callback never hears of the failure."""
import time

from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync.future import SendFuture, _call

VIOLATES = ("API-11",)

_orig = SendFuture._watch


def _buggy(self):
    while not self.done():  # every target answered (acked, failed or gone), or the sender closed
        time.sleep(0.02)
    try:
        self._seen = (self.wait(0), None)
    except Exception as e:  # noqa: BLE001
        self._seen = (None, e)
    with self._calls:
        callbacks, self._callbacks = self._callbacks or [], None
    for fn in callbacks:
        _call(fn, self)


SendFuture._watch = _buggy
