"""A sender listening on tcp:// with two receivers: receiver 0 by handle (in-process), sent three versions; then
receiver 1 joins by URL (a scripted joiner on the documented wire) while connect(workers=[1]) runs. Its Init must
carry the latest version and slot 0, the data plane's (NET-1: "Init then carries slots empty, slot 0")."""
import hashlib
import hmac
import os
import socket
import struct
import threading
import time

import msgpack
import torch
from _confirm import bug, fine, module


def tcp_join(url, timeout=15.0):
    """Joins by URL over TCP as the spec's section 14 writes it; returns (socket, reader) once Welcome came."""
    head, _, query = url.partition("?")
    q = dict(kv.split("=", 1) for kv in query.split("&"))
    rid, secret = int(q["receiver"]), bytes.fromhex(q["secret"])
    host, _, port = head[len("tcp://"):].rpartition(":")
    sock = socket.create_connection((host.strip("[]"), int(port)), timeout=timeout)
    sock.settimeout(timeout)
    buf = [b""]

    def read():
        while True:
            b = buf[0]
            if len(b) >= 4:
                (n,) = struct.unpack(">I", b[:4])
                if len(b) >= 4 + n:
                    buf[0] = b[4 + n:]
                    return msgpack.unpackb(b[4:4 + n], raw=False)
            data = sock.recv(1 << 20)
            if not data:
                raise EOFError("the sender closed the connection")
            buf[0] += data

    def send(obj):
        data = msgpack.packb(obj, use_bin_type=True)
        sock.sendall(struct.pack(">I", len(data)) + data)

    hello = read()
    assert hello["type"] == "Hello", hello
    mine = os.urandom(32)
    idb = rid.to_bytes(8, "big")
    send({"type": "Join", "receiver": rid, "nonce": mine,
          "proof": hmac.new(secret, b"weightsync-join" + hello["nonce"] + mine + idb, hashlib.sha256).digest()})
    welcome = read()
    assert welcome["type"] == "Welcome", welcome
    return sock, read, send


from _confirm import connect_inproc  # noqa: E402

ws = module()
s = ws.Sender({"w": torch.zeros(8)}, 2, listen="tcp://127.0.0.1:0", transfer_timeout=30)
r0 = ws.Receiver(s.handle(0))
connect_inproc(s, [r0], workers=[0], timeout=20)
for v in (1, 2, 3):
    s.send({"w": torch.full((8,), float(v))}, workers=[0], timeout=10)
threading.Thread(target=lambda: s.connect(timeout=20, workers=[1]), daemon=True).start()
time.sleep(0.2)
sock, read, send = tcp_join(s.url(1))
m = read()
while m["type"] == "Heartbeat":
    m = read()
sock.close()
r0.close()
s.close()
if m["type"] != "Init" or m["version"] != 3:
    raise SystemExit(f"expected Init of version 3, got {m['type']} {m.get('version')}: no verdict")
if m["slot"] != 0 or m["slots"]:
    bug(f"the late joiner's Init names slot {m['slot']} (slots {m['slots']}): over TCP every slot id is 0, so a "
        "worker joining after training started is sent a slot it does not know (NET-1)")
fine("Init of version 3 names slot 0")
