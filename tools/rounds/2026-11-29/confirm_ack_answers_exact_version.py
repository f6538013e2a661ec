"""An Ack of the newest pending version answers the older ones too (ACK-2): f1 completes."""
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
if r.poll(timeout=5) != 2:
    bug("the receiver did not apply the newest version")
f2.wait(5)
try:
    f1.wait(3)
except ws.SyncTimeoutError as e:
    bug(f"version 1 was never answered although receiver 0 acked version 2: {e}")
fine("Ack(2) answered versions 1 and 2")
