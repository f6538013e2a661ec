"""The decoder checks integer fields with isinstance(v, int), so a MessagePack boolean in an integer field (Python's
bool is an int) is read as 0 or 1: a Ready saying receiver=true is taken as receiver 1's; WIRE-3 says an integer field
never holds a boolean, and such a frame is a violation."""
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync import wire as _wire

VIOLATES = ("WIRE-3", "SEC-1")


def _int(v, what):
    if not isinstance(v, int) or not 0 <= v <= INT_MAX:  # noqa: F405  # BUG: isinstance lets True/False through as 1/0
        raise _violation(f"{what} must be an integer in [0, 2**63), got {v!r:.60}", "WIRE-3")  # noqa: F405
    return v


_wire._int.__code__ = _int.__code__  # every schema entry holds _wire._int itself; it reads wire's globals
