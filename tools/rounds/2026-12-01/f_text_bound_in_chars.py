"""Bug: the decoder bounds strings by their length in characters, as Python's len() gives it, instead of by
their UTF-8 bytes: a string of 3,000 two-byte characters (6,000 bytes) passes the 4,096 bound. The implementer
wrote `len(s) > 4096` after msgpack had already decoded the str, the natural check on a Python string, and
tested it with ASCII details only. WIRE-3: strings hold at most 4,096 bytes of UTF-8, and a value of another
type or bound is a violation: a receiver whose Ack(error) detail is over the bound in bytes must be cut off as
a protocol violation, not taken as an ordinary error answer (and its oversized text handed to the trainer).
"""
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync import wire

VIOLATES = ("WIRE-3",)

_orig = wire._build


def _chars(limit):
    def check(v, what):
        if type(v) is not str:
            raise wire._violation(f"{what} must be a string, got {type(v).__name__}", "WIRE-3")
        if len(v) > limit:  # characters, not UTF-8 bytes
            raise wire._violation(f"{what} is longer than {limit} characters", "WIRE-3")
        return v

    return check


def _swap(check):
    if getattr(check, "__qualname__", "") == "_text.<locals>.check":
        return _chars(check.__closure__[0].cell_contents)
    return check


def _build(cls, fields, obj, what):
    return _orig(cls, tuple((name, _swap(check), *default) for name, check, *default in fields), obj, what)


wire._build = _build
wire._IPC_TEXT = _chars(wire.MAX_IPC_BYTES)
