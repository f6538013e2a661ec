"""A scripted TCP joiner (the URL's secret, the join of RDV-3) reads the Init of a sender made with lease=2,
heartbeat=0.5: its data_plane.lease_ms must be 2000 (NET-4, API-10)."""
import os
import socket
from urllib.parse import parse_qs

import _confirm
import f_helpers
import torch

if __name__ == "__main__":
    ws = _confirm.module()
    sender = ws.Sender({"w": torch.arange(8, dtype=torch.float32)}, 1, listen="tcp://127.0.0.1:0",
                       lease=2.0, heartbeat=0.5, transfer_timeout=20.0)
    url = sender.url(0)
    head, _, query = url.partition("?")
    q = parse_qs(query)
    rid, secret = int(q["receiver"][0]), bytes.fromhex(q["secret"][0])
    host, _, port = head[len("tcp://"):].rpartition(":")
    c = f_helpers.Conn(socket.create_connection((host, int(port)), timeout=10), timeout=10)
    hello = c.read()
    assert hello["type"] == "Hello", hello
    nr = os.urandom(32)
    c.send({"type": "Join", "receiver": rid, "nonce": nr,
            "proof": f_helpers.mac(secret, b"weightsync-join", hello["nonce"], nr, rid)})
    welcome = c.read()
    assert welcome["type"] == "Welcome", welcome
    init = c.read_until("Init")
    plane = init.get("data_plane") or {}
    c.send({"type": "Heartbeat"})
    lease_ms = plane.get("lease_ms")
    c.close()
    if lease_ms != 2000:
        _confirm.bug(f"Sender(lease=2.0) announced lease_ms={lease_ms} in its Init's data_plane")
    _confirm.fine(f"Init announced lease_ms={lease_ms}, timeout_ms={plane.get('timeout_ms')}")
