"""WIRE-3: an integer field holding a boolean is a violation. A scripted joiner for receiver 1 answers Init with a
Ready whose `receiver` is true: the sender must cut it off (ReceiverError), not take it as receiver 1's Ready."""
import hashlib
import hmac
import os
import socket
import struct
import sys
import time

import msgpack
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _confirm

ws = _confirm.module()


def read_frame(s):
    def exact(n):
        b = b""
        while len(b) < n:
            c = s.recv(n - len(b))
            if not c:
                raise EOFError
            b += c
        return b
    (n,) = struct.unpack(">I", exact(4))
    return msgpack.unpackb(exact(n), raw=False)


def write(s, obj):
    p = msgpack.packb(obj, use_bin_type=True)
    s.sendall(struct.pack(">I", len(p)) + p)


def joiner(addr, rid, secret):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(10)
    s.connect(addr)
    hello = read_frame(s)
    nr = os.urandom(32)
    pf = hmac.new(secret, b"weightsync-join" + hello["nonce"] + nr + rid.to_bytes(8, "big"), hashlib.sha256).digest()
    write(s, {"type": "Join", "receiver": rid, "nonce": nr, "proof": pf})
    assert read_frame(s)["type"] == "Welcome"
    init = read_frame(s)
    assert init["type"] == "Init", init
    write(s, {"type": "Ready", "receiver": True, "version": init["version"], "status": "ok", "detail": "",
              "holds_slot": False, "protocol": "1.1", "capabilities": []})
    time.sleep(3)
    s.close()


name = f"ws-c-bool-{os.getpid()}"
sender = ws.Sender({"w": torch.zeros(4)}, 2, listen=f"unix:@{name}")
secret = bytes.fromhex(sender.url(1).split("secret=")[1])
out, t = _confirm.in_thread(joiner, "\0" + name, 1, secret)
try:
    sender.connect(workers=[1], timeout=8)
except ws.ReceiverError as e:
    sender.close()
    _confirm.fine(f"cut off: {e}"[:200])
except Exception as e:  # noqa: BLE001
    sender.close()
    _confirm.bug(f"connect raised {e!r} instead of ReceiverError")
sender.close()
_confirm.bug("a Ready with receiver=true was taken as receiver 1's: connect() returned")
