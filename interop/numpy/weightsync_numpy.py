"""A weightsync 1.1 receiver over NumPy, written from the spec alone (no torch).

It joins a sender by URL (spec 14: ``unix:PATH?receiver=I&secret=HEX`` or
``unix:@NAME?...``), proves the secret and checks the sender's proof (RDV-3, RDV-7), then
speaks Part I over the wire profile (spec 12): 4-byte big-endian frames, strict
MessagePack maps, slot handles as SCM_RIGHTS descriptors beside the frames that list them.
Heartbeat from the sender is ignored once the join is done, before Init as while live (MSG-4);
this receiver sends none (only the network profile obliges a peer to).
TCP URLs parse but are rejected with NotImplementedError: the network profile (section 15)
moves the bytes over a torch.distributed gloo group, which this torch-free receiver cannot join.

    Receiver(url, *, mode="push"|"pull", zero_copy=False, on_apply=None)
    .connect(timeout=None) -> int   join, take Init, apply it, answer Ready
    .version                        int, or None before connect and after an Ack(error)
    .weights                        read-only mapping name -> read-only numpy.ndarray
    .reading(timeout=None)          context manager: no apply while any block is open
    .poll(timeout=0) -> int | None  pull mode: apply the newest pending version
    .stopped, .closed, .failure     state (SM-R-8); the error that stopped a push receiver
    .close()                        idempotent; also a context manager

Copy mode (default) keeps private arrays and exposes read-only views of them; zero_copy
exposes read-only views of the read-only mapped slot (SEC-6: writing raises ValueError),
valid until the receiver acks a newer version (ZC-3). Push mode applies from a background
thread outside ``reading()`` blocks; pull mode applies only inside ``poll()``. ``on_apply``
(an extension) is called as ``on_apply(version, weights)`` after each apply, before its
Ready/Ack. dtypes follow Table 12-2; ``bfloat16`` arrays are raw ``uint16`` (see
``bfloat16_to_float32``). Errors mirror spec 10.3, without the sender-side ones.

Command line (the conformance suite's receiver contract): ``python weightsync_numpy.py
URL [push|pull]`` prints ``applied VERSION SHA256`` per held version, then ``stopped``
(exit 0) or ``error TEXT`` (exit 1).
"""
from __future__ import annotations

import array
import contextlib
import hashlib
import hmac
import logging
import math
import mmap
import os
import secrets
import select
import socket
import struct
import sys
import threading
import time
import types
from urllib.parse import unquote

import msgpack
import numpy as np

PROTOCOL_VERSION = "1.1"
CAPABILITIES = frozenset({"push", "pull", "zero_copy", "rendezvous", "wire"})
REACTION = 10.0                       # the spec's reaction bound, seconds
MAX_IN, MAX_OUT, MAX_STR = 64 << 20, 1 << 16, 4096   # WIRE-2, WIRE-3
MAX_BEFORE_PROOF = 8 << 10   # RDV-9: what a join reads before the sender proved the secret
DTYPES = {"bool": np.bool_, "int8": np.int8, "int16": np.int16, "int32": np.int32, "int64": np.int64,
          "uint8": np.uint8, "uint16": np.uint16, "uint32": np.uint32, "uint64": np.uint64,
          "float16": np.float16, "bfloat16": np.uint16, "float32": np.float32, "float64": np.float64,
          "complex64": np.complex64, "complex128": np.complex128}
log = logging.getLogger("weightsync_numpy")


class WeightSyncError(Exception):
    """Base of every error this module raises on purpose."""

class SyncTimeoutError(WeightSyncError, TimeoutError):
    """A bounded wait ran out (connect without Init, reading() that could not enter)."""

class ReceiverError(WeightSyncError):
    """This receiver could not apply ``.version``; Ready(error) or Ack(error) was sent."""
    def __init__(self, msg: str, version: int | None = None):
        super().__init__(msg); self.version = version

class ProtocolError(WeightSyncError):
    """A protocol rule was broken, locally (LocalProtocolError) or by the sender."""

class LocalProtocolError(ProtocolError):
    """A call the caller may not make now."""

class RemoteProtocolError(ProtocolError):
    """The sender broke the protocol; ``.state``, ``.event`` and ``.requirement`` say how."""
    def __init__(self, msg: str, requirement: str = "", event: str = "protocol violation", state: str = ""):
        super().__init__(msg); self.requirement, self.event, self.state = requirement, event, state

