"""The wire profile of protocol 1.1 (spec/12-wire.md): frames, the MessagePack codec, bounds.

Pure: bytes in, messages out, no sockets. Decoding is total: any bytes give a
message or a RemoteProtocolError naming the rule they broke, never another
exception, and nothing a peer sends makes this module allocate more than the
frame bound of its direction (SEC-1).

MessagePack was chosen because it is maintained, compact, and has libraries in
C, C++, Rust, Go and JavaScript; every message is a map with named fields, so a
minor version can add fields an older peer ignores (WIRE-3).
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence

import msgpack

from .errors import RemoteProtocolError
from .limits import INT_MAX, MAX_DETAIL, MAX_DIMS, MAX_IPC, MAX_IPC_BYTES, MAX_TEXT, NONCE_BYTES
from .limits import MAX_TO_RECEIVER as MAX_TO_RECEIVER  # the frame bounds, re-exported for wire.frame's callers
from .limits import MAX_TO_SENDER as MAX_TO_SENDER
from .messages import (
    PROTOCOL_VERSION,
    RENDEZVOUS_TO_RECEIVER,
    RENDEZVOUS_TO_SENDER,
    TO_RECEIVER,
    TO_SENDER,
    Ack,
    DataPlane,
    Entry,
    Heartbeat,
    Hello,
    Init,
    Join,
    Ready,
    Receive,
    Refuse,
    SlotInfo,
    Stop,
    Welcome,
)

LENGTH = struct.Struct(">I")  # WIRE-1: a 4-byte unsigned big-endian payload length (limits.LENGTH_BYTES)


def _violation(text: str, rule: str) -> RemoteProtocolError:
    return RemoteProtocolError(text, event="recv frame", requirement=rule)


# ---- field types: each checks a decoded value and returns it in its Python form ----


def _int(v, what):
    if type(v) is not int or not 0 <= v <= INT_MAX:
        raise _violation(f"{what} must be an integer in [0, 2**63), got {v!r:.60}", "WIRE-3")
    return v


def _int_or_nil(v, what):
    return None if v is None else _int(v, what)


def _text(limit):
    def check(v, what):
        if type(v) is not str:
            raise _violation(f"{what} must be a string, got {type(v).__name__}", "WIRE-3")
        if len(v) * 4 > limit and len(v.encode("utf-8", "surrogatepass")) > limit:
            raise _violation(f"{what} is longer than {limit} bytes", "WIRE-3")
        return v

    return check


def _bool(v, what):
    if type(v) is not bool:
        raise _violation(f"{what} must be a boolean, got {v!r:.60}", "WIRE-3")
    return v


def _bin(size):
    def check(v, what):
        if type(v) is not bytes or len(v) != size:
            raise _violation(f"{what} must be a byte string of {size} bytes", "WIRE-3")
        return v

    return check


def _list(item, limit=None):
    def check(v, what):
        if type(v) is not tuple:
            raise _violation(f"{what} must be an array, got {type(v).__name__}", "WIRE-3")
        if limit is not None and len(v) > limit:
            raise _violation(f"{what} has more than {limit} items", "WIRE-3")
        return tuple(item(x, what) for x in v)

    return check


def _ipc_item(v, what):
    if v is None or type(v) is bool:
        return v
    if type(v) is int:
        if not -(2**63) <= v <= INT_MAX:
            raise _violation(f"{what} holds an integer out of int64 range", "WIRE-3")
        return v
    if type(v) is str:
        return _IPC_TEXT(v, what)
    if type(v) is bytes:
        if len(v) > MAX_IPC_BYTES:
            raise _violation(f"{what} holds a byte string longer than {MAX_IPC_BYTES} bytes", "WIRE-3")
        return v
    raise _violation(f"{what} may hold only nil, booleans, integers, strings and byte strings", "WIRE-3")


_STR = _text(MAX_TEXT)
_IPC_TEXT = _text(MAX_IPC_BYTES)


def _record(cls, fields):
    def check(v, what):
        return _build(cls, fields, v, what)

    return check


def _or_nil(check):
    def inner(v, what):
        return None if v is None else check(v, what)

    return inner


DATA_PLANE = (("backend", _STR), ("store", _STR), ("prefix", _STR), ("nbytes", _int), ("timeout_ms", _int),
              ("lease_ms", _int))
ENTRY = (("name", _STR), ("dtype", _STR), ("shape", _list(_int, MAX_DIMS)), ("device", _STR),
         ("offset", _int), ("nbytes", _int))
SLOTINFO = (("slot", _int), ("device", _STR), ("nbytes", _int), ("ipc", _list(_ipc_item, MAX_IPC), ()))
_REQUIRED = object()

#: Every message: its class and its fields in canonical order, each (name, type[, default]) (WIRE-3, WIRE-5).
SCHEMA: dict[str, tuple[type, tuple]] = {
    "Init": (Init, (("protocol", _STR), ("receiver", _int), ("manifest", _list(_record(Entry, ENTRY))),
                    ("slots", _list(_record(SlotInfo, SLOTINFO))), ("version", _int), ("slot", _int),
                    ("byteorder", _STR), ("capabilities", _list(_STR), ()),
                    ("data_plane", _or_nil(_record(DataPlane, DATA_PLANE)), None))),
    "Ready": (Ready, (("receiver", _int), ("version", _int_or_nil), ("status", _STR), ("detail", _text(MAX_DETAIL)),
                      ("holds_slot", _bool), ("protocol", _STR), ("capabilities", _list(_STR), ()))),
    "Receive": (Receive, (("version", _int), ("slot", _int), ("new_slots", _list(_record(SlotInfo, SLOTINFO))))),
    "Ack": (Ack, (("receiver", _int), ("version", _int), ("status", _STR), ("detail", _text(MAX_DETAIL)))),
    "Stop": (Stop, ()),
    "Heartbeat": (Heartbeat, ()),
    "Hello": (Hello, (("protocol", _STR), ("nonce", _bin(NONCE_BYTES)))),
    "Join": (Join, (("receiver", _int), ("nonce", _bin(NONCE_BYTES)), ("proof", _bin(NONCE_BYTES)))),
    "Welcome": (Welcome, (("proof", _bin(NONCE_BYTES)),)),
    "Refuse": (Refuse, (("detail", _text(MAX_DETAIL)),)),
}
_BY_CLASS = {cls: (name, fields) for name, (cls, fields) in SCHEMA.items()}


def _build(cls, fields, obj, what):
    if type(obj) is not dict:
        raise _violation(f"{what} must be a map, got {type(obj).__name__}", "WIRE-3")
    if not all(type(k) is str for k in obj):
        raise _violation(f"{what}'s map keys must be strings", "WIRE-3")
    values = {}
    for name, check, *default in fields:
        if name in obj:
            values[name] = check(obj[name], f"{what}.{name}")
        elif default:
            values[name] = default[0]
        else:
            raise _violation(f"{what} lacks the field {name!r}", "WIRE-3")
    return cls(**values)


# ---- encoding -----------------------------------------------------------------------


def _plain(value):
    if isinstance(value, (Entry, SlotInfo, DataPlane)):
        return _as_map(value, ENTRY if isinstance(value, Entry) else SLOTINFO if isinstance(value, SlotInfo)
                       else DATA_PLANE)
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    return value


def _as_map(record, fields) -> dict:
    return {name: _plain(getattr(record, name)) for name, *_ in fields}


def packer() -> Callable[[object], bytes]:
    """An encoder to keep for one channel's frames: `msgpack.packb` makes a Packer at every call, a third of a
    small message's encoding. One thread at a time may use it (a channel's writes are one at a time)."""
    return msgpack.Packer(use_bin_type=True).pack


def payload(msg: object, pack: Callable[[object], bytes] = msgpack.packb) -> bytes:
    """The canonical MessagePack encoding of `msg`: a map, "type" first, fields in table order (WIRE-5)."""
    if type(msg) is Ack:  # the two messages of every send, spelled out: this runs once per send and receiver
        return pack({"type": "Ack", "receiver": msg.receiver, "version": msg.version, "status": msg.status,
                     "detail": msg.detail})
    if type(msg) is Receive and not msg.new_slots:
        return pack({"type": "Receive", "version": msg.version, "slot": msg.slot, "new_slots": []})
    try:
        name, fields = _BY_CLASS[type(msg)]
    except KeyError:
        raise TypeError(f"not a protocol message: {msg!r}") from None
    return pack({"type": name, **_as_map(msg, fields)})


def frame(msg: object, pack: Callable[[object], bytes] = msgpack.packb) -> bytes:
    """`msg` as one frame: its length, then its payload (WIRE-1); `pack` as for `payload`."""
    data = payload(msg, pack)
    return LENGTH.pack(len(data)) + data


# ---- decoding -----------------------------------------------------------------------


def decode(data: bytes, allowed: tuple[type, ...]) -> object:
    """The message in one frame's payload, or RemoteProtocolError: never another exception (SEC-1).

    `allowed` is the direction's messages: a known message that goes the other way
    is as much a violation as an unknown one (MSG-3).
    """
    try:
        obj = msgpack.unpackb(data, raw=False, use_list=False, strict_map_key=True)
    except Exception:  # noqa: BLE001 - maybe a legal value inside an ignored field: decode leniently
        obj = _lenient(data)
    if type(obj) is not dict:
        raise _violation(f"a payload must be a map, got {type(obj).__name__}", "WIRE-3")
    fast = _fast(obj, allowed)
    if fast is not None:
        return fast
    kind = obj.get("type")
    if type(kind) is not str or kind not in SCHEMA:
        raise _violation(f"unknown message type {kind!r:.60}", "MSG-3")
    cls, fields = SCHEMA[kind]
    if cls not in allowed:
        raise _violation(f"{kind} does not travel in this direction", "MSG-3")
    return _build(cls, fields, obj, kind)


class _Opaque:
    """A map no Python dict can hold (a key that is itself a map): only an ignored field may hold one."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<map with unhashable keys>"


