"""Receiver 0's URL with receiver=1 must not join as receiver 1 (RDV-2): RefusedError."""
import time

import torch
from _confirm import bug, fine, module

ws = module()
s = ws.Sender({"w": torch.zeros(4)}, 2, listen=f"unix:@wsround-rdv2-{time.time_ns()}")
url0 = s.url(0)
head, query = url0.split("?", 1)
secret = dict(p.split("=", 1) for p in query.split("&"))["secret"]
forged = f"{head}?receiver=1&secret={secret}"
r = ws.Receiver(forged)
try:
    v = r.connect(timeout=10)
except ws.RefusedError:
    fine("refused")
bug(f"joined as receiver 1 with receiver 0's secret (version {v})")
