"""Mutant: the sender's side of each network receiver's data plane starts the gloo rendezvous as soon as
Init is sent, on the one store connection every receiver's side shares (one store for all, as protocol
1.1 first had), instead of on a connection of its own once the receiver has set its `joined` key. A receiver that takes its Init and never builds its
side leaves that rendezvous waiting for the whole transfer timeout (60 s), and the shared connection is
busy all that time: receivers that join after it cannot build their groups, so their joins and sends
fail. Violates NET-5 ("a receiver that never builds its side of the data plane delays no other").

Seams: Lane._connect (the store connection a lane uses) and Lane._joined (the wait for the key); the
sender's Lane class is swapped in the netplane module, where the sender looks it up. The one shared
store is tests/mutants/shared_store.py's.
"""

from weightsync import *
from weightsync import CAPABILITIES, __all__, netplane  # noqa: F401

from . import shared_store  # noqa: F401 - one store for every receiver: the connection below is shared

VIOLATES = "NET-5"
KILLED_BY = ("conformance/test_network.py::test_a_receiver_that_never_builds_its_data_plane_delays_no_other",)


class _AtOnceLane(netplane.Lane):
    def _connect(self, timeout):
        return self._store.store  # BUG: one connection for every lane, the sender's own

    def _joined(self, keys, timeout):
        return True  # BUG: rendezvous at once, whether or not the receiver ever comes


netplane.Lane = _AtOnceLane
