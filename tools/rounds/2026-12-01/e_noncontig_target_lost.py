"""Bug: a copying receiver writes each array into its target as the wire describes it, as bytes: for each
manifest entry it takes the target tensor flattened (`t.reshape(-1).view(torch.uint8)`) and copies the slot's
`nbytes` at the entry's offset into it. `reshape` was chosen over `view` because `view` raises on some targets;
but for a target tensor that is not C-contiguous (a conv weight of a model moved to channels_last, a transposed
or sliced parameter: dense tensors with the manifest's shape, which INIT-3 accepts) `reshape` returns a copy, so
the bytes go into a temporary and the target keeps what it held, while the receiver reports the version and acks
it ok. ACK-3: an ok Ready/Ack promises the weights equal the published bytes."""
import torch

from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync.apply import CopyToTarget

VIOLATES = ("ACK-3", "INIT-4")

_orig = CopyToTarget.apply


def _buggy(self, views, mapped):
    raw = mapped.tensor
    if raw is None or raw.device.type == "cuda":
        return _orig(self, views, mapped)
    dst = self.targets()  # checked as it is now (ACK-7)
    with torch.no_grad():
        for t, e in zip(dst, self.checker.manifest):
            if e.nbytes:
                t.detach().reshape(-1).view(torch.uint8).copy_(raw[e.offset:e.offset + e.nbytes])


CopyToTarget.apply = _buggy
