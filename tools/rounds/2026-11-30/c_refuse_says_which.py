"""The listener refuses a Join for an id it does not have with "no receiver N" and a Join with a wrong proof with
the generic refusal, so a process without any secret learns which receiver ids exist (RDV-4 wants one detail for
both)."""
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync import rendezvous as _rdv
import hmac as _hmac

VIOLATES = ("RDV-4",)


def _why_not(self, j, join, can_join):
    if join.receiver >= self.num_workers:  # BUG: says the id is unknown instead of the detail a wrong proof gets
        return f"refused: there is no receiver {join.receiver} (this sender has {self.num_workers})"
    expected = _rdv.proof(_rdv.secret_for(self.master, join.receiver), _rdv.JOIN, j.nonce, join.nonce, join.receiver)
    if not _hmac.compare_digest(expected, join.proof):
        return _rdv.REFUSED
    return can_join(join.receiver)


_rdv.Listener._why_not = _why_not
