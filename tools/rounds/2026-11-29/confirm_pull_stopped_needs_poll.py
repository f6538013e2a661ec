"""A pull receiver that never polls: `stopped` turns true within the reaction bound of sender.close() (LIFE-7)."""
import time

import torch
from _confirm import bug, connect_inproc, fine, module

ws = module()
s = ws.Sender({"w": torch.zeros(4)}, 1)
r = ws.Receiver(s.handle(0), mode="pull")
connect_inproc(s, [r])
if r.stopped:
    bug("stopped before close")
s.close()
t0 = time.monotonic()
while time.monotonic() - t0 < 12:
    if r.stopped:
        fine(f"stopped after {time.monotonic() - t0:.2f} s without a poll")
    time.sleep(0.05)
bug("receiver.stopped still false 12 s after sender.close(), no poll() made")
