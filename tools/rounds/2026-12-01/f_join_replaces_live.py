"""Bug: a valid Join for a receiver that is live takes its place instead of being refused: the listener cuts
the live receiver off (its pending versions fail as died, its channel closes) and welcomes the newcomer. The
implementer read RDV-5's "a valid Join ... takes its place, as a new handle does" and "a restart is a new
process given the same URL" as last-joiner-wins, reasoning that a process that proves receiver i's secret
again is receiver i restarted (its old process frozen or on a dead host whose end of file never came), so the
newest join should win rather than wait for the lease. RDV-5 says one connection per receiver id: a valid Join
for a live receiver MUST be refused ("receiver i is live"), so a second process started with the same URL by
mistake (a scheduler's duplicate launch) cannot silently knock out a working worker.
"""
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync.hub import Hub
from weightsync.protocol import PeerMachine

VIOLATES = ("RDV-5",)

_orig_refuses = PeerMachine.refuses_join
_orig_adopt = Hub._adopt


def _refuses_join(self, closing):
    # "a valid Join takes its place": only a closing sender refuses a proven Join
    return "refused: the sender is closing" if closing else None


def _adopt(self, peer, channel):
    if peer.machine.live:  # the newest proven process is receiver i now: the old one is cut off as gone
        self.gone(peer, "replaced by a new join of its id")
    _orig_adopt(self, peer, channel)


PeerMachine.refuses_join = _refuses_join
Hub._adopt = _adopt
