"""Mutant (the second outside round, ‡): a network receiver keeps its lease from the Init's `timeout_ms` (the
bound of one transfer, 60 s by default) instead of `lease_ms` (5 s), so it gives up on a silent sender twelve
times too late. NET-4: a side that heard nothing on the channel for the lease of Init treats it as ended.
Plausible: both are times in milliseconds, side by side in `data_plane`.

Seam: weightsync.pending.NetworkPending.__init__ (the lease it keeps).
"""
import functools as _functools

from weightsync import *  # noqa: F403
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync import pending as _pending

VIOLATES = "NET-4"
KILLED_BY = ("conformance/test_network.py::"
             "test_a_tcp_receiver_stops_once_its_sender_is_silent_for_the_lease_not_the_transfer_timeout",)

_init = _pending.NetworkPending.__init__


@_functools.wraps(_init)
def _with_the_transfers_bound(self, channel, machine, init, *args, **kwargs):
    _init(self, channel, machine, init, *args, **kwargs)
    self._lease = init.data_plane.timeout  # BUG: the transfer's bound, not the lease


_pending.NetworkPending.__init__ = _with_the_transfers_bound
