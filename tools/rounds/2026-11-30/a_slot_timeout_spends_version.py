"""Bug: a send reserves its version number before it waits for a free slot, and gives it back when the
wait fails for any reason but the one it was written for: when no slot frees before the send's timeout
(SLOT-3) the reservation is kept, so the rejected send leaves a gap and `sender.version` advances."""
from weightsync import *  # noqa: F401,F403
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync.errors import SyncTimeoutError
from weightsync.publishing import Publisher

VIOLATES = ("VER-2", "VER-1")

_orig = Publisher.free_slots


def _free_slots(self, targets, deadline):
    self.version += 1  # reserved while the send waits (publish() takes it for good below)
    try:
        chosen = _orig(self, targets, deadline)
    except SyncTimeoutError:
        raise  # BUG: the reserved version is not given back when no slot frees in time
    except BaseException:
        self.version -= 1
        raise
    self.version -= 1  # publish() increments it once the slot is written
    return chosen


Publisher.free_slots = _free_slots
