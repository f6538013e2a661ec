"""After a failed apply (Ack(error)), receiver.version is None (ACK-6)."""
import time

import torch
from _confirm import bug, connect_inproc, fine, module

ws = module()
s = ws.Sender({"w": torch.zeros(4)}, 1)
target = {"w": torch.zeros(4)}
r = ws.Receiver(s.handle(0), target, mode="pull")
connect_inproc(s, [r])
target["w"] = torch.zeros(5)  # the worker changed its target: the next apply fails (ACK-7)
f = s.send_async({"w": torch.ones(4)})
time.sleep(0.3)
try:
    r.poll(timeout=5)
    bug("poll() did not raise for a target that no longer matches")
except ws.ReceiverError:
    pass
try:
    f.wait(5)
except ws.ReceiverError:
    pass
if r.version is not None:
    bug(f"receiver.version is {r.version} after Ack(error)")
fine("version None after Ack(error)")
