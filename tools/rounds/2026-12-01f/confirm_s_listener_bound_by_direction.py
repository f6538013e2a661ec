"""A process connects to a listening sender's address and answers Hello with a Join padded (an unknown key, which
WIRE-3 ignores) to a 20,000-byte frame. RDV-9: before the proof, a frame above 8,192 bytes ends the join: the
connection closes, with no Refuse and no Welcome. Done twice: with a wrong proof, and with receiver 0's right one."""
import hashlib
import hmac
import os
import socket
import struct
from urllib.parse import parse_qs

import msgpack
import torch
from _confirm import bug, fine, module

ws = module()
name = f"ws-s-lbd-{os.getpid()}"
s = ws.Sender({"w": torch.zeros(4)}, 1, listen=f"unix:@{name}")
secret = bytes.fromhex(parse_qs(s.url(0).partition("?")[2])["secret"][0])


def frame(obj):
    data = msgpack.packb(obj, use_bin_type=True)
    return struct.pack(">I", len(data)) + data


def read_frame(sock):
    buf = b""
    while len(buf) < 4:
        got = sock.recv(4 - len(buf))
        if not got:
            return None
        buf += got
    (n,) = struct.unpack(">I", buf)
    body = b""
    while len(body) < n:
        got = sock.recv(min(65536, n - len(body)))
        if not got:
            return None
        body += got
    return msgpack.unpackb(body, raw=False)


def attempt(right):
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(12)
    sock.connect("\0" + name)
    hello = read_frame(sock)
    assert hello and hello["type"] == "Hello", hello
    mine = os.urandom(32)
    key = secret if right else os.urandom(32)
    proof = hmac.new(key, b"weightsync-join" + hello["nonce"] + mine + (0).to_bytes(8, "big"), hashlib.sha256).digest()
    data = frame({"type": "Join", "receiver": 0, "nonce": mine, "proof": proof, "padding": b"\0" * 20000})
    assert len(data) > 8196
    try:
        sock.sendall(data)
    except (BrokenPipeError, ConnectionResetError):  # closed at the length: what RDV-9 wants
        sock.close()
        return len(data), None
    try:
        answer = read_frame(sock)
    except (ConnectionResetError, TimeoutError) as e:
        answer = None if not isinstance(e, (TimeoutError, socket.timeout)) else {"type": f"no answer in 12 s ({e})"}
    sock.close()
    return len(data), answer


results = [attempt(False), attempt(True)]
s.close()
for (n, answer), right in zip(results, (False, True)):
    if answer is not None:
        bug(f"a Join of {n} bytes before any proof ({'right' if right else 'wrong'} proof) was read and answered "
            f"with {answer.get('type')} {answer.get('detail', '')!r}")
fine("a 20,000-byte Join before the proof ended the connection, with a wrong proof and a right one")
