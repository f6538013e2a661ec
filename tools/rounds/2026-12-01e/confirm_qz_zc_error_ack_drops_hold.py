"""A zero-copy worker (module target) whose apply of version 1 fails (the worker replaced one tensor by another
shape: ACK-7, Ack(error)) keeps viewing the slot of version 0 with the rest of its module. A send of version 2 to
the other receiver only must not write that slot (ZC-2): the worker's untouched bias still reads version 0."""
import time

import torch
from _confirm import bug, connect_inproc, fine, module

ws = module()
torch.manual_seed(0)
src = torch.nn.Linear(4, 2)
with torch.no_grad():
    src.bias.fill_(0.0)
s = ws.Sender(src, 2)
zc_module = torch.nn.Linear(4, 2)
r0 = ws.Receiver(s.handle(0), zc_module, zero_copy=True)
r1 = ws.Receiver(s.handle(1))
connect_inproc(s, [r0, r1], timeout=20)
if not torch.equal(zc_module.bias, torch.zeros(2)):
    bug("the zero-copy module does not show version 0 after connect")
zc_module.weight.data = torch.zeros(3, 3)  # the worker's own change: its target no longer matches (ACK-7)
with torch.no_grad():
    src.bias.fill_(1.0)
try:
    s.send(timeout=10)
    bug("version 1 went through although receiver 0's target no longer matches")
except ws.ReceiverError as e:
    if e.workers != [0]:
        bug(f"the failed send named {e.workers}, not [0]")
with torch.no_grad():
    src.bias.fill_(7.0)
if s.send(workers=[1], timeout=10) != 2:
    bug("the send of version 2 to receiver 1 did not return 2")
time.sleep(0.1)
seen = zc_module.bias.detach().clone()
r0.close()
r1.close()
s.close()
if torch.equal(seen, torch.full((2,), 7.0)):
    bug("the failed zero-copy worker's module now reads version 2's bias: the sender wrote the slot it held "
        "after its Ack(error) (ZC-2)")
if not torch.equal(seen, torch.zeros(2)):
    bug(f"the failed zero-copy worker's bias changed to {seen.tolist()}")
fine("after an Ack(error) the zero-copy receiver's held slot stays untouched")
