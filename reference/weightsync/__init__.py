"""weightsync: push neural-network weights from one trainer process to many workers.

The public binding (spec/10-binding.md) is what this module exports; everything
else is private and may change.
"""

import logging

from .errors import (
    ClosedError,
    ProtocolError,
    ReceiverDiedError,
    ReceiverError,
    SyncTimeoutError,
    WeightsMismatchError,
    WeightSyncError,
)
from .protocol import PROTOCOL_VERSION
from .receiver import Receiver
from .sender import Handle, SendFuture, Sender

__version__ = "1.0.0"

#: Optional parts of the spec this implementation provides (conformance capabilities).
CAPABILITIES = frozenset({"push", "pull", "module", "tensordict", "zero_copy", "cuda"})

logging.getLogger("weightsync").addHandler(logging.NullHandler())

__all__ = [
    "CAPABILITIES",
    "PROTOCOL_VERSION",
    "ClosedError",
    "Handle",
    "ProtocolError",
    "Receiver",
    "ReceiverDiedError",
    "ReceiverError",
    "SendFuture",
    "Sender",
    "SyncTimeoutError",
    "WeightSyncError",
    "WeightsMismatchError",
]
