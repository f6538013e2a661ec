"""Bug: a sender listening on tcp:// made with `lease=` other than 5 s watches its receivers with that lease but
announces the default 5 s in Init (`data_plane.lease_ms` = 5000). A trainer that chose a long lease for a slow or
congested network (`lease=30, heartbeat=10`) sees its workers give up on it after 5 s of silence, between two of
its Heartbeats: every worker stops while the trainer is idle for a few seconds, and joins again only if restarted.
With a short lease (`lease=1`) the workers are told 5 s, pace their Heartbeats at 1 s, and the sender cuts them off
as gone. A careful implementer could have written it from API-10: "`lease` (how long the sender waits on a silent
receiver, ...)" reads as the sender's own patience, and the lease of Init as the profile's constant (NET-4: "the
reference's default: 5 s"), so the Init was built from the constant. Breaks API-10 ("`lease` (how long the sender
waits on a silent receiver, and the `lease_ms` it announces") and NET-4 ("A side that has received nothing on the
channel for the lease of Init (`lease_ms`) ... treats the channel as ended").
"""
import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__, limits, netplane  # noqa: F401
from weightsync.messages import DataPlane

VIOLATES = ("API-10", "NET-4")


def data_plane(self, advertised_host, nbytes):
    """Init's `data_plane` for the incarnation this store serves: a fresh prefix (NET-1)."""
    return DataPlane(netplane.BACKEND, f"{advertised_host}:{self.port}", netplane.secrets.token_hex(16), nbytes,
                     netplane._ms(self.transfer_timeout),
                     netplane._ms(limits.LEASE))  # BUG: the protocol's lease; `lease=` is the sender's own patience


netplane.Store.data_plane = data_plane
