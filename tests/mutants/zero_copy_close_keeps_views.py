"""Mutant §: a closing zero-copy receiver makes no copy of the version it holds: its weights go on viewing
the slot, which the sender writes again once the receiver is gone, so a worker that finishes its work
after close() reads a later version's bytes under the old version number. Violates LIFE-5 ("before its
channel closes a zero-copy receiver copies the version it holds into its own memory").

Seam: ZeroCopy.detach, the strategy's step at close, made a no-op.
"""

from weightsync import *
from weightsync import CAPABILITIES, __all__, apply  # noqa: F401

VIOLATES = "LIFE-5"
KILLED_BY = ("conformance/test_consistency.py::test_a_closed_zero_copy_receiver_keeps_its_version",)


def _keep_views(self):
    """BUG: the views stay on the slot."""


apply.ZeroCopy.detach = _keep_views
