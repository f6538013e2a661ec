"""future.done() turns true on its own, with no other call made, once the target acked (API-2)."""
import time

import torch
from _confirm import bug, connect_inproc, fine, module

ws = module()
s = ws.Sender({"w": torch.zeros(4)}, 1)
r = ws.Receiver(s.handle(0))  # push: acks by itself
connect_inproc(s, [r])
f = s.send_async({"w": torch.ones(4)})
t0 = time.monotonic()
while time.monotonic() - t0 < 12:
    if f.done():
        fine(f"done() true after {time.monotonic() - t0:.2f} s")
    time.sleep(0.05)
acked = r.version
bug(f"done() still false 12 s after send_async although the receiver holds version {acked}")
