"""Bug: a send whose targets include several receivers known to be gone or failed raises for the first of them
only (in the order of `workers`): when the OOM killer took two workers, `send()` raises ReceiverDiedError naming
one; the trainer restarts that one, sends again, and only then learns of the second (and a gone worker beside a
failed one is reported as one kind only). A careful implementer could have written it from SEND-4 read on its
own, as a precondition checked target by target ("A send that targets a receiver known to be gone, failed or not
connected raises before anything is written"), the usual validate-and-raise loop, without carrying SEND-7's
"name every receiver at fault" over to errors raised before publishing. Breaks SEND-4 ("when any target is gone
or failed, the error of SEND-7 naming those, with their causes") and SEND-7 ("An error that a send ... raises
about receivers MUST name every receiver at fault that is known when it is raised").
"""
import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__, publishing  # noqa: F401
from weightsync.errors import LocalProtocolError, receivers_error
from weightsync.future import RESTART_HINT

VIOLATES = ("SEND-4", "SEND-7")


def check_targets(self, targets: list) -> None:
    for i in targets:  # BUG: the first unusable target is raised, the others are not looked at
        m = self.hub.peers[i].machine
        if m.live:
            continue
        if m.ended:
            raise receivers_error({m.id: m.cause}, {m.id: m.failure}, None, RESTART_HINT)
        raise LocalProtocolError(f"receiver(s) {[m.id]} are not connected; call sender.connect() first (SEND-4)")


publishing.Publisher.check_targets = check_targets
