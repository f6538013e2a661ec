"""Receiver 0 pushes, receiver 1 pulls. Version 1 goes to receiver 1 alone and waits there unpolled; versions 2 and
3 go to receiver 0 alone. Receiver 1's poll() then applies version 1 and must hold exactly its bytes (all 1.0):
the sends to receiver 0 must leave it unchanged (CONS-5, SLOT-2, ACK-3)."""
import torch
from _confirm import bug, connect_inproc, fine, module

ws = module()
s = ws.Sender({"w": torch.zeros(1024)}, 2)
rs = [ws.Receiver(s.handle(0)), ws.Receiver(s.handle(1), mode="pull")]
connect_inproc(s, rs, timeout=20)
f1 = s.send_async({"w": torch.full((1024,), 1.0)}, workers=[1], timeout=10)
s.send({"w": torch.full((1024,), 2.0)}, workers=[0], timeout=10)
s.send({"w": torch.full((1024,), 3.0)}, workers=[0], timeout=10)
got = rs[1].poll(timeout=10)
f1.wait(10)
w = rs[1].weights["w"].clone()
version = rs[1].version
for x in (s, *rs):
    x.close()
if got != 1:
    raise SystemExit(f"poll() returned {got}: no verdict")
if not torch.equal(w, torch.full((1024,), 1.0)):
    bug(f"receiver 1 acked version {version} but holds values {sorted(set(w.tolist()))}: a send to receiver 0 "
        "wrote the slot of its pending version (CONS-5, SLOT-2, ACK-3)")
fine(f"receiver 1 holds version {version} with the bytes of version 1")
