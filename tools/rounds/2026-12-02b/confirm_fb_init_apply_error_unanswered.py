"""A receiver whose target was made under torch.inference_mode() cannot be written in place: applying the Init's
version fails. receiver.connect() must raise ReceiverError, and sender.connect(timeout=8) must raise ReceiverError
naming it well before its timeout (INIT-6, INIT-5)."""
import time

import torch
from _confirm import bug, fine, in_thread, module

ws = module()
with torch.inference_mode():
    target = {"w": torch.zeros(8)}
s = ws.Sender({"w": torch.ones(8)}, 1)
r = ws.Receiver(s.handle(0), target)
out, t = in_thread(r.connect, 8)
t0 = time.monotonic()
err = None
try:
    s.connect(timeout=8)
except ws.WeightSyncError as e:
    err = e
took = time.monotonic() - t0
t.join(10)
rerr = out.get("error")
s.close()
r.close()
if not isinstance(err, ws.ReceiverError) or isinstance(err, ws.SyncTimeoutError) or took > 5:
    bug(f"sender.connect raised {type(err).__name__} after {took:.1f} s (receiver.connect raised "
        f"{type(rerr).__name__}: {str(rerr)[:80]}); the failed apply was not answered with Ready(error) (INIT-6)")
if not isinstance(rerr, ws.ReceiverError) or rerr.workers != [0]:
    bug(f"receiver.connect raised {type(rerr).__name__}: {rerr} instead of ReceiverError naming 0 (INIT-6)")
fine(f"both sides raised ReceiverError ({took:.1f} s): {err.details}")
