"""Bug: `sender.connect()` keeps the sender locked while it waits for Ready: it polls the channels itself with the
lock held instead of letting go of it while it waits. A trainer that reconnects a restarted worker from a
supervisor thread (`connect(timeout=30, workers=[3])`) stalls the training loop's sends to the live workers for as
long as the new process takes to answer: each `send(timeout=t)` raises SyncTimeoutError ("another thread held the
sender") and `send(timeout=None)` waits for the handshake to end. The implementer read LIFE-1 ("a receiver that
connects ... receives the latest published version in Init, never an older one") as asking that the Init's
version stay the latest until the receiver is live, and held the lock through the handshake so that no version
could be published between Init and Ready. Breaks API-7 ("A call waiting on the sender never stops another
thread's call from proceeding"; "every wait it makes, the wait for another thread to leave the sender included,
is bounded by its timeout" is kept only by failing).
"""
import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__, options  # noqa: F401
from weightsync import connecting as _connecting
from weightsync.clock import millis
from weightsync.errors import FIX, ClosedError, SyncTimeoutError, receivers_error
from weightsync.future import RESTART_HINT
from weightsync.timers import SettleWindow

VIOLATES = ("API-7",)


def _poll_holding(hub, deadline):
    """BUG: waits for the handshake's answers with the lock held, so that nothing is published meanwhile."""
    items = hub._watched()
    wait = deadline.left()
    timer = hub.next_timer(items)
    if timer is not None:
        wait = timer if wait is None else min(wait, timer)
    hub._polls.watch(items)
    ready = hub._polls.wait(millis(wait))
    if hub.closed:
        raise ClosedError("the sender was closed while this call waited (LIFE-6)")
    hub.serve(ready)


def connect(hub, publisher, workers, deadline):
    peers = hub.peers
    with hub.locked(deadline):
        unreported = [i for i, p in enumerate(peers) if p.machine.unreported] if workers is None else []
        if workers is None:
            targets = [i for i, p in enumerate(peers) if p.machine.waiting] + unreported
        else:
            targets = [i for i in options.check_workers(workers, len(peers))
                       if not peers[i].machine.live]
        for i in targets:
            if i not in unreported:
                peers[i].machine.check_connect(hub.listener is not None)
        rejoin = {i: peers[i].machine.incarnation for i in targets if peers[i].machine.ended and i not in unreported}
        for i in targets:
            if peers[i].machine.init_due(peers[i].channel is not None):
                publisher.send_init(peers[i])
        hub.take_arrived()
        window = SettleWindow()
        while True:
            failed = {i: peers[i].machine for i in targets
                      if peers[i].machine.ended and peers[i].machine.incarnation != rejoin.get(i)}
            connecting = [i for i in targets if i not in failed and not peers[i].machine.live]
            if failed:
                window.failed(hub.clock())
                if not connecting or window.over(hub.clock()) or deadline.expired():
                    for m in failed.values():
                        m.unreported = False
                    raise receivers_error({i: m.cause for i, m in failed.items()},
                                          {i: m.failure for i, m in failed.items()}, publisher.version,
                                          RESTART_HINT)
            if not connecting:
                return
            if deadline.expired():
                raise SyncTimeoutError(connecting, publisher.version, hint="no Ready; did each worker start and "
                                       "call receiver.connect() with its handle or URL? (INIT-5). "
                                       f"{FIX}start it, or pass a longer timeout=; sender.drop(i) gives up on it")
            _poll_holding(hub, deadline.earlier(window.closes))  # BUG: instead of hub.wait_for_events


_connecting.connect = connect