class ClosedError(WeightSyncError):
    """The receiver is closed, or the sender closed or left before the handshake."""

class RefusedError(WeightSyncError, PermissionError):
    """The sender refused the join (RDV-4)."""

class _EOF(Exception):
    """End of channel (CON-1)."""


def _bad(req: str, text: str, event: str = "protocol violation") -> RemoteProtocolError:
    return RemoteProtocolError(f"{req} violated by the sender: {text}", req, event)


def join_proof(secret: bytes, label: bytes, nonce_s: bytes, nonce_r: bytes, receiver: int) -> bytes:
    """HMAC-SHA256(secret, label | sender nonce | joiner nonce | id as 8 bytes big-endian) (RDV-3, RDV-5)."""
    return hmac.new(secret, label + nonce_s + nonce_r + receiver.to_bytes(8, "big"), hashlib.sha256).digest()


def bfloat16_to_float32(a) -> np.ndarray:
    """Widen raw bfloat16 bits (a uint16 array) to float32, as spec 12.5 notes."""
    a = np.asarray(a)
    if a.dtype != np.uint16:
        raise TypeError(f"expected the uint16 bits of a bfloat16 array, got {a.dtype}")
    return (a.astype(np.uint32) << 16).view(np.float32)


def parse_url(url: str) -> tuple[str, int, bytes]:
    """Split a receiver URL (RDV-1) into (socket address, receiver id, secret)."""
    base, sep, query = url.partition("?")
    params = dict(p.partition("=")[::2] for p in query.split("&")) if sep else {}
    rid, sec = params.get("receiver", ""), params.get("secret", "")
    if not (rid.isascii() and rid.isdigit() and int(rid) < 1 << 63):
        raise ValueError(f"malformed weightsync URL {url!r}: need ?receiver=I&secret=HEX (RDV-1)")
    if len(sec) != 64 or sec.strip("0123456789abcdef"):
        raise ValueError(f"malformed weightsync URL {url!r}: secret must be 64 lowercase hex digits (RDV-1)")
    if base.startswith("tcp://"):
        raise NotImplementedError("tcp:// URLs are not supported: a TCP channel cannot carry slot "
                                  "descriptors; use a unix: address (spec 14)")
    if not base.startswith("unix:") or base in ("unix:", "unix:@"):
        raise ValueError(f"malformed weightsync URL {url!r}: address must be unix:PATH or unix:@NAME (RDV-1)")
    addr = base[5:]
    addr = "\0" + unquote(addr[1:]) if addr.startswith("@") else unquote(addr)
    return addr, int(rid), bytes.fromhex(sec)


# ---- MessagePack payloads (WIRE-3, WIRE-5) ------------------------------------------
_ENTRY = {"name": "str", "dtype": "str", "shape": ("list", "int", 64), "device": "str", "offset": "int", "nbytes": "int"}
_SLOT = {"slot": "int", "device": "str", "nbytes": "int", "ipc": ("opt", ("list", "ipc", 16), [])}
_DATA_PLANE = {"backend": "str", "store": "str", "prefix": "str", "nbytes": "int", "timeout_ms": "int", "lease_ms": "int"}
_SCHEMA = {
    "Hello": {"protocol": "str", "nonce": "bin32"}, "Welcome": {"proof": "bin32"}, "Refuse": {"detail": "str"},
    "Init": {"protocol": "str", "receiver": "int", "manifest": ("list", _ENTRY, 0), "slots": ("list", _SLOT, 0),
             "version": "int", "slot": "int", "byteorder": "str", "capabilities": ("opt", ("list", "str", 0), []),
             "data_plane": ("opt", ("nil_or", _DATA_PLANE), None)},   # NET-1: checked, though unix: has no use for it
    "Receive": {"version": "int", "slot": "int", "new_slots": ("list", _SLOT, 0)}, "Stop": {},
    "Heartbeat": {}}   # MSG-4: legal once the join is done, in new and live; ignored
_INT64 = range(-(1 << 63), 1 << 63)
_ATOMS = {"int": lambda x: type(x) is int and 0 <= x < 1 << 63,
          "str": lambda x: type(x) is str and len(x.encode()) <= MAX_STR,
          "bin32": lambda x: type(x) is bytes and len(x) == 32,
          "ipc": lambda x: x is None or type(x) is bool or (type(x) is int and x in _INT64)
          or (type(x) is bytes and len(x) <= MAX_STR) or (type(x) is str and len(x.encode()) <= MAX_STR)}


