"""Bug: `sender.close()` settles the pending futures with the answers the sender has already *read*, not
with those that reached its end of the channel unread: a `send_async()` whose every target acked, with no
call made since (no `wait()`, no `done()`, no later send to read the Acks), fails with ClosedError after
close(), as if its workers had never answered. A trainer that fires its last version with send_async and
closes at shutdown is told its final weights never arrived. The implementer kept close() free of channel
I/O (it must return within its bound and wait on no receiver, SEC-3; the receivers' channels are about to be
closed anyway) and settled "what is known", missing LIFE-8's "read or not". Breaks LIFE-8 ("a version whose
targets all acked it ok before `close()` was called (their Acks had reached the sender's end of the channel,
read or not) completes (`wait()` returns it)").
"""
import logging
import threading

import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__, helper, limits  # noqa: F401
from weightsync.clock import Deadline
from weightsync.locking import notify_all
from weightsync.rwlock import unlock

VIOLATES = ("LIFE-8",)
log = logging.getLogger("weightsync")


def close(hub, settle_rest):
    bound = Deadline(0.9 * limits.REACTION_BOUND, hub.clock)
    locked = hub.mu.acquire(timeout=bound.cap(helper.CLOSE_LOCK_WAIT))
    if not locked:
        log.error("sender close: the lock is held by no running call; closing without it")
    try:
        if hub.closed and not hub.finalizer.alive:
            return
        hub.closed = True
        hub.wake()
        if locked:
            hub.cv.wait_for(lambda: not hub.polling, timeout=bound.cap(helper.CLOSE_LOCK_WAIT))
        # BUG: no hub.take_arrived() here: Acks that arrived but were not read yet settle nothing.
        settle_rest()
        for peer in hub.peers:
            hub.stop(peer)
            if peer.handle is not None:
                peer.handle.conn.close()
        helper.release_held(hub.finalizer)
        if locked:
            notify_all(hub.cv)
    finally:
        unlock(hub.mu)
    thread = hub.helper
    if thread is not None and thread.ident is not None and thread is not threading.current_thread():
        thread.join(bound.left())


helper.close = close
