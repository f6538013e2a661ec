"""The binding's names the suite relies on, in one list (API-1..API-5)."""

ERROR_NAMES = (
    "SyncTimeoutError",
    "ReceiverError",
    "ReceiverDiedError",
    "ProtocolError",
    "LocalProtocolError",
    "RemoteProtocolError",
    "ClosedError",
    "RefusedError",
    "WeightsMismatchError",
    "WeightSyncError",
)
#: The errors about receivers, which carry .workers, .version and .details (API-4).
RECEIVER_ERRORS = ("SyncTimeoutError", "ReceiverError", "ReceiverDiedError")
REQUIRED_NAMES = ("Sender", "Receiver", *ERROR_NAMES, "CAPABILITIES")
KNOWN_CAPABILITIES = frozenset({"push", "pull", "module", "tensordict", "zero_copy", "cuda", "rendezvous", "network", "pack",
                                "hooks", "cast"})
#: The environment variable that carries --conformance-timescale to conformance.timing and the workers.
TIMESCALE_ENV = "WEIGHTSYNC_CONFORMANCE_TIMESCALE"