_OPAQUE = _Opaque()


def _pairs(pairs):
    try:
        return dict(pairs)
    except TypeError:  # an unhashable key
        return _OPAQUE


def _lenient(data: bytes) -> object:
    """Decodes any MessagePack value: maps with keys of any type (WIRE-3 leaves ignored fields unchecked).

    The first decode refuses non-string map keys, which only the known fields must have;
    this one builds whatever it can, and the checks of the known fields do the rest.
    """
    try:
        obj = msgpack.unpackb(data, raw=False, use_list=False, strict_map_key=False, object_pairs_hook=_pairs)
    except Exception as e:  # noqa: BLE001 - any decoding failure is the peer's violation
        raise _violation(f"undecodable payload ({type(e).__name__}: {str(e)[:100]})", "WIRE-3") from None
    if type(obj) is dict and not all(type(k) is str for k in obj):  # the strict decode checked this itself
        raise _violation("a payload's map keys must be strings", "WIRE-3")
    return obj


def _fast(obj: dict, allowed) -> object | None:
    """The common Ack and Receive decoded without the general checks, when they plainly pass them; else None."""
    kind = obj.get("type")
    if kind == "Ack" and Ack in allowed and len(obj) == 5:
        r, v, s, d = obj.get("receiver"), obj.get("version"), obj.get("status"), obj.get("detail")
        if type(r) is int and type(v) is int and type(s) is str and type(d) is str and 0 <= r <= INT_MAX \
                and 0 <= v <= INT_MAX and len(d) * 4 <= MAX_DETAIL and len(s) * 4 <= MAX_TEXT:
            return Ack(r, v, s, d)
    elif kind == "Receive" and Receive in allowed and len(obj) == 4 and obj.get("new_slots") == ():
        v, s = obj.get("version"), obj.get("slot")
        if type(v) is int and type(s) is int and 0 <= v <= INT_MAX and 0 <= s <= INT_MAX:
            return Receive(v, s, ())
    return None


