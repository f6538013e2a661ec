"""The sender: owns the slots, publishes versions, collects acks (spec sections 5-8)."""

from __future__ import annotations

import dataclasses
import logging
import threading
from dataclasses import dataclass, field
from multiprocessing import connection

import torch

from . import layout, transport
from .slots import Group, Slot, make_slot
from .errors import (
    ClosedError,
    ProtocolError,
    ReceiverDiedError,
    ReceiverError,
    SyncTimeoutError,
)
from .protocol import (
    ERROR,
    OK,
    PROTOCOL_VERSION,
    SENDER_TABLE,
    Ack,
    Init,
    PeerState,
    Ready,
    Receive,
    Stop,
    message_event,
    step,
)

log = logging.getLogger("weightsync")

_DIED = "died"


class Handle:
    """What a receiver process needs to reach the sender: pass it as a Process argument.

    It travels only to a process started with spawn or forkserver (CON-2), and
    only before the sender's connect() consumes it.
    """

    def __init__(self, receiver: int, conn: connection.Connection):
        self.receiver = receiver
        self.conn = conn

    def __reduce__(self):
        if self.conn.closed:
            raise ProtocolError(
                f"handle({self.receiver}) was consumed by connect(); call sender.handle({self.receiver}) "
                "for a new one (LIFE-2)"
            )
        return (Handle, (self.receiver, self.conn))

    def __repr__(self) -> str:
        return f"Handle(receiver={self.receiver})"


@dataclass
class _Peer:
    id: int
    channel: transport.Channel
    handle: Handle
    group: Group
    state: PeerState = PeerState.UNCONNECTED
    outstanding: dict[int, int] = field(default_factory=dict)  # version -> slot, sent and not acked
    held: set[int] = field(default_factory=set)  # slots a zero-copy receiver still reads
    known: set[int] = field(default_factory=set)  # slots whose handles it has
    holds_slot: bool = False
    acked: int | None = None
    failure: str = ""


class SendFuture:
    """One published version and the outcome per targeted receiver (SEND-5)."""

    def __init__(self, sender: Sender, version: int, workers: list[int]):
        self._sender = sender
        self.version = version
        self.workers = list(workers)
        self._outcome: dict[int, tuple[str, str]] = {}

    def done(self) -> bool:
        """True once every targeted receiver has answered (acked, failed or gone).

        Reads the answers that have already arrived, without waiting, so that a caller
        polling done() sees them (API-2); a thread busy in another call reads them anyway.
        """
        if not self._complete():
            self._sender._refresh()
        return self._complete()

    def _complete(self) -> bool:
        return len(self._outcome) == len(self.workers)

    def wait(self, timeout: float | None = None) -> int:
        """The version once every target acked it ok; else the error of SEND-2. May be called again."""
        return self._sender._wait(self, transport.Deadline(timeout))

    def _settle(self, worker: int, status: str, detail: str) -> None:
        self._outcome.setdefault(worker, (status, detail))

    def _raise_failures(self) -> None:
        errors = {w: d for w, (s, d) in self._outcome.items() if s not in (OK, _DIED)}
        if errors:
            raise ReceiverError(errors, self.version, errors)
        died = {w: d for w, (s, d) in self._outcome.items() if s == _DIED}
        if died:
            raise ReceiverDiedError(died, self.version, died, hint=_RESTART_HINT)

    def __repr__(self) -> str:
        return f"SendFuture(version={self.version}, workers={self.workers}, done={self._complete()})"


_RESTART_HINT = "restart it with sender.handle(i) and sender.connect(workers=[i]), or leave it out of workers="


