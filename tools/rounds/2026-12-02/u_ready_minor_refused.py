"""Bug: the sender takes a Ready(ok) whose `protocol` is not exactly its own "1.1" for a receiver that should have
refused, and cuts it off as a protocol violation: a worker whose binding speaks a later minor version (1.2, or a
peer in another language written against 1.2) answers Ready(ok, protocol "1.2") and `sender.connect()` raises
ReceiverError (cause violation), so mixing binding versions across a fleet during an upgrade leaves the newer
workers unable to connect to an older trainer. A careful implementer could have written it from SM-S-2 ("A
Ready(ok) whose `protocol` has another major version than the Init's is a violation") read beside Table 1,
where Init carries `protocol: string ("MAJOR.MINOR")`: comparing the version strings is the obvious test that
the receiver speaks "the Init's protocol", and it holds for every peer of the same release. Breaks SM-S-2 (only
another major version is a violation), WIRE-6 ("Ready carries the receiver's protocol version ... A minor version
adds only what an older peer of the same major may ignore") and INIT-2 (a receiver refuses only another major
version, so one of the same major that accepts is right to).
"""
import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__, protocol  # noqa: F401

VIOLATES = ("SM-S-2", "WIRE-6", "INIT-2")


def same_major(a: str, b: str) -> bool:
    """Whether the receiver speaks the sender's protocol."""
    return a == b  # BUG: the whole "MAJOR.MINOR" string, not its major number


protocol.same_major = same_major  # the sender's check of Ready (PeerMachine.handle)
