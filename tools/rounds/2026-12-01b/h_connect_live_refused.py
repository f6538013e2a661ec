"""Bug: `sender.connect(workers=[...])` naming a receiver that is already live raises LocalProtocolError ("restart
it with handle(i) first") instead of leaving it as it is. The implementer carried LIFE-3's rule (handle(i) for a
live receiver raises) over to connect(workers=): a live receiver cannot be connected again, so naming one must be
a mistake of the caller. API-2 says a named receiver that is already live is left as it is: a trainer's restart
path that reconnects a list of workers (`connect(workers=restarted)`, with one of them already back, or the whole
group after a partial failure) fails, and the receivers named after the live one are never sent their Init.
"""
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__  # noqa: F401

from weightsync import connecting as _cm
from weightsync import options
from weightsync.errors import FIX, SyncTimeoutError, receivers_error
from weightsync.future import RESTART_HINT
from weightsync.timers import SettleWindow

VIOLATES = ("API-2",)


def connect(hub, publisher, workers, deadline):
    peers = hub.peers
    with hub.locked(deadline):
        unreported = [i for i, p in enumerate(peers) if p.machine.unreported] if workers is None else []
        if workers is None:
            targets = [i for i, p in enumerate(peers) if p.machine.waiting] + unreported
        else:
            # BUG: every named receiver is a target, the live ones included (check_connect refuses them).
            targets = options.check_workers(workers, len(peers))
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
            hub.wait_for_events(deadline.earlier(window.closes))


_cm.connect = connect
