"""Bug: a copying receiver checks its target against the manifest by name, then writes the target's tensors in the
target's own order, not in manifest order. A worker whose target lists the same names in another order (a mapping
loaded from a safetensors checkpoint, whose keys come back sorted; a dict built from a config; a module whose
submodules were declared in another order) either fails every apply when shapes differ, or, when neighbouring
arrays share a shape (two biases, q/k/v projections), acks ok with each array's bytes in another array's tensor.
A careful implementer could have written it: INIT-3 and ACK-7 ask for the target's "names exactly", and once
`Checker.ordered` had checked every name, dtype and shape, the flattened target looked like the list to copy into
(a module's state_dict is in the same order as the trainer's when both build the same class). Breaks ACK-3
("Ack(r, v, ok) promises that r's weights equal, bit for bit, the bytes the sender published as version v") and
INIT-4 ("A receiver applies the Init's version before it answers Ready(ok, version)").
"""
import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__, apply, layout  # noqa: F401
from weightsync.errors import WeightsMismatchError

VIOLATES = ("ACK-3", "INIT-4")


def targets(self, rule="ACK-7"):
    """The target's tensors, checked as they are now (INIT-3, ACK-7)."""
    flat = layout.flatten(self.target, detach=False)
    try:
        self.checker.ordered(flat, allow_grad=True)  # names exactly, dtype, shape, device, layout
    except WeightsMismatchError as e:
        raise WeightsMismatchError(f"the target of receiver {self.rid} ({rule}): {e}") from None
    return list(flat.values())  # BUG: the target's order, not the manifest's


apply.Strategy.targets = targets
