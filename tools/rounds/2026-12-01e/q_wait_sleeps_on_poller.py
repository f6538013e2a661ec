"""Bug: a call that must wait for answers while another thread already polls the channels sleeps on the
sender's condition until that thread wakes it, with no bound of its own: `future.wait(t)` in a monitoring thread
beside a training loop's `send(timeout=None)` to a silent receiver never returns, nor raises SyncTimeoutError after
t seconds. The implementer reasoned that the polling thread notifies every waiter each time its poll returns, and
took the poller's wait to be bounded by the earliest deadline among the calls waiting (as it is when the poller is
the call with the shortest timeout, the common case in tests), so a waiter had no need to time its own sleep; but
the poller's poll is bounded by its own deadline only, which for `timeout=None` is none. Breaks API-7 ("every wait
it makes ... is bounded by its timeout"; "while one thread waits in send(timeout=None) for a silent receiver,
another thread's future.wait(t) raises SyncTimeoutError within its own timeout").
"""
import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync import hub as _hub
from weightsync.clock import millis
from weightsync.errors import ClosedError
from weightsync.locking import notify_all

VIOLATES = ("API-7",)


def wait_for_events(self, deadline):
    if self.polling or self._holds:
        self.cv.wait()  # BUG: the poller notifies us when its poll returns; no bound of our own
    else:
        items = self._watched()
        wait = deadline.left()
        timer = self.next_timer(items)
        if timer is not None:
            wait = timer if wait is None else min(wait, timer)
        polls = self._polls
        polls.watch(items)
        released = False
        try:
            self.polling = True
            self.mu.release()
            released = True
            ready = polls.wait(millis(wait))
        finally:
            if released:
                self.mu.acquire()
            self.polling = False
            notify_all(self.cv)
        if self.closed:
            raise ClosedError("the sender was closed while this call waited (LIFE-6)")
        self.serve(ready)
    if self.closed:
        raise ClosedError("the sender was closed while this call waited (LIFE-6)")


_hub.Hub.wait_for_events = wait_for_events
