"""Bug: a send with `weights=None` publishes the tensors the sender's own object held at the first such send: the
sender flattens its module (or mapping) once and reuses that list of tensors ever after. In-place training (the
optimizer's step, `p.copy_()`) still reaches the workers, since the cached tensors share the parameters' storage;
but a trainer that rebinds its parameters in the middle of a run (resumes from a checkpoint with
`model.load_state_dict(sd, assign=True)`, swaps in EMA weights with `p.data = ...`, replaces a tensor of its
dict) goes on publishing the old storage: every send is acked ok and the workers never see the new weights. A
careful implementer could have written it as the obvious saving on a hot path (flattening a large model's
state_dict costs milliseconds per send), reasoning that the sender's object keeps its identity and its
tensors are updated in place; API-2 asks the send to re-read the object. Breaks API-2 ("`weights=None`
re-reads the object the sender was built from") and CONS-4 ("later changes to them reach receivers only through
a send": here a send does not carry them).
"""
import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__, layout  # noqa: F401
from weightsync.packing import Packed
from weightsync.publishing import Publisher

VIOLATES = ("API-2", "CONS-4")

_publish = Publisher.publish


def publish(self, weights, workers, deadline):
    if weights is None and not isinstance(self.source, Packed):
        own = self.__dict__.get("_own")
        if own is None:  # BUG: the sender's own object is flattened once; its tensors are reused ever after
            own = self._own = dict(layout.flatten(self.source))
        weights = own
    return _publish(self, weights, workers, deadline)


Publisher.publish = publish
