"""A listening sender's helper thread, and the release of a sender's resources.

Both run outside any call: the thread answers joins and notices hang-ups while no call
runs (RDV-6) and serves network leases and heartbeats (NET-4); the release runs at
close(), when a sender is collected unclosed, and at interpreter exit. Kept apart from
the hub so that the hub holds only what a call does. The thread holds its hub only
weakly and ends with it.
"""

from __future__ import annotations

import atexit
import logging
import os
import select
import threading
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING

from . import limits, netplane
from .clock import Deadline, millis
from .locking import notify_all
from .rwlock import unlock

if TYPE_CHECKING:
    from .hub import Hub
    from .netplane import Lane
    from .peers import Peer
    from .slots import SlotPool

log = logging.getLogger("weightsync")

#: How long the helper thread waits for the lock, or for a polling caller, before it looks at its stop pipe again.
LOCK_WAIT = 0.5
#: The most close() waits for the lock, and then for a polling caller, within its one bound (LIFE-9).
CLOSE_LOCK_WAIT = 2.0
_RDHUP = getattr(select, "POLLRDHUP", 0x2000)
#: The helper threads running, with their hubs (weakly): ended at interpreter exit (_end_helpers).
_HELPERS: dict[threading.Thread, weakref.ReferenceType[Hub]] = {}
#: How long interpreter exit waits for each helper thread: it has been asked to end, and ends at its next wake-up.
_EXIT_JOIN = limits.CLOSE_WAIT


def start(hub: Hub, stop_r: int) -> threading.Thread:
    """Starts the helper thread of a listening hub; `stop_r` readable tells it to end."""
    ref = weakref.ref(hub)
    thread = threading.Thread(target=_serve_joins, args=(ref, stop_r), name="weightsync-listener", daemon=True)
    _HELPERS[thread] = ref
    thread.start()
    return thread


def close(hub: Hub, settle_rest: Callable[[], None]) -> None:
    """Sender.close()'s work on its hub, under one bound for every wait (LIFE-9): the lock, bounded (a call an
    exception interrupted may have left it held: close without it); the answers already here read, then
    `settle_rest()` (LIFE-8); Stop to every receiver the table lets it stop (LIFE-4); every channel, slot and
    thread released."""
    bound = Deadline(0.9 * limits.REACTION_BOUND, hub.clock)
    locked = hub.mu.acquire(timeout=bound.cap(CLOSE_LOCK_WAIT))
    if not locked:
        log.error("sender close: the lock is held by no running call; closing without it")
    try:
        if hub.closed and not hub.finalizer.alive:
            return
        hub.closed = True
        hub.wake()
        if locked:  # without the lock, nobody polls and no answer can be read safely
            hub.cv.wait_for(lambda: not hub.polling, timeout=bound.cap(CLOSE_LOCK_WAIT))
            try:
                hub.take_arrived()  # acks already here settle their versions before the rest fail (LIFE-8)
            except Exception:  # noqa: BLE001 - close() goes on whatever a channel holds
                log.debug("sender close: reading the last answers failed", exc_info=True)
        settle_rest()
        for peer in hub.peers:
            hub.stop(peer)
            if peer.handle is not None:
                peer.handle.conn.close()
        release_held(hub.finalizer)  # held above, or waited for long enough already (LIFE-9)
        if locked:
            notify_all(hub.cv)
    finally:
        unlock(hub.mu)  # ours, or one a call left held: later calls find it free, and the sender closed
    thread = hub.helper
    if thread is not None and thread.ident is not None and thread is not threading.current_thread():
        thread.join(bound.left())


def release_when_free(mu: threading.Lock, *resources) -> None:
    """The finalizer, when no close() runs (collection, interpreter exit, sender.release()): takes the lock
    first, bounded, so that the helper thread is never inside a pass while what it serves is closed."""
    locked = mu.acquire(timeout=2 * LOCK_WAIT)
    try:
        _release(*resources)
    finally:
        if locked:
            mu.release()


