"""A weightsync 1.1 sender over NumPy, written from the spec alone (no torch).

The trainer side of spec sections 2-9 and 12-14 for CPU slots: each version is written
into a sealed memfd slot (SEC-4, LAYOUT-1), receivers join by URL on a Linux abstract
socket (``unix:@NAME``, spec 14) and are told which slot to read over the wire profile
(spec 12). One background thread accepts joins and reads every channel, so a stalled or
hostile receiver never holds up the others or the caller (SEC-2, SEC-3, SEC-5).

    Sender(arrays, num_workers, *, listen=None, max_slots=None, bfloat16=())
    .url(i)                                 what receiver i's process needs to join (RDV-1)
    .connect(timeout=None, *, workers=None) wait until the receivers joined and answered Ready
    .send(arrays=None, *, workers=None, timeout=None) -> int    publish, wait for the acks
    .send_async(...) -> SendFuture          publish only; .version .workers .wait(t) .done()
    .drop(i), .close(), .version, .closed, .address

``arrays`` is a mapping name -> ndarray or a list of (name, ndarray), in manifest order;
``bfloat16`` names uint16 arrays that hold raw bfloat16 bits (NumPy has no bfloat16).
Not implemented: handles (``handle(i)``; receivers join by URL only), TCP (section 15),
CUDA (section 11), casts (LAYOUT-3), hooks, pack. Errors about receivers carry
``.workers``, ``.version``, ``.details`` and ``.causes`` (SEND-7).

Command line: the sender test-control contract of docs/conformance.md,
``python numpy_sender.py LAYOUT_JSON N``.
"""
from __future__ import annotations

import array
import contextlib
import fcntl
import hashlib
import hmac
import json
import logging
import math
import mmap
import os
import secrets
import select
import socket
import sys
import threading
import time
from collections import deque
from collections.abc import Mapping
from urllib.parse import unquote

import msgpack
import numpy as np

from weightsync_numpy import (
    DTYPES,
    PROTOCOL_VERSION,
    ClosedError,
    LocalProtocolError,
    WeightSyncError,
    encode,
    join_proof,
)
from weightsync_numpy import SyncTimeoutError as _TimeoutBase

REACTION, WINDOW = 10.0, 1.0          # the reaction bound; SEND-7's collection window
MAX_OUT, MAX_IN, MAX_BEFORE_PROOF = 64 << 20, 1 << 16, 8 << 10   # WIRE-2, RDV-9
MAX_QUEUED, MAX_JOINS, FD_GROUP, MAX_STR = 1 << 20, 64, 250, 4096  # SEC-3, RDV-6, WIRE-4, WIRE-3
HEARTBEATS = 64                       # SEC-8's token bucket: 64 at once, 64 a second
F_SEAL_FUTURE_WRITE = getattr(fcntl, "F_SEAL_FUTURE_WRITE", 0x10)
NAMES = {np.dtype(t): name for name, t in DTYPES.items() if name != "bfloat16"}
log = logging.getLogger("weightsync_numpy.sender")


# ---- errors (spec 10.3) ----------------------------------------------------------------
class ReceiversFailed(WeightSyncError):
    """Base of the errors about receivers: ``.workers``, ``.version``, ``.details``, ``.causes``."""

    def __init__(self, msg: str, version: int | None, details: dict, causes: dict):
        super().__init__(msg)
        self.version, self.details, self.causes, self.workers = version, details, causes, sorted(causes)


class ReceiverError(ReceiversFailed):
    """A receiver answered with an error, or broke the protocol and was cut off."""

class ReceiverDiedError(ReceiversFailed):
    """A receiver's channel ended (it died, closed, or the trainer dropped it)."""

class SyncTimeoutError(ReceiversFailed, _TimeoutBase):
    """Receivers did not answer within the timeout, or no slot came free (SLOT-3)."""

class WeightsMismatchError(WeightSyncError, ValueError):
    """Weights that do not match the manifest (BAD-1, BAD-2)."""


_CLASS = {"error": ReceiverError, "violation": ReceiverError, "died": ReceiverDiedError, "timeout": SyncTimeoutError}
_MIXED: dict = {}


def _failure(what: str, version: int | None, fails: dict) -> ReceiversFailed:
    """One error naming every receiver at fault, an instance of each cause's class (SEND-7)."""
    bases = tuple(dict.fromkeys(_CLASS[c] for c, _ in fails.values()))
    cls = bases[0] if len(bases) == 1 else _MIXED.setdefault(bases, type("+".join(b.__name__ for b in bases), bases, {}))
    text = "; ".join(f"receiver {i} {c}: {d}" for i, (c, d) in sorted(fails.items()))
    return cls(f"{what}: {text}", version, {i: d for i, (_, d) in fails.items()}, {i: c for i, (c, _) in fails.items()})


class _Violation(Exception):
    """A receiver broke the protocol: the requirement, then what it did."""


class _Eof(Exception):
    """End of channel (CON-1)."""


# ---- decoding what receivers send (WIRE-3) ---------------------------------------------
_ATOM = {"int": lambda x: type(x) is int and 0 <= x < 1 << 63,
         "int|nil": lambda x: x is None or (type(x) is int and 0 <= x < 1 << 63),
         "str": lambda x: type(x) is str and len(x.encode()) <= MAX_STR,
         "bool": lambda x: type(x) is bool,
         "bin32": lambda x: type(x) is bytes and len(x) == 32,
         "strs": lambda x: type(x) is list and all(type(s) is str and len(s.encode()) <= MAX_STR for s in x)}
