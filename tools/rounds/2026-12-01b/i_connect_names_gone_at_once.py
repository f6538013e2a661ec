"""Bug: on a listening sender, `connect(workers=[i])` for a receiver that is gone or failed raises its failure at
once (ReceiverDiedError or ReceiverError naming it, as the next send would, SEND-4) instead of waiting for a new
process to join by URL in its place. The implementer applied SEND-4's "a call that targets a receiver known to be
gone raises before anything" to connect as well, and expected the restarted worker to have joined before the
trainer calls connect(). RDV-5 and LIFE-2 say the opposite order is the normal one: a restart is a new process given
the same URL, and `sender.connect(workers=[i])` waits for it to join and answer Ready; the binding says so too
(connect() with `workers=[i]` naming a gone or failed receiver waits for a new process to join by URL). A trainer
that drops a hung worker, asks its launcher for a new one and calls connect(workers=[i]) gets an error at once.
"""
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__  # noqa: F401

VIOLATES = ("RDV-5", "LIFE-2")

from weightsync import connecting as _connecting  # noqa: E402
from weightsync import options as _options  # noqa: E402
from weightsync import sender as _sender  # noqa: E402
from weightsync.errors import FIX  # noqa: E402
from weightsync.errors import SyncTimeoutError as _STE  # noqa: E402
from weightsync.errors import receivers_error as _receivers_error  # noqa: E402
from weightsync.future import RESTART_HINT  # noqa: E402
from weightsync.timers import SettleWindow  # noqa: E402


def connect(hub, publisher, workers, deadline):
    peers = hub.peers
    with hub.locked(deadline):
        unreported = [i for i, p in enumerate(peers) if p.machine.unreported] if workers is None else []
        if workers is None:
            targets = [i for i, p in enumerate(peers) if p.machine.waiting] + unreported
        else:
            targets = [i for i in _options.check_workers(workers, len(peers))
                       if not peers[i].machine.live]
        for i in targets:
            if i not in unreported:
                peers[i].machine.check_connect(hub.listener is not None)  # LIFE-2
        # THE BUG: a gone or failed receiver is named at once, as a send names it (SEND-4); the reference waits for a
        # new process to join in its place (RDV-5): rejoin = {i: incarnation for the ended targets}.
        rejoin = {}
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
                        m.unreported = False  # named once (INIT-5)
                    raise _receivers_error({i: m.cause for i, m in failed.items()},
                                           {i: m.failure for i, m in failed.items()}, publisher.version,
                                           RESTART_HINT)
            if not connecting:
                return
            if deadline.expired():
                raise _STE(connecting, publisher.version, hint="no Ready; did each worker start and "
                           "call receiver.connect() with its handle or URL? (INIT-5). "
                           f"{FIX}start it, or pass a longer timeout=; sender.drop(i) gives up on it")
            hub.wait_for_events(deadline.earlier(window.closes))


_connecting.connect = connect
_sender.connecting.connect = connect
