"""Scripted peers: the suite's own speaker of the wire profile, to play one side against an implementation.

Written from spec/12-wire.md alone (it imports nothing of any implementation),
as h2spec and the Autobahn suite speak HTTP/2 and WebSocket: a scripted receiver
plays a well-behaved, buggy or hostile worker against an implementation's
Sender; a scripted sender plays the trainer against its Receiver. Every read
is bounded. `canonical` re-encodes a payload the way WIRE-5 says an encoder
must, so every frame an implementation sends can be checked byte for byte.
"""

from __future__ import annotations

import array
import os
import select
import socket
import struct
import sys
import threading
import time

import msgpack

from . import timing as tm
from .bounds import HarnessError
from .wire_schema import MAX_TO_RECEIVER as MAX_TO_RECEIVER  # WIRE-2's bounds, for the peers' callers
from .wire_schema import MAX_TO_SENDER as MAX_TO_SENDER
from .wire_schema import MESSAGES, canonical_keys

LENGTH = struct.Struct(">I")
#: Table 12-1: each message's and record's fields in canonical order (WIRE-3, WIRE-5), from the suite's one schema.
FIELDS = {kind: canonical_keys(kind) for kind in MESSAGES}
ENTRY, SLOTINFO, DATA_PLANE = (canonical_keys(r) for r in ("Entry", "SlotInfo", "data_plane"))
#: Table 12-2: the dtypes of the wire and the size of one element of each, in bytes.
ITEMSIZE = {"bool": 1, "int8": 1, "int16": 2, "int32": 4, "int64": 8, "uint8": 1, "float16": 2, "bfloat16": 2,
            "float32": 4, "float64": 8, "complex64": 8, "complex128": 16}
#: MSG-4: legal in both directions on every channel once the join is done, and ignored.
HEARTBEAT = {"type": "Heartbeat"}


def readable(fileobj, bound: float) -> bool:
    """Whether `fileobj` (a socket, a pipe, a descriptor) has bytes or an end of file within `bound` seconds.

    poll(2), not select(2): select() refuses descriptor numbers past 1,024, which a process that holds many
    slots' descriptors reaches."""
    p = select.poll()
    p.register(fileobj, select.POLLIN | select.POLLHUP | select.POLLERR)
    return bool(p.poll(max(0.0, bound) * 1000.0))


class PeerClosed(Exception):
    """The implementation closed its end of the channel."""


def frame(payload: bytes) -> bytes:
    return LENGTH.pack(len(payload)) + payload


def pack(msg: dict) -> bytes:
    return msgpack.packb(msg, use_bin_type=True)


def padded(msg: dict, size: int) -> bytes:
    """`msg` with an unknown field "x-pad" (to be ignored, WIRE-6) making the payload exactly `size` bytes."""
    n = max(0, size - len(pack(msg)))
    for _ in range(8):  # the bin header grows with its length: converge on the exact size
        payload = pack({**msg, "x-pad": bytes(n)})
        if len(payload) == size:
            return payload
        n += size - len(payload)
    raise ValueError(f"cannot pad {msg['type']} to {size} bytes")


#: Legal MessagePack that no known field may hold, as raw bytes: a map with integer keys, maps keyed by a map,
#: by an array, by nil and by a float, and application extension types (fixext and ext 8).
ODD_VALUES = (b"\x82\x01\x02\xa1k\x03", b"\x81\x81\x01\x02\x03", b"\x81\x92\x01\x02\x03", b"\x81\xc0\x01",
              b"\x81\xcb" + bytes(8) + b"\x01", b"\xd4\x7f\x00", b"\xc7\x03\x05abc")


