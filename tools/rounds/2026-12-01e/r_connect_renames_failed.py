"""Bug: `sender.connect()` without `workers` names every receiver that is failed or gone, every time, instead
of naming once each one whose handshake failed while no connect() waited for it: after connect() raised
ReceiverError for a worker that refused its Init, calling connect() again to wait for the slower workers
raises the same ReceiverError at once, so a trainer that goes on without the broken worker can never connect
the rest with a plain connect() (it must list them by hand). The implementer read "connect() ... names each
receiver whose handshake failed" as "connect() reports every receiver it cannot connect", and dropped the
"once" bookkeeping as redundant: a failed receiver stays failed until restarted, so naming it again seemed
only honest. Breaks INIT-5 ("is named so by the next `sender.connect()` without `workers`, once"), API-2
("after it raised for one receiver, calling it again waits for the others").
"""
import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__, connecting, options  # noqa: F401
from weightsync.errors import FIX, SyncTimeoutError, receivers_error
from weightsync.future import RESTART_HINT
from weightsync.timers import SettleWindow

VIOLATES = ("INIT-5", "API-2")


def connect(hub, publisher, workers, deadline):
    peers = hub.peers
    with hub.locked(deadline):
        # BUG: every failed or gone receiver is named, not only those no connect() has named yet (INIT-5).
        unreported = [i for i, p in enumerate(peers) if p.machine.ended] if workers is None else []
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
            failed = {i: peers[i].machine for i in targets
                      if peers[i].machine.ended and peers[i].machine.incarnation != rejoin.get(i)}
            connecting_ = [i for i in targets if i not in failed and not peers[i].machine.live]
            if failed:
                window.failed(hub.clock())
                if not connecting_ or window.over(hub.clock()) or deadline.expired():
                    for m in failed.values():
                        m.unreported = False
                    raise receivers_error({i: m.cause for i, m in failed.items()},
                                          {i: m.failure for i, m in failed.items()}, publisher.version,
                                          RESTART_HINT)
            if not connecting_:
                return
            if deadline.expired():
                raise SyncTimeoutError(connecting_, publisher.version, hint="no Ready; did each worker start and "
                                       "call receiver.connect() with its handle or URL? (INIT-5). "
                                       f"{FIX}start it, or pass a longer timeout=; sender.drop(i) gives up on it")
            hub.wait_for_events(deadline.earlier(window.closes))


connecting.connect = connect
