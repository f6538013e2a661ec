"""Bug: a send raises LocalProtocolError ("not connected; call sender.connect() first") while ANY receiver of the
sender is unconnected or connecting, not only when one of its targets is. A trainer that connects its workers as
they come up (`connect(workers=[0])` for the first, the others still loading their model) cannot
`send(workers=[0])` until the slowest worker connected, and after a restart (`sender.handle(3)` for a worker that
died, a new process starting) every send to the healthy workers raises until the new one has connected, so the
trainer stalls on the one worker it chose to leave out. A careful implementer could have written it from 9.1
("Until a receiver is connected, a send that targets it raises") read with the default `workers=None` in mind:
"connected" became a phase of the sender, reached when connect() has connected every receiver, and the check
was written once over the sender's receivers. Breaks SEND-4 ("A send that targets a receiver known to be ... not
connected raises"; only its targets are judged: 9.1 "send to the connected ones with `workers=`").
"""
import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__, publishing  # noqa: F401
from weightsync.errors import LocalProtocolError, receivers_error
from weightsync.future import RESTART_HINT
from weightsync.sending import unsendable

VIOLATES = ("SEND-4",)


def check_targets(self, targets):
    """No version is consumed for a target known to be unusable (SEND-4)."""
    known, _ = unsendable(self.hub.peers[i].machine for i in targets)
    if known:
        raise receivers_error({m.id: m.cause for m in known}, {m.id: m.failure for m in known}, None, RESTART_HINT)
    # BUG: "not connected" judged over the sender: every receiver not live yet, targeted or not
    ids = sorted(p.machine.id for p in self.hub.peers if p.machine.waiting)
    if ids:
        raise LocalProtocolError(f"receiver(s) {ids} are not connected; call sender.connect() first (SEND-4)")


publishing.Publisher.check_targets = check_targets
