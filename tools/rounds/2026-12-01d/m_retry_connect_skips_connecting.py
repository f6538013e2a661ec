"""Bug: `sender.connect()` without `workers` connects, and waits for, only the receivers that are
*unconnected*; one that is connecting (its Init went out, no Ready yet, because an earlier
`connect(timeout=...)` timed out while its process was slow to start) is left out, so the retry
returns at once although that receiver is not live, and the next send to it raises
LocalProtocolError ("not connected"). The implementer followed section 9.1's "`sender.connect()`
with no `workers` connects every unconnected receiver" to the letter, and took "connecting" for a
receiver the earlier call already dealt with (it was sent its Init, nothing is left to send).

Breaks INIT-5 ("`connect` on either side is bounded by its timeout ... and raises SyncTimeoutError
naming the receivers that did not answer"), as API-2 words it: "connect() without workers connects
every receiver that is neither live nor failed nor gone ... after it raised for one receiver,
calling it again waits for the others".
"""
import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__, connecting, options  # noqa: F401
from weightsync.errors import FIX, SyncTimeoutError, receivers_error
from weightsync.future import RESTART_HINT
from weightsync.protocol import PeerState
from weightsync.timers import SettleWindow

VIOLATES = ("INIT-5", "API-2")


def connect(hub, publisher, workers, deadline):
    peers = hub.peers
    with hub.locked(deadline):
        unreported = [i for i, p in enumerate(peers) if p.machine.unreported] if workers is None else []
        if workers is None:
            # BUG: "connects every unconnected receiver" (9.1): a connecting one (Init sent by an earlier
            # connect() that timed out) is taken as already handled, and neither waited for nor named.
            targets = [i for i, p in enumerate(peers) if p.machine.state is PeerState.UNCONNECTED] + unreported
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
