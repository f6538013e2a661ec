"""RDV-6: a joiner whose connection closes after its Join, with neither Welcome nor Refuse, tries again until its
connect() timeout. A scripted listener drops the first join after Join and refuses the second."""
import os
import socket
import struct
import sys

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


name = f"ws-c-retry-{os.getpid()}"
lst = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
lst.bind("\0" + name)
lst.listen(8)
lst.settimeout(8)
secret = os.urandom(32)
r = ws.Receiver(f"unix:@{name}?receiver=0&secret={secret.hex()}")
out, t = _confirm.in_thread(r.connect, 10)
c1, _ = lst.accept()
c1.settimeout(5)
write(c1, {"type": "Hello", "protocol": "1.1", "nonce": os.urandom(32)})
j = read_frame(c1)
assert j["type"] == "Join", j
c1.close()  # dropped after Join: no Welcome, no Refuse
try:
    c2, _ = lst.accept()
except TimeoutError:
    t.join(5)
    _confirm.bug(f"the joiner did not try again after a join closed without an answer; connect(): {out.get('error')!r}")
c2.settimeout(5)
write(c2, {"type": "Hello", "protocol": "1.1", "nonce": os.urandom(32)})
read_frame(c2)
write(c2, {"type": "Refuse", "detail": "refused: unknown receiver id or wrong secret"})
t.join(10)
c2.close()
lst.close()
err = out.get("error")
if not isinstance(err, ws.RefusedError):
    _confirm.bug(f"after the retry connect() should raise RefusedError, got {err!r}")
_confirm.fine("tried again, then refused")
