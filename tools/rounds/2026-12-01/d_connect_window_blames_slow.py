"""Bug: when SEND-7's collection window closes inside `sender.connect()` (a receiver refused, 1 s passed,
another is still connecting), the error names the receivers still connecting too, with cause "timeout"
and as a SyncTimeoutError, although the call's timeout has not passed. The implementer read "timeout (it
had not answered when the call's ...)" as "it had not answered when the call gave up", and made the window's
end the moment every silent target counts as timed out. A receiver that is merely slow (a worker still
importing torch) is reported at fault, the error is also a SyncTimeoutError, and a caller that restarts
every receiver the error names kills a healthy worker mid-handshake."""
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync import connecting as _connecting
from weightsync import options
from weightsync.errors import FIX, TIMEOUT, SyncTimeoutError, receivers_error
from weightsync.future import RESTART_HINT
from weightsync.timers import SettleWindow

VIOLATES = ("SEND-7", "INIT-5")

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
                    causes = {i: m.cause for i, m in failed.items()}
                    details = {i: m.failure for i, m in failed.items()}
                    for i in connecting:  # the window is over: whoever has not answered timed out
                        causes[i], details[i] = TIMEOUT, "no Ready before the call gave up"
                    raise receivers_error(causes, details, publisher.version, RESTART_HINT)
            if not connecting:
                return
            if deadline.expired():
                raise SyncTimeoutError(connecting, publisher.version, hint="no Ready; did each worker start and "
                                       "call receiver.connect() with its handle or URL? (INIT-5). "
                                       f"{FIX}start it, or pass a longer timeout=; sender.drop(i) gives up on it")
            hub.wait_for_events(deadline.earlier(window.closes))


_connecting.connect = _buggy
