"""Confirms o_join_init_waits_connect: a worker joins by URL while the trainer runs no connect() (it only sends to
its other worker). RDV-5: Init goes out at once after Welcome whether or not a connect() runs, so the worker's
connect(timeout=4) returns."""
import os

import torch
from _confirm import bug, connect_inproc, fine, in_thread, module

ws = module()
s = ws.Sender({"w": torch.zeros(3)}, 2, listen=f"unix:@o-initwait-{os.getpid()}")
r0 = ws.Receiver(s.url(0))
connect_inproc(s, [r0], workers=[0], timeout=10)  # the first worker, the usual way
r1 = ws.Receiver(s.url(1))
out, t = in_thread(r1.connect, 4)  # the second joins while the trainer only sends to the first
for k in range(1, 6):
    s.send({"w": torch.full((3,), float(k))}, workers=[0], timeout=5)
t.join(6)
err = out.get("error")
try:
    s.close()
    r0.close()
    r1.close()
except Exception:  # noqa: BLE001
    pass
if t.is_alive() or err is not None:
    bug(f"a worker that joined while no connect() ran got no Init: its connect(4) -> "
        f"{type(err).__name__ if err else 'still waiting'}: {str(err)[:150]} (RDV-5)")
fine(f"the worker joined without a connect() and started from version {out.get('result')}")
