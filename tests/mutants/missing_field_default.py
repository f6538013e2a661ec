"""Mutant: the receiver's decoder fills a missing required field of Init with a default. An Init without
`byteorder` is read as one in the host's byte order ("an older sender may leave it out"), where WIRE-3 makes
it a violation ("a key it lists as required and that is missing ... are violations"): the receiver answers
Ready(ok) instead of closing its channel. An outside implementation's bug that a suite whose every Init had
every field let through. Violates WIRE-3.

Seam: wire.SCHEMA["Init"], whose `byteorder` field gets a default (a field's third item, as Init's optional
fields have).
"""

import sys

from weightsync import *
from weightsync import CAPABILITIES, __all__, wire  # noqa: F401

VIOLATES = "WIRE-3"
KILLED_BY = (
    "conformance/test_receiver_wire.py::test_a_frame_that_breaks_the_schema_is_a_violation[Init.byteorder is missing]",
)

_cls, _fields = wire.SCHEMA["Init"]
wire.SCHEMA["Init"] = (_cls, tuple((*f, sys.byteorder) if f[0] == "byteorder" else f for f in _fields))  # BUG
