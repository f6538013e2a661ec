"""Mutant: the codec refuses a map whose keys are not strings wherever it is, an ignored field's value
included, as a decoder with strict map keys does. A peer that puts a map keyed by integers in an unknown
field is cut off. Violates WIRE-3 ("The value of a key that is ignored is not checked, whatever legal
MessagePack it holds").

Seam: wire._lenient (the second decode, for payloads the strict one refused), which refuses instead.
"""

from weightsync import *
from weightsync import CAPABILITIES, __all__, wire  # noqa: F401

VIOLATES = "WIRE-3"
KILLED_BY = ("conformance/test_wire.py::test_unknown_fields_are_ignored_whatever_they_hold",)


def _strict(data):
    raise wire._violation("undecodable payload (a map key that is not a string)", "WIRE-3")  # BUG


wire._lenient = _strict
