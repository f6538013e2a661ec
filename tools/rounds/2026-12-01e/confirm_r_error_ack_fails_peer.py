"""One live receiver with a mapping target. The worker replaces its tensor by one of another shape: the send
of version 1 fails with ReceiverError (Ack(error), ACK-7). The worker puts a matching tensor back: the next
send reaches it and returns 2, and the receiver holds version 2 (ACK-6: the receiver stays live)."""
import torch
from _confirm import bug, connect_inproc, fine, module

ws = module()
s = ws.Sender({"w": torch.zeros(4)}, 1)
target = {"w": torch.zeros(4)}
r = ws.Receiver(s.handle(0), target)
connect_inproc(s, [r], timeout=10)
target["w"] = torch.zeros(5)
try:
    s.send({"w": torch.ones(4)}, timeout=10)
    bug("the send to a mismatched target returned")
except ws.ReceiverError as e:
    if e.version != 1 or e.workers != [0]:
        bug(f"the failed send raised version {e.version} workers {e.workers}")
target["w"] = torch.zeros(4)  # the worker fixed its target
try:
    v = s.send({"w": torch.full((4,), 2.0)}, timeout=10)
except ws.ReceiverError as e:
    bug(f"after the worker fixed its target, the next send raised ReceiverError (version {e.version}): {e}")
if v != 2 or r.version != 2 or not torch.equal(target["w"], torch.full((4,), 2.0)):
    bug(f"send returned {v}, receiver holds {r.version}")
s.close()
r.close()
fine("after Ack(error) the receiver stays live and the next send repairs it")