def with_odd_fields(msg: dict) -> bytes:
    """`msg`'s payload plus unknown fields holding ODD_VALUES, one each and all in one array (WIRE-3: ignored,
    whatever they hold). Built by hand: no encoder writes a map keyed by a map."""
    base = pack(msg)
    assert 0x80 <= base[0] < 0x80 + 16 - len(ODD_VALUES) - 1, "a small map (fixmap) is extended"
    extra = b"".join(pack(f"x-odd-{i}") + v for i, v in enumerate(ODD_VALUES))
    extra += pack("x-odd-all") + bytes([0x90 + len(ODD_VALUES)]) + b"".join(ODD_VALUES)
    return bytes([base[0] + len(ODD_VALUES) + 1]) + base[1:] + extra


def canonical(payload: bytes) -> bytes:
    """The payload re-encoded in canonical form: `type` first, Table 12-1's order, records likewise (WIRE-5)."""
    obj = msgpack.unpackb(payload, raw=False, strict_map_key=True)
    kind = obj["type"]

    def record(m, keys):
        return {k: m[k] for k in keys if k in m}

    out = {"type": kind}
    for k in FIELDS[kind]:
        if k not in obj:
            continue
        v = obj[k]
        if k == "manifest":
            v = [record(e, ENTRY) for e in v]
        elif k in ("slots", "new_slots"):
            v = [record(s, SLOTINFO) for s in v]
        elif k == "data_plane" and v is not None:
            v = record(v, DATA_PLANE)
        out[k] = v
    return pack(out)


def ack(receiver: int, version, status: str = "ok", detail: str = "") -> dict:
    return {"type": "Ack", "receiver": receiver, "version": version, "status": status, "detail": detail}


def ready(receiver: int, version, status: str = "ok", detail: str = "", holds_slot: bool = False) -> dict:
    return {"type": "Ready", "receiver": receiver, "version": version, "status": status, "detail": detail,
            "holds_slot": holds_slot, "protocol": "1.1", "capabilities": []}


