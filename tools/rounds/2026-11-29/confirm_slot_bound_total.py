"""Two slot groups (dtypes= casts receiver 1's slots): the default bound N+2 holds per group (SLOT-3)."""
import time

import torch
from _confirm import bug, connect_inproc, fine, module

ws = module()
s = ws.Sender({"w": torch.zeros(4)}, 2, dtypes=[None, torch.bfloat16])
rs = [ws.Receiver(s.handle(i), mode="pull") for i in range(2)]
connect_inproc(s, rs)
futures = []
for k in range(1, 4):  # the pull workers do not poll yet: their pending Receives pin slots
    try:
        futures.append(s.send_async({"w": torch.full((4,), float(k))}, timeout=3))
    except ws.SyncTimeoutError as e:
        bug(f"send {k} found no free slot although each group holds only 2 of its {2 + 2} slots: {e}")
time.sleep(0.3)
for r in rs:
    if r.poll(timeout=5) != 3:
        bug("a receiver did not apply version 3")
for f in futures:
    f.wait(5)
fine("three sends published; each group allocated its third slot")