def _conform(v, kind, where: str):
    if isinstance(kind, dict):
        if type(v) is not dict or any(type(k) is not str for k in v):
            raise _bad("WIRE-3", f"{where} is not a map with string keys")
        out = {}
        for key, sub in kind.items():
            if isinstance(sub, tuple) and sub[0] == "opt":
                if key not in v:
                    out[key] = sub[2]; continue
                sub = sub[1]
            if key not in v:
                raise _bad("WIRE-3", f"{where} lacks the required field {key!r}")
            out[key] = _conform(v[key], sub, f"{where}.{key}")
        return out
    if isinstance(kind, tuple) and kind[0] == "nil_or":
        return None if v is None else _conform(v, kind[1], where)
    if isinstance(kind, tuple):
        if type(v) is not list or (kind[2] and len(v) > kind[2]):
            raise _bad("WIRE-3", f"{where} is not a list" + (f" of at most {kind[2]}" if kind[2] else ""))
        return [_conform(x, kind[1], f"{where}[{i}]") for i, x in enumerate(v)]
    if not _ATOMS[kind](v):
        raise _bad("WIRE-3", f"{where} is not a valid {kind}: {type(v).__name__}")
    return v


class _Opaque:
    """A map keyed by a map: legal MessagePack that only an ignored field may hold (WIRE-3)."""


def _pairs(pairs):
    try:
        d = dict(pairs)
    except TypeError:  # an unhashable key
        return _Opaque()
    if len(d) != len(pairs):
        raise ValueError("duplicate key in a map")
    return d


def decode(payload: bytes) -> tuple[str, dict]:
    """One sender -> receiver payload to (type, fields); RemoteProtocolError otherwise."""
    try:
        msg = msgpack.unpackb(payload, raw=False, strict_map_key=False, object_pairs_hook=_pairs)
    except Exception as e:   # ExtraData, FormatError, StackError, UnicodeDecodeError, ...
        raise _bad("WIRE-3", f"payload is not one valid MessagePack value ({type(e).__name__}: {e})") from None
    kind = msg.get("type") if type(msg) is dict else None
    if type(kind) is not str or kind not in _SCHEMA:
        raise _bad("MSG-3", f"unknown or missing message type {kind!r} (or a map was expected)")
    return kind, _conform(msg, _SCHEMA[kind], kind)


def encode(kind: str, **fields) -> bytes:
    """A canonical payload (WIRE-5): ``type`` first, fields in the order given."""
    return msgpack.packb({"type": kind, **fields}, use_bin_type=True)


def _short(text: str) -> str:
    return text.encode()[:MAX_STR].decode(errors="ignore")


