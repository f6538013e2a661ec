"""Bug: `sender.connect(timeout=0)` raises SyncTimeoutError naming a receiver whose Ready has already arrived (it
answered after an earlier `connect()` timed out), instead of taking that Ready and returning. Any positive timeout
works, since the wait reads the channels. A supervisor that checks without blocking whether its stragglers have
come (`connect(timeout=0)` between training steps) is told forever that a worker which is in fact connected "did
not answer", and a send to it keeps raising LocalProtocolError ("not connected"). A careful implementer could have
written it by folding the read before the loop into the loop's wait ("the wait for events reads every channel
anyway"), with the loop testing its deadline before it waits, the usual shape of a bounded wait. Breaks API-7 ("a
timeout of 0 bounds each wait at zero: a call that need not wait goes on as it would with any other timeout (... a
`connect` whose Ready or Init has arrived ...)") and INIT-5 (SyncTimeoutError names "the receivers that did not
answer").
"""
import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__, connecting, options  # noqa: F401
from weightsync.errors import FIX, SyncTimeoutError, receivers_error
from weightsync.future import RESTART_HINT
from weightsync.timers import SettleWindow

VIOLATES = ("API-7", "INIT-5")


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
        # BUG: no read of what has arrived here: the wait below reads the channels (but only once it waits)
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
