"""Bug: `sender.handle(i)` for an unconnected receiver returns the handle it gave before as long as
connect() has not consumed it, even when that handle was already pickled to a process. The implementer
read "handle(i) ... until consumed" (the table of section 4: an unconnected receiver's handle(i) needs no
event) and keyed the reuse on the handle being *closed* (consumed) instead of on it having gone to a
process. CON-3 wants a new handle over a new channel once the old one was pickled, and the old channel
closed so its process reads end of channel: here a trainer whose first worker process failed to start
gets the same, already given, handle back, which refuses to be pickled again ("call sender.handle(i) for
a new one"), and the old process keeps its channel end open.
"""
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__  # noqa: F401

from weightsync import options
from weightsync import sender as _sm
from weightsync.clock import Deadline
from weightsync.protocol import KEEP, PAIR

VIOLATES = ("CON-3",)


def handle(self, i):
    hub = self._hub
    with hub.locked(Deadline(None, hub.clock)):
        peer = hub.peers[options.check_id(i, len(hub.peers))]
        hub.take_arrived()
        peer.machine.check_handle()  # LIFE-3
        handle = peer.handle
        # BUG: "fresh" means not consumed by connect(); a handle pickled to a process counts as fresh too.
        todo = peer.machine.handle_to_give(handle is not None and not handle.closed, peer.channel is not None)
        if todo == KEEP:
            assert handle is not None
            return handle
        if todo == PAIR:
            return hub.pair(peer)
        hub.replace(peer)
        assert peer.handle is not None
        return peer.handle


_sm.Sender.handle = handle
