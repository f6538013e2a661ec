"""Bug: a listening sender gives every receiver one secret, its master secret: `url(0)`, `url(1)`, ... differ only
in `receiver=`. Anyone holding one worker's URL (a log line, a job script of one worker, a config given to an
untrusted evaluator) can join as any other id by editing the number, and so take a free place of another worker,
or the place of one that died and is waiting to be restarted, and receive the weights meant for it. A careful
implementer could have written it from RDV-3: the join's proof is an HMAC "over ... the id as 8 bytes", so the
id is already bound into every proof and a per-receiver secret looked redundant; one random 32-byte secret per
sender "is" receiver i's secret for every i. Breaks RDV-2 ("Each receiver has its own secret, fixed for the
sender's life; knowing receiver i's secret MUST NOT help to join as any other id") and RDV-4 ("A Join for an id
... whose proof is wrong, MUST be answered by Refuse").
"""
import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__, rendezvous  # noqa: F401

VIOLATES = ("RDV-2", "RDV-4")


def secret_for(master: bytes, rid: int) -> bytes:
    """Receiver `rid`'s secret."""
    return master  # BUG: the proof binds the id already, so one secret per sender seemed enough


rendezvous.secret_for = secret_for
