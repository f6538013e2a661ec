"""Bug: a receiver resolves its target's tensors once, at connect, and reuses that list for every
apply. A worker that later replaces a tensor in its mapping or module (or assigns a parameter's
`.data`) is not noticed: the apply writes into the old tensors, acks ok, and the worker goes on
reading its new tensor, which never gets the weights, while the trainer believes it holds the version.
ACK-7: before each apply a receiver MUST check the target as it is at that moment, and answer
Ack(error) on a mismatch. Plausible: caching the flattened target is an obvious speed-up, and the
target is checked at connect (INIT-3).

Seam: weightsync.apply.Strategy.targets (memoised per strategy).
"""
from weightsync import *  # noqa: F403
from weightsync import CAPABILITIES, __all__, sender  # noqa: F401
from weightsync import apply as _apply

VIOLATES = "ACK-7"

_orig = _apply.Strategy.targets


def _targets(self, rule="ACK-7"):
    cached = self.__dict__.get("_resolved")
    if cached is None:
        cached = self._resolved = _orig(self, rule)
    return cached


_apply.Strategy.targets = _targets