# ---- frames and handles (WIRE-1, WIRE-2, WIRE-4, WIRE-7) ------------------------------
class _Channel:
    """One stream socket: frames in and out; descriptors in, queued in arrival order for
    the frames that list slots to take (WIRE-4). Reads never cross a frame's end."""
    ANC = socket.CMSG_SPACE(4 * 253)    # SCM_MAX_FD; the kernel never merges two fd groups

    def __init__(self, sock: socket.socket, wake: int):
        self.sock, self.wake = sock, wake
        sock.setblocking(False)
        self.hdr, self.body, self.got, self.t0, self.fds = bytearray(4), None, 0, None, []
        self.limit = MAX_BEFORE_PROOF   # raised to MAX_IN once the sender proved the secret (RDV-9)

    def _wait(self, events: int, until: float | None) -> bool:
        p = select.poll(); p.register(self.sock, events); p.register(self.wake, select.POLLIN)
        left = None if until is None else max(0, until - time.monotonic())
        ready = dict(p.poll(None if left is None else math.ceil(left * 1000)))
        return self.wake not in ready

    def read(self, deadline: float | None):
        """The next frame's payload, or None at the deadline or on wake."""
        while True:
            view = memoryview(self.hdr)[self.got:] if self.body is None else memoryview(self.body)[self.got:]
            try:
                n, anc, flags, _ = self.sock.recvmsg_into([view], self.ANC, socket.MSG_CMSG_CLOEXEC)
            except (BlockingIOError, InterruptedError):
                limit = deadline
                if self.t0 is not None:
                    if time.monotonic() - self.t0 > REACTION:
                        self.drop(); raise _bad("WIRE-7", "a frame was left unfinished for more than 10 s") from None
                    limit = self.t0 + REACTION if limit is None else min(limit, self.t0 + REACTION)
                if (limit is not None and time.monotonic() >= limit and limit == deadline) \
                        or not self._wait(select.POLLIN, limit):
                    return None
                continue
            except OSError:
                raise _EOF from None
            for level, typ, data in anc:
                if level == socket.SOL_SOCKET and typ == socket.SCM_RIGHTS:
                    self.fds += array.array("i", data[:len(data) - len(data) % 4])
            if flags & socket.MSG_CTRUNC:
                self.drop(); raise _bad("WIRE-4", "control message cut short (MSG_CTRUNC)")
            if n == 0:
                self.drop(); raise _EOF
            self.t0 = self.t0 or time.monotonic()
            self.got += n
            if self.body is None and self.got == 4:
                size, self.got = struct.unpack(">I", self.hdr)[0], 0
                if not 0 < size <= self.limit:
                    self.drop(); raise _bad("WIRE-1" if size == 0 else "WIRE-2", f"frame length {size}")
                self.body = bytearray(size)
            elif self.body is not None and self.got == len(self.body):
                out, self.body, self.got, self.t0 = bytes(self.body), None, 0, None
                return out

    def drop(self):
        for fd in self.fds:
            os.close(fd)
        self.fds = []

    def write(self, payload: bytes) -> None:
        assert len(payload) <= MAX_OUT
        view, until = memoryview(struct.pack(">I", len(payload)) + payload), time.monotonic() + REACTION
        while view:
            try:
                view = view[self.sock.send(view, socket.MSG_NOSIGNAL):]
            except BlockingIOError:
                if time.monotonic() > until or not self._wait(select.POLLOUT, until):
                    raise _EOF from None    # the sender stopped reading: treat it as gone
            except OSError:
                raise _EOF from None

    def close(self):
        self.drop(); self.sock.close()


class _ReadLock:
    """reading() blocks vs applies, with writer priority and per-thread nesting (CONS-2)."""
    def __init__(self):
        self.c, self.readers, self.want, self.writing, self.local = threading.Condition(), 0, False, False, threading.local()

    def depth(self) -> int:
        return getattr(self.local, "n", 0)

    def enter(self, timeout):
        if self.depth() == 0:
            with self.c:
                if not self.c.wait_for(lambda: not (self.writing or self.want), timeout):
                    raise SyncTimeoutError(f"reading(): an apply held the weights past the timeout {timeout} s")
                self.readers += 1
        self.local.n = self.depth() + 1

    def leave(self):
        self.local.n -= 1
        if self.local.n == 0:
            with self.c:
                self.readers -= 1; self.c.notify_all()

    def try_write(self, timeout) -> bool:
        with self.c:
            self.want = True
            self.writing = self.c.wait_for(lambda: self.readers == 0, timeout)
            return self.writing

    def done(self):
        with self.c:
            self.want = self.writing = False; self.c.notify_all()


