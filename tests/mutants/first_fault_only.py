"""Mutant: a failed send reports only the first receiver at fault. The send's outcome keeps one failure
("the error"), so when one receiver answers Ack(error) and another dies, the error names only the first,
and the other looks as if it never answered. Violates SEND-7 ("MUST name every receiver at fault that
is known when it is raised, each with its reason and its cause").

Seam: SendFuture.settle (records one target's answer), which drops every failure after the first.
"""

from weightsync import *
from weightsync import CAPABILITIES, SendFuture, __all__  # noqa: F401
from weightsync.messages import OK
from weightsync.publishing import Publisher

VIOLATES = "SEND-7"
KILLED_BY = ("conformance/test_failures.py::test_one_error_names_every_receiver_at_fault_with_its_cause",)


class _FirstFault(SendFuture):
    def _settle(self, worker, cause, detail):
        if cause != OK and self._window.closes is not None:
            return  # BUG: a second failure is dropped
        super()._settle(worker, cause, detail)


_publish = Publisher.publish


def _publish_first_fault(self, weights, workers, deadline):
    future = _publish(self, weights, workers, deadline)
    future.__class__ = _FirstFault
    return future


Publisher.publish = _publish_first_fault
