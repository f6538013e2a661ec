"""RDV-4: a Join for an unknown id and one with a wrong proof get Refuse details that do not tell them apart."""
import os
import socket
import struct
import sys

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


def refusal(addr, rid):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(10)
    s.connect(addr)
    hello = read_frame(s)
    assert hello["type"] == "Hello", hello
    write(s, {"type": "Join", "receiver": rid, "nonce": os.urandom(32), "proof": os.urandom(32)})
    ans = read_frame(s)
    s.close()
    return ans


name = f"ws-c-refuse-{os.getpid()}"
sender = ws.Sender({"w": torch.zeros(4)}, 2, listen=f"unix:@{name}")
try:
    a = refusal("\0" + name, 7)  # an id that does not exist
    b = refusal("\0" + name, 1)  # an id that exists, a wrong proof
finally:
    sender.close()
if a.get("type") != "Refuse" or b.get("type") != "Refuse":
    _confirm.bug(f"a forged Join was not refused: {a} / {b}")
if a.get("detail") != b.get("detail"):
    _confirm.bug(f"Refuse says which: unknown id -> {a.get('detail')!r}, wrong proof -> {b.get('detail')!r}")
_confirm.fine(f"both refused alike: {a.get('detail')!r}")
