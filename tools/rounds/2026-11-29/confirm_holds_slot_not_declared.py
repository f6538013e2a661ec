"""A zero-copy pull worker's weights do not change until it polls, however many versions follow (ZC-1, ZC-2)."""
import time

import torch
from _confirm import bug, connect_inproc, fine, module

ws = module()
s = ws.Sender({"w": torch.zeros(4)}, 1)  # default bound N+2 = 3 slots
r = ws.Receiver(s.handle(0), mode="pull", zero_copy=True)
connect_inproc(s, [r])
s.send_async({"w": torch.full((4,), 1.0)})
time.sleep(0.3)
if r.poll(timeout=5) != 1:
    bug("version 1 was not applied")
held = r.weights["w"]
futures = [s.send_async({"w": torch.full((4,), float(k))}, timeout=5) for k in (2, 3)]
time.sleep(0.5)
now = float(held[0]), float(r.weights["w"][0])
if now != (1.0, 1.0):
    bug(f"without a poll, the zero-copy weights of version {r.version} now read {now}")
if r.poll(timeout=5) != 3:
    bug("version 3 was not applied")
fine("the held slot was left alone")
