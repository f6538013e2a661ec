"""Bug: when `sender.connect()` sends a receiver its Init, the sender closes its own copy of that receiver's end of
the channel only if the handle was pickled to another process. A receiver whose handle never left the trainer (its
worker was never started: a launcher that started 3 of 4 workers, a `Process.start()` that raised before it
pickled its arguments, a worker list built from a config that disagrees with `num_workers`) is then never seen
gone: instead of ReceiverDiedError ("never connected") at once, `connect(timeout=t)` waits its whole timeout and
raises SyncTimeoutError, and `connect()` without a timeout hangs for ever. A careful implementer could have written
it from section 2.1 ("The sender therefore drops its own copy of a receiver's end when it sends Init") read with
in-process receivers in mind: a handle that stayed in this process may be used by a `Receiver` in one of its
threads, so its socket "belongs to" that receiver and closing it looked like cutting off a worker of our own; only a
handle given away (pickled) is a copy the sender should drop. Breaks CON-1 ("The end of a channel MUST be
observable by the other side, as end of file, when the peer process exits or closes its end, without a timeout")
and INIT-5 / SM-S-4 (a connecting receiver whose channel ended is gone: `connect()` raises ReceiverDiedError).
"""
import weightsync  # noqa: F401
import weightsync.publishing as _publishing
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__  # noqa: F401

VIOLATES = ("CON-1", "SM-S-4", "INIT-5")


def send_init(self, peer):
    """The Init that makes a receiver connecting: the group's slots and the latest version (INIT-1, LIFE-1)."""
    # BUG: our copy of their end goes only when the handle went to another process; one still here is kept for
    # a Receiver of this process to use.
    if peer.handle is not None and peer.handle.given:
        peer.handle.conn.close()
    assert peer.group.latest is not None, "version 0 is published when a group is made"
    _publishing._INITS[type(peer.profile)](self, peer)
    self.hub.wake()


_publishing.Publisher.send_init = send_init
