"""Bug: a send that targets a receiver whose handshake failed while no connect() waited for it (it answered
Ready(error) after a connect() had timed out) names it, as SEND-4 says, and from then on the sender counts it
as reported: the next `connect()` without workers no longer names it, and returns as if every receiver had
connected. The implementer read INIT-5's "is named so by the next sender.connect() without workers, once" as
"named once to the caller, by whichever call comes first", and cleared the mark where the send names it. A
trainer that retries `connect()` after a failed send (to learn which workers refused and why, before it
restarts them) is told that all is well.

Breaks INIT-5: such a receiver "is named so by the next sender.connect() without workers, once, however long
ago it failed".
"""
import weightsync.publishing as _publishing
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync.errors import LocalProtocolError, receivers_error
from weightsync.future import RESTART_HINT
from weightsync.sending import unsendable

VIOLATES = ("INIT-5",)


def check_targets(self, targets):
    """No version is consumed for a target known to be unusable (SEND-4)."""
    known, ids = unsendable(self.hub.peers[i].machine for i in targets)
    if known:
        for m in known:
            m.unreported = False  # BUG: named now, so "once" is spent
        raise receivers_error({m.id: m.cause for m in known}, {m.id: m.failure for m in known}, None, RESTART_HINT)
    if ids:
        raise LocalProtocolError(f"receiver(s) {ids} are not connected; call sender.connect() first (SEND-4)")


_publishing.Publisher.check_targets = check_targets
