"""The reference's Receiver alone, declared so (API-12): the suite tests it with its scripted sender only."""

from weightsync import CAPABILITIES as _CAPABILITIES
from weightsync import (  # noqa: F401
    ClosedError,
    LocalProtocolError,
    ProtocolError,
    Receiver,
    ReceiverDiedError,
    ReceiverError,
    RefusedError,
    RemoteProtocolError,
    SyncTimeoutError,
    WeightsMismatchError,
    WeightSyncError,
)

CAPABILITIES = _CAPABILITIES | {"receiver"}
