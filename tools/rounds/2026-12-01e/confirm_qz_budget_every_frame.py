"""A small model published 400 times in a tight loop to one push receiver: every send must return its version
(SEND-1). Acks answer Receives; only Heartbeats are budgeted (SEC-8), so no burst of answers is a violation."""
import time

import torch
from _confirm import bug, connect_inproc, fine, module

ws = module()
w = {"w": torch.zeros(4)}
s = ws.Sender(w, 1)
r = ws.Receiver(s.handle(0))
connect_inproc(s, [r], timeout=20)
t0 = time.monotonic()
for k in range(1, 401):
    w["w"].fill_(float(k))
    try:
        v = s.send(timeout=10)
    except ws.WeightSyncError as e:
        el = time.monotonic() - t0
        r.close()
        s.close()
        bug(f"send {k} (after {el:.2f}s, {k / max(el, 1e-9):.0f}/s) raised {type(e).__name__} "
            f"{getattr(e, 'causes', '')}: {str(e)[:160]}")
    if v != k:
        bug(f"send {k} returned {v}")
el = time.monotonic() - t0
with r.reading():
    last = r.weights["w"].clone()
r.close()
s.close()
if not torch.equal(last, torch.full((4,), 400.0)):
    bug(f"the receiver holds {last.tolist()} after 400 sends")
fine(f"400 sends in {el:.2f}s, every one acked")