class WireSocket:
    """One end of a channel: frames out and in, handles in, every wait bounded."""

    def __init__(self, sock: socket.socket, max_in: int):
        self.sock = sock
        self.sock.setblocking(True)
        self.max_in = max_in
        self._buf = bytearray()
        self._fds: list[int] = []
        self.frames_in: list[bytes] = []  # every payload received, for WIRE-5 checks
        self.chunk = 1 << 16  # bytes taken per read: a slow reader takes few at a time
        self._wlock = threading.Lock()  # a thread sending Heartbeats beside the test's own frames: whole frames

    @classmethod
    def from_fd(cls, fd: int, max_in: int) -> WireSocket:
        return cls(socket.socket(fileno=os.dup(fd)), max_in)

    def send_raw(self, data: bytes, fds=()) -> None:
        with self._wlock:
            if fds:
                self.sock.sendmsg([data], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))])
            else:
                self.sock.sendall(data)

    def send(self, msg: dict, fds=()) -> None:
        self.send_raw(frame(pack(msg)), fds)

    def _read(self, bound: float) -> bool:
        """Reads once, waiting at most `bound`; False on timeout; PeerClosed at end of file."""
        if not readable(self.sock, bound):
            return False
        data, anc, flags, _ = self.sock.recvmsg(self.chunk, socket.CMSG_SPACE(256 * 4))
        for level, kind, raw in anc:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                fds = array.array("i")
                fds.frombytes(raw[: len(raw) - len(raw) % 4])
                self._fds.extend(fds)
        if not data:
            raise PeerClosed("end of file")
        self._buf += data
        return True

    def recv(self, bound: float | None = None) -> tuple[dict, list[int]]:
        """The next message as a dict, with the handles it lists taken in arrival order (WIRE-4)."""
        bound = tm.BOUND if bound is None else bound
        end = time.monotonic() + bound
        while True:
            if len(self._buf) >= 4:
                (n,) = LENGTH.unpack_from(self._buf)
                assert 0 < n <= self.max_in, f"WIRE-2 violated: a frame of {n} bytes came"
                if len(self._buf) >= 4 + n:
                    payload = bytes(self._buf[4 : 4 + n])
                    del self._buf[: 4 + n]
                    self.frames_in.append(payload)
                    try:
                        msg = msgpack.unpackb(payload, raw=False, strict_map_key=True)
                    except Exception as e:  # noqa: BLE001 - whatever the decoder raises, the bytes broke WIRE-3
                        raise AssertionError(f"WIRE-3 violated: a frame that is not one MessagePack map: {e}") from None
                    assert isinstance(msg, dict) and isinstance(msg.get("type"), str), (
                        f"WIRE-3 violated: a frame whose message is not a map with a type: {msg!r:.200}"
                    )
                    listed = [s for s in msg.get("slots", msg.get("new_slots", [])) if not s.get("ipc")]
                    assert len(self._fds) >= len(listed), (
                        f"WIRE-4 violated: a {msg.get('type')} lists {len(listed)} slots, {len(self._fds)} handles came"
                    )
                    fds, self._fds = self._fds[: len(listed)], self._fds[len(listed):]
                    return msg, fds
            left = end - time.monotonic()
            if left <= 0 or not self._read(left):
                raise HarnessError(f"no frame within {bound:.1f} s")

    def recv_past_heartbeats(self, bound: float) -> tuple[dict, list[int]]:
        """The next message other than Heartbeat, within `bound` in all: once joined, a peer MAY send
        Heartbeat at any time (MSG-4). HarnessError when none came in time, PeerClosed at end of file."""
        end = time.monotonic() + bound
        while True:
            msg, fds = self.recv(max(0.0, end - time.monotonic()))
            if msg.get("type") != "Heartbeat":
                return msg, fds

    def send_heartbeats(self, n: int) -> None:
        """n Heartbeats, each its own write (MSG-4)."""
        for _ in range(n):
            self.send(HEARTBEAT)
            time.sleep(0.01)  # not a bound: each Heartbeat is read on its own

    def expect(self, kind: str, bound: float | None = None) -> tuple[dict, list[int]]:
        msg, fds = self.recv(bound)
        assert msg.get("type") == kind, f"expected {kind}, got {msg}"
        return msg, fds

    def closed_by_peer(self, bound: float) -> bool:
        """Whether the implementation closed this channel within `bound` (reading and dropping what comes)."""
        end = time.monotonic() + bound
        try:
            while time.monotonic() < end:
                self._read(max(0.0, end - time.monotonic()))
        except (PeerClosed, ConnectionResetError):
            return True
        return False

    def answer_before_close(self, bound: float, ignore=()) -> dict | None:
        """The first message, other than those whose type is in `ignore`, that comes before the peer closes the
        connection; None once it closed without one. HarnessError if it did neither within `bound` seconds."""
        end = time.monotonic() + bound
        try:
            while True:
                msg, _ = self.recv(max(0.0, end - time.monotonic()))
                if msg.get("type") not in ignore:
                    return msg
        except (PeerClosed, ConnectionResetError):
            return None

    def close(self) -> None:
        for fd in self._fds:
            os.close(fd)
        self._fds = []
        self.sock.close()


class ScriptedReceiver(WireSocket):
    """Plays receiver `rid` on the channel of `handle` (spec 10.1: handle.fileno())."""

    def __init__(self, handle, rid: int):
        # It reads what a sender writes: frames up to WIRE-2's bound for the receiver's direction.
        super().__init__(socket.socket(fileno=os.dup(handle.fileno())), MAX_TO_RECEIVER)
        self.rid = rid
        self.init: dict | None = None
        self.slot_fds: dict[int, int] = {}

    def take_slots(self, slots, fds) -> None:
        """Keeps the descriptors of the CPU slots a message lists, in list order (WIRE-4)."""
        cpu = [s for s in slots if not s.get("ipc")]
        assert len(fds) == len(cpu), f"WIRE-4 violated: {len(cpu)} slots listed, {len(fds)} handles came"
        for s, fd in zip(cpu, fds):
            old = self.slot_fds.get(s["slot"])
            if old is not None:  # the slot was introduced again: its new handle replaces the old one
                os.close(old)
            self.slot_fds[s["slot"]] = fd

    def handshake(self, answer: bool = True, bound: float | None = None) -> dict:
        msg, fds = self.expect("Init", bound)
        self.take_slots(msg["slots"], fds)
        self.init = msg
        if answer:
            self.send(ready(self.rid, msg["version"]))
        return msg

    def next_receive(self, bound: float | None = None) -> dict:
        msg, fds = self.expect("Receive", bound)
        self.take_slots(msg["new_slots"], fds)
        return msg

    def close(self) -> None:
        for fd in self.slot_fds.values():
            os.close(fd)
        self.slot_fds = {}
        super().close()


