"""Bug: the check a receiver makes of its target before every later apply (ACK-7) compares names and
shapes only; the full check of INIT-3 (names, dtype, shape, device, dense layout) runs at connect
alone. The implementer kept the per-apply check cheap, reasoning that an apply writes in place, so only
what a caller can change in place between two applies needs looking at, and took the spec's own example
("give a target tensor another shape") as the case to cover. But `.data` assignment changes a dtype as
easily: a worker that calls `policy.half()` (or `.to(torch.bfloat16)`) after connect for faster inference
has every later version copied into its half-precision tensors, silently rounded, and acked ok: the
trainer's send succeeds although the worker's weights do not equal the published bytes.

Breaks ACK-7 ("check the target against the manifest as INIT-3 does (names exactly, dtype, shape,
device, dense layout) ... On a mismatch it MUST NOT write any byte ... and MUST answer Ack(error)")
and ACK-3 (an ok Ack promises the weights equal the published bytes bit for bit).
"""
import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync import apply as _apply
from weightsync import layout as _layout
from weightsync.errors import WeightsMismatchError

VIOLATES = ("ACK-7", "ACK-3")


def targets(self, rule="ACK-7"):
    try:
        if rule != "ACK-7":  # at connect: the full check of INIT-3
            return self.checker.ordered(_layout.flatten(self.target, detach=False), allow_grad=True)
        # BUG: before each later apply, names and shapes only ("an apply writes in place")
        flat = _layout.flatten(self.target, detach=False)
        names = self.checker.names
        if len(flat) != len(names) or any(n not in flat for n in names):
            raise WeightsMismatchError(f"names differ from the manifest: {sorted(set(flat) ^ set(names))[:8]} (BAD-1)")
        out = []
        for name, entry in zip(names, self.checker.manifest):
            t = flat[name]
            if tuple(t.shape) != tuple(entry.shape):
                raise WeightsMismatchError(f"{name!r} has shape {list(t.shape)}, expected {list(entry.shape)} (BAD-2)")
            out.append(t)
        return out
    except WeightsMismatchError as e:
        raise WeightsMismatchError(f"the target of receiver {self.rid} ({rule}): {e}") from None


_apply.Strategy.targets = targets
