"""Bug: a worker that joins over TCP after the trainer has published versions gets an Init that names the sender's
slot of the latest version (1, 2, ...) instead of slot 0, the data plane's; Receives still name slot 0. Workers that
join at the start (version 0 sits in slot 0) connect; one that joins after training started (a late worker, a
restarted one) is sent a slot it was never introduced to: its connect() fails and the trainer's connect() names it,
or an implementation that takes the slot id as a buffer index reads the wrong one. A careful implementer could have written it from INIT-1 ("Init carries ... the latest published
version and the slot holding it") and NET-1's second paragraph, whose example is Receive(v, 0): the Init was built by
the code shared with the Unix profile and only Receives were given the data plane's slot. Breaks NET-1 ("Init then
carries `slots` empty, `slot` 0"; "In this profile every slot id on the wire is 0").
"""
import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__, profiles  # noqa: F401
from weightsync.messages import PROTOCOL_VERSION, Init

VIOLATES = ("NET-1",)


def init(self, receiver, manifest, slots, version, slot, plane=None):
    """The Init that makes `receiver` connecting: the slots it may read, the latest version and where (INIT-1)."""
    return Init(PROTOCOL_VERSION, receiver, manifest, self.introduced(slots), version, slot,  # BUG: the slot as is
                capabilities=self.capabilities, data_plane=plane)


profiles.NetworkProfile.init = init