_SCHEMA = {"Ready": {"receiver": "int", "version": "int|nil", "status": "str", "detail": "str", "holds_slot": "bool",
                     "protocol": "str", "capabilities?": "strs"},
           "Ack": {"receiver": "int", "version": "int", "status": "str", "detail": "str"},
           "Join": {"receiver": "int", "nonce": "bin32", "proof": "bin32"}, "Heartbeat": {}}


class _Unhashable:
    """A map keyed by a list or map: legal only where the field is ignored (WIRE-3)."""


def _pairs(pairs):
    try:
        return dict(pairs)
    except TypeError:
        return _Unhashable()


def decode(payload: bytes) -> tuple[str, dict]:
    """One receiver -> sender payload to (type, fields), or _Violation; total (SEC-1)."""
    try:
        msg = msgpack.unpackb(payload, raw=False, strict_map_key=False, object_pairs_hook=_pairs)
    except Exception as e:   # ExtraData, FormatError, StackError, UnicodeDecodeError, ...
        raise _Violation("WIRE-3", f"not one MessagePack value ({type(e).__name__})") from None
    if type(msg) is not dict or any(type(k) is not str for k in msg):
        raise _Violation("WIRE-3", "the payload is not a map with string keys")
    kind = msg.get("type")
    if type(kind) is not str or kind not in _SCHEMA:
        raise _Violation("MSG-3", f"unknown message type {kind!r}, or one of the other direction")
    out = {}
    for key, atom in _SCHEMA[kind].items():
        name = key.rstrip("?")
        if name not in msg and key.endswith("?"):
            continue
        if name not in msg or not _ATOM[atom](msg[name]):
            raise _Violation("WIRE-3", f"{kind}.{name} is missing or not a valid {atom}")
        out[name] = msg[name]
    return kind, out


# ---- slots and channels ----------------------------------------------------------------
class _Slot:
    """One sealed memfd (SEC-4): mapped read-write here, a read-only descriptor for receivers."""

    def __init__(self, sid: int, nbytes: int):
        self.id, self.nbytes, self.mem = sid, nbytes, None
        fd = os.memfd_create(f"weightsync-slot-{sid}", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
        try:
            os.ftruncate(fd, nbytes)
            if nbytes:
                self.mem = mmap.mmap(fd, nbytes)   # mapped before F_SEAL_FUTURE_WRITE, as SEC-4 asks
            fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | F_SEAL_FUTURE_WRITE)
            fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SEAL)
            self.ro = os.open(f"/proc/self/fd/{fd}", os.O_RDONLY | os.O_CLOEXEC)
        finally:
            os.close(fd)

    def info(self) -> dict:
        return {"slot": self.id, "device": "cpu", "nbytes": self.nbytes, "ipc": []}

    def write(self, layout: list, arrays: dict) -> None:
        """One copy per array into typed views of the slot (no view outlives the call)."""
        for name, dt, shape, off, n in layout:
            if n:
                np.copyto(np.ndarray(shape, dt, buffer=self.mem, offset=off), arrays[name], casting="equiv")

    def close(self) -> None:
        if self.mem is not None:
            with contextlib.suppress(BufferError):   # a send still copying keeps it mapped
                self.mem.close()
        with contextlib.suppress(OSError):
            os.close(self.ro)


class _Conn:
    """A non-blocking stream socket: bounded frame reads, a write queue with handles (WIRE-1/2/4/7)."""

    def __init__(self, sock: socket.socket):
        sock.setblocking(False)
        self.sock, self.inbuf, self.t0, self.limit = sock, bytearray(), None, MAX_BEFORE_PROOF
        self.out, self.queued, self.closed = deque(), 0, False
        self.peer, self.nonce, self.since = None, secrets.token_bytes(32), time.monotonic()
        self.tokens, self.refilled = float(HEARTBEATS), self.since

    def push(self, payload: bytes, fds=()) -> None:
        frame = len(payload).to_bytes(4, "big") + payload
        self.out.append([memoryview(frame), [list(fds[k:k + FD_GROUP]) for k in range(0, len(fds), FD_GROUP)]])
        self.queued += len(frame)

    def flush(self) -> None:
        """Write what the socket takes now; handles ride on the frame's first bytes (WIRE-4)."""
        while self.out and not self.closed:
            view, groups = self.out[0]
            try:
                if groups:   # group k rides on byte k; the last group on the rest of the frame
                    anc = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", groups[0]))]
                    n = self.sock.sendmsg([view[:1] if len(groups) > 1 else view], anc, socket.MSG_NOSIGNAL)
                    groups.pop(0)
                else:
                    n = self.sock.send(view, socket.MSG_NOSIGNAL)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                raise _Eof from None
            self.out[0][0], self.queued = view[n:], self.queued - n
            if n == len(view):
                self.out.popleft()

    def frames(self):
        """Receive once, then yield each complete frame; the length is judged first (WIRE-2)."""
        try:
            # never more than one frame's worth held (RDV-9); no control buffer: descriptors are discarded
            data = self.sock.recv(self.limit + 4 - len(self.inbuf))
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            raise _Eof from None
        if not data:
            raise _Eof
        now = time.monotonic()
        if not self.inbuf:
            self.t0 = now
        self.inbuf += data
        while len(self.inbuf) >= 4 and not self.closed:
            n = int.from_bytes(self.inbuf[:4], "big")
            if not 0 < n <= self.limit:
                raise _Violation("WIRE-1" if n == 0 else "RDV-9" if self.peer is None else "WIRE-2",
                                 f"frame length {n} (bound {self.limit})")
            if len(self.inbuf) < 4 + n:
                return
            frame = bytes(self.inbuf[4:4 + n])
            del self.inbuf[:4 + n]
            self.t0 = now if self.inbuf else None
            yield frame

    def heartbeat(self) -> None:
        now = time.monotonic()
        self.tokens = min(HEARTBEATS, self.tokens + (now - self.refilled) * HEARTBEATS) - 1
        self.refilled = now
        if self.tokens < 0:
            raise _Violation("SEC-8", "more than 64 Heartbeats at once or 64 a second")

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.sock.close()