def slot_bytes(peer: ScriptedReceiver, slot: int) -> list[bytes]:
    """Each array of the peer's Init manifest, its bytes as they are in `slot` now, read through the handle the
    peer was given (read-only)."""
    import mmap

    fd = peer.slot_fds[slot]
    with mmap.mmap(fd, os.fstat(fd).st_size, prot=mmap.PROT_READ) as m:
        return [bytes(m[e["offset"]: e["offset"] + e["nbytes"]]) for e in peer.init["manifest"]]


def check_sealed(slot_fds: dict[int, int]) -> None:
    """SEC-4, as a receiver finds it: each slot handle it holds is read-only, its buffer sealed, and no descriptor
    it can open (reopening through /proc/self/fd for writing) resizes or rewrites it."""
    import fcntl
    import mmap

    sealed = fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | getattr(fcntl, "F_SEAL_FUTURE_WRITE", 0x10)
    for sid, fd in slot_fds.items():
        mode = fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE
        assert mode == os.O_RDONLY, f"SEC-4 violated: slot {sid}'s handle is open for writing (mode {mode})"
        try:
            seals = fcntl.fcntl(fd, fcntl.F_GET_SEALS)
        except OSError as e:
            raise AssertionError(f"SEC-4 violated: slot {sid}'s buffer cannot be sealed ({e})") from None
        assert seals & sealed == sealed, f"SEC-4 violated: slot {sid} has seals {seals:#x}, needs {sealed:#x}"
        rw = os.open(f"/proc/self/fd/{fd}", os.O_RDWR)  # a receiver can reopen it for writing ...
        try:
            for what, attempt in [
                ("pwrite", lambda rw=rw: os.pwrite(rw, b"\x7f" * 8, 0)),
                ("ftruncate to 0", lambda rw=rw: os.ftruncate(rw, 0)),
                ("ftruncate larger", lambda rw=rw: os.ftruncate(rw, 1 << 30)),
                ("fallocate past its end", lambda rw=rw: os.posix_fallocate(rw, os.fstat(rw).st_size, 1 << 20)),
                ("a writable shared mapping", lambda rw=rw: mmap.mmap(rw, 64, flags=mmap.MAP_SHARED)),
            ]:
                try:  # ... but every write fails (SEC-4)
                    attempt()
                except OSError:
                    continue
                raise AssertionError(f"SEC-4 violated: a receiver could change slot {sid} by {what}")
        finally:
            os.close(rw)


# ---- rendezvous (spec/14-rendezvous.md), written from RDV-1..RDV-3 ----

JOIN_LABEL, WELCOME_LABEL = b"weightsync-join", b"weightsync-welcome"


def proof(secret: bytes, label: bytes, sender_nonce: bytes, receiver_nonce: bytes, rid: int) -> bytes:
    import hashlib
    import hmac

    return hmac.new(secret, label + sender_nonce + receiver_nonce + rid.to_bytes(8, "big"), hashlib.sha256).digest()


