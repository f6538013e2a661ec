"""Bug: on a listening sender, `connect(workers=[i])` for a receiver that is gone or failed waits for a new
process to join by URL (RDV-5), but never looks at that receiver's failures again: a target that was
already ended when the call began is left out of the failure check for the whole call. The implementer
reasoned that the ended state it sees belongs to the old process being replaced, so "ended" must not end
the wait, and keyed the exclusion on the target rather than on the incarnation: when the new process
itself refuses the Init (Ready(error): its target does not match) or dies during its handshake, the call
goes on waiting until its timeout and raises SyncTimeoutError (cause "timeout") instead of the
ReceiverError / ReceiverDiedError with the receiver's reason.

Breaks INIT-5 ("for a receiver that is gone, `sender.connect` raises ReceiverDiedError, and for one that
answered Ready(error), ReceiverError, without waiting for the timeout ... within the reaction bound") and
SEND-7 (the error names the receiver with its cause `error`, not `timeout`).
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
            targets = [i for i in options.check_workers(workers, len(peers))
                       if not peers[i].machine.live]
        for i in targets:
            if i not in unreported:
                peers[i].machine.check_connect(hub.listener is not None)
        # A listening sender waits for a new process to join in place of a gone or failed one (RDV-5).
        rejoin = {i for i in targets if peers[i].machine.ended and i not in unreported}
        for i in targets:
            if peers[i].machine.init_due(peers[i].channel is not None):
                publisher.send_init(peers[i])
        hub.take_arrived()
        window = SettleWindow()
        while True:
            # BUG: a target waited for as a rejoin is never counted as failed: its ended state is taken for the
            # old process's, also once the process that joined in its place refused or died.
            failed = {i: peers[i].machine for i in targets
                      if peers[i].machine.ended and i not in rejoin}
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
