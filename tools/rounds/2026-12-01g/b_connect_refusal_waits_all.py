"""Bug: `sender.connect()` raises a receiver's refusal (Ready(error): a worker built for another model, a target
that does not match) or death only once every other receiver it waits for has answered, or at its timeout: while
one worker is still starting (or never will), the refusal that arrived at once is held back for the whole connect
timeout, often minutes, and with `timeout=None` for good. A careful implementer could have written it from SEND-7's
"so receivers that fail together are reported together" and INIT-5's "naming the receivers that did not answer":
they collect every outcome of the handshake and raise one error at the end, dropping the 1 s collection window as a
detail of sends. Breaks INIT-5 ("for one that answered Ready(error), ReceiverError, without waiting for the timeout
or for the other receivers: within the reaction bound (10 s) of ... the Ready(error)") and SEND-7 ("keeps collecting
... until each of them has answered, 1 s has passed since that failure, or the call's timeout has passed, whichever
comes first").
"""
import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__, connecting, options  # noqa: F401
from weightsync.errors import FIX, SyncTimeoutError, receivers_error
from weightsync.future import RESTART_HINT
from weightsync.timers import SettleWindow

VIOLATES = ("INIT-5", "SEND-7")


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
            failed = {i: peers[i].machine for i in targets
                      if peers[i].machine.ended and peers[i].machine.incarnation != rejoin.get(i)}
            connecting_ = [i for i in targets if i not in failed and not peers[i].machine.live]
            if failed:
                window.failed(hub.clock())
                if not connecting_ or deadline.expired():  # BUG: every outcome collected first, one error at the end
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
