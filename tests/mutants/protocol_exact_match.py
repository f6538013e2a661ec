"""Mutant: protocol versions are compared whole ("1.1" == "1.2") instead of by major: a receiver of a
later minor version of protocol 1 answering Ready(ok, protocol "1.2") is cut off as a violation, and a
receiver refuses an Init from a 1.2 sender. SM-S-2: only a Ready(ok) whose protocol has another
*major* version than the Init's is a violation; WIRE-6: a minor version adds only what an older peer of
the same major may ignore, so peers of one major interoperate. Plausible: with a single deployed
version, exact equality and major equality behave the same.

Seam: weightsync.protocol.same_major.
"""
from weightsync import *  # noqa: F403
from weightsync import CAPABILITIES, __all__, sender  # noqa: F401
from weightsync import protocol as _protocol

VIOLATES = ("SM-S-2", "WIRE-6")
KILLED_BY = ("conformance/test_wire.py::test_answers_of_a_later_minor_version_or_in_any_encoding_are_taken",)


def _same_major(a, b):
    return a == b


_protocol.same_major = _same_major
