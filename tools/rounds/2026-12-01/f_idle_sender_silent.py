"""Bug: while no call of the trainer runs, the listening sender's helper thread answers joins and notices
hang-ups, and nothing else: it does not serve the network receivers' leases and heartbeats, which only the
calls that poll the channels (send, wait, connect) keep. The implementer wrote the helper for RDV-6 ("accepts
joins ... also while no call of its caller runs") and took heartbeats for something a send's wait does, so a
trainer that sends every few seconds never sees a difference; one that pauses longer than the lease (an
evaluation, a checkpoint, a slow epoch) sends no Heartbeat, and every TCP worker gives the trainer up when its
lease ends (it stops; the next send finds it gone). NET-4: each side sends Heartbeat whenever it has sent nothing
for its heartbeat interval, and the sender watches its channels also while no call runs.
"""
import select

from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__, helper, transport  # noqa: F401
from weightsync.clock import millis

VIOLATES = ("NET-4",)

_orig = helper._serve


def _idle_pass(s, events) -> None:
    """What the helper does between calls: joins, and receivers whose channel hung up."""
    fds = {fd for fd, _ in events}
    for p in s.peers:
        if p.store_made is not None:  # a joiner's Init can go out now
            s._joined(p)
    listener = s.listener
    ready = ([listener] if listener.fileno() in fds else []) + [ch for ch in listener.channels() if ch.fileno() in fds]
    for rid, channel in listener.service(ready, s.can_join):
        s._adopt(s.peers[rid], channel)
    for p in s.peers:
        ch = p.channel
        if ch is not None and not ch.closed and p.machine.active and ch.fileno() in fds and transport.hung_up(ch.sock):
            s.gone(p, "its channel closed (process exited or receiver closed)")


def _serve(ref, stop_r):
    while True:
        s = ref()
        if s is None or s.ended:
            return
        poller = select.poll()
        poller.register(stop_r, select.POLLIN)
        if not s.mu.acquire(timeout=helper.LOCK_WAIT):
            del s
            continue
        try:
            if s.ended:
                return
            listener = s.listener
            poller.register(listener.fileno(), select.POLLIN)
            for ch in listener.channels():
                poller.register(ch.fileno(), select.POLLIN)
            for p in s.peers:  # hang-ups only, so that answers never wake this thread
                if p.channel is not None and p.machine.active:
                    poller.register(p.channel.fileno(), helper._RDHUP)
            timer = listener.timer()
        finally:
            s.mu.release()
        del s
        events = poller.poll(millis(timer if timer is not None else helper.LOCK_WAIT))
        if any(fd == stop_r for fd, _ in events):
            return
        s = ref()
        if s is None or not s.mu.acquire(timeout=helper.LOCK_WAIT):
            continue
        on_all_gone = None
        try:
            if s.ended:
                return
            if s.polling:  # the caller that polls handles these events; let it
                s.cv.wait(helper.LOCK_WAIT)
            else:
                _idle_pass(s, events)
                s.cv.notify_all()
                if s.on_all_gone is not None and s.all_gone():
                    on_all_gone = s.on_all_gone
        finally:
            s.mu.release()
        del s
        if on_all_gone is not None:
            on_all_gone()


helper._serve = _serve
