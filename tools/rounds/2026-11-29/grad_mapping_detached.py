"""Bug: the sender detaches every tensor of a mapping it flattens, as it does a module's parameters,
so a mapping value that requires grad is silently accepted instead of rejected when the weights are
a Mapping other than a plain dict (an OrderedDict, a MappingProxyType, a user's Mapping class), or at
Sender() construction. BAD-3: a mapping value that requires grad MUST be rejected (pass `.detach()`,
or the module itself). Plausible: "read detached" is the rule for modules one line above, and plain
dicts, which skip flatten on send, still fail as before.

Seam: weightsync.layout.flatten (wrapped).
"""
from collections.abc import Mapping as _Mapping

from torch import nn as _nn

from weightsync import *  # noqa: F403
from weightsync import CAPABILITIES, __all__, sender  # noqa: F401
from weightsync import layout as _layout

VIOLATES = "BAD-3"

_orig = _layout.flatten


def _flatten(weights, *, detach=True):
    flat = _orig(weights, detach=detach)
    if detach and isinstance(weights, _Mapping) and not isinstance(weights, _nn.Module):
        flat = {k: v.detach() for k, v in flat.items()}
    return flat


_layout.flatten = _flatten
