"""Mutant §: a receiver error lists its receivers in the order their failures were recorded, not sorted, so
an error whose receiver 1 failed before receiver 0 says workers [1, 0]. Code that matches errors by their
list, or restarts "the first one named", then acts on the wrong receiver. Violates API-4 (".workers
(sorted ids)").

Seam: the constructor of the receiver errors' base class, which keeps the order it was given.
"""

from weightsync import *
from weightsync import CAPABILITIES, __all__, errors  # noqa: F401

VIOLATES = "API-4"
KILLED_BY = ("conformance/test_failures.py::test_receivers_that_fail_within_a_second_of_each_other_are_named_together",)

_init = errors._ReceiversError.__init__


def _in_recorded_order(self, workers, version, details=None, hint="", causes=None):
    workers = list(workers)
    _init(self, workers, version, details, hint, causes)
    self.workers = workers  # BUG: not sorted


errors._ReceiversError.__init__ = _in_recorded_order
