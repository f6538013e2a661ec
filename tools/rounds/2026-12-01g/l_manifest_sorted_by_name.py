"""Bug: the manifest lists the weights sorted by name instead of in the order the weights gave them: a model whose
state_dict runs `layer2.weight, layer10.weight, head.bias` goes out as `head.bias, layer10.weight, layer2.weight`,
laid out in that order in every slot, and `receiver.weights` (and pack()'s mapping) iterate in it. A worker that
pairs `receiver.weights.values()` with its own parameters, or a wire peer that lays arrays out in its model's order,
gets the wrong tensors. A careful implementer could have written it from spec 3.2's "Since each channel belongs to
one receiver, the name is redundant" and the matching-by-name of INIT-3, reasoning that two processes must agree on
one canonical order and that a mapping's insertion order is an accident of how it was built, so flatten() sorts.
Breaks API-1 ("`weights` fixes the manifest, in its own order") and MSG-1 (the fields of Table 1 and 2: "The
manifest lists the arrays in the order the sender's weights gave them; that order is the layout order").
"""
import weightsync  # noqa: F401
import weightsync.layout as _layout
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__  # noqa: F401

VIOLATES = ("API-1", "MSG-1")

_flatten = _layout.flatten


def flatten(weights, *, detach=True):
    flat = _flatten(weights, detach=detach)
    return dict(sorted(flat.items()))  # BUG: a "canonical" order by name, not the weights' own


_layout.flatten = flatten
