"""A scripted sender listens where a worker's URL points (it holds the secret, so the join is proper), then sends
an Init listing two slots with three descriptors attached. WIRE-4: a handle queued with no frame left to take it
is a violation: the worker's `connect()` raises RemoteProtocolError instead of answering Ready(ok)."""
import array
import hashlib
import hmac
import os
import socket
import struct
import threading

import msgpack
from _confirm import bug, fine, in_thread, module

ws = module()
name = f"ws-s-shq-{os.getpid()}"
secret = os.urandom(32)
lsock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
lsock.bind("\0" + name)
lsock.listen(4)
lsock.settimeout(10)
url = f"unix:@{name}?receiver=0&secret={secret.hex()}"
state = {}


def frame(obj):
    data = msgpack.packb(obj, use_bin_type=True)
    return struct.pack(">I", len(data)) + data


def read_frame(conn):
    buf = b""
    while len(buf) < 4:
        got = conn.recv(4 - len(buf))
        if not got:
            return None
        buf += got
    (n,) = struct.unpack(">I", buf)
    body = b""
    while len(body) < n:
        got = conn.recv(n - len(body))
        if not got:
            return None
        body += got
    return msgpack.unpackb(body, raw=False)


def memfd(value):
    fd = os.memfd_create("slot")
    os.ftruncate(fd, 64)
    os.pwrite(fd, struct.pack("<4f", *([value] * 4)), 0)
    return fd


def sender():
    conn, _ = lsock.accept()
    conn.settimeout(10)
    ns = os.urandom(32)
    conn.sendall(frame({"type": "Hello", "protocol": "1.1", "nonce": ns}))
    join = read_frame(conn)
    nr = join["nonce"]
    proof = hmac.new(secret, b"weightsync-welcome" + ns + nr + (0).to_bytes(8, "big"), hashlib.sha256).digest()
    conn.sendall(frame({"type": "Welcome", "proof": proof}))
    init = {"type": "Init", "protocol": "1.1", "receiver": 0,
            "manifest": [{"name": "w", "dtype": "float32", "shape": [4], "device": "cpu", "offset": 0, "nbytes": 16}],
            "slots": [{"slot": k, "device": "cpu", "nbytes": 64, "ipc": []} for k in (0, 1)],
            "version": 0, "slot": 0, "byteorder": "little", "capabilities": [], "data_plane": None}
    fds = [memfd(1.0), memfd(2.0), memfd(9.0)]  # one more than the two slots listed
    conn.sendmsg([frame(init)], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))])
    for fd in fds:
        os.close(fd)
    try:
        state["answer"] = read_frame(conn)
    except OSError as e:
        state["answer"] = f"{e}"
    state["conn"] = conn


th = threading.Thread(target=sender, daemon=True)
th.start()
r = ws.Receiver(url)
out, t = in_thread(r.connect, 8)
t.join(12)
th.join(5)
lsock.close()
err = out.get("error")
answer = state.get("answer")
if isinstance(err, ws.RemoteProtocolError):
    fine(f"an Init with one handle too many was refused: {str(err)[:140]} (the sender read {answer!r:.60})")
if "result" in out:
    w = r.weights["w"].tolist()
    r.close()
    bug(f"an Init listing 2 slots with 3 handles beside it was accepted: connect() returned {out['result']}, "
        f"answered {answer.get('type') if isinstance(answer, dict) else answer} "
        f"{answer.get('status') if isinstance(answer, dict) else ''}, weights {w}")
bug(f"connect() gave {err!r}")
