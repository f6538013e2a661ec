"""Every bound the suite uses, scaled by --conformance-timescale.

The scale travels in the environment (TIMESCALE_ENV), which conftest sets before
any test module imports this one and which spawned worker processes inherit, so
the suite's side and the workers' side use the same bounds. A slow implementation
or machine passes a scale above 1; a fast one can be held to tight bounds below 1.
"""

from __future__ import annotations

import os

from .names import TIMESCALE_ENV

SCALE = float(os.environ.get(TIMESCALE_ENV, "1") or 1)

#: Timeout given to calls that are expected to succeed.
T = 10.0 * SCALE
#: Timeout given to calls that are expected to time out.
SHORT = 0.3 * SCALE
#: A timeout for a call whose elapsed time is checked against it (SEND-2, INIT-5, API-2).
TIMED = 0.5 * SCALE
#: How much later than its timeout a call may return or raise.
SLACK = 3.0 * SCALE
#: How much earlier than its timeout a call that timed out may raise (clock granularity only).
EARLY = 0.05
#: The spec's reaction bound (README, "Time bounds"): how soon an implementation notices an event
#: no call waits on (a peer gone or silent, a close from another thread).
REACTION = 10.0 * SCALE
#: Bound on any wait for a worker process's answer.
BOUND = 15.0 * SCALE
#: Bound on a worker's start (it imports torch and the implementation).
START_BOUND = 90.0 * SCALE
