"""Bug: a worker that joins by URL is welcomed at once but sent its Init only by a `sender.connect()`: the join
attaches its channel, and connect() sends the Init to every receiver that has a channel and none yet, also to
those that join while it waits. The implementer made the URL path follow the handle path (INIT-1: connect() sends
the Inits) and read RDV-5's closing sentence ("sender.connect(workers=[i]) waits for it to join and answer Ready")
as where the Init comes from. A worker that joins, or restarts and joins again, while the trainer only sends
(or sleeps) waits in its connect() with no Init until it times out, unless the trainer happens to call connect().

Breaks RDV-5 ("the sender answers Welcome ... and sends Init at once with the latest version, whether or not a
connect() runs") and RDV-6 ("A listening sender accepts joins from its creation until close(), also while no call
of its caller runs").
"""
import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__, connecting, hub, options  # noqa: F401
from weightsync.errors import FIX, SyncTimeoutError, receivers_error
from weightsync.future import RESTART_HINT
from weightsync.profiles import of_scheme
from weightsync.timers import SettleWindow

VIOLATES = ("RDV-5", "RDV-6")


def _adopt(self, peer, channel):
    peer.machine.joined()
    self._drop(peer)
    self.use(peer, channel, None, of_scheme(self.listener.address.kind))
    hub.log.debug("receiver %d joined by URL", peer.machine.id)
    # BUG: no Init here: connect() sends it, as it does for a handle


def connect(hub_, publisher, workers, deadline):
    peers = hub_.peers
    with hub_.locked(deadline):
        unreported = [i for i, p in enumerate(peers) if p.machine.unreported] if workers is None else []
        if workers is None:
            targets = [i for i, p in enumerate(peers) if p.machine.waiting] + unreported
        else:
            targets = [i for i in options.check_workers(workers, len(peers)) if not peers[i].machine.live]
        for i in targets:
            if i not in unreported:
                peers[i].machine.check_connect(hub_.listener is not None)
        rejoin = {i: peers[i].machine.incarnation for i in targets if peers[i].machine.ended and i not in unreported}
        asked = set()

        def send_inits():  # BUG: the Inits go out from connect() only, to whoever has a channel by now
            for i in targets:
                p = peers[i]
                if (i, p.machine.incarnation) not in asked and p.machine.init_due(p.channel is not None):
                    asked.add((i, p.machine.incarnation))
                    publisher.send_init(p)

        send_inits()
        hub_.take_arrived()
        window = SettleWindow()
        while True:
            send_inits()
            failed = {i: peers[i].machine for i in targets
                      if peers[i].machine.ended and peers[i].machine.incarnation != rejoin.get(i)}
            connecting_ = [i for i in targets if i not in failed and not peers[i].machine.live]
            if failed:
                window.failed(hub_.clock())
                if not connecting_ or window.over(hub_.clock()) or deadline.expired():
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
            hub_.wait_for_events(deadline.earlier(window.closes))


hub.Hub._adopt = _adopt
connecting.connect = connect