class _Peer:
    """The sender's view of one receiver (spec 4.1)."""

    def __init__(self, i: int, secret: bytes):
        self.id, self.secret, self.state, self.conn, self.epoch = i, secret, "unconnected", None, 0
        self.known: set[int] = set()            # slots introduced on this channel (SLOT-5)
        self.pending: dict[int, int] = {}       # version -> slot of each unanswered Init/Receive
        self.init_version, self.zc, self.held, self.failure = None, False, set(), None  # held: ZC-2
        self.unreported = False   # its handshake failed and no connect() said so yet


class SendFuture:
    """A published version; ``wait`` collects its targets' answers (SEND-5, SEND-7)."""

    def __init__(self, sender: Sender, version: int, workers: list[int]):
        self.version, self.workers, self._sender = version, list(workers), sender
        self._results: dict[int, tuple[str, str]] = {}
        self._first_fail, self._closed = None, False

    def done(self) -> bool:
        """Every target answered, failed or went away (never blocks)."""
        return self._closed or len(self._results) == len(self.workers)

    def _answer(self, i: int, cause: str, detail: str = "") -> None:
        if i not in self._results:
            self._results[i] = (cause, detail)
            if cause != "ok" and self._first_fail is None:
                self._first_fail = time.monotonic()

    def wait(self, timeout: float | None = None) -> int:
        """The version once every target acked it ok; else raise naming every receiver at fault."""
        deadline = _deadline(timeout)
        with self._sender._lock:
            while True:
                now = time.monotonic()
                missing = [i for i in self.workers if i not in self._results]
                limits = _limits(deadline, self._first_fail)
                if not missing or self._closed or any(now >= t for t in limits):
                    break
                self._sender._lock.wait(min([1.0] + [t - now for t in limits]))
            fails = {i: r for i, r in self._results.items() if r[0] != "ok"}
            if deadline is not None and now >= deadline:
                fails.update({i: ("timeout", f"no Ack within the timeout of {timeout:.3g} s (SEND-2)")
                              for i in missing})
            if fails:
                raise _failure(f"send of version {self.version} failed", self.version, fails)
            if missing:
                err = ClosedError(f"the sender closed before receivers {missing} answered version "
                                  f"{self.version} (LIFE-8)")
                err.workers, err.version = missing, self.version
                raise err
            return self.version


def _deadline(timeout: float | None) -> float | None:
    if timeout is not None and timeout < 0:
        raise ValueError("timeout must be >= 0 or None")
    return None if timeout is None else time.monotonic() + timeout


def _limits(deadline: float | None, first_fail: float | None) -> list[float]:
    """When a wait ends: its deadline, and 1 s after the first failure (SEND-7)."""
    return [t for t in (deadline, None if first_fail is None else first_fail + WINDOW) if t is not None]


def _entry_check(name, a) -> None:
    """SEC-7: refuse at creation what the wire cannot carry."""
    if type(name) is not str:
        raise ValueError(f"array name {name!r} is not a string (SEC-7)")
    try:
        size = len(name.encode())
    except UnicodeEncodeError:
        raise ValueError(f"array name {name!r} is not valid Unicode (SEC-7)") from None
    if size > MAX_STR:
        raise ValueError(f"array name {name[:40]!r}... is longer than {MAX_STR} bytes of UTF-8 (SEC-7)")
    if not isinstance(a, np.ndarray):
        raise ValueError(f"{name!r} is a {type(a).__name__}, not a numpy.ndarray")
    if a.dtype.newbyteorder("=") not in NAMES:
        raise ValueError(f"{name!r} has dtype {a.dtype}, which Table 12-2 does not define (SEC-7)")
    if a.ndim > 64:
        raise ValueError(f"{name!r} has {a.ndim} dimensions, more than 64 (SEC-7)")


def receiver_secret(master: bytes, i: int) -> bytes:
    """Receiver i's own secret, as the reference derives it (RDV-2): knowing it tells nothing of another's."""
    return hmac.new(master, b"weightsync receiver %d" % i, hashlib.sha256).digest()


def _items(arrays) -> list:
    return list(arrays.items()) if isinstance(arrays, Mapping) else list(arrays)


