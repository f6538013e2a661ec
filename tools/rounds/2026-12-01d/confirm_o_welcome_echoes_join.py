"""Confirms o_welcome_echoes_join: (1) a joiner speaking spec 14 checks the real sender's Welcome proof against
HMAC(secret_i, "weightsync-welcome" | nonce_s | nonce_r | i); (2) a squatter that echoes the joiner's own proof as
Welcome must be refused by Receiver(url).connect() (RDV-7)."""
import hashlib
import hmac
import os
import socket
import struct
import threading
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
            raise EOFError
        buf += d
    (n,) = struct.unpack(">I", buf)
    data = b""
    while len(data) < n:
        d = sock.recv(n - len(data))
        if not d:
            raise EOFError
        data += d
    return msgpack.unpackb(data, raw=False)


def mac(secret, label, ns, nr, rid):
    return hmac.new(secret, label + ns + nr + rid.to_bytes(8, "big"), hashlib.sha256).digest()


# (1) the real sender's Welcome
name = f"o-welcome-{os.getpid()}"
s = ws.Sender({"w": torch.zeros(3)}, 1, listen=f"unix:@{name}")
url = s.url(0)
secret = bytes.fromhex(parse_qs(url.partition("?")[2])["secret"][0])
sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
sock.settimeout(10)
sock.connect("\0" + name)
hello = read_frame(sock)
nr = os.urandom(32)
sock.sendall(frame({"type": "Join", "receiver": 0, "nonce": nr,
                    "proof": mac(secret, b"weightsync-join", hello["nonce"], nr, 0)}))
welcome = read_frame(sock)
sock.close()
s.close()
if welcome.get("type") != "Welcome":
    bug(f"a valid Join was answered by {welcome!r}")
expected = mac(secret, b"weightsync-welcome", hello["nonce"], nr, 0)
if welcome["proof"] != expected:
    bug("the sender's Welcome proof is not HMAC(secret, 'weightsync-welcome' | nonces | id) (RDV-5)"
        + (": it echoes the Join's proof" if welcome["proof"] == mac(secret, b"weightsync-join", hello["nonce"], nr, 0)
           else ""))

# (2) a squatter without the secret echoes the joiner's proof
name2 = f"o-squat-{os.getpid()}"
lsock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
lsock.bind("\0" + name2)
lsock.listen(4)
lsock.settimeout(10)


def squat():
    try:
        conn, _ = lsock.accept()
        conn.settimeout(5)
        conn.sendall(frame({"type": "Hello", "protocol": "1.1", "nonce": os.urandom(32)}))
        join = read_frame(conn)
        conn.sendall(frame({"type": "Welcome", "proof": join["proof"]}))
        threading.Event().wait(1.0)
        conn.close()
    except Exception as e:  # noqa: BLE001
        print("squatter:", e)


t = threading.Thread(target=squat, daemon=True)
t.start()
r = ws.Receiver(f"unix:@{name2}?receiver=0&secret={os.urandom(32).hex()}")
try:
    r.connect(timeout=4)
    outcome = "connected"
except ws.RemoteProtocolError as e:
    outcome = None
    print("refused the squatter:", e)
except Exception as e:  # noqa: BLE001
    outcome = f"{type(e).__name__}: {e}"
t.join(5)
lsock.close()
if outcome is not None:
    bug(f"a Welcome that echoed the joiner's own proof was accepted (then: {outcome[:150]}) (RDV-7)")
fine("Welcome's proof is the weightsync-welcome HMAC, and an echoed proof is refused")
