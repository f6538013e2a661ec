"""Mutant: the listening sender takes a Join's receiver id on trust and never checks its proof ("only our own
workers know the address"), so any process that can reach the address joins as any receiver and gets
Init, the slot handles and the weights. Violates RDV-4 ("a Join ... whose proof is wrong MUST be answered
by Refuse") and RDV-3 (the sender MUST compare the proof with the one it computes).

Seam: Listener._why_not (why a Join is refused: its proof, its id, whether that receiver may join now), which
checks only the id's range and the last.
The Hub makes its Listener in __init__, so the listener's class is swapped after it.
"""

import functools

from weightsync import *
from weightsync import CAPABILITIES, __all__, rendezvous  # noqa: F401
from weightsync import Sender as _Sender

VIOLATES = ("RDV-4", "RDV-3")
KILLED_BY = ("conformance/test_rendezvous.py::test_a_joiner_without_the_secret_learns_nothing",)


class _TrustingListener(rendezvous.Listener):
    def _why_not(self, j, join, can_join):
        if join.receiver >= self.num_workers:
            return rendezvous.REFUSED
        return can_join(join.receiver)  # BUG: the proof is never compared


class Sender(_Sender):
    @functools.wraps(_Sender.__init__)  # the public signature stays the reference's (API-1)
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self._hub.listener is not None:
            self._hub.listener.__class__ = _TrustingListener
