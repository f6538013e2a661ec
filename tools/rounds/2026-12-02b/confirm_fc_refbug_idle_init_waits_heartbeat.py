"""REFERENCE BUG (not a planted one). A sender listening on tcp:// made with lease=36, heartbeat=12, while no call
of the trainer runs (it is busy training): a worker joins by URL (a scripted joiner on the documented wire, spec
section 14). RDV-5: the sender "answers Welcome ... and sends Init at once with the latest version ..., whether or
not a connect() runs". The reference welcomes at once but sends the Init only up to a heartbeat interval later:
the network Init waits for the receiver's TCPStore, made on a thread of its own (publishing._send_network_init,
netplane.make_store), whose `hub.wake()` writes the hub's wake pipe; the helper thread that serves joins while no
call runs (helper._serve) does not poll that pipe, and sleeps until its heartbeat timer. With the default heartbeat
the Init is ~1 s late; with heartbeat=12 it is 12 s late, past the reaction bound and past a worker's
connect(timeout=10). With a connect() running (which polls the wake pipe) it comes in ~0.05 s.
Exit 1 (BUG SEEN) when the Init comes more than 10 s (the reaction bound) after Welcome."""
import hashlib
import hmac
import os
import socket
import struct
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
s = ws.Sender({"w": torch.zeros(8)}, 1, listen="tcp://127.0.0.1:0", lease=36, heartbeat=12)
time.sleep(0.5)
sock, read, send = tcp_join(s.url(0), timeout=25)
welcomed = time.monotonic()
m = read()
while m["type"] == "Heartbeat":
    m = read()
late = time.monotonic() - welcomed
sock.close()
s.close()
if m["type"] != "Init":
    raise SystemExit(f"expected Init, got {m['type']}: no verdict")
if late > 10:
    bug(f"Init came {late:.1f} s after Welcome while no call ran (RDV-5: at once; heartbeat=12)")
fine(f"Init came {late:.2f} s after Welcome")
