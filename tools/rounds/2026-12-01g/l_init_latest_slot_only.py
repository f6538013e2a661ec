"""Bug: the Init lists only the slot that holds the latest version (with its one handle), not every slot of the
receiver's group; the others are introduced later, each in the first Receive that follows, in `new_slots`. Receivers
of this implementation work, but a peer written against the wire profile that maps the Init's slots as the set it
will read (or counts on at least two, SLOT-1) finds one, and every send after a join carries handles it did not
expect yet. A careful implementer could have written it from spec 3.1's "new_slots lists the slots the receiver has
not been given before ... a sender MAY introduce other slots there too, each still once (SLOT-5)", reasoning that a
joiner needs only the slot it reads now and that mapping slots it may never read wastes descriptors (LAYOUT-2).
Breaks INIT-1 ("Init carries the protocol version, the receiver id, the manifest, every slot with its handle, the
latest published version and the slot holding it") and MSG-1 (Table 1: Init's `slots`, "every slot that exists").
"""
import weightsync  # noqa: F401
import weightsync.publishing as _publishing
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync.profiles import UnixProfile

VIOLATES = ("INIT-1", "MSG-1")


def _send_unix_init(self, peer):
    group, latest = peer.group, peer.group.latest
    assert latest is not None, "version 0 is published when a group is made"
    # BUG: only the slot the joiner reads now; the others come in the next Receives' new_slots
    init = peer.profile.init(peer.machine.id, group.manifest, (latest.info(),), self.version, latest.id)
    self.hub.write(peer, init, group.handles([latest]))


_publishing._INITS[UnixProfile] = _send_unix_init
