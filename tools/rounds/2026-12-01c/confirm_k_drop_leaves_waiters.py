"""A training thread waits in future.wait() for a worker that hangs; a watchdog drops it: the wait must
raise ReceiverDiedError within the reaction bound (API-9, API-7)."""
import time

import torch
from _confirm import bug, connect_inproc, fine, in_thread, module

ws = module()
w = {"w": torch.zeros(4)}
with ws.Sender(w, 1) as s:
    rx = ws.Receiver(s.handle(0), mode="pull")  # never polls again: a hung worker
    connect_inproc(s, [rx])
    f = s.send_async(timeout=10)
    out, t = in_thread(f.wait, 40)  # the training loop waits
    time.sleep(0.8)
    t0 = time.monotonic()
    s.drop(0, timeout=10)  # the watchdog
    t.join(12)
    took = time.monotonic() - t0
    alive = t.is_alive()
    rx.close()
print(out, f"{took:.1f}s after drop")
if alive:
    bug(f"future.wait() still waits {took:.0f}s after drop(0), although its version failed (API-9, API-7)")
if not isinstance(out.get("error"), ws.ReceiverDiedError):
    bug(f"the waiting call ended with {out!r}, not ReceiverDiedError")
fine("the waiting call raised ReceiverDiedError after drop")