def parse_url(url: str) -> tuple[int, object, int, bytes]:
    """(socket family, socket address, receiver id, secret) of a receiver URL (RDV-1)."""
    from urllib.parse import parse_qs, unquote

    head, _, query = url.partition("?")
    q = parse_qs(query)
    rid, secret = int(q["receiver"][0]), bytes.fromhex(q["secret"][0])
    if head.startswith("unix:@"):
        return socket.AF_UNIX, "\0" + unquote(head[6:]), rid, secret
    if head.startswith("unix:"):
        return socket.AF_UNIX, unquote(head[5:]), rid, secret
    host, _, port = head[len("tcp://"):].rpartition(":")
    return socket.AF_INET, (host.strip("[]"), int(port)), rid, secret


class Joiner(ScriptedReceiver):
    """A process joining an implementation's listening Sender by hand, with any id and secret (RDV-3)."""

    def __init__(self, url: str, rid: int | None = None, secret: bytes | None = None, bound: float | None = None):
        family, addr, url_rid, url_secret = parse_url(url)
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.settimeout(tm.BOUND if bound is None else bound)
        sock.connect(addr)
        WireSocket.__init__(self, sock, MAX_TO_RECEIVER)
        self.rid = url_rid if rid is None else rid
        self.secret = url_secret if secret is None else secret
        self.init = None
        self.slot_fds = {}
        self.hello, _ = self.expect("Hello", bound)

    def join_message(self) -> dict:
        """The Join this joiner sends: its id, a fresh nonce, the proof of its secret over both nonces (RDV-3)."""
        self.nonce = os.urandom(32)
        return {"type": "Join", "receiver": self.rid, "nonce": self.nonce,
                "proof": proof(self.secret, JOIN_LABEL, self.hello["nonce"], self.nonce, self.rid)}

    def join(self, bound: float | None = None) -> dict:
        """Sends Join; returns the answer (Welcome or Refuse), checking Welcome's proof (RDV-7)."""
        self.send(self.join_message())
        answer, _ = self.recv(bound)
        return answer

    def welcome_ok(self, answer: dict) -> bool:
        return answer.get("proof") == proof(self.secret, WELCOME_LABEL, self.hello["nonce"], self.nonce, self.rid)


