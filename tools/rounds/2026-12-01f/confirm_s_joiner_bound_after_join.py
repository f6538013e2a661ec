"""A squatter holds the abstract name a worker's URL names, without the secret: it sends a proper Hello, reads the
worker's Join, then announces a 1 MiB frame, sends 64 KiB of it and stalls. RDV-9: the Welcome is not checked yet,
so a length above 8,192 is a violation at once: `connect(timeout=4)` raises RemoteProtocolError well before 4 s."""
import os
import socket
import struct
import threading
import time

import msgpack
from _confirm import bug, fine, in_thread, module

ws = module()
name = f"ws-s-jba-{os.getpid()}"
lsock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
lsock.bind("\0" + name)
lsock.listen(4)
lsock.settimeout(10)
url = f"unix:@{name}?receiver=0&secret={os.urandom(32).hex()}"
state = {}


def frame(obj):
    data = msgpack.packb(obj, use_bin_type=True)
    return struct.pack(">I", len(data)) + data


def squatter():
    conn, _ = lsock.accept()
    conn.settimeout(10)
    conn.sendall(frame({"type": "Hello", "protocol": "1.1", "nonce": os.urandom(32)}))
    buf = b""
    while len(buf) < 4:
        buf += conn.recv(4096)
    (n,) = struct.unpack(">I", buf[:4])
    while len(buf) < 4 + n:
        buf += conn.recv(4096)
    state["join"] = msgpack.unpackb(buf[4:4 + n], raw=False)["type"]
    try:
        conn.sendall(struct.pack(">I", 1 << 20) + b"\x82" + b"\0" * 65535)  # a "Welcome" of 1 MiB, begun
    except OSError:
        pass
    state["conn"] = conn  # kept open: stalls


threading.Thread(target=squatter, daemon=True).start()
r = ws.Receiver(url)
t0 = time.monotonic()
out, t = in_thread(r.connect, 4)
t.join(15)
el = time.monotonic() - t0
lsock.close()
err = out.get("error")
if state.get("join") != "Join":
    raise SystemExit(f"the worker never sent its Join: {state}, {err!r}")
if isinstance(err, ws.RemoteProtocolError) and el < 3.0:
    fine(f"the 1 MiB frame before the Welcome was checked ended the join at once ({el:.2f}s): {str(err)[:120]}")
bug(f"a squatter's 1 MiB frame after the Join, before any Welcome was checked, was waited for: connect(timeout=4) "
    f"gave {type(err).__name__ if err else out.get('result')!r} after {el:.1f}s: {str(err)[:140]}")
