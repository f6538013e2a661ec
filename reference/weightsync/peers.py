"""One receiver as the sender keeps it: its machine, channel, handle, slot group and data-plane lane.

A record of its own so that the hub (channels and waits), the publisher (versions) and
the helper thread read the same fields without importing each other.
"""

from __future__ import annotations

from dataclasses import dataclass

from .netplane import Lane
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

    @property
    def liveness(self) -> Liveness | None:
        """Its lease and our heartbeats, kept by its channel's session; only a network channel has them (NET-4)."""
        return None if self.channel is None else self.channel.session.liveness

    @property
    def network(self) -> bool:
        """Joined over TCP: a lane carries its versions (NET-2), a lease its liveness (NET-4)."""
        return self.liveness is not None
