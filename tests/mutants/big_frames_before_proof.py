"""Mutant: a join reads frames up to WIRE-2's bound before the other side has proved the secret, so a
joiner that knows no secret (or a squatter on the sender's address) gets 64 MiB read, decoded and held.
Violates RDV-9 ("Until the other side has proved the secret, a side MUST NOT accept a frame whose length
prefix exceeds 8,192 bytes").

Seam: limits.MAX_BEFORE_PROOF (the frame bound of a join's channels), set to the largest frame.
"""

from weightsync import *
from weightsync import CAPABILITIES, __all__, limits  # noqa: F401

VIOLATES = "RDV-9"
KILLED_BY = ("conformance/test_rendezvous.py::test_a_large_frame_before_any_proof_is_not_read",)

limits.MAX_BEFORE_PROOF = limits.MAX_TO_RECEIVER  # BUG