class FrameReader:
    """Cuts a byte stream into payloads, refusing a length above `max_frame` before reading it (WIRE-2)."""

    def __init__(self, max_frame: int):
        self.max_frame = max_frame
        self._buf = bytearray()
        self._pos = 0
        #: Bytes of a frame that has started and not ended (WIRE-7 bounds how long that may last). Kept by feed()
        #: and next(), not computed when asked: the session asks several times a message.
        self.partial = False

    def feed(self, data) -> None:
        if self._pos and self._pos == len(self._buf):
            self._buf.clear()
            self._pos = 0
        self._buf += data
        self.partial = self._pos < len(self._buf)

    def next(self) -> bytes | None:
        """The next whole payload, or None while it is incomplete."""
        avail = len(self._buf) - self._pos
        self.partial = avail > 0
        if avail < LENGTH.size:
            return None
        (n,) = LENGTH.unpack_from(self._buf, self._pos)
        if n == 0 or n > self.max_frame:
            raise _violation(f"frame length {n} is outside [1, {self.max_frame}]", "WIRE-2")
        if avail < LENGTH.size + n:
            return None
        start = self._pos + LENGTH.size
        data = bytes(self._buf[start : start + n])
        self._pos = start + n
        self.partial = self._pos < len(self._buf)
        if self._pos > 1 << 20:  # drop consumed bytes now and then
            del self._buf[: self._pos]
            self._pos = 0
        return data


#: What each side may receive (MSG-1, MSG-3), and what it may receive while a join is under way (RDV-3).
FROM_SENDER = TO_RECEIVER
FROM_RECEIVER = TO_SENDER
FROM_JOINER = RENDEZVOUS_TO_SENDER
FROM_LISTENER = RENDEZVOUS_TO_RECEIVER


#: Room for one slot's SlotInfo in an Init, a CUDA slot's IPC handles included.
SLOTINFO_ROOM = 1024


def check_init_fits(manifest: Sequence[Entry], slots: int = 2) -> None:
    """Refuses at once a manifest whose Init, naming `slots` slots, could not fit in one frame (SEC-7, WIRE-2):
    when a sender is made, and when pack() packs (two slots: the fewest a sender has, SLOT-1)."""
    size = len(payload(Init(PROTOCOL_VERSION, 0, tuple(manifest), (), 0, 0))) + slots * SLOTINFO_ROOM
    if size > MAX_TO_RECEIVER:
        raise ValueError(f"{len(manifest)} tensors make an Init of about {size} bytes, over the frame bound of "
                         f"{MAX_TO_RECEIVER} (SEC-7, WIRE-2): merge small tensors into fewer")
