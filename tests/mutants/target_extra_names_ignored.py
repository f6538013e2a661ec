"""Mutant: a receiver's target check ignores target names the manifest does not list, so a target holding one
more entry than the weights is taken at connect. Violates INIT-3 ("names exactly").

Seam: apply.Strategy.targets, which checks the flattened target against the manifest (INIT-3, ACK-7).
"""

from weightsync import *
from weightsync import CAPABILITIES, __all__, apply, layout  # noqa: F401

VIOLATES = "INIT-3"
KILLED_BY = ("conformance/test_handshake.py::test_a_target_whose_names_differ_is_refused_at_connect",)

_targets = apply.Strategy.targets


def _known_names_only(self, rule="ACK-7"):
    flat = layout.flatten(self.target, detach=False)
    known = set(self.checker.names)
    if all(n in known for n in flat):
        return _targets(self, rule)
    return self.checker.ordered({n: t for n, t in flat.items() if n in known}, allow_grad=True)  # BUG


apply.Strategy.targets = _known_names_only
