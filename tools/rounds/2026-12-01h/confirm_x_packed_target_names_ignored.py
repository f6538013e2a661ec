"""The trainer sends {"a": 0..15, "b": 100..115}; a copying worker's target is pack({"b": zeros, "a": zeros}) (the
same names, another order). After connect() and after a send, the worker's "a" must hold the trainer's "a" (INIT-4,
ACK-3)."""
import torch
from _confirm import bug, connect_inproc, fine, module

ws = module()
w = {"a": torch.arange(16, dtype=torch.float32), "b": torch.arange(16, dtype=torch.float32) + 100}
s = ws.Sender(w, 1)
mine = {"b": torch.zeros(16), "a": torch.zeros(16)}
target = ws.pack(mine)
r = ws.Receiver(s.handle(0), target)
try:
    connect_inproc(s, [r], timeout=20)
    at0 = (mine["a"].clone(), mine["b"].clone())
    with torch.no_grad():
        w["a"].add_(1000)
    s.send(timeout=10)
    at1 = (mine["a"].clone(), mine["b"].clone())
finally:
    s.close()
    r.close()
if not torch.equal(at0[0], torch.arange(16.0)) or not torch.equal(at0[1], torch.arange(16.0) + 100):
    bug(f"after connect the worker's packed 'a' holds {at0[0][:3].tolist()}... and 'b' {at0[1][:3].tolist()}...: "
        "the arrays came in each other's place, though Ready was ok (INIT-4, ACK-3)")
if not torch.equal(at1[0], torch.arange(16.0) + 1000):
    bug(f"after an acked send the worker's 'a' holds {at1[0][:3].tolist()}... (ACK-3)")
fine("a packed target in another key order gets each array under its own name")