class ScriptedSender:
    """The trainer's side, by hand: listens on an abstract name, runs the join, writes slots and frames.

    Slots are sealed memfds written here and passed read-only, as SEC-4 says a sender must. With `tcp`, it
    listens on tcp://127.0.0.1 instead (section 15): a frame then carries no handle, and each session's versions
    travel over a `DataPlane` of the suite's own.
    """

    _count = 0

    def __init__(self, welcome: str = "good", protocol: str = "1.1", hello_size: int | None = None,
                 tcp: bool = False):
        ScriptedSender._count += 1
        self.name = f"conformance-{os.getpid()}-{ScriptedSender._count}"
        if tcp:
            self.sock = socket.create_server(("127.0.0.1", 0))
            self.address = f"tcp://127.0.0.1:{self.sock.getsockname()[1]}"
        else:
            self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self.sock.bind("\0" + self.name)
            self.sock.listen(8)
            self.address = f"unix:@{self.name}"
        self.master = os.urandom(32)
        self.welcome = welcome
        self.protocol = protocol
        self.hello_size = hello_size
        self.buffers: dict[int, tuple[int, int]] = {}  # slot id -> (read-write fd, read-only fd)
        self.maps: dict[int, object] = {}  # slot id -> the sender's writable mapping of a rewritable slot

    def secret(self, rid: int) -> bytes:
        import hashlib
        import hmac

        return hmac.new(self.master, b"weightsync receiver %d" % rid, hashlib.sha256).digest()

    def url(self, rid: int) -> str:
        return f"{self.address}?receiver={rid}&secret={self.secret(rid).hex()}"

    def accept(self, bound: float | None = None, drop: str | None = None,
               instead: tuple[str, dict] | None = None) -> WireSocket | None:
        """Runs the sender's side of a join; the session's socket once welcomed, None once refused.

        `drop`: "before Hello" or "after Join" closes the connection there and returns None, as a sender that
        bounds its joins under way, or runs one out of time, does (RDV-6). `instead`: ("Hello", payload) sends
        that payload in place of Hello, ("Welcome", payload) in place of the answer to a right Join; either
        way the socket is returned, open, after it."""
        bound = tm.BOUND if bound is None else bound
        if not readable(self.sock, bound):
            raise HarnessError(f"no receiver connected within {bound:.1f} s")
        conn, _ = self.sock.accept()
        if drop == "before Hello":
            conn.close()
            return None
        s = WireSocket(conn, MAX_TO_SENDER)
        nonce = os.urandom(32)
        hello = {"type": "Hello", "protocol": self.protocol, "nonce": nonce}
        if instead is not None and instead[0] == "Hello":
            s.send(instead[1])
            return s
        if self.hello_size is not None:  # a Hello padded with an unknown field, as a squatter might send
            s.send_raw(frame(padded(hello, self.hello_size)))
            return s
        s.send(hello)
        if self.protocol.split(".")[0] != "1":  # a joiner of another major sends no Join (RDV-3)
            return s
        join, _ = s.expect("Join", bound)
        if drop == "after Join":
            s.close()
            return None
        rid = join["receiver"]
        good = proof(self.secret(rid), JOIN_LABEL, nonce, join["nonce"], rid)
        assert join["proof"] == good, "RDV-3 violated: the receiver's Join proof is not HMAC(secret, ...) as specified"
        if instead is not None:
            s.send(instead[1])
            return s
        if self.welcome == "refuse":
            s.send({"type": "Refuse", "detail": "refused: unknown receiver id or wrong secret"})
            s.close()
            return None
        if self.welcome == "a large frame":  # only the length of a 1 MiB frame in place of Welcome, then nothing
            s.send_raw(LENGTH.pack(1 << 20))
            return s
        welcome = proof(self.secret(rid), WELCOME_LABEL, nonce, join["nonce"], rid)
        if self.welcome == "bad":
            welcome = bytes(32)
        s.send({"type": "Welcome", "proof": welcome})
        s.rid = rid
        return s

    def slot(self, sid: int, data: bytes, nbytes: int, rewritable: bool = False) -> int:
        """A sealed slot buffer holding `data` (padded to `nbytes`); returns its read-only descriptor.

        `rewritable`: the sender keeps writing it (`rewrite`), as a real sender does: sealed against new
        writable mappings (F_SEAL_FUTURE_WRITE) instead of against every write."""
        import fcntl
        import mmap

        fd = os.memfd_create(f"conformance-slot{sid}", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
        os.ftruncate(fd, nbytes)
        m = mmap.mmap(fd, nbytes)
        m[: len(data)] = data
        if rewritable:
            self.maps[sid] = m
            seal = getattr(fcntl, "F_SEAL_FUTURE_WRITE", 0x0010)
        else:
            m.close()
            seal = fcntl.F_SEAL_WRITE
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | seal)
        ro = os.open(f"/proc/self/fd/{fd}", os.O_RDONLY | os.O_CLOEXEC)
        self.buffers[sid] = (fd, ro)
        return ro

    def rewrite(self, sid: int, data: bytes) -> None:
        """Writes a new version's bytes into a rewritable slot, as a sender reusing a free slot does."""
        self.maps[sid][: len(data)] = data

    def close(self) -> None:
        self.sock.close()
        for m in self.maps.values():
            m.close()
        self.maps = {}
        for fds in self.buffers.values():
            for fd in fds:
                os.close(fd)
        self.buffers = {}


