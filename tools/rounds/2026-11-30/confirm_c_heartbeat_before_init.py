"""MSG-4: a Heartbeat after Welcome and before Init is legal at the receiver. A scripted listener welcomes the
joiner, sends Heartbeat, then Stop: connect() must raise ClosedError (the sender closed before the handshake),
not RemoteProtocolError."""
import hashlib
import hmac
import os
import socket
import struct
import sys
import time

import msgpack

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


name = f"ws-c-hb-{os.getpid()}"
lst = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
lst.bind("\0" + name)
lst.listen(8)
lst.settimeout(8)
secret = os.urandom(32)
r = ws.Receiver(f"unix:@{name}?receiver=0&secret={secret.hex()}")
out, t = _confirm.in_thread(r.connect, 10)
c, _ = lst.accept()
c.settimeout(5)
ns = os.urandom(32)
write(c, {"type": "Hello", "protocol": "1.1", "nonce": ns})
j = read_frame(c)
assert j["type"] == "Join", j
welcome = hmac.new(secret, b"weightsync-welcome" + ns + j["nonce"] + (0).to_bytes(8, "big"), hashlib.sha256).digest()
write(c, {"type": "Welcome", "proof": welcome})
time.sleep(0.3)
write(c, {"type": "Heartbeat"})
time.sleep(0.3)
try:
    write(c, {"type": "Stop"})
except OSError:
    pass
t.join(10)
c.close()
lst.close()
err = out.get("error")
if isinstance(err, ws.RemoteProtocolError):
    _confirm.bug(f"a Heartbeat before Init was taken as a violation: {err}")
if not isinstance(err, ws.ClosedError):
    _confirm.bug(f"expected ClosedError after Welcome, Heartbeat, Stop; got {err!r}")
_confirm.fine(f"Heartbeat passed; Stop gave {type(err).__name__}")
