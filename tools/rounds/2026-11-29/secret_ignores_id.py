"""Bug: every receiver of a listening sender gets the same secret: the per-receiver derivation hashes
the master secret with a fixed label and forgets the id. Whoever holds url(0) can join as receiver 1
(or any id) by editing `receiver=` in the URL. RDV-2: each receiver has its own secret, and knowing
receiver i's secret MUST NOT help to join as any other id. Plausible: the id formatting in the HMAC
message was lost in a refactor; every single-receiver test passes.

Seam: weightsync.rendezvous.secret_for.
"""
import hashlib as _hashlib
import hmac as _hmac

from weightsync import *  # noqa: F403
from weightsync import CAPABILITIES, __all__, sender  # noqa: F401
from weightsync import rendezvous as _rendezvous

VIOLATES = "RDV-2"


def _secret_for(master, rid):
    return _hmac.new(master, b"weightsync receiver", _hashlib.sha256).digest()


_rendezvous.secret_for = _secret_for
