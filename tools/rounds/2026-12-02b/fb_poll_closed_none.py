"""Bug: `poll()` on a closed pull receiver returns None instead of raising ClosedError. A worker loop such as
`while True: v = receiver.poll(timeout=1)` whose receiver another thread closed (a shutdown handler, a `with`
block the loop outlived) spins on "nothing new" forever instead of failing, and code that uses the receiver by
mistake after `close()` is never told. A careful implementer could have written it from LIFE-7 and API-7 read
together: "after Stop ... `poll()` returns None and no version is applied" and "close() from another thread ends a
waiting poll() (which returns None)": a closed receiver can receive nothing either, so poll() starts with the one
test "closing, closed or stopped: nothing to apply, return None" and the closed check of LIFE-6 never runs.
Breaks LIFE-6 ("Any call on a closed sender or receiver other than close(), version, closed, stopped and reading
weights raises ClosedError").
"""
import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__, receiver  # noqa: F401

VIOLATES = ("LIFE-6",)

_poll = receiver.Receiver.poll


def poll(self, timeout=0.0):
    if self.closed and self.mode == "pull":  # BUG: closed taken as stopped: nothing will come, so None
        return None
    return _poll(self, timeout)


receiver.Receiver.poll = poll
