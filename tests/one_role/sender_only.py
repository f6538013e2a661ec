"""The reference's Sender alone, declared so (API-12): the suite tests it with its scripted receivers only."""

from weightsync import CAPABILITIES as _CAPABILITIES
from weightsync import (  # noqa: F401
    ClosedError,
    LocalProtocolError,
    ProtocolError,
    ReceiverDiedError,
    ReceiverError,
    RefusedError,
    RemoteProtocolError,
    Sender,
    SyncTimeoutError,
    WeightsMismatchError,
    WeightSyncError,
)

CAPABILITIES = _CAPABILITIES | {"sender"}
