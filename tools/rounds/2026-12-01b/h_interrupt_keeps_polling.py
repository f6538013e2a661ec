"""Bug: when a call that polls the channels for answers is interrupted (Ctrl-C in `send()`), the sender gets its
lock back but keeps the mark that says a thread is polling. The implementer read LIFE-9 as being about the lock,
and wrapped only the re-acquiring of the lock in `finally`; the flag is lowered after it, on the normal path.
From then on every wait believes another thread reads the answers and sleeps on the condition instead of polling:
`future.done()` never turns true (API-2), and a later `send()` to receivers that ack at once raises
SyncTimeoutError (SEND-1). A notebook user who pressed Ctrl-C once has a sender that only times out.
"""
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__  # noqa: F401

from weightsync import hub as _hm
from weightsync.clock import millis
from weightsync.errors import ClosedError
from weightsync.locking import notify_all

VIOLATES = ("LIFE-9", "API-2", "SEND-1")


def wait_for_events(self, deadline):
    if self.polling or self._holds:
        self.cv.wait(deadline.left())
    else:
        items = self._watched()
        wait = deadline.left()
        timer = self.next_timer(items)
        if timer is not None:
            wait = timer if wait is None else min(wait, timer)
        polls = self._polls
        polls.watch(items)
        self.polling = True
        self.mu.release()
        try:
            ready = polls.wait(millis(wait))
        finally:  # the lock back whatever interrupted the poll (LIFE-9)
            self.mu.acquire()
        # BUG: the flag is lowered only when the poll returned normally.
        self.polling = False
        notify_all(self.cv)
        if self.closed:
            raise ClosedError("the sender was closed while this call waited (LIFE-6)")
        self.serve(ready)
    if self.closed:
        raise ClosedError("the sender was closed while this call waited (LIFE-6)")


_hm.Hub.wait_for_events = wait_for_events
