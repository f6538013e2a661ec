"""The binding's names the suite relies on, in one list (API-1..API-5, API-12), and where the spec it checks lies."""

from pathlib import Path

#: The normative spec the suite reads: spec/ beside conformance/ in a checkout, weightsync/spec when installed.
SPEC_DIR = Path(__file__).resolve().parent.parent / "spec"

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
#: The roles a module may implement alone (API-12); naming neither (or both) means both.
ROLES = ("sender", "receiver")
KNOWN_CAPABILITIES = frozenset({"push", "pull", "module", "tensordict", "zero_copy", "cuda", "rendezvous", "network", "pack",
                                "hooks", "cast", "wire", "drop", *ROLES})


def roles(capabilities) -> frozenset[str]:
    """The roles a module with these CAPABILITIES implements (API-12)."""
    named = frozenset(ROLES) & frozenset(capabilities)
    return named if len(named) == 1 else frozenset(ROLES)


def required_names(capabilities) -> tuple[str, ...]:
    """The names a module with these CAPABILITIES must export: its roles' classes, the errors, CAPABILITIES."""
    mine = roles(capabilities)
    return (*(c for c, r in (("Sender", "sender"), ("Receiver", "receiver")) if r in mine), *ERROR_NAMES, "CAPABILITIES")
#: The environment variable that carries --conformance-timescale to conformance.timing and the workers.
TIMESCALE_ENV = "WEIGHTSYNC_CONFORMANCE_TIMESCALE"
