"""Bug: a receiver accepts a target that holds every name of the manifest plus names of its own: the extra tensors
are left as they are, at connect and at every later apply. A worker built from another model version (a module
with one more layer or buffer, a mapping that also carries its optimizer's step) connects, acks every version ok,
and runs on a model part of which the trainer never sends; nothing tells anyone that the two sides differ. A
careful implementer could have written it from INIT-3's "names exactly", read as "each manifest name matched
exactly (no prefix or case folding)", and from the copy's point of view, which needs every manifest name in the
target and writes nothing else, so a superset looked harmless (a worker's own bookkeeping tensors). Breaks INIT-3
("A receiver MUST check its target against the manifest (names exactly, ...) ... At connect, a mismatch answers
Ready(error, detail); `receiver.connect` raises WeightsMismatchError") and ACK-7 ("Before each apply ... check
the target against the manifest as INIT-3 does (names exactly ...)... MUST answer Ack(error, detail)").
"""
import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync.layout import Checker

VIOLATES = ("INIT-3", "ACK-7")

_ordered = Checker.ordered


def ordered(self, flat, *, allow_grad=False):
    if self.target:  # BUG: a target may hold more than the manifest; only the manifest's names are looked at
        wanted = set(self.names)
        flat = {k: v for k, v in flat.items() if k in wanted}
    return _ordered(self, flat, allow_grad=allow_grad)


Checker.ordered = ordered
