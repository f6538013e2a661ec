"""Mutant §: after a send's first failure it collects the other targets' answers for 0.2 s, not 1 s ("long
enough on a fast machine"), so a receiver that fails 0.4 s after another is left out of the one error the
send raises, and the caller restarts one worker of two. Violates SEND-7 (collect until every target
answered, 1 s passed since the first failure, or the timeout passed).

Seam: limits.SETTLE_WINDOW, which every SettleWindow of the core reads when it is made.
"""

import weightsync.limits
from weightsync import *
from weightsync import CAPABILITIES, __all__  # noqa: F401

VIOLATES = "SEND-7"
KILLED_BY = ("conformance/test_failures.py::test_receivers_that_fail_within_a_second_of_each_other_are_named_together",)

weightsync.limits.SETTLE_WINDOW = 0.2  # BUG: the window is cut short
