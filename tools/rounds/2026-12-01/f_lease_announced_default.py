"""Bug: a TCP sender announces the default lease (5 s) in every Init's `data_plane.lease_ms`, whatever `lease=`
it was given, while it holds its receivers to the lease it was given. The implementer added the `lease` option
(API-10) to the sender's own timers and left the Init's field on the constant it started from ("the reference's
default: 5 s"). The two ends then disagree: with `lease=30, heartbeat=10` the workers give the trainer up after
5 s of its silence, between two of its heartbeats; with `lease=1` they heartbeat once a second (a fifth of 5 s,
capped at 1 s), no faster than the trainer's lease, and an idle worker is named gone. NET-4: Init's `lease_ms`
is the lease (the `lease` option of API-10, whose value is "the lease_ms it announces"), and a receiver's
heartbeat interval is at most a fifth of it.
"""
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync import limits, netplane
from weightsync.messages import DataPlane

VIOLATES = ("NET-4", "API-10")

_orig = netplane.Store.data_plane


def _data_plane(self, advertised_host, nbytes):
    import secrets
    return DataPlane(netplane.BACKEND, f"{advertised_host}:{self.port}", secrets.token_hex(16), nbytes,
                     netplane._ms(self.transfer_timeout), netplane._ms(limits.LEASE))


netplane.Store.data_plane = _data_plane
