"""Mutant: connect() raises at the first receiver that refuses its Init or dies ("a failed handshake is final:
why wait for the rest?"), so a receiver that refuses 0.4 s after another is left out of the error, and the
caller mends one worker of two. Sends and waits still collect for 1 s. Violates SEND-7 ("an error that a
send, wait or connect raises ... keeps collecting the other targets' answers until ... 1 s has passed").

Seam: the SettleWindow that Sender.connect makes (the name weightsync.connecting.SettleWindow, where the handshake's wait is), given length 0;
the futures of sends keep their own.
"""

import functools

import weightsync.connecting
from weightsync import *
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync.timers import SettleWindow

VIOLATES = "SEND-7"
KILLED_BY = ("conformance/test_failures.py::test_receivers_that_refuse_one_connect_within_a_second_are_named_together",)

weightsync.connecting.SettleWindow = functools.partial(SettleWindow, 0.0)  # BUG: connect() waits for no one
