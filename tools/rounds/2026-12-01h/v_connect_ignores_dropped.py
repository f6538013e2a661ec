"""Bug: a receiver that `sender.drop(i)` cuts off while a `connect()` waits for its Ready is taken out of that
connect() instead of failing it: connect() returns as if every receiver it waited for were connected (or goes on
waiting for the others only), and says nothing about the one dropped. A supervisor thread that drops a worker stuck
in its handshake sees the trainer's `connect(timeout=...)` return normally, and the trainer, which has no error
naming the worker, goes on to a first `send()` that raises for it, or to `send(workers=...)` lists that leave it out
for good. A careful implementer could have written it reasoning that the drop is the caller's own decision ("the
trainer needs a way to stop waiting for it", 10.4.1), so connect() should stop waiting for it rather than report what
the caller did; it marked the dropped receiver and left it out of connect's failures. Breaks INIT-5 ("for a receiver
that is gone, `sender.connect` raises ReceiverDiedError ... without waiting for the timeout") and API-9 ("from then on
treats it as gone").
"""
import weightsync  # noqa: F401
import weightsync.connecting as _connecting
import weightsync.sender as _sender
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__, options  # noqa: F401
from weightsync.clock import Deadline
from weightsync.errors import FIX, SyncTimeoutError, receivers_error
from weightsync.future import RESTART_HINT
from weightsync.timers import SettleWindow

VIOLATES = ("INIT-5", "API-9")


def drop(self, i, timeout=None):
    hub = self._hub
    deadline = Deadline(timeout, hub.clock)
    with hub.locked(deadline):
        peer = hub.peers[options.check_id(i, len(hub.peers))]
        with hub.quiet(deadline):
            if peer.machine.active:
                peer.machine.dropped = True  # BUG (with connect below): the caller's own decision, not a failure
                hub.drop(peer, "dropped by the trainer: sender.drop() (API-9)")


def connect(hub, publisher, workers, deadline):
    peers = hub.peers
    with hub.locked(deadline):
        unreported = [i for i, p in enumerate(peers) if p.machine.unreported] if workers is None else []
        if workers is None:
            targets = [i for i, p in enumerate(peers) if p.machine.waiting] + unreported
        else:
            targets = [i for i in options.check_workers(workers, len(peers)) if not peers[i].machine.live]
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
            # BUG: a receiver the trainer dropped meanwhile is no longer waited for, nor reported
            targets = [i for i in targets if not getattr(peers[i].machine, "dropped", False)]
            failed = {i: peers[i].machine for i in targets
                      if peers[i].machine.ended and peers[i].machine.incarnation != rejoin.get(i)}
            waiting = [i for i in targets if i not in failed and not peers[i].machine.live]
            if failed:
                window.failed(hub.clock())
                if not waiting or window.over(hub.clock()) or deadline.expired():
                    for m in failed.values():
                        m.unreported = False
                    raise receivers_error({i: m.cause for i, m in failed.items()},
                                          {i: m.failure for i, m in failed.items()}, publisher.version,
                                          RESTART_HINT)
            if not waiting:
                return
            if deadline.expired():
                raise SyncTimeoutError(waiting, publisher.version, hint="no Ready; did each worker start and "
                                       "call receiver.connect() with its handle or URL? (INIT-5). "
                                       f"{FIX}start it, or pass a longer timeout=; sender.drop(i) gives up on it")
            hub.wait_for_events(deadline.earlier(window.closes))


_sender.Sender.drop = drop
_connecting.connect = connect
