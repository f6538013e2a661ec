"""A sender listening on tcp:// with two workers joining by URL (scripted joiners on the documented wire, spec
section 14) while connect() runs: their Inits must name two different stores (NET-6: "no two Inits it has sent
name the same store while both stores run"); neither joiner builds its side, so both stores run."""
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
s = ws.Sender({"w": torch.zeros(8)}, 2, listen="tcp://127.0.0.1:0", transfer_timeout=30)
threading.Thread(target=lambda: s.connect(timeout=20), daemon=True).start()
time.sleep(0.2)
inits, socks = [], []
for i in (0, 1):
    sock, read, send = tcp_join(s.url(i))
    m = read()
    while m["type"] == "Heartbeat":
        m = read()
    if m["type"] != "Init":
        raise SystemExit(f"expected Init, got {m['type']}: no verdict")
    inits.append(m["data_plane"])
    socks.append(sock)
stores = [d["store"] for d in inits]
prefixes = [d["prefix"] for d in inits]
for sock in socks:
    sock.close()
s.close()
if stores[0] == stores[1]:
    bug(f"receivers 0 and 1 were both sent store {stores[0]} (prefixes {prefixes[0][:8]}.., {prefixes[1][:8]}..): "
        "one joiner reaches the other's store (NET-6)")
fine(f"two stores: {stores}")
