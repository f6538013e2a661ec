"""The wire profiles' rules, pure (issue 42, item 4): what the Unix profile and the network profile each say.

Written from spec/12-wire.md and spec/15-network.md: which slots a message lists and names
(WIRE-4, NET-1, NET-2), the capability echo (NET-1), the slot devices (CUDA-1, NET-7), the
lease and heartbeats (NET-4), and the typed data plane the wire carries as a map (NET-1).
"""

from __future__ import annotations

import msgpack
import pytest

from weightsync import RemoteProtocolError, wire
from weightsync.messages import PROTOCOL_VERSION, DataPlane, Entry, Init, Receive, SlotInfo
from weightsync.profiles import NETWORK, UNIX, NetworkProfile, UnixProfile, of_init, of_scheme
from weightsync.receiving import ReceiverMachine

MANIFEST = (Entry("w", "float32", (4,), "cpu", 0, 16),)
SLOTS = (SlotInfo(0, "cpu", 64), SlotInfo(1, "cpu", 64), SlotInfo(2, "cpu", 64))
PLANE = DataPlane("gloo", "127.0.0.1:29500", "ab" * 16, 64, 60_000, 5_000)


def test_each_init_speaks_the_profile_it_names():
    """NET-1: an Init that names a data plane is the network profile's; every other the Unix profile's. A receiver
    that joins at a tcp:// address speaks the network profile, at a Unix one the Unix profile (RDV-1)."""
    assert of_init(UNIX.init(0, MANIFEST, SLOTS, 3, 1)) is UNIX
    assert of_init(NETWORK.init(0, MANIFEST, SLOTS, 3, 1, PLANE)) is NETWORK
    assert (of_scheme("tcp"), of_scheme("unix"), of_scheme("abstract")) == (NETWORK, UNIX, UNIX)
    assert isinstance(UNIX, UnixProfile) and isinstance(NETWORK, NetworkProfile)


def test_a_unix_init_lists_the_slots_and_names_the_latest():
    """INIT-1, WIRE-4: the group's slots, whose handles travel beside it, and the slot of the latest version."""
    assert UNIX.init(2, MANIFEST, SLOTS, 3, 1) == Init(PROTOCOL_VERSION, 2, MANIFEST, SLOTS, 3, 1)
    assert UNIX.receive(4, 2, SLOTS[2:]) == Receive(4, 2, SLOTS[2:])
    assert UNIX.introduced([1, 2]) == (1, 2) and UNIX.announced(2) == 2


def test_a_network_init_lists_no_slot_names_slot_0_the_capability_and_the_data_plane():
    """NET-1: slots empty, slot 0, the capability `network`, and `data_plane`; NET-2: each Receive names slot 0
    and introduces nothing, whatever slot the sender wrote the version into."""
    init = NETWORK.init(2, MANIFEST, SLOTS, 3, 1, PLANE)
    assert init == Init(PROTOCOL_VERSION, 2, MANIFEST, (), 3, 0, capabilities=("network",), data_plane=PLANE)
    assert NETWORK.receive(4, 2, SLOTS[2:]) == Receive(4, 0, ())
    assert NETWORK.introduced([1, 2]) == () and NETWORK.announced(2) == 0


def test_the_capability_echo():
    """NET-1: Init and Ready name `network` on the network profile, nothing on the Unix profile."""
    assert NETWORK.capabilities == ("network",) and UNIX.capabilities == ()


def test_a_network_receiver_knows_slot_0_from_its_init_and_a_unix_one_only_the_slots_listed():
    """NET-1, SLOT-1: the receiver's machine takes its profile from the Init, once, and with it the slots it knows
    without a handle."""
    net, unix = ReceiverMachine(0), ReceiverMachine(0)
    net.handle(NETWORK.init(0, MANIFEST, SLOTS, 0, 0, PLANE))
    unix.handle(UNIX.init(0, MANIFEST, SLOTS[1:], 0, 1))
    assert (net.profile, net.known) == (NETWORK, {0})
    assert (unix.profile, unix.known) == (UNIX, {1, 2})


@pytest.mark.parametrize("device", ["cuda", "cuda:1", "meta"])
def test_the_network_keeps_slots_in_host_memory(device):
    """NET-7: slots on the CPU whatever device the weights are on, and a GPU slot device refused with the remedy;
    the Unix profile leaves the slot device to the caller (CUDA-1)."""
    with pytest.raises(ValueError, match="NET-7"):
        NETWORK.check_slot_device(device)
    UNIX.check_slot_device(device)
    NETWORK.check_slot_device("cpu")
    assert (NETWORK.slot_source("cuda:0"), UNIX.slot_source("cuda:0")) == ("cpu", "cuda:0")
    assert NETWORK.host_memory and not UNIX.host_memory


def test_only_the_network_keeps_a_lease():
    """NET-4: the sender's lease and heartbeats as the caller chose them (API-10); a receiver speaks at least five
    times per lease; a Unix channel's end is its only end (CON-1)."""
    assert UNIX.sender_liveness(0.0, 5.0, 1.0) is None and UNIX.receiver_liveness(0.0, 5.0) is None
    sender, receiver = NETWORK.sender_liveness(10.0, 2.0, 0.5), NETWORK.receiver_liveness(10.0, 2.0)
    assert sender is not None and (sender.lease, sender.heartbeat) == (2.0, 0.5)
    assert receiver is not None and (receiver.lease, receiver.heartbeat) == (2.0, 0.4)
    assert NETWORK.leased and not UNIX.leased


def test_a_receiver_whose_sender_fell_silent_names_net_4():
    """NET-4: an expired lease stops a receiver as a violation would, naming the lease."""
    error = NETWORK.lease_expired("silent for 5 s", "live")
    assert isinstance(error, RemoteProtocolError)
    assert (error.requirement, error.state, error.event) == ("NET-4", "live", "lease")


def test_the_data_plane_is_a_record_here_and_a_map_on_the_wire():
    """NET-1: `data_plane` is a map of six fields in table order on the wire; decoded, a typed record whose times
    read in seconds."""
    init = NETWORK.init(0, MANIFEST, SLOTS, 0, 0, PLANE)
    on_wire = msgpack.unpackb(wire.payload(init))["data_plane"]
    assert list(on_wire) == ["backend", "store", "prefix", "nbytes", "timeout_ms", "lease_ms"]
    assert on_wire["lease_ms"] == 5000 and on_wire["store"] == "127.0.0.1:29500"
    decoded = wire.decode(wire.payload(init), wire.FROM_SENDER)
    assert isinstance(decoded, Init) and decoded.data_plane == PLANE
    assert (PLANE.lease, PLANE.timeout, PLANE.store_address) == (5.0, 60.0, ("127.0.0.1", 29500))
