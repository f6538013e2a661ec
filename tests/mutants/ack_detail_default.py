"""Mutant: the sender's decoder fills a missing required field of Ack with a default. An Ack without `detail`
is read as one with an empty detail ("ok needs none"), where WIRE-3 makes it a violation ("a key it lists as
required and that is missing ... are violations"): the send it answers returns instead of failing with
ReceiverError naming the receiver. Violates WIRE-3.

Seam: wire.SCHEMA["Ack"], whose `detail` field gets a default (a field's third item, as optional fields have).
"""

from weightsync import *
from weightsync import CAPABILITIES, __all__, wire  # noqa: F401

VIOLATES = "WIRE-3"
KILLED_BY = ("conformance/test_wire.py::test_an_answer_that_breaks_the_schema_is_a_violation[Ack.detail is missing]",)

_cls, _fields = wire.SCHEMA["Ack"]
wire.SCHEMA["Ack"] = (_cls, tuple((*f, "") if f[0] == "detail" else f for f in _fields))  # BUG