class Sender:
    """Publishes versions of `weights` to `num_workers` receivers.

    The sender copies the weights into slots of its own; the caller's tensors
    are never shared or aliased (CONS-4). Receivers that share a slot device
    (`devices`, CUDA-1) share one group of slots, and `max_slots` (at least 2,
    default `num_workers + 2`) bounds each group, not the total: with slots on
    k devices the sender holds up to k * max_slots slots (SLOT-3). Not
    thread-safe beyond one lock that serialises its public calls.
    """

    def __init__(self, weights, num_workers: int, *, devices=None, ctx=None, max_slots: int | None = None):
        if not isinstance(num_workers, int) or num_workers < 1:
            raise ValueError(f"num_workers must be a positive int, got {num_workers!r}")
        if ctx is not None and ctx.get_start_method() == "fork":
            raise ValueError("a fork context cannot be used: receivers must be started with spawn or forkserver (CON-2)")
        self._source = weights
        flat = layout.flatten(weights)
        self._manifest = layout.make_manifest(flat)
        sources = sorted({e.device for e in self._manifest}) or ["cpu"]
        if len(sources) > 1:
            raise NotImplementedError(f"weights on several devices {sources}; move them to one device first")
        self._checker = layout.Checker(self._manifest)
        targets = _slot_devices(devices, num_workers, torch.device(sources[0]))
        self._max_slots = max_slots if max_slots is not None else num_workers + 2
        if self._max_slots < 2:
            raise ValueError("max_slots must be at least 2 (SLOT-1)")
        self._lock = threading.RLock()
        self._closed = False
        self._groups: dict[torch.device, Group] = {}
        self._slot_ids = 0
        self._pending: list[SendFuture] = []
        self._version = 0
        try:
            tensors = self._checker.ordered(flat)
            for device in dict.fromkeys(targets):
                manifest = tuple(dataclasses.replace(e, device=str(device)) for e in self._manifest)
                group = Group(device, layout.slot_nbytes(self._manifest, sources[0]), manifest)
                self._groups[device] = group
                for _ in range(2):
                    self._add_slot(group)
                group.slots[0].write(tensors)
                group.slots[0].version = 0
                group.latest = group.slots[0]
            self._peers = [self._new_peer(i, self._groups[targets[i]]) for i in range(num_workers)]
        except BaseException:
            self._release()
            raise
        log.debug("sender: %d entries on %s, slot groups %s", len(self._manifest), sources[0], list(self._groups))

    # ---- public binding ----------------------------------------------------

    @property
    def version(self) -> int:
        """The last published version; 0 is the weights the sender was built from (VER-1)."""
        return self._version

    @property
    def num_workers(self) -> int:
        return len(self._peers)

    @property
    def manifest(self):
        return self._manifest

    def handle(self, i: int) -> Handle:
        """The picklable handle for receiver `i` (a new one after `i` failed or is gone, LIFE-2)."""
        with self._lock:
            self._check_open()
            peer = self._peers[self._check_id(i)]
            self._pump(0)
            if peer.state is PeerState.UNCONNECTED:
                return peer.handle
            if peer.state is PeerState.LIVE:
                raise ProtocolError(
                    f"receiver {i} is connected; a new handle is issued only once it failed or is gone (LIFE-3)"
                )
            step(SENDER_TABLE, peer.state, "new handle", f"receiver {i}")
            self._drop_peer(peer, "replaced by a new handle")
            self._peers[i] = self._new_peer(i, peer.group)
            return self._peers[i].handle

    def connect(self, timeout: float | None = None, *, workers=None) -> None:
        """The handshake (Init, then Ready) with `workers` (INIT-*).

        By default every receiver that is not live yet and has not failed: so after
        one receiver's failure was raised, calling connect() again waits for the rest.
        A named receiver that is already live is left as it is.
        """
        deadline = transport.Deadline(timeout)
        waiting = (PeerState.UNCONNECTED, PeerState.CONNECTING)
        with self._lock:
            self._check_open()
            if workers is None:
                targets = [p.id for p in self._peers if p.state in waiting]
            else:
                targets = [i for i in self._check_workers(workers) if self._peers[i].state is not PeerState.LIVE]
            for i in targets:
                peer = self._peers[i]
                if peer.state not in waiting:
                    raise ProtocolError(
                        f"receiver {i} is {peer.state.value}; restart it with handle({i}) first (LIFE-2)"
                    )
            for i in targets:
                if self._peers[i].state is PeerState.UNCONNECTED:
                    self._send_init(self._peers[i])
            while True:
                # A failure is raised as soon as it is known (INIT-5); receivers still
                # connecting finish their handshake in a later call.
                failed = {i: self._peers[i].failure for i in targets if self._peers[i].state is PeerState.FAILED}
                if failed:
                    raise ReceiverError(failed, self._version, failed, hint=_RESTART_HINT)
                gone = {i: self._peers[i].failure for i in targets if self._peers[i].state is PeerState.GONE}
                if gone:
                    raise ReceiverDiedError(gone, self._version, gone, hint="was its process started with handle(i)?")
                connecting = [i for i in targets if self._peers[i].state is PeerState.CONNECTING]
                if not connecting:
                    return
                if deadline.expired():
                    raise SyncTimeoutError(connecting, self._version, hint="no Ready; did each worker call receiver.connect()?")
                self._pump(deadline.left())

    def send(self, weights=None, *, workers=None, timeout: float | None = None) -> int:
        """Publish a new version and return it once every target acked it (SEND-1, SEND-2)."""
        deadline = transport.Deadline(timeout)
        with self._lock:
            future = self._publish(weights, workers, deadline)
            return self._wait(future, deadline)

    def send_async(self, weights=None, *, workers=None, timeout: float | None = None) -> SendFuture:
        """Publish a new version; `timeout` bounds only the wait for a free slot (SLOT-3)."""
        with self._lock:
            return self._publish(weights, workers, transport.Deadline(timeout))

    def close(self) -> None:
        """Stop every receiver and release every channel and slot; idempotent (LIFE-4)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            for peer in self._peers:
                if peer.state in (PeerState.UNCONNECTED, PeerState.CONNECTING, PeerState.LIVE):
                    try:
                        peer.channel.send(Stop())
                    except transport.ChannelClosed:
                        pass
                    peer.state = step(SENDER_TABLE, peer.state, "send Stop", f"receiver {peer.id}")
            self._release()
            log.debug("sender closed at version %d", self._version)

    @property
    def closed(self) -> bool:
        return self._closed

    def __enter__(self) -> Sender:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        states = ",".join(p.state.value for p in getattr(self, "_peers", []))
        return f"Sender(version={getattr(self, '_version', None)}, receivers=[{states}], closed={self._closed})"

    # ---- internals -----------------------------------------------------------

    def _new_peer(self, i: int, group: Group) -> _Peer:
        channel, theirs = transport.pipe()
        return _Peer(i, channel, Handle(i, theirs), group)

    def _add_slot(self, group: Group) -> Slot:
        slot = make_slot(self._slot_ids, group.device, group.nbytes, group.manifest)
        self._slot_ids += 1
        group.slots.append(slot)
        return slot

    def _drop_peer(self, peer: _Peer, why: str) -> None:
        for conn in (peer.channel, peer.handle.conn):
            conn.close()
        self._settle_gone(peer, why)

    def _release(self) -> None:
        for peer in getattr(self, "_peers", []):
            peer.channel.close()
            peer.handle.conn.close()
        for group in self._groups.values():
            for slot in group.slots:
                slot.close()
            group.slots = []

    def _check_open(self) -> None:
        if self._closed:
            raise ClosedError("the sender is closed (LIFE-6)")

    def _check_id(self, i) -> int:
        if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < len(self._peers):
            raise ValueError(f"receiver id must be an int in [0, {len(self._peers)}), got {i!r} (SEND-6)")
        return i

    def _check_workers(self, workers) -> list[int]:
        if isinstance(workers, (str, bytes)) or not hasattr(workers, "__iter__"):
            raise ValueError(f"workers must be a list of receiver ids, got {workers!r} (SEND-6)")
        ids = [self._check_id(i) for i in workers]
        if not ids:
            raise ValueError("workers must name at least one receiver (SEND-6)")
        if len(set(ids)) != len(ids):
            raise ValueError(f"workers lists a receiver twice: {ids} (SEND-6)")
        return ids

    def _send_init(self, peer: _Peer) -> None:
        # Our copy of their end goes first, so that a receiver that never
        # started or already died reads as end of file at once (SEND-3).
        peer.handle.conn.close()
        group = peer.group
        init = Init(
            PROTOCOL_VERSION, peer.id, group.manifest, tuple(s.info() for s in group.slots), self._version, group.latest.id
        )
        peer.state = step(SENDER_TABLE, peer.state, "send Init", f"receiver {peer.id}")
        peer.outstanding = {self._version: group.latest.id}
        peer.known = {s.id for s in group.slots}
        try:
            peer.channel.send(init, tuple(fd for s in group.slots for fd in s.fds()))
        except transport.ChannelClosed as e:
            self._gone(peer, f"channel closed during the handshake: {e}")

    def _publish(self, weights, workers, deadline: transport.Deadline) -> SendFuture:
        self._check_open()
        targets = list(range(len(self._peers))) if workers is None else self._check_workers(workers)
        self._pump(0)
        source = self._source if weights is None else weights
        # A plain dict goes straight to the checker, which rejects what flatten would (BAD-1, BAD-2).
        tensors = self._checker.ordered(source if type(source) is dict else layout.flatten(source))
        self._check_targets(targets)
        # Every group gets each version, once per device, so that a joiner on any
        # device starts from the latest (LIFE-1, LAYOUT-2).
        chosen = {device: self._free_slot(group, deadline) for device, group in self._groups.items()}
        for slot in chosen.values():
            slot.write(tensors)
        self._version += 1
        for device, slot in chosen.items():
            slot.version = self._version
            self._groups[device].latest = slot
        future = SendFuture(self, self._version, targets)
        self._pending.append(future)
        for i in targets:
            peer = self._peers[i]
            self._send_receive(peer, chosen[peer.group.device])
        log.debug("published version %d to %s", self._version, targets)
        return future

    def _check_targets(self, targets: list[int]) -> None:
        """No version is consumed for a target known to be unusable (SEND-4)."""
        by_state: dict[PeerState, dict[int, str]] = {}
        for i in targets:
            peer = self._peers[i]
            if peer.state is not PeerState.LIVE:
                by_state.setdefault(peer.state, {})[i] = peer.failure or peer.state.value
        if PeerState.GONE in by_state:
            gone = by_state[PeerState.GONE]
            raise ReceiverDiedError(gone, None, gone, hint=_RESTART_HINT)
        if PeerState.FAILED in by_state:
            failed = by_state[PeerState.FAILED]
            raise ReceiverError(failed, None, failed, hint=_RESTART_HINT)
        if by_state:
            ids = sorted(i for d in by_state.values() for i in d)
            raise ProtocolError(f"receiver(s) {ids} are not connected; call sender.connect() first (SEND-4)")

    def _pinned(self, group: Group) -> dict[int, set[int]]:
        """Slot id -> receivers that may read it; the latest slot is pinned for joiners (SLOT-2)."""
        pins: dict[int, set[int]] = {group.latest.id: set()}
        for peer in self._peers:
            if peer.group is group and peer.state in (PeerState.CONNECTING, PeerState.LIVE):
                for sid in (*peer.outstanding.values(), *peer.held):
                    pins.setdefault(sid, set()).add(peer.id)
        return pins

    def _free_slot(self, group: Group, deadline: transport.Deadline) -> Slot:
        """A free slot of `group`, allocated while the group holds fewer than max_slots (SLOT-3)."""
        while True:
            pins = self._pinned(group)
            for slot in group.slots:
                if slot.id not in pins:
                    return slot
            if len(group.slots) < self._max_slots:
                slot = self._add_slot(group)
                log.debug("allocated slot %d on %s", slot.id, group.device)
                return slot
            if deadline.expired():
                blocking = sorted({i for ids in pins.values() for i in ids})
                raise SyncTimeoutError(
                    blocking, None,
                    hint=f"every one of {self._max_slots} slots is held by them; nothing was published (SLOT-3)",
                )
            self._pump(deadline.left())
            self._check_open()

    def _send_receive(self, peer: _Peer, slot: Slot) -> None:
        new = [s for s in peer.group.slots if s.id not in peer.known]
        msg = Receive(self._version, slot.id, tuple(s.info() for s in new))
        try:
            peer.channel.send(msg, tuple(fd for s in new for fd in s.fds()))
        except transport.ChannelClosed as e:
            self._gone(peer, f"channel closed: {e}")
            return
        peer.state = step(SENDER_TABLE, peer.state, "send Receive", f"receiver {peer.id}")
        peer.known.update(s.id for s in new)
        peer.outstanding[self._version] = slot.id

    def _wait(self, future: SendFuture, deadline: transport.Deadline) -> int:
        with self._lock:
            while True:
                self._check_open()
                future._raise_failures()
                if future._complete():
                    return future.version
                if deadline.expired():
                    missing = [i for i in future.workers if i not in future._outcome]
                    raise SyncTimeoutError(missing, future.version, hint="it may still ack later")
                self._pump(deadline.left())

    def _refresh(self) -> None:
        """Read the answers that are ready, unless another thread holds the sender (it reads them)."""
        if not self._lock.acquire(blocking=False):
            return
        try:
            if not self._closed:
                self._pump(0)
        finally:
            self._lock.release()

    def _pump(self, timeout: float | None) -> None:
        """Read every message that is ready (waiting at most `timeout` for the first)."""
        peers = [p for p in self._peers if p.state in (PeerState.CONNECTING, PeerState.LIVE)]
        by_channel = {id(p.channel): p for p in peers}
        for channel in transport.wait([p.channel for p in peers], timeout):
            peer = by_channel[id(channel)]
            try:
                while peer.state in (PeerState.CONNECTING, PeerState.LIVE):
                    self._on_message(peer, channel.recv())
                    if not channel.poll(0):
                        break
            except transport.ChannelClosed:
                self._gone(peer, "its channel closed (process exited or receiver closed)")
            except ProtocolError as e:
                self._violation(peer, e)

    def _on_message(self, peer: _Peer, msg: object) -> None:
        who = f"receiver {peer.id}"
        event = message_event(msg)
        if getattr(msg, "receiver", peer.id) != peer.id:
            raise ProtocolError(f"{who} sent a message for receiver {msg.receiver} (MSG-2)")
        new_state = step(SENDER_TABLE, peer.state, event, who)
        if getattr(msg, "status", OK) not in (OK, ERROR):
            raise ProtocolError(f"{who} sent status {msg.status!r}; only 'ok' and 'error' exist (MSG-1)")
        if isinstance(msg, Ready):
            init_version = self._version_of_init(peer)
            if msg.status == OK and msg.version != init_version:
                raise ProtocolError(f"{who} answered Ready for version {msg.version}, Init carried {init_version} (INIT-4)")
            init_slot = peer.outstanding.get(init_version)
            peer.outstanding.clear()
            if msg.status == OK:
                peer.holds_slot = msg.holds_slot
                peer.held = {init_slot} if msg.holds_slot and init_slot is not None else set()
                peer.acked = msg.version
            else:
                peer.failure = msg.detail or "handshake failed"
        elif isinstance(msg, Ack):
            if msg.version not in peer.outstanding:
                raise ProtocolError(
                    f"{who} acked version {msg.version}, which is not outstanding for it "
                    f"(outstanding: {sorted(peer.outstanding)}) (ACK-5)"
                )
            sid = peer.outstanding[msg.version]
            peer.outstanding = {v: s for v, s in peer.outstanding.items() if v > msg.version}
            if peer.holds_slot:
                peer.held = {sid} if msg.status == OK else peer.held | {sid}
            peer.acked = msg.version if msg.status == OK else None
            for future in self._pending:
                if peer.id in future.workers and future.version <= msg.version:
                    future._settle(peer.id, msg.status, msg.detail)
            self._pending = [f for f in self._pending if not f._complete()]
        peer.state = new_state

    @staticmethod
    def _version_of_init(peer: _Peer) -> int | None:
        return next(iter(peer.outstanding), None)

    def _violation(self, peer: _Peer, error: ProtocolError) -> None:
        """A receiver that broke the protocol is cut off and fails what waits on it (SM-S-9)."""
        log.error("receiver %d broke the protocol: %s", peer.id, error)
        peer.channel.close()
        peer.state = step(SENDER_TABLE, peer.state, "protocol violation", f"receiver {peer.id}")
        peer.failure = f"protocol violation: {error}"
        peer.outstanding.clear()
        peer.held.clear()
        self._settle_gone(peer, peer.failure, ERROR)

    def _gone(self, peer: _Peer, why: str) -> None:
        peer.state = step(SENDER_TABLE, peer.state, "channel closed", f"receiver {peer.id}")
        peer.failure = why
        peer.outstanding.clear()
        peer.held.clear()
        log.warning("receiver %d is gone: %s", peer.id, why)
        self._settle_gone(peer, why)

    def _settle_gone(self, peer: _Peer, why: str, status: str = _DIED) -> None:
        for future in self._pending:
            if peer.id in future.workers:
                future._settle(peer.id, status, why)
        self._pending = [f for f in self._pending if not f._complete()]


def _slot_devices(devices, n: int, source: torch.device) -> list[torch.device]:
    """The slot device of each receiver: `devices[i]`, `devices(i)`, or the weights' device (CUDA-1)."""
    if devices is None:
        wanted = [source] * n
    elif callable(devices):
        wanted = [devices(i) for i in range(n)]
    else:
        wanted = list(devices)
        if len(wanted) != n:
            raise ValueError(f"devices names {len(wanted)} devices for {n} receivers")
    out = []
    for d in map(torch.device, wanted):
        if d.type == "cuda":
            if not torch.cuda.is_available():
                raise ValueError(f"slot device {d} requested, but CUDA is not available here")
            d = torch.device("cuda", torch.cuda.current_device() if d.index is None else d.index)
        elif d.type != "cpu":
            raise ValueError(f"slot device {d} is neither cpu nor cuda")
        out.append(d)
    return out
