"""Bug: `Packed.check()` takes the new count of references to the packed buffer as the one to compare with next
time *before* it looks at the tensors, not after they all passed. The implementer wrote "remember what we saw,
then look": the first send after a tensor left the buffer (its `.data` replaced) raises WeightsMismatchError as
API-8 says, but the count is already recorded, so the next send that uses the same `Packed` takes the constant-time
path and copies the buffer, whose bytes for that tensor are its old value: the trainer that caught the error, or a
second trainer thread, publishes a version whose weights are not the caller's tensors, silently. API-8: a tensor
that no longer views the buffer makes the next send raise; a send MUST deliver what it would for the unpacked
weights.
"""
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__  # noqa: F401

VIOLATES = ("API-8", "BAD-2")

import torch as _torch  # noqa: E402

from weightsync import layout as _layout  # noqa: E402
from weightsync import packing as _packing  # noqa: E402
from weightsync.errors import WeightsMismatchError as _WME  # noqa: E402


def check(self):
    """Raises WeightsMismatchError when a tensor no longer views the buffer where the manifest says (API-8)."""
    count = self._use_count()
    if (count is not None and count == self._count and self.buffer.data_ptr() == self._ptr
            and sum(map(_torch.Tensor.numel, self._loose[0])) == self._loose[1]):
        return  # nothing was detached, resized or re-homed since the last full look
    self._count = count  # THE BUG: recorded before the look (was: after every tensor passed)
    self._loose = self._resizable()
    for name, t, e, ptr in zip(self.names, self.tensors, self.manifest, self._expected):
        if (t.data_ptr() != ptr or t.dtype != _layout.dtype_of(e.dtype) or tuple(t.shape) != e.shape
                or (t.numel() > 1 and not t.is_contiguous())):
            raise _WME(
                f"{name!r} no longer views the packed buffer (its .data was replaced or it was resized); "
                "pack the weights again (API-8, BAD-2)"
            )


_packing.Packed.check = check
