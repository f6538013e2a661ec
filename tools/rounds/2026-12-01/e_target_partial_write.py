"""Bug: a copying receiver checks its target as it writes it: it walks the manifest once and, for each entry,
checks the target's tensor as it is at that moment and copies the slot's array into it, so an apply is one
pass over the target instead of two. ACK-7 was read as "check each tensor as it is when you write it"; a
mismatch found at the k-th entry (the caller replaced or reshaped one tensor) is still answered with
Ack(error) and poll()/send raise ReceiverError, but the entries before it already hold the new version's
bytes: the target is half old, half new. ACK-7 says that on a mismatch the receiver MUST NOT write any byte
of the target."""
import torch

from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync import layout as _layout
from weightsync.apply import CopyToTarget
from weightsync.errors import WeightsMismatchError as _Mismatch

VIOLATES = ("ACK-7",)

_orig = CopyToTarget.apply


def _buggy(self, views, mapped):
    if mapped.tensor is not None and mapped.tensor.device.type == "cuda":
        return _orig(self, views, mapped)
    flat = _layout.flatten(self.target, detach=False)
    with torch.no_grad():
        for name, view in zip(self.checker.names, views):
            t = flat.get(name)  # checked as it is now, just before it is written (one pass)
            if (not isinstance(t, torch.Tensor) or t.dtype != view.dtype or t.shape != view.shape
                    or t.device != view.device or t.layout != torch.strided):
                got = "missing" if t is None else f"{t.dtype}{list(t.shape)}"
                raise _Mismatch(f"the target of receiver {self.rid} (ACK-7): {name!r} is {got}, expected "
                                f"{view.dtype}{list(view.shape)}")
            t.copy_(view)


CopyToTarget.apply = _buggy
