"""Mutant (the timeout sweep, test_timeouts.py): `sender.connect(0)` gives up before it reads the Readys that
have arrived. The implementer wrote the handshake's wait as the usual loop, "until every target is live: if the
deadline passed, raise; else poll the channels until it", which reads the channels only while it waits, so a
connect whose timeout is already over never looks. A trainer that polls `connect(0)` between steps until its
workers are up is told SyncTimeoutError for ever (or until a call with time to spare reads the Readys). API-7: a
timeout of 0 lets a call that need not wait go on; INIT-4: a receiver whose Ready arrived is live.

Seam: connecting.connect, the handshake's loop, without its first look at what has arrived.
"""

from collections.abc import Iterable

from weightsync import *
from weightsync import CAPABILITIES, __all__, options  # noqa: F401
from weightsync import connecting as _cm
from weightsync.clock import Deadline
from weightsync.errors import FIX, SyncTimeoutError, receivers_error
from weightsync.future import RESTART_HINT
from weightsync.hub import Hub
from weightsync.publishing import Publisher
from weightsync.timers import SettleWindow

VIOLATES = ("API-7", "INIT-4")
KILLED_BY = ("conformance/test_timeouts.py::test_a_zero_timeout_goes_on_where_nothing_holds_the_call_back",)


def connect(hub: Hub, publisher: Publisher, workers: Iterable[int] | None, deadline: Deadline) -> None:
    """What Sender.connect() does, with its arguments checked: see its docstring."""
    peers = hub.peers
    with hub.locked(deadline):
        # A receiver whose handshake failed while no connect() waited for it is named by the next one (INIT-5).
        unreported = [i for i, p in enumerate(peers) if p.machine.unreported] if workers is None else []
        if workers is None:
            targets = [i for i, p in enumerate(peers) if p.machine.waiting] + unreported
        else:
            targets = [i for i in options.check_workers(workers, len(peers))
                       if not peers[i].machine.live]
        for i in targets:
            if i not in unreported:
                peers[i].machine.check_connect(hub.listener is not None)  # LIFE-2
        # A listening sender waits for a new process to join in place of a gone or failed one (RDV-5).
        rejoin = {i: peers[i].machine.incarnation for i in targets if peers[i].machine.ended and i not in unreported}
        for i in targets:
            if peers[i].machine.init_due(peers[i].channel is not None):
                publisher.send_init(peers[i])
        # BUG: no look at the Readys that have arrived: the loop below reads them only while it waits, and a
        # connect whose timeout is already over never waits.
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
