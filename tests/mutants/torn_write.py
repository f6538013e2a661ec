"""Mutant: the sender reuses a slot that a receiver has been told to read (or holds). Violates SLOT-2."""

from weightsync import *  # noqa: F401,F403
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync import Sender as _Sender

VIOLATES = "SLOT-2"


class Sender(_Sender):
    def _pinned(self, group):
        return {group.latest.id: set()}  # forgets unanswered Receives and zero-copy holds
