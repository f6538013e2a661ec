"""weightsync: push neural-network weights from one trainer process to many workers.

The public binding (spec/10-binding.md) is what this module exports; everything
else is private and may change.
"""

import logging

from .errors import (
    ClosedError,
    LocalProtocolError,
    ProtocolError,
    ReceiverDiedError,
    ReceiverError,
    RefusedError,
    RemoteProtocolError,
    SyncTimeoutError,
    WeightsMismatchError,
    WeightSyncError,
)
from .future import SendFigures, SendFuture
from .messages import PROTOCOL_VERSION
from .packing import Packed, pack
from .receiver import Receiver
from .sender import Sender
from .transport import Handle

__version__ = "1.1.0"

#: Optional parts of the spec this implementation provides (conformance capabilities).
CAPABILITIES = frozenset({"push", "pull", "module", "tensordict", "zero_copy", "cuda", "rendezvous", "network", "pack",
                          "hooks", "cast", "wire", "drop", "mapping"})

logging.getLogger("weightsync").addHandler(logging.NullHandler())

__all__ = [
    "CAPABILITIES",
    "PROTOCOL_VERSION",
    "ClosedError",
    "Handle",
    "LocalProtocolError",
    "Packed",
    "ProtocolError",
    "Receiver",
    "ReceiverDiedError",
    "ReceiverError",
    "RefusedError",
    "RemoteProtocolError",
    "SendFigures",
    "SendFuture",
    "Sender",
    "SyncTimeoutError",
    "WeightSyncError",
    "WeightsMismatchError",
    "pack",
]
