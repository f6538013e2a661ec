"""Helpers of the f_ confirm scripts: a scripted *sender* side on the wire, reached by the public URL join.

A `ScriptedListener` listens on an abstract Unix name (or a TCP port) and holds a secret of its own; the URL
it gives (`url(i)`) is what `sender.url(i)` would be (RDV-1), so `Receiver(url)` joins it by the public path.
It speaks the join of spec section 14 (Hello, Join, Welcome: HMAC-SHA256 proofs, RDV-3) and then lets the
script write any frame it likes (Init with a memfd slot beside it, half a frame, ...), per spec section 12.
Also `Conn`: a framed connection (WIRE-1), usable on either side of the wire.
"""
import array
import hashlib
import hmac
import os
import socket
import struct

import msgpack


def frame(obj) -> bytes:
    data = msgpack.packb(obj, use_bin_type=True)
    return struct.pack(">I", len(data)) + data


class Conn:
    """One framed connection: read() the next payload as a dict, send() a dict, send_raw() any bytes."""

    def __init__(self, sock, timeout=20.0):
        self.sock = sock
        self.sock.settimeout(timeout)
        self.buf = b""
        self.fds = []

    def read(self):
        while True:
            if len(self.buf) >= 4:
                (n,) = struct.unpack(">I", self.buf[:4])
                if len(self.buf) >= 4 + n:
                    msg = msgpack.unpackb(self.buf[4:4 + n], raw=False)
                    self.buf = self.buf[4 + n:]
                    return msg
            data, anc, _flags, _ = self.sock.recvmsg(1 << 20, socket.CMSG_SPACE(4 * 256))
            for _lvl, _typ, payload in anc:
                fds = array.array("i")
                fds.frombytes(payload[: len(payload) - len(payload) % 4])
                self.fds += list(fds)
            if not data:
                raise EOFError("peer closed the connection")
            self.buf += data

    def read_until(self, kind, limit=50):
        """The next message of type `kind`, skipping Heartbeats (and anything else, up to `limit` messages)."""
        for _ in range(limit):
            msg = self.read()
            if msg.get("type") == kind:
                return msg
        raise AssertionError(f"no {kind} in {limit} messages")

    def send_raw(self, data: bytes, fds=()):
        if fds:
            n = self.sock.sendmsg([data], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))])
            if n < len(data):
                self.sock.sendall(data[n:])
        else:
            self.sock.sendall(data)

    def send(self, obj, fds=()):
        self.send_raw(frame(obj), fds)

    def close(self):
        for fd in self.fds:
            try:
                os.close(fd)
            except OSError:
                pass
        self.fds = []
        try:
            self.sock.close()
        except OSError:
            pass


def mac(secret: bytes, label: bytes, ns: bytes, nr: bytes, rid: int) -> bytes:
    """RDV-3's proof: HMAC-SHA256(secret, label | sender nonce | joiner nonce | id as 8 bytes big-endian)."""
    return hmac.new(secret, label + ns + nr + rid.to_bytes(8, "big"), hashlib.sha256).digest()


class ScriptedListener:
    """A listening 'sender' whose every frame the script writes (kind "unix": abstract name; "tcp": 127.0.0.1)."""

    def __init__(self, kind="unix", timeout=20.0):
        self.secret = os.urandom(32)
        self.timeout = timeout
        if kind == "unix":
            name = f"f-scripted-{os.getpid()}-{os.urandom(4).hex()}"
            self.srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self.srv.bind("\0" + name)
            self.address = f"unix:@{name}"
        else:
            self.srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            self.srv.bind(("127.0.0.1", 0))
            self.address = f"tcp://127.0.0.1:{self.srv.getsockname()[1]}"
        self.srv.listen(8)
        self.srv.settimeout(timeout)

    def url(self, rid=0):
        return f"{self.address}?receiver={rid}&secret={self.secret.hex()}"

    def accept_join(self):
        """Accepts one joiner, sends Hello, reads its Join, answers Welcome with the right proof; returns the Conn."""
        sock, _ = self.srv.accept()
        c = Conn(sock, self.timeout)
        ns = os.urandom(32)
        c.send({"type": "Hello", "protocol": "1.1", "nonce": ns})
        join = c.read()
        assert join.get("type") == "Join", join
        rid, nr = join["receiver"], join["nonce"]
        assert hmac.compare_digest(join["proof"], mac(self.secret, b"weightsync-join", ns, nr, rid)), "bad Join proof"
        c.send({"type": "Welcome", "proof": mac(self.secret, b"weightsync-welcome", ns, nr, rid)})
        c.rid = rid
        return c

    def close(self):
        self.srv.close()


def slot_fd(data: bytes, nbytes: int) -> int:
    """A memfd holding `data`, `nbytes` long: a CPU slot's handle (WIRE-4)."""
    fd = os.memfd_create("f-slot", os.MFD_CLOEXEC)
    os.ftruncate(fd, nbytes)
    os.pwrite(fd, data, 0)
    return fd


def unix_init(rid, values, version=0, capabilities=(), byteorder="little"):
    """(Init dict, [fd]) for one float32 array `w` of `values` in slot 0 of 64 bytes (WIRE-8 layout)."""
    raw = struct.pack(f"<{len(values)}f", *values)
    init = {"type": "Init", "protocol": "1.1", "receiver": rid,
            "manifest": [{"name": "w", "dtype": "float32", "shape": [len(values)], "device": "cpu", "offset": 0,
                          "nbytes": len(raw)}],
            "slots": [{"slot": 0, "device": "cpu", "nbytes": 64, "ipc": []}],
            "version": version, "slot": 0, "byteorder": byteorder, "capabilities": list(capabilities),
            "data_plane": None}
    return init, [slot_fd(raw, 64)]
