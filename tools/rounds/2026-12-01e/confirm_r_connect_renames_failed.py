"""Receiver 0's target does not match (it refuses its Init); receiver 1 is slow to start. connect() raises
ReceiverError naming receiver 0 while 1 is still connecting. Receiver 1 then starts: calling connect() again
must wait for it and return (API-2, INIT-5: the refusal is named once)."""
import os

import torch
from _confirm import bug, fine, in_thread, module

ws = module()
s = ws.Sender({"w": torch.zeros(4)}, 2)
bad = ws.Receiver(s.handle(0), {"w": torch.zeros(5)})
slow = ws.Receiver(s.handle(1))
out0, t0 = in_thread(bad.connect, 10)
try:
    s.connect(timeout=10)
    bug("connect() returned although receiver 0 refused")
except ws.ReceiverError as e:
    if e.workers != [0]:
        print(f"setup: first connect named {e.workers}")
        os._exit(3)
t0.join(10)
out1, t1 = in_thread(slow.connect, 10)
try:
    s.connect(timeout=10)
except ws.ReceiverError as e:
    bug(f"the second connect() named again the receiver the first one reported: {e.workers} {e.causes}")
t1.join(10)
if out1.get("result") != 0:
    bug(f"receiver 1's connect gave {out1}")
if s.send(workers=[1], timeout=5) != 1:
    bug("send to receiver 1 failed")
s.close()
bad.close()
slow.close()
fine("connect() names a refusal once; called again, it waits for the others")
