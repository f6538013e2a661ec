"""Mutant: the helper thread that serves a listening sender while no call runs does not watch the wake-up that
says a TCP receiver's store is made, so a worker that joins while the trainer makes no call gets its Init only at
the helper's next timer: a heartbeat later (1 s by default, a minute with heartbeat=60), past a worker's
connect(timeout). Violates RDV-5 (Init at once, whether or not a connect() runs). The reference did this until the
sixteenth round, whose colleague found it.

Seam: hub.Hub.wake_fd (the helper thread is its only reader).
"""
import os

import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__, hub  # noqa: F401

VIOLATES = ("RDV-5",)
KILLED_BY = ("conformance/test_network.py::test_a_joiner_welcomed_while_no_call_runs_gets_its_init_at_once",)

_NOBODY_WRITES, _ = os.pipe()

hub.Hub.wake_fd = property(lambda self: _NOBODY_WRITES)  # BUG: the helper watches a pipe no wake() writes
