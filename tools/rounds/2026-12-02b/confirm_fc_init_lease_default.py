"""A sender listening on tcp:// made with lease=30, heartbeat=10 (a long lease for a slow network): a worker that
joins by URL must be told that lease in Init (data_plane.lease_ms = 30000, NET-1, NET-4, API-10), since it is what
the worker gives up after. Scripted joiner on the documented wire (spec section 14); a connect() runs meanwhile."""
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


ws = module()
s = ws.Sender({"w": torch.zeros(8)}, 1, listen="tcp://127.0.0.1:0", lease=30, heartbeat=10)
threading.Thread(target=lambda: s.connect(timeout=20), daemon=True).start()
time.sleep(0.2)
sock, read, send = tcp_join(s.url(0))
m = read()
while m["type"] == "Heartbeat":
    m = read()
sock.close()
s.close()
if m["type"] != "Init":
    raise SystemExit(f"expected Init, got {m['type']}: no verdict")
lease_ms = m["data_plane"]["lease_ms"]
if lease_ms != 30000:
    bug(f"Sender(lease=30) announced lease_ms={lease_ms} in Init: the worker gives up after {lease_ms / 1000:g} s "
        "of silence while the sender beats only every 10 s (API-10, NET-4)")
fine("Init announces lease_ms=30000")
