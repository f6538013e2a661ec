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
                                "hooks", "cast", "wire", "drop", "mapping", *ROLES})


#: The state machine's rules (test_state_machine.Protocol) that a user may switch off in --xfails-file, by name
#: (`Protocol.drop`) or by listing the requirement each exists for, so that one known gap does not stop the
#: machine before its consistency checks; the others (send, send_async, wait, idle) are the protocol itself.
STATE_MACHINE_RULES = {
    "fault": ("ACK-6", "ACK-7"), "hold": ("CONS-2",), "toggle_reader": ("CONS-1",), "poll": ("API-3",),
    "kill": ("SEND-3", "CON-1"), "drop": ("API-9",), "close_receiver": ("LIFE-5",),
    "join_or_restart": ("LIFE-1", "LIFE-2"), "bad_send": ("BAD-1", "BAD-2", "BAD-3", "BAD-4"),
    "bad_arguments": ("SEND-6",), "handle_of_live": ("LIFE-3",), "close_sender": ("LIFE-4", "LIFE-7"),
    "closed_sender_calls": ("LIFE-6",),
}


def rules_off(entries, ids) -> frozenset[str]:
    """The rules an --xfails-file switches off: named as `Protocol.RULE`, or by a requirement listed."""
    named = {e.partition(".")[2] for e in entries if e.startswith("Protocol.")}
    return frozenset(named | {r for r, reqs in STATE_MACHINE_RULES.items() if set(reqs) & set(ids)})


#: How a test that finds, as it runs, that it needs a capability says so (`lacking`); the report counts it not
#: implemented, as a test marked `needs` would be.
NOT_DECLARED = "capability {} not declared in CAPABILITIES"


def lacking(ws, capability: str) -> None:
    """Skip the running test as not implemented when `ws` does not declare `capability` (a need found at run time,
    e.g. in a helper that builds a mapping target)."""
    if capability not in ws.CAPABILITIES:
        import pytest

        pytest.skip(NOT_DECLARED.format(capability))


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
