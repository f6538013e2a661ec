"""The sender starts a network receiver's lease at the first frame it hears from it rather than at the Init it sent,
so a joiner that proves the secret and then says nothing (no Ready, no Heartbeat) is never named gone: connect()
only times out, and the joiner's place stays taken; NET-4 counts the lease from the Init."""
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync.profiles import NetworkProfile as _NP
from weightsync.timers import Liveness as _Liveness

VIOLATES = ("NET-4",)


class _LeaseOnceHeard(_Liveness):
    heard_once = False

    def hear(self, now):
        self.heard_once = True
        super().hear(now)

    def due(self, now):
        if not self.heard_once:  # BUG: nothing heard yet, so no lease runs: a silent joiner never expires
            return self.HEARTBEAT_DUE if now - self.spoke >= self.heartbeat else None
        return super().due(now)

    def left(self, now):
        if not self.heard_once:
            return max(0.0, self.spoke + self.heartbeat - now)
        return super().left(now)


def _sender_liveness(self, now, lease, heartbeat):
    return _LeaseOnceHeard(now, lease, heartbeat)


_NP.sender_liveness = _sender_liveness