class DataPlane:
    """Rank 0 of one receiver incarnation's data plane, played by the suite (NET-2, written from section 15): a
    TCPStore of its own (NET-6), a fresh prefix (NET-1), and a two-rank gloo group built once the receiver set
    `joined` under the prefix. `plane` is Init's `data_plane`; `store` in it may name another address (a relay
    that watches the store's traffic). Every wait is bounded: gloo's own by the suite's bound."""

    def __init__(self, nbytes: int, timeout_ms: int = 60_000, lease_ms: int = 60_000, store: str | None = None):
        import datetime

        import torch.distributed as dist

        self.dist = dist
        self.timeout = datetime.timedelta(seconds=tm.T)
        self.server = dist.TCPStore("127.0.0.1", 0, is_master=True, wait_for_workers=False, timeout=self.timeout)
        self.port = self.server.port
        self.prefix = os.urandom(16).hex()
        self.nbytes = nbytes
        self.group = None
        self.plane = {"backend": "gloo", "store": store or f"127.0.0.1:{self.port}", "prefix": self.prefix,
                      "nbytes": nbytes, "timeout_ms": timeout_ms, "lease_ms": lease_ms}

    def build(self, bound: float | None = None, channel: socket.socket | None = None) -> None:
        """Waits for the receiver's `joined` key, looking without blocking on the store, then builds rank 0 over a
        store connection of its own. HarnessError when no `joined` came within `bound`; PeerClosed as soon as the
        receiver closed `channel` (its end of file is looked for without taking a byte)."""
        dist = self.dist
        bound = tm.T if bound is None else bound
        client = dist.TCPStore("127.0.0.1", self.port, is_master=False, wait_for_workers=False, timeout=self.timeout)
        keys = dist.PrefixStore(self.prefix, client)
        end = time.monotonic() + bound
        while not keys.check(["joined"]):
            if channel is not None and readable(channel, 0):
                try:
                    ended = channel.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b""
                except BlockingIOError:
                    ended = False
                except OSError:
                    ended = True
                if ended:
                    raise PeerClosed("the receiver closed its channel before it set `joined`")
            if time.monotonic() > end:
                raise HarnessError(f"the receiver set no `joined` key within {bound:.1f} s")
            time.sleep(0.01)
        opts = dist.ProcessGroupGloo._Options()
        opts._devices = [dist.ProcessGroupGloo.create_device(hostname="127.0.0.1")]
        opts._timeout = self.timeout
        self.group = dist.ProcessGroupGloo(keys, 0, 2, opts)

    def send(self, data: bytes) -> None:
        """One transfer: `data` padded to `nbytes`, as on a Unix slot (WIRE-8); bounded by gloo's timeout."""
        import torch

        buf = torch.zeros(self.nbytes, dtype=torch.uint8)
        if data:
            buf[: len(data)] = torch.frombuffer(bytearray(data), dtype=torch.uint8)
        self.group.send([buf], 1, 0).wait()

    def drop(self) -> None:
        """Ends rank 0: its connection closes, so a receive the receiver posted fails (NET-3)."""
        self.group = None

    def close(self) -> None:
        self.group = None
        self.server = None  # the store's server ends with its last reference


