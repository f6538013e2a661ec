"""Mutant: a send whose acks do not come in time returns the version instead of raising. Violates SEND-2."""

from weightsync import *  # noqa: F401,F403
from weightsync import CAPABILITIES, SyncTimeoutError, __all__  # noqa: F401

from ._swallow import swallowing

VIOLATES = "SEND-2"

Sender = swallowing(SyncTimeoutError)
