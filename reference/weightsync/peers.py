"""One receiver as the sender keeps it: its machine, channel, handle, slot group, profile and data-plane lane.

A record of its own so that the hub (channels and waits), the publisher (versions) and
the helper thread read the same fields without importing each other.
"""

from __future__ import annotations

from dataclasses import dataclass

from .netplane import Lane, Store
from .profiles import UNIX, Profile
from .protocol import PeerMachine
from .slots import Group
from .timers import Liveness
from .transport import Channel, Handle


@dataclass
class Peer:
    machine: PeerMachine
    channel: Channel | None  # None while a receiver that joins by URL has not come
    handle: Handle | None  # None once consumed, and for a receiver that joins by URL
    group: Group
    lane: Lane | None = None
    lane_failure: tuple[int, str] | None = None  # (incarnation, why), left by the lane's thread
    store_made: tuple[Channel, Store | Exception] | None = None  # its Init's store, left by the store's thread
    profile: Profile = UNIX  # the one its channel speaks, chosen by Hub.use

    @property
    def liveness(self) -> Liveness | None:
        """Its lease and our heartbeats, kept by its channel's session; only a leased profile's have them (NET-4)."""
        return None if self.channel is None else self.channel.session.liveness
