"""Confirms o_hello_nonce_per_listener: a valid Join (made with the secret) is recorded, its connection closed,
and the same Join bytes replayed on a new connection: RDV-3's fresh challenge makes the replay fail (Refuse)."""
import hashlib
import hmac
import os
import socket
import struct
import time
from urllib.parse import parse_qs

import msgpack
import torch
from _confirm import bug, fine, module

ws = module()


def frame(obj):
    data = msgpack.packb(obj, use_bin_type=True)
    return struct.pack(">I", len(data)) + data


def read_frame(sock):
    buf = b""
    while len(buf) < 4:
        d = sock.recv(4 - len(buf))
        if not d:
            raise EOFError("closed")
        buf += d
    (n,) = struct.unpack(">I", buf)
    data = b""
    while len(data) < n:
        d = sock.recv(n - len(data))
        if not d:
            raise EOFError("closed")
        data += d
    return msgpack.unpackb(data, raw=False)


def dial():
    c = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    c.settimeout(10)
    c.connect(addr)
    return c


s = ws.Sender({"w": torch.zeros(3)}, 1, listen="tcp://127.0.0.1:0")
url = s.url(0)
host, port = url[len("tcp://"):].partition("?")[0].rsplit(":", 1)
addr = (host, int(port))
secret = bytes.fromhex(parse_qs(url.partition("?")[2])["secret"][0])

c1 = dial()
hello1 = read_frame(c1)
nr = os.urandom(32)
recorded = frame({"type": "Join", "receiver": 0, "nonce": nr,
                  "proof": hmac.new(secret, b"weightsync-join" + hello1["nonce"] + nr + (0).to_bytes(8, "big"),
                                    hashlib.sha256).digest()})
c1.sendall(recorded)
first = read_frame(c1)
c1.close()  # the receiver it joined as is left connecting, then gone: a Join may take its place (RDV-5)
time.sleep(0.3)
if first.get("type") != "Welcome":
    bug(f"a valid Join was answered by {first!r}")

c2 = dial()
hello2 = read_frame(c2)
c2.sendall(recorded)  # the recorded bytes, replayed by a process that does not know the secret
try:
    answer = read_frame(c2)
except (EOFError, OSError) as e:
    answer = {"type": f"<{e}>"}
c2.close()
s.close()
print("hello nonces equal:", hello1["nonce"] == hello2["nonce"], "; replay answered:", answer.get("type"))
if answer.get("type") == "Welcome":
    bug("a recorded Join replayed on a new connection was welcomed without the secret"
        + (" (every Hello carries the same nonce)" if hello1["nonce"] == hello2["nonce"] else "") + " (RDV-3)")
if hello1["nonce"] == hello2["nonce"]:
    bug("two connections got the same Hello nonce (RDV-3: a fresh random challenge)")
fine(f"the replayed Join was answered by {answer.get('type')}")
