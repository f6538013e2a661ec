"""Two live receivers. `send(workers=[])` (a computed selection that came out empty) must raise ValueError
before anything is written (SEND-6), leaving sender.version and both receivers at version 0."""
import time

import torch
from _confirm import bug, connect_inproc, fine, module

ws = module()
s = ws.Sender({"w": torch.zeros(4)}, 2)
rs = [ws.Receiver(s.handle(i)) for i in range(2)]
connect_inproc(s, rs, timeout=10)
healthy = {0: False, 1: False}
try:
    v = s.send({"w": torch.ones(4)}, workers=[i for i in range(2) if healthy[i]], timeout=5)
    time.sleep(0.3)
    bug(f"send(workers=[]) published version {v}; receivers now hold {[r.version for r in rs]}")
except ValueError:
    pass
if s.version != 0:
    bug(f"the refused send moved sender.version to {s.version}")
try:
    s.send_async(workers=[], timeout=5)
    bug("send_async(workers=[]) published a version")
except ValueError:
    pass
s.close()
for r in rs:
    r.close()
fine("workers=[] raises ValueError and publishes nothing")
