"""Bug: a zero-copy receiver answers Ready with `holds_slot` false (the field's default), so the
sender does not count the slot it reads as held: after the receiver acks a version, the sender may
write the very slot whose read-only views are the worker's weights, and a pull worker that has not
polled sees its weights turn into a newer version (or a half-written one) behind its back. ZC-1: a
zero-copy receiver declares itself with Ready(holds_slot=true); ZC-2: the sender MUST NOT write the
slot it holds until it acked a newer version. Plausible: the Ready dataclass defaults holds_slot to
False and nothing fails until slots are reused.

Seam: weightsync.receiver.Ready (the class of the Ready message the receiver makes).
"""
from weightsync import *  # noqa: F403
from weightsync import CAPABILITIES, __all__, sender  # noqa: F401
from weightsync import messages as _messages
from weightsync import receiver as _receiver

VIOLATES = ("ZC-1", "ZC-2")


def _Ready(*args, holds_slot=False, **kwargs):
    return _messages.Ready(*args, **kwargs)


_receiver.Ready = _Ready
