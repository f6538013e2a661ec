"""Bug: a send of packed weights (`pack()`, API-8) copies the packed buffer into a slot byte for byte whenever the
slot is as large as the buffer, cast slots included (LAYOUT-3). A cast slot is usually smaller (bf16 halves each
array), but every array is padded to 64 bytes (LAYOUT-1), so a model of small tensors (a policy head, biases and norms
of up to 16 floats, a few-layer MLP for control) has bf16 slots exactly the size of its fp32 buffer: the bf16 workers
then receive the fp32 bytes reinterpreted as bf16, garbage in every array, and ack them ok. A careful implementer could
have written it reasoning that the size test already tells a cast slot apart ("a bf16 slot is half the size, so it
can never match"), the same test that API-8's one copy needs for slots of the weights' dtype. Breaks LAYOUT-3 ("each
version's bytes there are the weights rounded to it as a cast rounds") and API-8 ("A send MUST deliver exactly what it
would deliver for the unpacked weights").
"""
import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__, slots  # noqa: F401

VIOLATES = ("LAYOUT-3", "API-8")


def _laid_like(self, buffer):
    return buffer.numel() == self.nbytes  # BUG: a cast slot of the same size takes the raw bytes too


slots.Slot._laid_like = _laid_like