def release_held(finalizer: weakref.finalize) -> None:
    """The finalizer's work for close(), which holds the lock already: the finalizer is spent either way."""
    info = finalizer.detach()
    if info is not None:
        _release(*info[2][1:])  # its arguments without the lock


def _release(peers: list[Peer], pool: SlotPool, closables: list, retired: list[Lane], fds: tuple[int, ...]) -> None:
    """Closes every channel, lane, listener and slot (LIFE-4); at close() or when the sender is collected.

    Each lane's thread is waited for (bounded, netplane.end): it drops its receiver's gloo group and store,
    and one still doing that when the interpreter finalizes aborts the process. The slots close after it,
    since a lane sends from them."""
    if fds:
        try:
            os.write(fds[3], b"x")  # the helper thread, if any, ends
        except OSError:
            pass
    for peer in peers:  # handles given out are their holders' (close() closes them)
        if peer.channel is not None:
            peer.channel.close()
    netplane.end([peer.lane for peer in peers if peer.lane is not None] + retired)
    retired.clear()
    for item in closables:
        item.close()
    pool.close()
    for fd in fds:
        try:
            os.close(fd)
        except OSError:
            pass


def _serve_joins(ref: weakref.ReferenceType[Hub], stop_r: int) -> None:
    """The thread's body: it holds the hub only weakly and only between waits, and takes the lock only
    when no caller is polling; a caller that polls sees the same events itself (RDV-6)."""
    try:
        _serve(ref, stop_r)
    finally:
        _HELPERS.pop(threading.current_thread(), None)


@atexit.register
def _end_helpers() -> None:
    """At interpreter exit, before daemon threads are frozen: each sender with a helper thread is released, as
    its finalizer would be, and the thread joined (bounded). A helper closing its sender (weightsync.torchrl's,
    once every worker is gone) frees torch tensors, and torch takes the GIL back after freeing one: a daemon
    thread doing that while the interpreter finalizes aborts the process ("terminate called without an active
    exception")."""
    for thread, ref in list(_HELPERS.items()):
        hub = ref()
        if hub is not None:
            hub.finalizer()  # released (bounded) and the helper told to end; spent already if closed
        del hub
        thread.join(_EXIT_JOIN)


def _serve(ref: weakref.ReferenceType[Hub], stop_r: int) -> None:
    while True:
        s = ref()
        if s is None or s.ended:
            return
        poller = select.poll()
        poller.register(stop_r, select.POLLIN)
        if not s.mu.acquire(timeout=LOCK_WAIT):
            del s
            continue
        try:
            if s.ended:
                return
            listener = s.listener
            assert listener is not None, "only a listening sender has this thread"
            poller.register(listener.fileno(), select.POLLIN)
            poller.register(s.wake_fd, select.POLLIN)  # an Init whose store is made goes out now (RDV-5)
            for ch in listener.channels():
                poller.register(ch.fileno(), select.POLLIN)
            for p in s.peers:  # Unix channels: hang-ups only, so that acks never wake this thread
                if p.channel is not None and p.machine.active:
                    poller.register(p.channel.fileno(), _RDHUP | (select.POLLIN if p.profile.leased else 0))
            timer, beat = s.next_timer(), s.heartbeat
        finally:
            s.mu.release()
        del s
        # At most a heartbeat: a caller may have made a network receiver active since the snapshot
        # (a join its connect() took), and nothing here would wake for it (NET-4).
        events = poller.poll(millis(beat if timer is None else min(timer, beat)))
        if any(fd == stop_r for fd, _ in events):
            return
        s = ref()
        if s is None or not s.mu.acquire(timeout=LOCK_WAIT):
            continue
        on_all_gone = None
        try:
            if s.ended:  # closed or released while it waited: nothing is left to serve
                return
            if s.polling:  # the caller that polls handles these events; let it
                s.cv.wait(LOCK_WAIT)
            else:
                s.take_arrived()
                s.cv.notify_all()
                if s.on_all_gone is not None and s.all_gone():
                    on_all_gone = s.on_all_gone
        finally:
            s.mu.release()
        del s
        if on_all_gone is not None:
            on_all_gone()