# ---- the receiver ---------------------------------------------------------------------
class Receiver:
    """A weightsync receiver joined by URL; see the module docstring."""

    def __init__(self, url: str, *, mode: str = "push", zero_copy: bool = False, on_apply=None):
        if mode not in ("push", "pull"):
            raise ValueError(f"mode must be 'push' or 'pull', not {mode!r}")
        self._addr, self._id, self._secret = parse_url(url)
        self._mode, self._zc, self._on_apply = mode, bool(zero_copy), on_apply
        self._state, self._ch, self._thread, self._failure, self._closing = "new", None, None, None, False
        self._version, self._last, self._pending, self._end = None, -1, None, 0
        self._entries, self._slots, self._store, self._weights = [], {}, {}, None
        self._lock, self._io, self._done = _ReadLock(), threading.Lock(), threading.Event()
        self._wake_r, self._wake_w = os.pipe()

    version = property(lambda self: self._version, doc="The version held, or None.")
    stopped = property(lambda self: self._state in ("stopped", "failed", "closed"), doc="SM-R-8.")
    closed = property(lambda self: self._state == "closed")
    failure = property(lambda self: self._failure, doc="The error that stopped a push receiver.")

    @property
    def weights(self) -> types.MappingProxyType:
        if self._weights is None:
            raise LocalProtocolError("weights are known only after connect()")
        return self._weights

    def _open(self):
        if self._state == "closed":
            raise ClosedError("this receiver is closed (LIFE-6)")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -- join and handshake
    def connect(self, timeout: float | None = None) -> int:
        """Join by URL, take Init, apply its version, answer Ready; return the version."""
        self._open()
        if timeout is not None and timeout < 0:
            raise ValueError("timeout must be >= 0 or None")
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._io:
            if self._state != "new":
                raise LocalProtocolError(f"connect() in state {self._state}")
            try:
                self._join(deadline)
                while True:
                    got = self._next(deadline)
                    if got is None:
                        self._ch.close(); self._ch = None; self._open()
                        raise SyncTimeoutError(f"no Init within {timeout} s (INIT-5)")
                    kind, msg = got
                    if kind != "Heartbeat":
                        break
                    self._nofds(kind)   # ignored in new (MSG-4)
                if kind == "Init":
                    return self._on_init(msg)
                self._nofds(kind)
                if kind == "Stop":
                    raise _EOF
                raise _bad("SM-R-7", f"{kind} instead of Init", f"recv {kind}")
            except _EOF:
                self._stop()
                raise ClosedError("the sender closed or left before the handshake") from None
            except RemoteProtocolError as e:
                if self._state != "failed":   # not an Init refused by Ready(error) (INIT-2, MSG-2)
                    self._violate(e)
                raise

    def _next(self, deadline):
        """The next message as (type, fields), or None at the deadline or on wake."""
        frame = self._ch.read(deadline)
        return None if frame is None else decode(frame)

    def _nofds(self, kind: str):
        """A frame that lists no slot finds no handle waiting (WIRE-4)."""
        if self._ch.fds:
            raise _bad("WIRE-4", f"{len(self._ch.fds)} handles came with no frame that lists them (at {kind})")

    def _join(self, deadline):
        """RDV-6: a connection refused, closed before Hello, or closed after Join with neither Welcome nor Refuse
        (a flood dropped it, the join ran out of time) is tried again until the timeout."""
        while True:
            try:
                self._join_once(deadline)
                return
            except _EOF:
                if self._ch is not None:
                    self._ch.close(); self._ch = None
                if deadline is not None and time.monotonic() >= deadline:
                    raise SyncTimeoutError("the sender closed every join before answering it (RDV-6)") from None
                time.sleep(0.05)

    def _join_once(self, deadline):
        while True:   # refused, or closed before Hello: tried again until the timeout
            self._open()
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
            try:
                sock.settimeout(None if deadline is None else max(0.001, deadline - time.monotonic()))
                sock.connect(self._addr)
                self._ch = _Channel(sock, self._wake_r)
                got = self._next(deadline)
            except (TimeoutError, ConnectionRefusedError, FileNotFoundError, ConnectionResetError, BlockingIOError, _EOF):
                sock.close(); self._ch = None
                if deadline is not None and time.monotonic() >= deadline:
                    raise SyncTimeoutError("no sender answered at the URL's address (RDV-6)") from None
                time.sleep(0.05); continue
            except OSError as e:
                sock.close(); self._ch = None
                raise WeightSyncError(f"cannot reach the URL's address: {e}") from None
            if got is None:
                self._ch.close(); self._ch = None; self._open()
                raise SyncTimeoutError("no Hello before the timeout (RDV-6)")
            break
        kind, msg = got
        self._nofds(kind)
        if kind != "Hello":
            raise _bad("RDV-3", f"{kind} where Hello was expected", f"recv {kind}")
        if msg["protocol"].split(".")[0] != PROTOCOL_VERSION.split(".")[0]:  # no Join to another major (RDV-3)
            raise _bad("INIT-2", f"Hello of protocol {msg['protocol']!r}, this receiver speaks {PROTOCOL_VERSION}",
                       "recv Hello")
        nonce = secrets.token_bytes(32)
        mac = lambda label: join_proof(self._secret, label, msg["nonce"], nonce, self._id)
        self._ch.write(encode("Join", receiver=self._id, nonce=nonce, proof=mac(b"weightsync-join")))
        got = self._next(deadline)
        if got is None:
            self._ch.close(); self._ch = None; self._open()
            raise SyncTimeoutError("no Welcome before the timeout (RDV-6)")
        kind, reply = got
        self._nofds(kind)
        if kind == "Refuse":
            self._ch.close(); self._ch = None
            raise RefusedError(f"the sender refused the join: {reply['detail']} (RDV-4)")
        if kind != "Welcome":
            raise _bad("RDV-3", f"{kind} where Welcome or Refuse was expected", f"recv {kind}")
        if not hmac.compare_digest(reply["proof"], mac(b"weightsync-welcome")):
            raise _bad("RDV-7", "Welcome's proof is wrong: this is not the sender the URL names", "recv Welcome")
        self._ch.limit = MAX_IN   # the sender proved the secret: WIRE-2's bound from now on (RDV-9)

    def _on_init(self, msg: dict) -> int:
        version = msg["version"]
        self._last = version
        if msg["protocol"].split(".")[0] != PROTOCOL_VERSION.split(".")[0]:
            self._refuse(RemoteProtocolError(f"INIT-2: Init of protocol {msg['protocol']!r}, this receiver "
                                             f"speaks {PROTOCOL_VERSION}", "INIT-2", "recv Init", "new"))
        if msg["receiver"] != self._id:
            self._refuse(RemoteProtocolError(f"MSG-2: Init for receiver {msg['receiver']} on the channel of "
                                             f"receiver {self._id}", "MSG-2", "recv Init", "new"))
        self._add_slots(msg["slots"])
        if msg["slot"] not in self._slots:
            raise _bad("SLOT-1", f"Init names slot {msg['slot']}, which it does not list", "recv Init")
        try:
            if msg["byteorder"] != sys.byteorder:
                raise ReceiverError(f"WIRE-8: slots are {msg['byteorder']}-endian, this host is {sys.byteorder}")
            self._layout(msg["manifest"], msg["slot"])
            self._apply(version, msg["slot"])
        except ReceiverError as e:
            e.version = version
            self._refuse(e)
        self._ch.write(encode("Ready", receiver=self._id, version=version, status="ok", detail="",
                              holds_slot=self._zc, protocol=PROTOCOL_VERSION, capabilities=[]))
        self._state = "live"
        if self._mode == "push":
            self._thread = threading.Thread(target=self._run, name="weightsync-numpy-apply", daemon=True)
            self._thread.start()
        return version

    def _refuse(self, err: Exception):
        with contextlib.suppress(_EOF):
            self._ch.write(encode("Ready", receiver=self._id, version=None, status="error", detail=_short(str(err)),
                                  holds_slot=False, protocol=PROTOCOL_VERSION, capabilities=[]))
        self._stop("failed")
        raise err

    def _layout(self, manifest: list, slot_id: int):
        entries, names, end = [], set(), 0
        for e in manifest:
            dt, off, n = DTYPES.get(e["dtype"]), e["offset"], e["nbytes"]
            if e["name"] in names or dt is None or e["device"] != "cpu" or off % 64 or (n and off < end) \
                    or math.prod(e["shape"]) * np.dtype(dt).itemsize != n:
                raise ReceiverError(f"INIT-6: cannot take manifest entry {e}: a duplicate name, an unknown "
                                    "dtype, a device other than cpu, or an offset or nbytes against LAYOUT-1/WIRE-8")
            names.add(e["name"])
            end = off + n if n else end
            entries.append((e["name"], np.dtype(dt), tuple(e["shape"]), off, n))
        self._entries, self._end = entries, end
        slot = self._slots[slot_id]    # the copies' memory is bounded by what a slot really holds
        if not isinstance(slot, str) and slot[1] < end:
            raise ReceiverError(f"WIRE-8: slot {slot_id} holds {slot[1]} bytes, the manifest needs {end}")
        if not self._zc:
            self._store = {name: np.zeros(shape, dt) for name, dt, shape, *_ in entries}
            self._weights = types.MappingProxyType({k: _readonly(a.view()) for k, a in self._store.items()})

    def _add_slots(self, infos: list):
        need, ids, queue = sum(1 for s in infos if not s["ipc"]), [s["slot"] for s in infos], self._ch.fds
        if len(queue) != need:    # reads never cross a frame's end: no later frame's handles can be queued yet
            raise _bad("WIRE-4", f"{len(queue)} handles for a frame that lists {need}")
        if not need:
            self._nofds("a frame that lists no CPU slot")
        if len(set(ids)) != len(ids) or set(ids) & self._slots.keys():
            raise _bad("SLOT-5", f"slot ids {ids} introduce a slot a second time")
        fds, self._ch.fds = queue[:need], queue[need:]
        it = iter(fds)
        for info in infos:
            self._slots[info["slot"]] = _map(None if info["ipc"] else next(it), info)

    def _apply(self, version: int, slot_id: int):
        slot = self._slots[slot_id]
        if isinstance(slot, str):
            raise ReceiverError(slot, version)
        buf, size = slot
        if size < self._end:
            raise ReceiverError(f"WIRE-8: slot {slot_id} holds {size} bytes, the manifest needs {self._end}", version)
        views = {name: _readonly(np.frombuffer(buf, dt, count=n // dt.itemsize, offset=off).reshape(shape)
                                 if n else np.zeros(shape, dt)) for name, dt, shape, off, n in self._entries}
        if self._zc:
            self._weights = types.MappingProxyType(views)
        else:
            for name, view in views.items():
                np.copyto(self._store[name], view)
        self._version = version
        if self._on_apply is not None:
            try:
                self._on_apply(version, self._weights)
            except Exception as e:
                raise ReceiverError(f"on_apply raised {type(e).__name__}: {e}", version) from e

    # -- updates
    def _pump(self, deadline):
        """Read one frame (waiting until ``deadline``), then every frame already there."""
        while self._state == "live":
            got = self._next(deadline)
            if got is None:
                return
            kind, msg = got
            if kind == "Receive":
                self._add_slots(msg["new_slots"])
                if msg["slot"] not in self._slots:
                    raise _bad("SLOT-1", f"Receive names slot {msg['slot']}, never introduced", "recv Receive")
                if msg["version"] <= self._last:
                    raise _bad("VER-3", f"Receive({msg['version']}) after version {self._last}", "recv Receive")
                self._last, self._pending = msg["version"], (msg["version"], msg["slot"])
                deadline = time.monotonic()
                continue
            self._nofds(kind)
            if kind == "Heartbeat":   # ignored in live, on any channel (MSG-4)
                continue
            if kind != "Stop":
                raise _bad("SM-R-7", f"{kind} while live", f"recv {kind}")
            self._stop()

    def _apply_pending(self):
        """Apply the newest pending version (write lock held) and ack it; the error or None."""
        (version, slot_id), self._pending, err = self._pending, None, None
        try:
            self._apply(version, slot_id)
        except ReceiverError as e:
            err, self._version = e, None
        except Exception as e:   # a copy raised, memory ran out, ...
            err, self._version = ReceiverError(f"ACK-6: {type(e).__name__}: {e}", version), None
        finally:
            self._lock.done()
        self._ch.write(encode("Ack", receiver=self._id, version=version, status="error" if err else "ok",
                              detail=_short(str(err)) if err else ""))
        return version, err

    def _run(self):
        try:
            while self._state == "live" and not self._closing:
                self._pump(None)
                while self._pending and self._state == "live" and not self._closing:
                    if self._lock.try_write(0.05):
                        self._apply_pending()
                    else:   # keep reading meanwhile: Stop and newer versions are seen
                        self._pump(time.monotonic())
                self._lock.done()
        except _EOF:
            self._stop()
        except RemoteProtocolError as e:
            self._violate(e)
        except Exception as e:
            log.exception("apply thread failed")
            self._violate(RemoteProtocolError(f"apply thread failed: {type(e).__name__}: {e}"))
        finally:
            self._lock.done()

    def poll(self, timeout: float | None = 0) -> int | None:
        """Pull mode: apply the newest version pending within ``timeout``; None if none."""
        self._open()
        if self._mode != "pull" or self._lock.depth():
            raise LocalProtocolError("poll() is for pull mode, outside reading() (CONS-3)")
        if timeout is not None and timeout < 0:
            raise ValueError("timeout must be >= 0 or None")
        if self._state == "new":
            raise LocalProtocolError("poll() before connect()")
        deadline = None if timeout is None else time.monotonic() + timeout
        if not self._io.acquire(timeout=-1 if deadline is None else timeout):
            return None
        try:
            if self._state != "live":
                return None
            self._pump(time.monotonic() if self._pending else deadline)
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            if self._state != "live" or not self._pending or not self._lock.try_write(left):
                self._lock.done()
                return None
            version, err = self._apply_pending()
            if err:
                raise err
            return version
        except _EOF:
            self._stop()
        except RemoteProtocolError as e:
            self._violate(e); raise
        finally:
            self._io.release()

    @contextlib.contextmanager
    def reading(self, timeout: float | None = None):
        """No apply happens while a reading() block is open in any thread (CONS-1, CONS-2)."""
        self._open()
        self._lock.enter(timeout)
        try:
            yield self
        finally:
            self._lock.leave()

    # -- ends
    def _stop(self, state: str = "stopped"):
        if self._ch is not None:
            self._ch.close(); self._ch = None
        for slot in list(self._slots.values()):   # zero-copy views keep their mapping alive
            if isinstance(slot, tuple) and isinstance(slot[0], mmap.mmap):
                with contextlib.suppress(BufferError):
                    slot[0].close()
        self._slots.clear()
        if self._state != "closed":
            self._state = state
        self._done.set()

    def _violate(self, err: RemoteProtocolError):
        err.state = err.state or self._state
        log.warning("%s", err)
        self._failure = err
        self._stop()   # SM-R-7: close the channel, so the sender sees this receiver gone

    def close(self) -> None:
        """Stop the apply thread, close the channel, release the slots (LIFE-5). Idempotent."""
        if self._state == "closed":
            return
        self._closing = True
        os.write(self._wake_w, b"x")
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(REACTION)
        got = self._io.acquire(timeout=REACTION)
        try:
            self._stop("closed"); self._state = "closed"
        finally:
            if got:
                self._io.release()
                if self._thread is None or not self._thread.is_alive():
                    os.close(self._wake_r); os.close(self._wake_w)


def _readonly(a: np.ndarray) -> np.ndarray:
    a.flags.writeable = False
    return a


def _map(fd: int | None, info: dict):
    """Map a CPU slot read-only: (mmap, nbytes), or a text saying why it cannot be read."""
    try:
        if fd is None or info["device"] != "cpu":
            return f"slot {info['slot']} is on device {info['device']!r}: this receiver reads CPU slots only"
        if os.fstat(fd).st_size < info["nbytes"]:
            return f"WIRE-8: slot {info['slot']} buffer is smaller than its nbytes {info['nbytes']}"
        if info["nbytes"] == 0:
            return (b"", 0)
        return (mmap.mmap(fd, info["nbytes"], flags=mmap.MAP_SHARED, prot=mmap.PROT_READ), info["nbytes"])
    except (OSError, ValueError, OverflowError) as e:
        return f"slot {info['slot']} cannot be mapped: {e}"
    finally:
        if fd is not None:
            os.close(fd)


def weights_sha256(weights) -> str:
    """SHA-256 of every array's bytes in manifest order (the test-control contract)."""
    h = hashlib.sha256()
    for a in weights.values():
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()


def main(argv: list[str]) -> int:
    """``URL [push|pull]``: the conformance suite's receiver test-control contract."""
    if len(argv) not in (2, 3) or argv[2:] not in ([], ["push"], ["pull"]):
        print("usage: weightsync_numpy.py URL [push|pull]", file=sys.stderr)
        return 2
    out = lambda line: (sys.stdout.write(line.replace("\n", " ") + "\n"), sys.stdout.flush())
    mode = argv[2] if len(argv) == 3 else "push"
    try:
        rec = Receiver(argv[1], mode=mode, on_apply=lambda v, w: out(f"applied {v} {weights_sha256(w)}"))
    except (ValueError, NotImplementedError) as e:
        out(f"error {e}"); return 1
    with rec:
        try:
            rec.connect(timeout=float(os.environ.get("WEIGHTSYNC_NUMPY_CONNECT_TIMEOUT", "120")))
            while mode == "pull" and not rec.stopped:
                with contextlib.suppress(ReceiverError):   # an Ack(error) was sent; go on
                    rec.poll(timeout=1.0)
            rec._done.wait()
        except ClosedError:
            pass
        except WeightSyncError as e:
            out(f"error {type(e).__name__}: {e}"); return 1
        if rec.failure is not None:
            out(f"error {type(rec.failure).__name__}: {rec.failure}"); return 1
    out("stopped")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
