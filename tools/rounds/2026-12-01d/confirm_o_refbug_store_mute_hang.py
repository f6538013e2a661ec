"""NOT a bug module's confirm: a reproduction of a bug of the REFERENCE (it prints BUG SEEN against weightsync).
A scripted listening sender (spec 14 with a secret of its own, then a network Init whose data-plane store port
accepts connections and never answers, as a trainer frozen by SIGSTOP right after its Init would) and a real
Receiver(url).connect(timeout=2). RDV-6/API-7: connect(timeout) bounds the whole join and handshake, so it must
raise within the timeout plus the grace (3 s). The reference hangs in torch's TCPStore client (netplane._client
from Inbound.__init__), which ignores its timeout while it waits for the store's answer: >45 s seen.
Run: PYTHONPATH=.:../../../reference python confirm_o_refbug_store_mute_hang.py weightsync"""
import hashlib
import hmac
import os
import socket
import struct
import threading
import time

import msgpack
from _confirm import bug, fine, in_thread, module

ws = module()


def frame(obj):
    data = msgpack.packb(obj, use_bin_type=True)
    return struct.pack(">I", len(data)) + data


def read_frame(sock):
    buf = b""
    while True:
        if len(buf) >= 4:
            (n,) = struct.unpack(">I", buf[:4])
            if len(buf) >= 4 + n:
                return msgpack.unpackb(buf[4:4 + n], raw=False), buf[4 + n:]
        d = sock.recv(65536)
        if not d:
            raise EOFError("closed")
        buf += d


def mac(label, ns, nr, rid):
    return hmac.new(secret, label + ns + nr + rid.to_bytes(8, "big"), hashlib.sha256).digest()


secret = os.urandom(32)
mute = socket.socket()  # the data-plane "store": accepts, never answers
mute.bind(("127.0.0.1", 0))
mute.listen(16)
lsock = socket.socket()
lsock.bind(("127.0.0.1", 0))
lsock.listen(4)
lsock.settimeout(10)
port = lsock.getsockname()[1]
stop = threading.Event()


def sender():
    try:
        conn, _ = lsock.accept()
        conn.settimeout(40)
        ns = os.urandom(32)
        conn.sendall(frame({"type": "Hello", "protocol": "1.1", "nonce": ns}))
        join, _ = read_frame(conn)
        conn.sendall(frame({"type": "Welcome", "proof": mac(b"weightsync-welcome", ns, join["nonce"], 0)}))
        conn.sendall(frame({"type": "Init", "protocol": "1.1", "receiver": 0,
                            "manifest": [{"name": "w", "dtype": "float32", "shape": [3], "device": "cpu",
                                          "offset": 0, "nbytes": 12}],
                            "slots": [], "version": 0, "slot": 0, "byteorder": "little",
                            "capabilities": ["network"],
                            "data_plane": {"backend": "gloo", "store": f"127.0.0.1:{mute.getsockname()[1]}",
                                           "prefix": os.urandom(16).hex(), "nbytes": 64, "timeout_ms": 30000,
                                           "lease_ms": 60000}}))
        while not stop.is_set():  # read (and ignore) its heartbeats, and heartbeat back
            conn.sendall(frame({"type": "Heartbeat"}))
            stop.wait(0.5)
        conn.close()
    except Exception as e:  # noqa: BLE001
        print("scripted sender:", e)


threading.Thread(target=sender, daemon=True).start()
r = ws.Receiver(f"tcp://127.0.0.1:{port}?receiver=0&secret={secret.hex()}")
t0 = time.monotonic()
out, t = in_thread(r.connect, 2)
t.join(2 + 3 + 1)
took = time.monotonic() - t0
if t.is_alive():
    bug(f"Receiver.connect(timeout=2) still runs after {took:.1f} s: its data-plane store client "
        "ignores the call's timeout (RDV-6, API-7)")
stop.set()
print("connect ended after", round(took, 2), "s:", repr(out.get("error", out.get("result")))[:200])
fine(f"connect(timeout=2) ended after {took:.1f} s")
