"""Bug: a TensorDict is flattened with one dict comprehension, `{".".join(key): value for key, value in
td.items(include_nested=True, leaves_only=True)}`, the natural one-liner for "nested keys joined with
'.'" (API-1). When two leaves flatten to one name (a nested `("a", "b")` beside a key `"a.b"`), the later
one silently replaces the earlier: the sender's manifest has one entry for the two tensors, and every
send publishes one of them while the other never reaches any worker; a receiver's TensorDict target
of the same shape is flattened the same way and accepted, its other leaf never written. The
implementer knew of the duplicate-name rule for mappings (a dict cannot hold one) and did not see how
a TensorDict could produce one.

Breaks BAD-1 ("Weights whose names differ from the manifest (a name missing, unknown, or duplicated
after flattening nested keys) MUST be rejected with WeightsMismatchError").
"""
import sys

from torch import nn

import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__, layout  # noqa: F401

VIOLATES = ("BAD-1",)

_flatten = layout.flatten


def flatten(weights, *, detach=True):
    td = sys.modules.get("tensordict")
    base = getattr(td, "TensorDictBase", ()) if td is not None else ()
    if not isinstance(weights, nn.Module) and isinstance(weights, base):
        # BUG: a later leaf whose joined name repeats an earlier one replaces it, unnoticed
        return {".".join(key) if isinstance(key, tuple) else key: value
                for key, value in weights.items(include_nested=True, leaves_only=True)}
    return _flatten(weights, detach=detach)


layout.flatten = flatten
