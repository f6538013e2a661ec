"""Versions going out: a version written into a free slot per group, each target told, and the wait for answers.

The sender's public calls check the caller and take the lock; this module does the rest
of SEND-1..7 with the hub's channels: the Init of a joiner (INIT-1, NET-1), the Receive
of each target (SEND-1, NET-2), the bounded wait for a free slot (SLOT-3, SEC-3), and the
wait for every target's answer (SEND-2, SEND-7). It owns the version counter and the
futures still waiting; the hub settles them through `settle`.
"""

from __future__ import annotations

import logging
import weakref
from collections.abc import Iterable

from . import layout, netplane, options
from .clock import Deadline
from .errors import FIX, LocalProtocolError, SyncTimeoutError, receivers_error
from .future import RESTART_HINT, SendFuture
from .hub import Hub
from .messages import Entry
from .packing import Packed
from .peers import Peer
from .profiles import NetworkProfile, UnixProfile
from .sending import outbox_full, readers, unsendable
from .slots import CpuSlot, Group, Slot

log = logging.getLogger("weightsync")


class Publisher:
    """The sender's versions: its weights' layout and checker, the last version, and the futures not settled."""

    def __init__(self, hub: Hub, source: layout.Weights, manifest: tuple[Entry, ...], checker: layout.Checker):
        self.hub = hub
        self.source = source
        self.manifest = manifest
        self.checker = checker
        self.version = 0
        self.futures: dict[int, SendFuture] = {}

    def settle(self, version: int, rid: int, cause: str, detail: str) -> None:
        """One receiver's outcome for one version, from the hub (ACK-2, SM-S-9)."""
        future = self.futures.get(version)
        if future is not None:
            future._settle(rid, cause, detail)
            if future._complete:  # nothing more can settle it
                del self.futures[version]

    def close_futures(self) -> None:
        """The sender closed: each future settles with the answers it has; the rest never come (LIFE-8)."""
        for future in self.futures.values():
            future._close()
        self.futures.clear()

    def send_init(self, peer: Peer) -> None:
        """The Init that makes a receiver connecting: the group's slots and the latest version (INIT-1, LIFE-1)."""
        # Our copy of their end goes first, so that a receiver that never
        # started or already died reads as end of file at once (SEND-3).
        if peer.handle is not None:
            peer.handle.conn.close()
        assert peer.group.latest is not None, "version 0 is published when a group is made"
        _INITS[type(peer.profile)](self, peer)
        self.hub.wake()

    def _send_unix_init(self, peer: Peer) -> None:
        """Init with the group's slots, their handles beside it (INIT-1, WIRE-4)."""
        group, latest = peer.group, peer.group.latest
        assert latest is not None, "version 0 is published when a group is made"
        init = peer.profile.init(peer.machine.id, group.manifest, group.infos(), self.version, latest.id)
        self.hub.write(peer, init, group.handles(peer.profile.introduced(group.slots)))

    def _send_network_init(self, peer: Peer) -> None:
        """Init without slots, naming the data plane; the Init's version follows on it (NET-1, NET-2).

        A join first makes the receiver's store (NET-6) on a thread of its own, which leaves it on the peer
        and wakes the hub; the hub's `serve` calls this again, and the Init goes out with the version latest
        then, unless that join is over meanwhile."""
        hub, group = self.hub, peer.group
        assert group.device.type == "cpu", "a tcp:// sender's slots are on the CPU (options.slot_devices, NET-7)"
        channel, latest = peer.channel, group.latest
        assert channel is not None and hub.listener is not None, "a network receiver joined by URL"
        assert isinstance(latest, CpuSlot), "a CPU group's latest slot; version 0 is published when it is made"
        left, peer.store_made = peer.store_made, None
        if left is None:
            ref = weakref.ref(hub)

            def made(store: netplane.Store | Exception) -> None:  # weakly: a store's thread must not keep the hub
                held = ref()
                if held is None or held.closed:  # no Init will be written
                    if isinstance(store, netplane.Store):
                        store.close()
                    return
                peer.store_made = (channel, store)
                held.wake()

            netplane.make_store(hub.listener.address.sockaddr[0], hub.transfer_timeout, hub.lease, made)
            return
        made_for, store = left
        if hub.closed or made_for is not channel or channel.closed or not peer.machine.init_due(True):
            if isinstance(store, netplane.Store):
                store.close()  # that join is over: a new one makes a store of its own
            return
        if isinstance(store, Exception):  # it cannot be served: its channel ends before any Init (it may join again)
            log.error("receiver %d: its data-plane store could not be made: %s", peer.machine.id, store)
            channel.close()
            return
        hub.use(peer, channel, None, peer.profile)  # its lease counts from its Init, where it learns it (NET-4)
        local = channel.sock.getsockname()[0]
        plane = store.data_plane(local, group.nbytes)
        at, known = peer.profile.stands_for(latest.id, [s.id for s in group.slots])
        hub.write(peer, peer.profile.init(peer.machine.id, group.manifest, group.infos(), self.version, latest.id, plane),
                  slot=at, slots=known)
        incarnation, ref = peer.machine.incarnation, weakref.ref(hub)

        def failed(why: str) -> None:  # weakly: a lane must not keep the sender alive
            held = ref()
            if held is not None:
                held.lane_failed(peer, incarnation, why)

        peer.lane = netplane.Lane(store, plane, local, failed, hub.clock)
        peer.lane.submit(self.version, latest.buffer.tensor)

    def check_targets(self, targets: list[int]) -> None:
        """No version is consumed for a target known to be unusable (SEND-4)."""
        peers, machines = self.hub.peers, []
        for i in targets:  # a loop, not a comprehension: this runs on every send
            machines.append(peers[i].machine)
        known, ids = unsendable(machines)
        if known:
            raise receivers_error({m.id: m.cause for m in known}, {m.id: m.failure for m in known}, None, RESTART_HINT)
        if ids:
            raise LocalProtocolError(f"receiver(s) {ids} are not connected; call sender.connect() first (SEND-4)")

    def publish(self, weights: layout.Weights | None, workers: Iterable[int] | None,
                deadline: Deadline) -> SendFuture:
        """Writes a new version into a free slot per group and sends it to `workers` (SEND-1); the lock is held."""
        hub, peers = self.hub, self.hub.peers
        started = hub.clock()
        targets = list(range(len(peers))) if workers is None else options.check_workers(workers, len(peers))
        hub.take_arrived()
        source = self.source if weights is None else weights
        # weights laid out like the slots: one copy (API-8); a plain dict is looked at first (Packed is an ABC's)
        packed = (source if type(source) is not dict and isinstance(source, Packed)
                  and (source is self.source or source.manifest == self.manifest) else None)
        if packed is not None:
            packed.check()  # constant time unless a packed tensor may have left the buffer (API-8)
        else:  # a plain dict goes straight to the checker, which rejects what flatten would (BAD-1, BAD-2)
            tensors = self.checker.ordered(source if type(source) is dict else layout.flatten(source))
        self.check_targets(targets)
        chosen = self.free_slots(targets, deadline)  # group -> slot
        for slot in chosen.values():
            if packed is not None:
                slot.write_buffer(packed.buffer, packed.tensors)  # a cast slot converts each array (LAYOUT-3)
                continue
            try:
                slot.write(tensors)
            except RuntimeError:
                # A tensor reshaped through `.data` as a view of itself keeps its pointer and version:
                # the copy into the free slot finds it; check everything and name it (BAD-2). The slot
                # is free, nobody reads it, and nothing is published.
                self.checker.forget()
                self.checker.ordered(source if type(source) is dict else layout.flatten(source))
                raise
        self.version += 1
        nbytes = 0
        for group in chosen:
            nbytes += group.nbytes
        future = SendFuture(self.version, targets, hub.take_arrived_if_free, self.wait, nbytes=nbytes, clock=hub.clock)
        self.futures[self.version] = future
        # Every group gets each version, once per device, so that a joiner on any
        # device starts from the latest (LIFE-1, LAYOUT-2).
        ids: dict[Group, list[int]] = {}
        for group, slot in chosen.items():
            hub.pool.publish(group, slot, self.version)
            ids[group] = [s.id for s in group.slots]
        for i in targets:
            peer = peers[i]
            group = peer.group
            slot = chosen[group]
            unknown = peer.machine.unknown(ids[group])  # most sends introduce nothing
            new_slots = [group.slot(sid) for sid in peer.profile.introduced(unknown)] if unknown else []
            msg = peer.profile.receive(self.version, slot.id, tuple([s.info() for s in new_slots]) if new_slots else ())
            at, known = peer.profile.stands_for(slot.id, ids[group])  # what slot 0 stands for (NET-1)
            hub.write(peer, msg, group.handles(new_slots) if new_slots else (), slot=at, slots=known)
            if peer.lane is not None:  # the version follows on its data plane (NET-2)
                assert isinstance(slot, CpuSlot), "the network profile carries CPU slots only"
                peer.lane.submit(self.version, slot.buffer.tensor)
        future._published_after(hub.clock() - started)
        return future

    def free_slots(self, targets: list[int], deadline: Deadline) -> dict[Group, Slot]:
        """A free slot per group, waiting (bounded) for acks and for slow readers' channels (SLOT-3, SEC-3)."""
        hub, peers, first = self.hub, self.hub.peers, True
        while True:
            if not first:  # a target may have gone while this call waited (SEND-4)
                self.check_targets(targets)
            first = False
            stuck = []  # loops, not comprehensions, here and below: each of those is a call on every send
            for i in targets:
                if (ch := peers[i].channel) is not None and ch.out_bytes and outbox_full(ch.out_bytes):
                    stuck.append(i)
            chosen: dict[Group, Slot] = {}
            full: Group | None = None
            for group in hub.pool.groups.values():
                pins = []
                for p in peers:
                    if p.group is group:
                        pins.append(p.machine.pins())
                slot = hub.pool.choose(group, pins)
                if slot is None:
                    full = group
                    break
                chosen[group] = slot
            if full is None and not stuck:
                return chosen
            if deadline.expired():
                if stuck:
                    raise SyncTimeoutError(stuck, None, hint="it does not read its channel; nothing was published (SEC-3)")
                assert full is not None, "a group without a free slot is why none was chosen"
                machines = [p.machine for p in peers if p.group is full]
                blocking = sorted({i for s in full.slots for i in readers(s.id, machines)})
                raise SyncTimeoutError(
                    blocking, None,
                    hint=f"every one of {hub.pool.max_slots} slots is held by them; nothing was published (SLOT-3). "
                         f"{FIX}sender.drop(i) frees a stuck receiver's slots; else pass a longer timeout= or a larger "
                         "max_slots=",
                )
            hub.wait_for_events(deadline)

    def await_answers(self, future: SendFuture, deadline: Deadline) -> int:
        """Waits for every target's answer; raises one error naming every receiver at fault (SEND-2, SEND-7)."""
        looked = False
        while True:
            complete = future._complete
            by = None if complete else future._settle_by()
            if complete or (by is not None and self.hub.clock() >= by):
                error = future._error(timed_out=False)
                if error is None:
                    return future.version
                raise error
            if deadline.expired():
                if not looked:  # wait(0) still reads the answers that have arrived (SEND-5)
                    looked = True
                    self.hub.take_arrived()
                    continue
                error = future._error(timed_out=True)
                assert error is not None, "a target that has not answered has timed out"
                raise error
            self.hub.wait_for_events(deadline.earlier(by))

    def wait(self, future: SendFuture, deadline: Deadline) -> int:
        """`future.wait()`: takes the lock, then waits for the answers."""
        with self.hub.locked(deadline):
            return self.await_answers(future, deadline)


#: How each profile's Init goes out: with the slots' handles, or naming a data plane that carries the version.
_INITS = {UnixProfile: Publisher._send_unix_init, NetworkProfile: Publisher._send_network_init}
