"""Confirms o_join_flood_drops_newest: 64 silent connections (each has read its Hello, so each is a join under
way), then a real worker joins by URL. RDV-6: the flood cannot keep it out (the oldest join is dropped)."""
import os
import socket
import time

import torch
from _confirm import bug, connect_inproc, fine, module

ws = module()
name = f"o-flood-{os.getpid()}"
s = ws.Sender({"w": torch.zeros(3)}, 1, listen=f"unix:@{name}")
silent = []
for _ in range(64):
    c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    c.settimeout(5)
    c.connect("\0" + name)
    silent.append(c)
got = 0
for c in silent:  # each reads its Hello: accepted, a join under way
    try:
        if c.recv(4):
            got += 1
    except OSError:
        pass
print(f"{got} silent joins under way")
r = ws.Receiver(s.url(0))
t0 = time.monotonic()
try:
    connect_inproc(s, [r], timeout=4)
    outcome = None
except Exception as e:  # noqa: BLE001
    outcome = f"{type(e).__name__}: {e}"
for c in silent:
    c.close()
took = time.monotonic() - t0
try:
    s.close()
    r.close()
except Exception:  # noqa: BLE001
    pass
if outcome is not None:
    bug(f"with 64 silent joins under way, a worker with its URL could not join in 4 s ({outcome[:160]}) (RDV-6)")
fine(f"the worker joined in {took:.2f} s despite 64 silent connections")
