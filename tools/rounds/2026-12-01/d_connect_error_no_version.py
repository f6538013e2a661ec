"""Bug: every receiver error that `sender.connect()` raises (ReceiverError for a refusal, ReceiverDiedError,
SyncTimeoutError) carries `.version` None. The implementer followed the rows of spec 8.4 that say "None:
nothing was published" and reasoned that a handshake publishes nothing either; but INIT-5 and 8.4 give a
connect error the latest published version, the one its Init carried, which tells the caller (and a
restarted worker's log) which version the refusing or silent receiver was asked to take."""
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync import connecting as _connecting
from weightsync import options
from weightsync.errors import FIX, SyncTimeoutError, receivers_error
from weightsync.future import RESTART_HINT
from weightsync.timers import SettleWindow

VIOLATES = ("INIT-5", "API-4")

_orig = _connecting.connect


def _buggy(hub, publisher, workers, deadline):
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
                    # a handshake publishes nothing: no version to name
                    raise receivers_error({i: m.cause for i, m in failed.items()},
                                          {i: m.failure for i, m in failed.items()}, None, RESTART_HINT)
            if not connecting:
                return
            if deadline.expired():
                raise SyncTimeoutError(connecting, None, hint="no Ready; did each worker start and "
                                       "call receiver.connect() with its handle or URL? (INIT-5). "
                                       f"{FIX}start it, or pass a longer timeout=; sender.drop(i) gives up on it")
            hub.wait_for_events(deadline.earlier(window.closes))


_connecting.connect = _buggy
