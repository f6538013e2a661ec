"""Mutant: a TCP Init names the sender's own slot of the latest version instead of slot 0, the data plane's, as a
Unix Init does (Receives still name 0): a worker that joins before any send is sent slot 0 by chance and connects,
one that joins or rejoins once training started is named a slot it was never introduced to. Violates NET-1 (Init
then carries `slots` empty, `slot` 0). From a sixteenth outside round.

Seam: profiles.Profile.init (the network profile inherits it).
"""
import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__, profiles  # noqa: F401
from weightsync.messages import PROTOCOL_VERSION, Init

VIOLATES = ("NET-1",)
KILLED_BY = ("conformance/test_network.py::test_a_tcp_init_names_the_data_plane_and_carries_no_handle",)


def init(self, receiver, manifest, slots, version, slot, plane=None):
    named = slot if isinstance(self, profiles.NetworkProfile) else self.announced(slot)  # BUG: the sender's own slot
    return Init(PROTOCOL_VERSION, receiver, manifest, self.introduced(slots), version, named,
                capabilities=self.capabilities, data_plane=plane)


profiles.Profile.init = init
