"""The handshake: Init to each receiver not yet live, then the wait for its Ready (INIT-1..5, SEND-7).

Sender.connect() checks nothing but the timeout and calls `connect`; the loop lives here
because it is the one wait that ends in "live" rather than in an answer to a version.
"""

from __future__ import annotations

from collections.abc import Iterable

from . import options
from .clock import Deadline
from .errors import FIX, TIMEOUT, SyncTimeoutError, receivers_error
from .future import RESTART_HINT
from .hub import Hub
from .publishing import Publisher
from .timers import SettleWindow


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
        hub.take_arrived()
        window = SettleWindow()
        while True:
            failed = {i: peers[i].machine for i in targets
                      if peers[i].machine.ended and peers[i].machine.incarnation != rejoin.get(i)}
            connecting = [i for i in targets if i not in failed and not peers[i].machine.live]
            if failed:
                window.failed(hub.clock())
                timed_out = deadline.expired()
                if not connecting or window.over(hub.clock()) or timed_out:
                    for m in failed.values():
                        m.unreported = False  # named once (INIT-5)
                    causes = {i: m.cause for i, m in failed.items()}
                    details = {i: m.failure for i, m in failed.items()}
                    if timed_out:  # the silent are at fault too, beside the failed (SEND-7, INIT-5)
                        causes.update(dict.fromkeys(connecting, TIMEOUT))
                        details.update(dict.fromkeys(connecting, "no Ready before the timeout"))
                    raise receivers_error(causes, details, publisher.version, RESTART_HINT)
            if not connecting:
                return
            if deadline.expired():
                raise SyncTimeoutError(connecting, publisher.version, hint="no Ready; did each worker start and "
                                       "call receiver.connect() with its handle or URL? (INIT-5). "
                                       f"{FIX}start it, or pass a longer timeout=; sender.drop(i) gives up on it")
            hub.wait_for_events(deadline.earlier(window.closes))
