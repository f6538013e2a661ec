"""Mutant: a pull receiver's `poll()` that waits for a version goes on waiting when Stop (or the end of its
channel) comes: it ends that wait only with a version or its timeout, so a worker thread in `poll(None)` when the
trainer closes or drops it never returns. Violates LIFE-7 (after Stop, `poll()` returns None). From the sixteenth
session's sweep of the waits on a receiver.

Seam: pending.ChannelPending.take.
"""
import time

import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__, pending  # noqa: F401

VIOLATES = ("LIFE-7",)
KILLED_BY = ("conformance/test_threads.py::test_a_poll_waiting_for_a_version_ends_when_the_trainer_stops_the_receiver",)


def take(self, deadline):
    while True:
        self._read(deadline)
        if self._closing() or (self._machine.stopped and self._newest.pending is not None):
            return None  # BUG: stopped with nothing pending reads on, as if nothing had come yet
        if self._newest.pending is not None or deadline.expired():
            return self._newest.take()
        if self._machine.stopped:
            time.sleep(0.01)  # the channel has ended: a read returns at once


pending.ChannelPending.take = take
