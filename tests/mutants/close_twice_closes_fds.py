"""Mutant: the receiver's close() closes its wake pipe's ends without noting that it did, and writes to
it first. A close() that an interrupt (Ctrl-C) cut short after closing them leaves the next close(), e.g.
from `with Receiver(...)` on the way out, raising OSError on the closed end, or writing into a file the
system has since given that number. Violates LIFE-9 (an interrupted call "MUST leave close() of that
object returning within the reaction bound").

Seam: transport.WakePipe, the receiver's wake pipe: wake() and close() forget what was closed.
"""

import os

from weightsync import *
from weightsync import CAPABILITIES, __all__, transport  # noqa: F401

VIOLATES = "LIFE-9"
KILLED_BY = ("conformance/test_lifecycle.py::test_an_interrupt_at_any_line_leaves_close_bounded",)


def _wake(self):
    os.write(self.w, b"x")  # BUG: also after close() closed it


def _close(self):
    os.close(self.r)  # BUG: closed again by a second close()
    os.close(self.w)


transport.WakePipe.wake = _wake
transport.WakePipe.close = _close
