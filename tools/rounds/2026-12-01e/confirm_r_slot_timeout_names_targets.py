"""max_slots=2. Receiver 0 (pull) never polls: a send_async to it pins slot S1. A send to receiver 1 goes into
S0; the next send to receiver 1 finds S0 the latest and S1 pinned by receiver 0: it must fail with a
SyncTimeoutError naming receiver 0 (the holder), with .version None (SLOT-3)."""
import torch
from _confirm import bug, connect_inproc, fine, module

ws = module()
s = ws.Sender({"w": torch.zeros(4)}, 2, max_slots=2)
r0 = ws.Receiver(s.handle(0), mode="pull")
r1 = ws.Receiver(s.handle(1))
connect_inproc(s, [r0, r1], timeout=10)
f1 = s.send_async(workers=[0], timeout=5)
if s.send(workers=[1], timeout=5) != 2:
    bug("the send to receiver 1 did not return 2")
try:
    s.send(workers=[1], timeout=0.5)
    bug("a send found a free slot although receiver 0 pins the only one")
except ws.SyncTimeoutError as e:
    if e.version is not None:
        bug(f"the slot timeout carries version {e.version}")
    if e.workers != [0]:
        bug(f"the slot timeout names {e.workers}, not receiver 0 that holds the slot")
if s.version != 2:
    bug(f"sender.version is {s.version}")
s.close()
r0.close()
r1.close()
fine("a send with no free slot names the receiver holding it")
