import time

import _confirm
import torch
from torch import nn

ws = _confirm.module()

def model(v):
    m = nn.Linear(3, 2)
    with torch.no_grad():
        for p in m.parameters():
            p.fill_(float(v))
    return m

sender = ws.Sender(model(0), 2)
dst = model(-1)
r0 = ws.Receiver(sender.handle(0), dst, mode="pull", zero_copy=True)
r1 = ws.Receiver(sender.handle(1), mode="pull")
_confirm.connect_inproc(sender, [r0, r1])
if not torch.all(dst.weight == 0):
    _confirm.fine("(setup) zero-copy module did not show version 0")
r0.close()
time.sleep(0.5)
for v in range(1, 7):
    fut = sender.send_async(model(v), workers=[1])
    for _ in range(50):
        if r1.poll(timeout=0.1) is not None:
            break
    fut.wait(10)
w = dst.weight.detach().clone()
sender.close(); r1.close()
if not torch.all(w == 0):
    _confirm.bug(f"after close() the module's zero-copy weight changed from version 0 to {w.flatten()[0].item()} "
                 "as the sender reused its slot")
_confirm.fine("the module target kept version 0 after close()")