# ---- the sender ------------------------------------------------------------------------
class Sender:
    """A weightsync sender whose receivers join by URL; see the module docstring."""

    def __init__(self, arrays, num_workers: int, *, listen: str | None = None, max_slots: int | None = None,
                 bfloat16=()):
        items, bf16 = _items(arrays), set(bfloat16)
        if type(num_workers) is not int or num_workers < 1:
            raise ValueError(f"num_workers must be an int >= 1, not {num_workers!r} (ROLE-1)")
        names = [n for n, _ in items]
        if len(set(names)) != len(names):
            raise WeightsMismatchError("array names repeat (BAD-1)")
        if bf16 - set(names):
            raise ValueError(f"bfloat16 names {sorted(bf16 - set(names))} are not among the arrays")
        self._layout, self._manifest, end = [], [], 0
        for name, a in items:
            _entry_check(name, a)
            dt = a.dtype.newbyteorder("=")
            if name in bf16 and dt != np.uint16:
                raise ValueError(f"{name!r}: bfloat16 arrays are given as their uint16 bits, not {a.dtype}")
            off = -(-end // 64) * 64                               # LAYOUT-1
            end = off + a.nbytes if a.nbytes else end
            self._layout.append((name, dt, a.shape, off, a.nbytes))
            self._manifest.append({"name": name, "dtype": "bfloat16" if name in bf16 else NAMES[dt],
                                   "shape": list(a.shape), "device": "cpu", "offset": off, "nbytes": a.nbytes})
        self._nbytes, self._n = -(-end // 64) * 64, num_workers
        if max_slots is None:
            max_slots = 3 if self._nbytes > 1 << 30 else num_workers + 2
        if type(max_slots) is not int or max_slots < 2:
            raise ValueError(f"max_slots must be an int >= 2, not {max_slots!r} (SLOT-1)")
        self._max_slots = max_slots
        info = {"slot": 0, "device": "cpu", "nbytes": self._nbytes, "ipc": []}
        if len(self._init(0, 0, 0, [info] * max_slots)) + 4 > MAX_OUT:
            raise ValueError("the manifest is too large: its Init would not fit in one 64 MiB frame (SEC-7)")
        self._address, name = self._parse_listen(listen)
        self._source = arrays
        self._lock = threading.Condition()
        self._send_lock = threading.Lock()
        self._closed, self._version, self._latest = False, 0, 0
        self._futures: dict[int, SendFuture] = {}
        self._joins: deque[_Conn] = deque()
        master = secrets.token_bytes(32)                           # RDV-2: one secret per receiver
        self._peers = [_Peer(i, receiver_secret(master, i)) for i in range(num_workers)]
        self._dummy = secrets.token_bytes(32)
        self._slots = [_Slot(0, self._nbytes), _Slot(1, self._nbytes)]
        self._slots[0].write(self._layout, self._check(arrays))     # version 0 (VER-1)
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
        try:
            self._listener.bind("\0" + name)
        except OSError:
            self._listener.close()
            for s in self._slots:
                s.close()
            raise
        self._listener.listen(128)
        self._listener.setblocking(False)
        self._wake_r, self._wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        self._thread = threading.Thread(target=self._loop, name="weightsync-numpy-sender", daemon=True)
        self._thread.start()

    @staticmethod
    def _parse_listen(listen: str | None) -> tuple[str, str]:
        """RDV-1: ``unix:@NAME`` (percent-encoded), or a fresh abstract name."""
        if listen is None:
            name = f"weightsync-numpy-{os.getpid()}-{secrets.token_hex(8)}"
        elif isinstance(listen, str) and listen.startswith("unix:@") and "?" not in listen:
            name = unquote(listen[6:], errors="strict")
        else:
            raise ValueError(f"listen must be 'unix:@NAME' (this sender listens on abstract sockets only), "
                             f"not {listen!r} (RDV-1)")
        if not 1 <= len(name.encode()) <= 107 or "\0" in name:
            raise ValueError(f"abstract socket name {name!r} must be 1 to 107 bytes, without NUL (RDV-1)")
        return "unix:@" + name.replace("%", "%25").replace("?", "%3F"), name

    # -- properties
    version = property(lambda self: self._version, doc="The last published version (VER-1).")
    closed = property(lambda self: self._closed)
    address = property(lambda self: self._address, doc="The address as bound (RDV-1).")

    def __enter__(self) -> Sender:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _open(self) -> None:
        if self._closed:
            raise ClosedError("this sender is closed (LIFE-6)")

    def _id(self, i) -> int:
        if type(i) is not int or not 0 <= i < self._n:
            raise ValueError(f"receiver id {i!r} is not in 0..{self._n - 1} (SEND-6)")
        return i

    def url(self, i: int) -> str:
        """Receiver i's URL: the address, its id and its own secret (RDV-1, RDV-2)."""
        self._open()
        return f"{self._address}?receiver={self._id(i)}&secret={self._peers[i].secret.hex()}"

    def _targets(self, workers) -> list[int]:
        if workers is None:
            return list(range(self._n))
        ids = [self._id(i) for i in workers]
        if not ids or len(set(ids)) != len(ids):
            raise ValueError(f"workers must name distinct receivers, at least one, not {ids} (SEND-6)")
        return sorted(ids)

    def _check(self, arrays) -> dict:
        """The weights of a send, checked against the manifest before any byte moves (BAD-1, BAD-2)."""
        try:
            items = _items(arrays)
            got = dict(items)
        except (TypeError, ValueError):
            raise WeightsMismatchError("weights must be a mapping or a list of (name, array) pairs") from None
        want = [e[0] for e in self._layout]
        if len(got) != len(items) or got.keys() != set(want):
            raise WeightsMismatchError(f"array names differ from the manifest: missing {sorted(set(want) - got.keys())}"
                                       f", unknown {sorted(map(str, got.keys() - set(want)))}, or repeated (BAD-1)")
        for name, dt, shape, _, _ in self._layout:
            a = got[name]
            if not isinstance(a, np.ndarray):
                raise WeightsMismatchError(f"{name!r}: a {type(a).__name__}, the manifest has a numpy.ndarray (BAD-2)")
            if a.dtype.newbyteorder("=") != dt or a.shape != shape:
                raise WeightsMismatchError(f"{name!r}: dtype {a.dtype} shape {a.shape}, the manifest has dtype {dt} "
                                           f"shape {shape} (BAD-2)")
        return got

    # -- connect
    def connect(self, timeout: float | None = None, *, workers=None) -> None:
        """Wait until the receivers joined and answered Ready(ok) (INIT-5, RDV-5).

        Without ``workers``: every unconnected or connecting receiver. A named gone or failed
        receiver is waited for as a new process joining by URL; a named live one is left as is.
        A joiner may fail its handshake before any connect() runs (RDV-5): the next connect()
        names it once, rather than skip or wait for it."""
        self._open()
        deadline = _deadline(timeout)
        ids = list(range(self._n)) if workers is None else self._targets(workers)
        with self._lock:
            start = {i: (p.epoch, p.state in ("gone", "failed") and not p.unreported)
                     for i, p in ((i, self._peers[i]) for i in ids)}
            if workers is None:
                ids = [i for i in ids if self._peers[i].state in ("unconnected", "connecting")
                       or self._peers[i].unreported]
            ids, first_fail = [i for i in ids if self._peers[i].state != "live"], None
            while True:
                self._open()
                now, fails, missing = time.monotonic(), {}, []
                for i in ids:
                    p, (epoch, stale) = self._peers[i], start[i]
                    fresh = p.epoch > epoch or not stale
                    if fresh and p.state in ("gone", "failed"):
                        fails[i] = p.failure
                    elif not (fresh and p.state == "live"):
                        missing.append(i)
                if fails and first_fail is None:
                    first_fail = now
                limits = _limits(deadline, first_fail)
                if not missing or any(now >= t for t in limits):
                    break
                self._lock.wait(min([1.0] + [t - now for t in limits]))
            if deadline is not None and now >= deadline:
                fails.update({i: ("timeout", f"no join and Ready within {timeout} s (INIT-5)") for i in missing})
            for i in fails:
                self._peers[i].unreported = False
            if fails:
                raise _failure("connect failed", self._version, fails)

    # -- sends
    def send(self, arrays=None, *, workers=None, timeout: float | None = None) -> int:
        """Publish a version and wait until every target acked it (SEND-1, SEND-2); ``timeout``
        bounds the whole call."""
        deadline = _deadline(timeout)
        future = self.send_async(arrays, workers=workers, timeout=timeout)
        return future.wait(None if deadline is None else max(0.0, deadline - time.monotonic()))

    def send_async(self, arrays=None, *, workers=None, timeout: float | None = None) -> SendFuture:
        """Copy the weights into a free slot and send Receive to each target; ``timeout`` bounds the
        wait for a free slot (and for another thread's send)."""
        self._open()
        deadline = _deadline(timeout)
        targets = self._targets(workers)
        weights = self._check(self._source if arrays is None else arrays)
        if not self._send_lock.acquire(timeout=-1 if deadline is None else max(0.0, deadline - time.monotonic())):
            raise SyncTimeoutError(f"another thread's send held the sender past the timeout {timeout} s (API-7)",
                                   None, {}, {})
        try:
            with self._lock:
                slot = self._free_slot(targets, deadline, timeout)
            try:
                self._slots[slot].write(self._layout, weights)    # outside the lock: the loop goes on
            except ValueError:   # close() unmapped the slot under the copy
                self._open()
                raise
            with self._lock:
                self._open()
                return self._publish(slot, targets)
        finally:
            self._send_lock.release()

    def _unusable(self, targets: list[int]) -> None:
        """SEND-4: gone and failed targets named together; unconnected ones are the caller's bug."""
        fails = {i: self._peers[i].failure for i in targets if self._peers[i].state in ("gone", "failed")}
        if fails:
            raise _failure("send refused before publishing (SEND-4): restart the receivers", None, fails)
        idle = [i for i in targets if self._peers[i].state != "live"]
        if idle:
            raise LocalProtocolError(f"receivers {idle} are not connected: connect() them first (SEND-4)")

    def _free_slot(self, targets: list[int], deadline, timeout) -> int:
        """A slot nobody may read (SLOT-2), a new one up to the bound (SLOT-3), or SyncTimeoutError."""
        while True:
            self._open()
            self._unusable(targets)
            full = [i for i in targets if self._peers[i].conn.queued > MAX_QUEUED]
            if not full:
                busy = {self._latest}
                for p in self._peers:
                    busy.update(p.pending.values())
                    busy.update(p.held)
                free = [s.id for s in self._slots if s.id not in busy]
                if free:
                    return free[0]
                if len(self._slots) < self._max_slots:
                    self._slots.append(_Slot(len(self._slots), self._nbytes))
                    return len(self._slots) - 1
            now = time.monotonic()
            if deadline is not None and now >= deadline:
                if full:
                    fails = {i: ("timeout", "over 1 MiB of frames it has not read (SEC-3)") for i in full}
                else:
                    fails = {p.id: ("timeout", "holds a slot: unanswered Receive or zero-copy hold (SLOT-3)")
                             for p in self._peers if p.pending or p.held}
                raise _failure(f"no free slot within {timeout} s, nothing published", None, fails)
            self._lock.wait(1.0 if deadline is None else min(1.0, deadline - now))

    def _publish(self, slot: int, targets: list[int]) -> SendFuture:
        self._version += 1
        self._latest, v = slot, self._version
        future = self._futures[v] = SendFuture(self, v, targets)   # before any write can cut a target
        for i in targets:
            p = self._peers[i]
            if p.state != "live":   # it went away while the slot was written
                future._answer(i, *(p.failure or ("died", "its channel ended before publication (SEND-3)")))
                continue
            new = [s for s in self._slots if s.id not in p.known]
            p.known.update(s.id for s in new)
            p.pending[v] = slot
            p.conn.push(encode("Receive", version=v, slot=slot, new_slots=[s.info() for s in new]),
                        [s.ro for s in new])
            self._flush(p.conn)
        if future.done():
            self._futures.pop(v, None)
        self._wake()
        return future

    # -- drop and close
    def drop(self, i: int, timeout: float | None = None) -> None:
        """Cut receiver i off (API-9): Stop if its channel takes it at once, then it is gone."""
        self._open()
        self._id(i)
        deadline = _deadline(timeout)
        if not self._lock.acquire(timeout=-1 if deadline is None else max(0.0, deadline - time.monotonic())):
            raise SyncTimeoutError(f"another thread held the sender past the timeout {timeout} s (API-7)", None, {}, {})
        try:
            p = self._peers[i]
            if p.state in ("connecting", "live"):
                if not p.conn.out:
                    p.conn.push(encode("Stop"))
                    with contextlib.suppress(_Eof):
                        p.conn.flush()
                self._cut(p, "died", "dropped by the trainer (API-9)")
                p.unreported = False   # the trainer's own act: no connect() need say so
        finally:
            self._lock.release()

    def close(self) -> None:
        """Stop to every receiver, settle every future, release channels and slots (LIFE-4, LIFE-8)."""
        if self._closed:
            return
        got = self._lock.acquire(timeout=REACTION / 2)   # LIFE-9: go on without a lock left held
        try:
            if self._closed:
                return
            for p in self._peers:   # answers that reached us before close() count (LIFE-8)
                if got and p.conn is not None:
                    self._service(p.conn, rounds=16)
            self._closed = True
            for p in self._peers:
                if p.conn is not None:
                    p.conn.push(encode("Stop"))
                    with contextlib.suppress(_Eof):
                        p.conn.flush()
                    p.conn.close()
                    p.conn = None
                if p.state in ("unconnected", "connecting", "live"):
                    p.state = "stopped"
            while self._joins:
                self._joins.popleft().close()
            self._listener.close()
            for f in self._futures.values():
                f._closed = True
            self._futures.clear()
            if got:
                self._lock.notify_all()
        finally:
            if got:
                self._lock.release()
        self._wake()
        self._thread.join(REACTION / 2)
        for s in self._slots:
            s.close()
        if not self._thread.is_alive():
            os.close(self._wake_r)
            os.close(self._wake_w)

    # -- the background thread: joins and every channel
    def _wake(self) -> None:
        with contextlib.suppress(OSError):
            os.write(self._wake_w, b"x")

    def _flush(self, conn: _Conn) -> None:
        try:
            conn.flush()
        except _Eof:
            self._lost(conn, "died", "its channel ended (SEND-3)")

    def _loop(self) -> None:
        """Poll the listener and every channel; handle what came, under the lock; bounded waits only."""
        while True:
            with self._lock:
                if self._closed:
                    return
                try:
                    self._timers()
                except Exception:
                    log.exception("weightsync sender loop")
                conns = list(self._joins) + [p.conn for p in self._peers if p.conn is not None]
                poller, byfd = select.poll(), {}
                poller.register(self._wake_r, select.POLLIN)
                poller.register(self._listener, select.POLLIN)
                for c in conns:
                    byfd[c.sock.fileno()] = c
                    poller.register(c.sock, select.POLLIN | (select.POLLOUT if c.out else 0))
            try:
                ready = poller.poll(250)
            except InterruptedError:
                continue
            with self._lock:
                if self._closed:
                    return
                for fd, ev in ready:
                    try:
                        if fd == self._wake_r:
                            with contextlib.suppress(BlockingIOError):
                                os.read(self._wake_r, 4096)
                        elif fd == self._listener.fileno():
                            self._accept()
                        elif not byfd[fd].closed:
                            if ev & select.POLLOUT:
                                self._flush(byfd[fd])
                            if ev & ~select.POLLOUT and not byfd[fd].closed:
                                self._service(byfd[fd])
                    except Exception:   # a bug here must not kill the thread that serves everyone
                        log.exception("weightsync sender loop")
                self._lock.notify_all()

    def _timers(self) -> None:
        """RDV-6: Join within 10 s of Hello; WIRE-7: a frame's last byte within 10 s of its first."""
        now = time.monotonic()
        for c in [c for c in self._joins if now - c.since > REACTION]:
            self._joins.remove(c)
            c.close()
        for p in self._peers:
            if p.conn is not None and p.conn.t0 is not None and now - p.conn.t0 > REACTION:
                self._cut(p, "violation", f"WIRE-7 violated in state {p.state}: a frame left unfinished for 10 s")

    def _accept(self) -> None:
        for _ in range(MAX_JOINS):
            try:
                sock, _ = self._listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            c = _Conn(sock)
            c.push(encode("Hello", protocol=PROTOCOL_VERSION, nonce=c.nonce))
            with contextlib.suppress(_Eof):
                c.flush()
            self._joins.append(c)
            if len(self._joins) > MAX_JOINS:   # a flood drops the oldest join under way (RDV-6)
                self._joins.popleft().close()

    def _service(self, conn: _Conn, rounds: int = 1) -> None:
        """Read what the socket holds and handle each complete frame."""
        try:
            for _ in range(rounds):
                for frame in conn.frames():
                    self._on_frame(conn, frame)
                    if conn.closed:
                        return
        except _Eof:
            self._lost(conn, "died", "its channel ended (SEND-3)")
        except _Violation as v:
            req, text = v.args
            state = "hello" if conn.peer is None else self._peers[conn.peer].state
            self._lost(conn, "violation", f"{req} violated in state {state}: {text}")

    def _lost(self, conn: _Conn, cause: str, detail: str) -> None:
        if conn.peer is not None and self._peers[conn.peer].conn is conn:
            self._cut(self._peers[conn.peer], cause, detail)
        else:   # a join under way (RDV-3): just close it
            if conn in self._joins:
                self._joins.remove(conn)
            conn.close()

    def _cut(self, p: _Peer, cause: str, detail: str) -> None:
        """Close the channel; every pending send to it fails with this cause (SEND-3, SM-S-9)."""
        if cause == "violation":
            log.warning("receiver %d cut off: %s", p.id, detail)
        if p.conn is not None:
            p.conn.close()
        p.unreported = p.state == "connecting"
        p.conn, p.state, p.failure = None, "gone" if cause == "died" else "failed", (cause, detail)
        for v in p.pending:
            self._settle(v, p.id, cause, detail)
        p.pending, p.known, p.held = {}, set(), set()
        self._lock.notify_all()

    def _settle(self, version: int, i: int, cause: str, detail: str = "") -> None:
        f = self._futures.get(version)
        if f is not None:
            f._answer(i, cause, detail)
            if f.done():
                del self._futures[version]

    def _on_frame(self, conn: _Conn, frame: bytes) -> None:
        kind, msg = decode(frame)
        if conn.peer is None:
            return self._on_join(conn, kind, msg)
        p = self._peers[conn.peer]
        if kind == "Heartbeat":   # legal in connecting and live, ignored (MSG-4)
            return conn.heartbeat()
        if kind == "Join":
            raise _Violation("RDV-3", "Join after the join")
        if msg["receiver"] != p.id:
            raise _Violation("MSG-2", f"{kind} names receiver {msg['receiver']} on receiver {p.id}'s channel")
        if msg["status"] not in ("ok", "error"):
            raise _Violation("SM-S-9", f"{kind} with unknown status {msg['status']!r}")
        ok, v = msg["status"] == "ok", msg["version"]
        if kind == "Ready":
            if p.state != "connecting":
                raise _Violation("SM-S-9", f"Ready in state {p.state}")
            if v != p.init_version and (ok or v is not None):
                raise _Violation("SM-S-9", f"Ready({v}) answers Init({p.init_version})")
            if ok and msg["protocol"].split(".")[0] != PROTOCOL_VERSION.split(".")[0]:
                raise _Violation("INIT-2", f"Ready(ok) of protocol {msg['protocol']!r}")
            slot, p.pending = p.pending[p.init_version], {}
            if ok:
                p.state, p.zc, p.failure = "live", msg["holds_slot"], None
                p.held = {slot} if p.zc else set()        # ZC-1
            else:   # INIT-2/3/6: connect() raises ReceiverError; the channel is of no further use
                self._cut(p, "error", f"Ready(error): {msg['detail']}")
            return
        if p.state != "live":
            raise _Violation("SM-S-3", f"Ack in state {p.state}")
        if v not in p.pending:
            raise _Violation("ACK-5", f"Ack({v}) of a version not pending (pending: {sorted(p.pending)})")
        if p.zc:   # ZC-2: it now holds v's slot; after Ack(error) it may read the old one and v's until an ok Ack
            p.held = {p.pending[v]} if ok else p.held | {p.pending[v]}
        for x in [x for x in p.pending if x <= v]:   # ACK-2: it answers every pending version <= v
            del p.pending[x]
            self._settle(x, p.id, "ok" if ok else "error", "" if ok else f"Ack(error): {msg['detail']}")
        return None

    def _on_join(self, conn: _Conn, kind: str, msg: dict) -> None:
        """Join -> Welcome and Init, or Refuse (RDV-3..5); anything else ends the join."""
        if kind != "Join":
            raise _Violation("RDV-3", f"{kind} on a joining connection")
        i = msg["receiver"]
        secret = self._peers[i].secret if i < self._n else self._dummy
        proof = join_proof(secret, b"weightsync-join", conn.nonce, msg["nonce"], i)
        if not hmac.compare_digest(proof, msg["proof"]) or i >= self._n:
            return self._refuse(conn, "refused: unknown receiver id or wrong secret")
        p = self._peers[i]
        if p.state == "live":
            return self._refuse(conn, f"receiver {i} is live")
        self._joins.remove(conn)
        if p.conn is not None:   # the new process takes the old one's place (RDV-5, SM-S-5)
            p.conn.close()
        p.conn, p.epoch, p.unreported, conn.peer, conn.limit = conn, p.epoch + 1, False, i, MAX_IN
        conn.push(encode("Welcome", proof=join_proof(secret, b"weightsync-welcome", conn.nonce, msg["nonce"], i)))
        p.state, p.init_version, p.zc, p.held = "connecting", self._version, False, set()
        p.pending, p.known = {self._version: self._latest}, {s.id for s in self._slots}
        slots = [s.info() for s in self._slots]
        conn.push(self._init(i, self._version, self._latest, slots), [s.ro for s in self._slots])
        self._flush(conn)
        return None

    def _init(self, i: int, version: int, slot: int, slots: list) -> bytes:
        return encode("Init", protocol=PROTOCOL_VERSION, receiver=i, manifest=self._manifest, slots=slots,
                      version=version, slot=slot, byteorder=sys.byteorder, capabilities=[], data_plane=None)

    def _refuse(self, conn: _Conn, detail: str) -> None:
        conn.push(encode("Refuse", detail=detail))
        with contextlib.suppress(_Eof):
            conn.flush()
        self._joins.remove(conn)
        conn.close()


# ---- the sender test-control contract (docs/conformance.md) ------------------------------
def seed_weights(seed: int, layout: list) -> list:
    """Array NAME of seed S: the first nbytes bytes of SHAKE-128("S NAME"); bool bytes taken mod 2."""
    out = []
    for name, dtype, shape in layout:
        dt = np.dtype(DTYPES[dtype])
        raw = np.frombuffer(hashlib.shake_128(f"{seed} {name}".encode()).digest(math.prod(shape) * dt.itemsize),
                            np.uint8)
        out.append((name, (raw & 1 if dtype == "bool" else raw).view(dt).reshape(shape)))
    return out


def _answer(sender: Sender, futures: dict, layout: list, words: list[str]) -> str:
    cmd, args = words[0], words[1:]
    ids = lambda rest: [int(x) for x in rest] or None
    failed = lambda what, e: f"failed {what} " + " ".join(f"{i}={c}" for i, c in sorted(e.causes.items()))
    try:
        if cmd == "connect":
            sender.connect(float(args[0]), workers=ids(args[1:]))
            return "connected"
        if cmd in ("send", "async"):
            weights = seed_weights(int(args[0]), layout)
            if cmd == "async":   # the suite waits 30 s for an answer: wait for a slot 20 s at most
                future = sender.send_async(weights, workers=ids(args[1:]), timeout=20.0)
                futures[future.version] = future
                return f"published {future.version}"
            deadline = time.monotonic() + float(args[1])   # as Sender.send, keeping the future for `wait`
            future = sender.send_async(weights, workers=ids(args[2:]), timeout=float(args[1]))
            futures[future.version] = future
            return f"returned {future.wait(max(0.0, deadline - time.monotonic()))}"
        if cmd == "wait":
            if int(args[0]) not in futures:
                return f"refused no send published version {args[0]}"
            return f"returned {futures[int(args[0])].wait(float(args[1]))}"
        if cmd == "drop":
            sender.drop(int(args[0]))
            return f"dropped {int(args[0])}"
        if cmd == "close":
            sender.close()
            return "closed"
        return f"refused unknown command {cmd!r}"
    except ReceiversFailed as e:   # `refused`: nothing was published (SEND-4, SLOT-3, VER-2)
        if cmd == "connect" and e.causes:
            return failed("connect", e)
        return f"refused {e}" if e.version is None or not e.causes else failed(str(e.version), e)
    except (WeightSyncError, ValueError, IndexError, KeyError) as e:
        return f"refused {type(e).__name__}: {e}"


def main(argv: list[str]) -> int:
    """``LAYOUT_JSON N``: serve the commands of standard input, one answer line each."""
    if len(argv) != 3:
        print("usage: numpy_sender.py LAYOUT_JSON N", file=sys.stderr)
        return 2
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING)
    with open(argv[1]) as f:
        layout = json.load(f)
    out = lambda line: print(line.replace("\n", " "), flush=True)
    sender = Sender(seed_weights(0, layout), int(argv[2]),
                    bfloat16=[name for name, dtype, _ in layout if dtype == "bfloat16"])
    futures: dict[int, SendFuture] = {}
    try:
        for i in range(int(argv[2])):
            out(f"url {i} {sender.url(i)}")
        out("listening")
        for line in sys.stdin:
            words = line.split()
            if words:
                out(_answer(sender, futures, layout, words))
                if words[0] == "close":
                    break
    finally:
        sender.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
