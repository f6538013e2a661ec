"""Bug: `Sender(..., dtypes=)` gives a receiver its own cast slot group only when the weights are not
already in the requested dtype, and "already in" is tested as "the weights have floating entries of
that dtype" (`d in floating`) instead of "every floating entry is of that dtype" (`floating <= {d}`).
The implementer wanted to spare a useless second group for a bf16 trainer whose workers ask for
bf16, and wrote the test for the uniform models they had in mind. A mixed-precision model (bf16
linear layers with fp32 norms or router weights, a common LLM layout) asking for bf16 workers gets
no cast at all: the workers' Init names the fp32 entries as fp32, so a bf16 worker's target is refused
at connect and a target-less worker receives fp32 arrays it did not ask for.

Breaks LAYOUT-3 ("That receiver's Init then names the chosen dtype for every floating-point entry of
the manifest ... each version's bytes there are the weights rounded to it").
"""
import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__, layout, options  # noqa: F401

VIOLATES = ("LAYOUT-3",)


def slot_dtypes(dtypes, n, manifest):
    if dtypes is None:
        return [None] * n
    import torch
    wanted = ([dtypes] * n if isinstance(dtypes, torch.dtype)
              else options.per_receiver(dtypes, n, "dtypes (LAYOUT-3)"))
    floating = {layout.dtype_of(e.dtype) for e in manifest if layout.dtype_of(e.dtype).is_floating_point}
    out = []
    for i, d in enumerate(wanted):
        if d is not None and d not in layout.CAST_DTYPES:
            raise ValueError(f"dtypes[{i}] is {d!r}: slots may be cast only to one of "
                             f"{[str(t) for t in layout.CAST_DTYPES]} (LAYOUT-3)")
        # BUG: "the weights are already in that dtype" tested on any floating entry, not on all of them
        out.append(None if d is None or d in floating else d)
    return out


options.slot_dtypes = slot_dtypes
