"""Mutant: a receiver whose target is packed (API-8) copies each version into the packed buffer without
checking the target again, so a target tensor the worker re-homed (its `.data` replaced) silently keeps
stale values while the receiver acks ok. Violates ACK-7 ("Before each apply ... a receiver with a target
MUST check the target against the manifest ... a tensor ... whose `.data` it assigned, is checked as it
now is. On a mismatch it MUST NOT write any byte of the target ... and MUST answer Ack(error, detail)").

Seam: apply.CopyToPacked.apply, which skips the target's check (it was checked at connect).
"""

from weightsync import *
from weightsync import CAPABILITIES, __all__, apply  # noqa: F401

VIOLATES = "ACK-7"
KILLED_BY = ("conformance/test_pack.py::test_a_packed_target_whose_tensor_changed_shape_refuses_the_apply",)


def _apply(self, views, mapped):
    self.target.buffer.copy_(mapped.tensor)  # BUG: no ACK-7 check of the packed target first


apply.CopyToPacked.apply = _apply
