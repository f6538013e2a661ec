"""Bug: the sender accepts weights of any torch dtype, float8 (`float8_e4m3fn`, `float8_e5m2`), `complex32` and the
rest included, and names each in the manifest by torch's name; `pack()` packs them too. Receivers of this
implementation resolve the name and work, but a receiver written against the wire profile (or any other array
library) meets a dtype Table 12-2 does not define and refuses the Init at connect, hours into a job, instead of
the trainer being told when it built its Sender. A careful implementer could have written it from WIRE-8's
"Element encodings are those of Table 12-2", read as the list of dtypes every peer must support (a floor), with the
dtype carried by name so that a peer that knows more can take more; FP8 weights are common enough that refusing
them looked like a gratuitous limit. Breaks SEC-7 ("A sender MUST refuse, when it is made (and pack() when it
packs), weights that the wire cannot carry, with ValueError naming the entry: ... a dtype Table 12-2 does not
define ... Nothing the trainer passed may fail later on the wire or in a receiver").
"""
import torch

import weightsync  # noqa: F401
import weightsync.layout as _layout
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__  # noqa: F401

VIOLATES = ("SEC-7",)

# BUG: every dtype torch can name is taken as one the wire carries: Table 12-2 read as a floor, not the list
_layout.WIRE_DTYPES = tuple(dict.fromkeys(_layout.dtype_name(d) for d in vars(torch).values()
                                          if isinstance(d, torch.dtype)))
