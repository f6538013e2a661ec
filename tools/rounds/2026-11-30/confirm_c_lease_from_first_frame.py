"""NET-4: the sender counts a network receiver's lease from the Init it sent. A scripted TCP joiner proves the
secret, reads Welcome and Init, then stays silent: with lease=1 s, connect() must name it gone (ReceiverDiedError)
within the lease plus the grace, not wait out its own timeout."""
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


def joiner(port, rid, secret):
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    hello = read_frame(s)
    nr = os.urandom(32)
    pf = hmac.new(secret, b"weightsync-join" + hello["nonce"] + nr + rid.to_bytes(8, "big"), hashlib.sha256).digest()
    write(s, {"type": "Join", "receiver": rid, "nonce": nr, "proof": pf})
    assert read_frame(s)["type"] == "Welcome"
    s.settimeout(12)
    try:
        while True:  # read (Init, Heartbeats) and say nothing
            if not s.recv(65536):
                break
    except OSError:
        pass
    s.close()


sender = ws.Sender({"w": torch.zeros(4)}, 1, listen="tcp://127.0.0.1:0", lease=1.0, heartbeat=0.2,
                   transfer_timeout=30.0)
url = sender.url(0)
port = int(url.split("?")[0].rsplit(":", 1)[1])
secret = bytes.fromhex(url.split("secret=")[1])
out, t = _confirm.in_thread(joiner, port, 0, secret)
t0 = time.monotonic()
try:
    sender.connect(workers=[0], timeout=9)
    took, err = time.monotonic() - t0, None
except Exception as e:  # noqa: BLE001
    took, err = time.monotonic() - t0, e
sender.close()
if isinstance(err, ws.ReceiverDiedError) and took < 1.0 + 3.0 + 1.0:
    _confirm.fine(f"silent joiner named gone after {took:.1f} s: {err}"[:200])
_confirm.bug(f"a joiner silent since its Init was not named gone by its 1 s lease: after {took:.1f} s connect gave {err!r}"[:300])
