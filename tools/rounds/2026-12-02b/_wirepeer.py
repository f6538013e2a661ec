"""A scripted receiver for confirm scripts: speaks the wire profile (spec section 12) on `handle.fileno()`.

Uses only what the spec makes public: the handle's descriptor is the receiver's end of the
channel, frames are a 4-byte big-endian length and one MessagePack map (WIRE-1, WIRE-3).
"""
import array
import os
import socket
import struct
import threading

import msgpack


def frame(obj) -> bytes:
    data = msgpack.packb(obj, use_bin_type=True)
    return struct.pack(">I", len(data)) + data


class Peer:
    def __init__(self, handle, timeout=20.0):
        self.sock = socket.socket(fileno=os.dup(handle.fileno()))
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
                raise EOFError("sender closed the channel")
            self.buf += data

    def send_raw(self, data: bytes, fds=()):
        if fds:
            self.sock.sendmsg([data], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))])
        else:
            self.sock.sendall(data)

    def send(self, obj, fds=()):
        self.send_raw(frame(obj), fds)

    def ready_msg(self, init, **over):
        d = {"type": "Ready", "receiver": init["receiver"], "version": init["version"], "status": "ok",
             "detail": "", "holds_slot": False, "protocol": "1.1", "capabilities": []}
        d.update(over)
        return d

    def close(self):
        for fd in self.fds:
            try:
                os.close(fd)
            except OSError:
                pass
        self.fds = []
        self.sock.close()


def in_thread(fn, *args, **kwargs):
    """Runs fn in a thread; returns a dict that gets 'result' or 'error', and the thread."""
    out = {}

    def run():
        try:
            out["result"] = fn(*args, **kwargs)
        except BaseException as e:  # noqa: BLE001
            out["error"] = e

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return out, t
