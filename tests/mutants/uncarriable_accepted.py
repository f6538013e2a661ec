"""Mutant: Sender() and pack() take any name and dtype torch has, so a name with a lone surrogate fails
later in connect() with a UnicodeEncodeError, and a float8 tensor is sent under a name the wire does not
define. Violates SEC-7 ("A sender MUST refuse, when it is made ..., weights that the wire cannot carry").

Seam: layout.check_carriable (what make_manifest asks of each entry), which lets everything through.
"""

from weightsync import *
from weightsync import CAPABILITIES, __all__, layout  # noqa: F401

VIOLATES = "SEC-7"
KILLED_BY = ("conformance/test_binding.py::test_weights_the_wire_cannot_carry_are_refused_at_once",)

layout.check_carriable = lambda name, t: None  # BUG
