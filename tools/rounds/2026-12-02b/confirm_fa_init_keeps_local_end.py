"""Sender for 2 workers; the launcher started only worker 0 (an in-process Receiver here); worker 1's handle never
left the trainer. connect(timeout=6) must name receiver 1 as gone (ReceiverDiedError, "never connected") as soon
as its Init is sent (CON-1: end of channel seen without a timeout), not wait out its timeout."""
import time

import torch
from _confirm import bug, fine, in_thread, module

ws = module()
s = ws.Sender({"w": torch.zeros(4)}, 2)
r0 = ws.Receiver(s.handle(0))
out, t = in_thread(r0.connect, 10)
t0 = time.monotonic()
err = None
try:
    s.connect(timeout=6)
except Exception as e:  # noqa: BLE001
    err = e
took = time.monotonic() - t0
t.join(10)
r0.close()
s.close()
if isinstance(err, ws.ReceiverDiedError) and 1 in err.workers and took < 4:
    fine(f"connect() raised ReceiverDiedError naming {err.workers} after {took:.1f}s")
if isinstance(err, ws.SyncTimeoutError):
    bug(f"connect() waited {took:.1f}s and raised SyncTimeoutError naming {err.workers}: receiver 1, whose handle "
        "never left the trainer, was not seen gone (the sender kept its copy of the receiver's end)")
raise SystemExit(f"unexpected: {type(err).__name__}: {err} after {took:.1f}s")
