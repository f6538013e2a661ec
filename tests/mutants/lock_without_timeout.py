"""Mutant: the sender serializes its calls with a lock taken without a timeout and held for the whole call,
waits included ("one call at a time is simpler"). A send(timeout=None) waiting on a silent receiver
then holds up every other thread: another thread's send_async(timeout=10) or future.wait(1) waits
as long as the send does. close() takes no such lock, so it still ends the waiting send.
Violates API-7 ("every wait it makes, the wait for another thread to leave the sender included, is
bounded by its timeout").

Seam: Hub.locked (how a call takes the sender), which first takes a call lock with no timeout.
"""

import threading

from weightsync import *
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync.hub import Hub

VIOLATES = "API-7"
KILLED_BY = ("conformance/test_threads.py::test_a_send_waiting_without_timeout_holds_up_no_other_thread",)


class _Both:
    def __init__(self, held, call):
        self.held, self.call = held, call

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        try:
            self.held.__exit__(*exc)
        finally:
            self.call.release()


_locked = Hub.locked


def _locked_after_a_call_lock(self, deadline, closing=False):
    if closing:
        return _locked(self, deadline, closing)
    call = self.__dict__.setdefault("_call", threading.Lock())
    call.acquire()  # BUG: no timeout, and held until the call returns
    try:
        return _Both(_locked(self, deadline, closing), call)
    except BaseException:
        call.release()
        raise


Hub.locked = _locked_after_a_call_lock
