"""Bug: the sender records which slots it has introduced per slot group instead of per receiver: a slot allocated
during a send to a subset of the workers is introduced (its handle in `new_slots`) to that send's targets only,
and counted as known from then on by every receiver of the group. When a later send names that slot to a worker
that was left out of the first one, its Receive carries no handle; the worker finds a slot it never mapped, stops
as after a protocol violation, and the trainer sees it gone (ReceiverDiedError) in the middle of an ordinary
stream. A careful implementer could have written it from SLOT-5 ("The sender introduces each slot to a receiver
once"), read as "introduces each slot once", with the Init listing every slot so that late joiners and restarted
workers know them all: it holds whenever every send goes to all the workers, and fails only once subsets
interleave with sends to all while a slow worker makes the sender allocate. Breaks SLOT-1 ("A slot's handle MUST
reach a receiver (in Init or in `Receive.new_slots`) before any message names that slot"), SEND-1 (a send to the
others never completes) and CONS-5 ("A send to a subset of receivers leaves every other receiver's version and
weights unchanged": here it ends the left-out worker's connection later).
"""
import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync.hub import Hub
from weightsync.protocol import PeerMachine

VIOLATES = ("SLOT-1", "SEND-1", "CONS-5")


def _get_known(self):
    return self.__dict__["_known"]


def _set_known(self, value):
    shared = self.__dict__.get("_group_known")
    if shared is None:
        self.__dict__["_known"] = set(value)
    else:  # BUG: what one receiver of the group was introduced to counts as introduced to all of them
        shared.update(value)
        self.__dict__["_known"] = shared


PeerMachine.known = property(_get_known, _set_known)

_new_peer = Hub.new_peer


def new_peer(self, i, group, pair=None):
    peer = _new_peer(self, i, group, pair)
    shared = group.__dict__.setdefault("introduced", set())  # the slots introduced in this group
    peer.machine.__dict__["_group_known"] = shared
    peer.machine.known = set()
    return peer


Hub.new_peer = new_peer
