"""A listening sender (unix:@NAME) with two receivers. A process that holds receiver 0's URL edits it to say
receiver=1 and tries to join: RDV-2 wants it refused (RefusedError); receiver 0's secret must not help to join
as receiver 1."""
import os
import uuid

import torch
from _confirm import bug, fine, module

ws = module()
s = ws.Sender({"w": torch.zeros(8)}, 2, listen=f"unix:@ws-u-secret-{os.getpid()}-{uuid.uuid4().hex[:8]}")
url0 = s.url(0)
forged = url0.replace("receiver=0&", "receiver=1&")
assert forged != url0
r = ws.Receiver(forged)
err, got = None, None
try:
    got = r.connect(timeout=8)
except ws.WeightSyncError as e:
    err = e
r.close()
s.close()
if err is None:
    bug(f"receiver 0's URL edited to receiver=1 joined as receiver 1 and connected at version {got} (RDV-2)")
if not isinstance(err, ws.RefusedError):
    raise SystemExit(f"the forged join failed otherwise: {type(err).__name__}: {err}; no verdict")
fine("the forged URL was refused")
