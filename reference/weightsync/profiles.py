"""The wire profiles as objects: what sets the Unix profile (Part II) apart from the network profile (section 15).

A driver never asks whether a peer is on the network; it asks that peer's profile. The
sender chooses a receiver's profile once, when it gives it a channel (a socket pair or a
Unix listener: `UNIX`; a tcp:// listener: `NETWORK`, see `of_scheme`); a receiver once, when
its Init arrives (`of_init`: an Init that names a data plane, NET-1). Every rule here is
pure, like the rest of the core: the transfers of the network profile are netplane.py's,
and the drivers pick a profile's I/O by its class (publishing.py, pending.py). A third
profile is a class here and a driver module for its transfers.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

from . import limits
from .errors import RemoteProtocolError
from .messages import PROTOCOL_VERSION, DataPlane, Entry, Init, Receive, SlotInfo
from .timers import Liveness

_T = TypeVar("_T")


class Profile:
    """The Unix profile's answers, which the others change where their section says so."""

    name = "unix"
    #: What Init and Ready name (NET-1: the receiver echoes the sender's).
    capabilities: tuple[str, ...] = ()
    #: A lease and heartbeats keep the peer's liveness (NET-4): its channel is read, and its timers run,
    #: whether or not a call waits; without one, only the channel's end says it is gone (CON-1).
    leased = False
    #: Only host memory crosses (NET-7): slots on the CPU, and a copying receiver's target on any one device.
    host_memory = False
    #: Slots a receiver knows without being handed one: those its versions arrive in (NET-1).
    data_slots: frozenset[int] = frozenset()

    def slot_source(self, weights_device: str) -> str:
        """The device a receiver's slots are on when `devices=` names none: the weights' own (CUDA-1)."""
        return weights_device

    def check_slot_device(self, device: str) -> None:
        """A slot device `devices=` may name here; every one that exists (CUDA-1)."""

    def introduced(self, slots: Sequence[_T]) -> tuple[_T, ...]:
        """Of the slots a receiver does not know yet, those a message introduces, their handles beside it (SLOT-1,
        WIRE-4)."""
        return tuple(slots)

    def announced(self, slot: int) -> int:
        """The slot an Init or a Receive names for the version in `slot` (SLOT-1)."""
        return slot

    def stands_for(self, slot: int, slots: list[int]) -> tuple[int | None, list[int] | None]:
        """What an Init or a Receive stands for where it does not say: the sender's slot, and the slots the receiver
        knows from then on, for its machine's step (PeerMachine.sent); (None, None) where the message says all."""
        return None, None

    def init(self, receiver: int, manifest: tuple[Entry, ...], slots: Sequence[SlotInfo], version: int, slot: int,
             plane: DataPlane | None = None) -> Init:
        """The Init that makes `receiver` connecting: the slots it may read, the latest version and where (INIT-1)."""
        return Init(PROTOCOL_VERSION, receiver, manifest, self.introduced(slots), version, self.announced(slot),
                    capabilities=self.capabilities, data_plane=plane)

    def receive(self, version: int, slot: int, new_slots: Sequence[SlotInfo]) -> Receive:
        """The Receive of `version`, in `slot`, introducing `new_slots` (SEND-1, SLOT-1)."""
        return Receive(version, self.announced(slot), self.introduced(new_slots) if new_slots else ())

    def sender_liveness(self, now: float, lease: float, heartbeat: float) -> Liveness | None:
        """The sender's lease on a receiver and its own heartbeats to it; None where the channel's end suffices."""
        return None

    def receiver_liveness(self, now: float, lease: float) -> Liveness | None:
        """A receiver's lease on its sender and its own heartbeats; None where the channel's end suffices."""
        return None

    def lease_expired(self, why: str, state: str) -> RemoteProtocolError:
        """A receiver whose sender fell silent past the lease stops as after a violation, and says why (NET-4);
        the sender names such a receiver gone instead, as at the end of its channel (SEND-3)."""
        return RemoteProtocolError(f"the sender: {why}", state=state, event="lease", requirement="NET-4")


class UnixProfile(Profile):
    """Part II: slots' handles beside the frames of a Unix socket (WIRE-4); a closed channel is the only end."""


class NetworkProfile(Profile):
    """Section 15: a TCP channel without handles, versions on a data plane of their own, liveness by lease."""

    name = "network"
    capabilities = ("network",)
    leased = True
    host_memory = True
    data_slots = frozenset({0})

    def slot_source(self, weights_device: str) -> str:
        """NET-7: a receiver that joins over TCP reads slots on the CPU, whatever device the weights are on."""
        return "cpu"

    def check_slot_device(self, device: str) -> None:
        """NET-7: the network carries host memory; a GPU slot device is refused."""
        if not device.startswith("cpu"):
            raise ValueError(f"slot device {device} requested, but a sender that listens on tcp:// keeps its slots on "
                             "the CPU: the network carries host memory, and a worker copies into a target on its GPU "
                             "(NET-7). Leave devices= out")

    def introduced(self, slots: Sequence[_T]) -> tuple[_T, ...]:
        """NET-1: a frame lists no slot; nothing travels beside it."""
        return ()

    def announced(self, slot: int) -> int:
        """NET-1, NET-2: every version arrives in slot 0, the data plane's; the transfer carries the slot's bytes."""
        return 0

    def stands_for(self, slot: int, slots: list[int]) -> tuple[int | None, list[int] | None]:
        """NET-1: slot 0 stands for the sender's slot the transfer reads, and the receiver knows every slot."""
        return slot, slots

    def sender_liveness(self, now: float, lease: float, heartbeat: float) -> Liveness | None:
        return Liveness(now, lease, heartbeat)  # NET-4

    def receiver_liveness(self, now: float, lease: float) -> Liveness | None:
        return Liveness(now, lease, limits.receiver_heartbeat(lease))  # NET-4: at most a fifth of the lease


UNIX = UnixProfile()
NETWORK = NetworkProfile()


def of_init(init: Init) -> Profile:
    """The profile an Init speaks: the network's when it names a data plane (NET-1)."""
    return UNIX if init.data_plane is None else NETWORK


def of_scheme(kind: str) -> Profile:
    """The profile of receivers that join at a listening address of this kind ("unix", "abstract", "tcp", RDV-1)."""
    return NETWORK if kind == "tcp" else UNIX


__all__ = ["Profile", "UnixProfile", "NetworkProfile", "UNIX", "NETWORK", "of_init", "of_scheme"]