def layout(arrays: list[tuple[str, str, tuple, bytes]], gap: int = 0) -> tuple[list[dict], bytes, int]:
    """Manifest entries, the slot's bytes and its size for (name, dtype, shape, raw bytes) (LAYOUT-1, WIRE-8).

    `gap`: that many more bytes (a multiple of 64) before each array, and every padding byte 0xA5 instead of 0:
    a legal layout (offsets are the manifest's, padding holds anything) that a reader packing the arrays
    itself, or reading padding, gets wrong."""
    manifest, data, end = [], bytearray(), 0
    fill = b"\xa5" if gap else b"\0"
    for name, dtype, shape, raw in arrays:
        offset = -(-end // 64) * 64 + gap
        data += fill * (offset - len(data)) + raw
        manifest.append({"name": name, "dtype": dtype, "shape": list(shape), "device": "cpu", "offset": offset,
                         "nbytes": len(raw)})
        end = offset + len(raw)
    nbytes = max(64, -(-end // 64) * 64)
    return manifest, bytes(data), nbytes


def init(rid: int, manifest, slots: list[dict], version: int, slot: int, protocol: str = "1.1") -> dict:
    return {"type": "Init", "protocol": protocol, "receiver": rid, "manifest": manifest, "slots": slots,
            "version": version, "slot": slot, "byteorder": sys.byteorder, "capabilities": [], "data_plane": None}


def handles_listed(msg: dict) -> int:
    """How many handles WIRE-4 has a frame carry: one per listed slot (Init's `slots`, Receive's `new_slots`)
    whose `ipc` is empty, read as literally from a payload that may break WIRE-3 as from a legal one."""
    slots = msg.get("slots", msg.get("new_slots"))
    if not isinstance(slots, list):
        return 0
    return sum(1 for s in slots if isinstance(s, dict) and s.get("ipc", []) == [])


def slotinfo(sid: int, nbytes: int) -> dict:
    return {"slot": sid, "device": "cpu", "nbytes": nbytes, "ipc": []}


def loose(msg) -> bytes:
    """`msg` in a valid MessagePack encoding that is not the canonical one (WIRE-5: a decoder accepts any): each
    map's keys in reverse order (`type` last, each record's fields reversed), every integer in its 64-bit form
    (0xcf, 0xd3) and every map, array, str and bin header in its 32-bit form, whatever the value's size."""
    if isinstance(msg, dict):
        items = list(msg.items())[::-1]
        return b"\xdf" + struct.pack(">I", len(items)) + b"".join(loose(k) + loose(v) for k, v in items)
    if isinstance(msg, (list, tuple)):
        return b"\xdd" + struct.pack(">I", len(msg)) + b"".join(loose(v) for v in msg)
    if msg is None:
        return b"\xc0"
    if isinstance(msg, bool):
        return b"\xc3" if msg else b"\xc2"
    if isinstance(msg, int):
        return b"\xcf" + struct.pack(">Q", msg) if msg >= 0 else b"\xd3" + struct.pack(">q", msg)
    if isinstance(msg, str):
        raw = msg.encode()
        return b"\xdb" + struct.pack(">I", len(raw)) + raw
    if isinstance(msg, (bytes, bytearray)):
        return b"\xc6" + struct.pack(">I", len(msg)) + bytes(msg)
    if isinstance(msg, float):
        return b"\xcb" + struct.pack(">d", msg)
    raise TypeError(f"loose() cannot encode {type(msg).__name__}")


def without_optional(msg: dict) -> dict:
    """`msg` with every optional field of Table 12-1 left out, its records' too (WIRE-5: a decoder gives each its
    default): Init's and Ready's `capabilities`, Init's `data_plane`, each SlotInfo's `ipc` where it is empty."""
    out = {k: v for k, v in msg.items() if k not in ("capabilities", "data_plane")}
    for key in ("slots", "new_slots"):
        if key in out:
            out[key] = [{k: v for k, v in s.items() if not (k == "ipc" and v == [])} for s in out[key]]
    return out


def with_repeated_key(msg: dict, key: str, first) -> bytes:
    """`msg`'s payload with `key` written twice: first holding `first`, last holding msg[key] (WIRE-3: a decoder
    takes the last value or treats the map as a violation, never takes the first). Built by hand: a dict cannot."""
    rest = {k: v for k, v in msg.items() if k != key}
    base = pack(rest)
    assert 0x80 <= base[0] < 0x8e, "a small map (fixmap) is extended"
    return bytes([base[0] + 2]) + pack(key) + pack(first) + base[1:] + pack(key) + pack(msg[key])


class _Creates:
    """Pickles as a call of open(path, "w"): whoever unpickles it creates the file."""

    def __init__(self, path: str):
        self.path = path

    def __reduce__(self):
        return (open, (self.path, "w"))


def code_payload(path: str) -> bytes:
    """A payload that runs code if decoded by a general deserialiser: a pickle whose loading creates `path`
    (MSG-3: a peer executes no code carried by a message; WIRE-3: it is not one MessagePack map)."""
    import pickle

    return pickle.dumps(_Creates(path), protocol=2)
