"""Two sends reach a pull receiver before it polls: poll() must apply the newer (ACK-2) and answer both (ACK-1)."""
import time

import torch
from _confirm import bug, connect_inproc, fine, module

ws = module()
s = ws.Sender({"w": torch.zeros(4)}, 1)
r = ws.Receiver(s.handle(0), mode="pull")
connect_inproc(s, [r])
f1 = s.send_async({"w": torch.full((4,), 1.0)})
f2 = s.send_async({"w": torch.full((4,), 2.0)})
time.sleep(0.5)
got = r.poll(timeout=5)
if got != 2:
    again = r.poll(timeout=1)
    try:
        f2.wait(3)
        answered = True
    except ws.SyncTimeoutError:
        answered = False
    bug(f"poll() applied version {got} with versions 1 and 2 pending; next poll {again}; f2 answered: {answered}")
f1.wait(5)
f2.wait(5)
if float(r.weights["w"][0]) != 2.0:
    bug("weights are not version 2's")
fine("poll() applied version 2 and answered both")
