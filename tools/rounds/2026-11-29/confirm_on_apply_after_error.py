"""on_apply is called only for versions applied and acked ok (API-11), not for a failed apply."""
import time

import torch
from _confirm import bug, connect_inproc, fine, module

ws = module()
s = ws.Sender({"w": torch.zeros(4)}, 1)
target = {"w": torch.zeros(4)}
calls = []
r = ws.Receiver(s.handle(0), target, mode="pull", on_apply=calls.append)
connect_inproc(s, [r])
target["w"] = torch.zeros(5)  # the next apply fails (ACK-7)
s.send_async({"w": torch.ones(4)})
time.sleep(0.3)
try:
    r.poll(timeout=5)
except ws.ReceiverError:
    pass
if calls != [0]:
    bug(f"on_apply was called with {calls}; version 1 failed to apply")
fine("on_apply called for version 0 only")
