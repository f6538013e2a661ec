"""Mutant: an Ack(error) counts as success; the send does not raise ReceiverError. Violates ACK-6."""

from weightsync import *  # noqa: F401,F403
from weightsync import CAPABILITIES, ReceiverError, __all__  # noqa: F401

from ._swallow import swallowing

VIOLATES = "ACK-6"

Sender = swallowing(ReceiverError)
