"""Receiver 0 refuses its Init (its target has another shape: WeightsMismatchError, Ready(error)); receiver 1's
worker holds its handle but has not called connect() yet. INIT-5: sender.connect(timeout=13) raises ReceiverError
naming 0 within the reaction bound (10 s) of the refusal, without waiting for receiver 1 or the timeout."""
import time

import torch
from _confirm import bug, fine, in_thread, module

ws = module()
s = ws.Sender({"w": torch.zeros(4)}, 2)
r0 = ws.Receiver(s.handle(0), {"w": torch.zeros(3)}, mode="pull")
r1 = ws.Receiver(s.handle(1), mode="pull")  # slow to start: connects later
out, t = in_thread(r0.connect, 10)
t0 = time.monotonic()
err = None
try:
    s.connect(timeout=13)
except ws.WeightSyncError as e:
    err = e
took = time.monotonic() - t0
t.join(5)
for x in (r0, r1, s):
    x.close()
if not isinstance(out.get("error"), ws.WeightsMismatchError):
    raise SystemExit(f"receiver 0 did not refuse: {out}")
if not isinstance(err, ws.ReceiverError) or 0 not in err.workers:
    bug(f"connect raised {err!r} after {took:.1f} s, not ReceiverError naming receiver 0")
if took > 10:
    bug(f"connect raised receiver 0's refusal only after {took:.1f} s (its timeout), waiting for receiver 1; "
        f"INIT-5 wants it within 10 s of the Ready(error)")
fine(f"connect raised ReceiverError {err.workers} {err.causes} after {took:.1f} s")
