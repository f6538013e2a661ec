"""RDV-6: a connection that gets Hello and sends nothing is closed by the listener within the reaction bound (10 s)."""
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
name = f"ws-c-silent-{os.getpid()}"
sender = ws.Sender({"w": torch.zeros(4)}, 1, listen=f"unix:@{name}")
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect("\0" + name)
s.settimeout(5)
buf = b""
while len(buf) < 4:
    buf += s.recv(4096)
(n,) = struct.unpack(">I", buf[:4])
while len(buf) < 4 + n:
    buf += s.recv(4096)
assert msgpack.unpackb(buf[4 : 4 + n], raw=False)["type"] == "Hello"
t0 = time.monotonic()
closed_at = None
s.settimeout(0.5)
while time.monotonic() - t0 < 14.5:  # 10 s bound + 3 s grace + slack
    try:
        b = s.recv(4096)
    except TimeoutError:
        continue
    except OSError:
        b = b""
    if not b:
        closed_at = time.monotonic() - t0
        break
s.close()
sender.close()
if closed_at is None:
    _confirm.bug("a joiner silent after Hello still has its connection open after 14.5 s")
_confirm.fine(f"silent joiner closed after {closed_at:.1f} s")
