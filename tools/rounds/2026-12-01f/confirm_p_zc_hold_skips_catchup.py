"""A zero-copy pull receiver (0) beside a copying push receiver (1). Two sends to both publish versions 1 and 2;
receiver 0 polls once and applies only version 2 (ACK-2), whose slot it now views. Sends of versions 3 and 4 to
receiver 1 alone must leave that slot alone (ZC-2): receiver 0 keeps reading version 2."""
import torch
from _confirm import bug, connect_inproc, fine, module

ws = module()
s = ws.Sender({"w": torch.zeros(8)}, 2)
r0 = ws.Receiver(s.handle(0), mode="pull", zero_copy=True)
r1 = ws.Receiver(s.handle(1))
connect_inproc(s, [r0, r1], timeout=20)
f1 = s.send_async({"w": torch.ones(8)}, timeout=10)
f2 = s.send_async({"w": torch.full((8,), 2.0)}, timeout=10)
got = r0.poll(10)
if got != 2:
    bug(f"receiver 0's poll applied {got}, not the newest version 2")
f1.wait(10)
f2.wait(10)
for v in (3.0, 4.0, 5.0):
    s.send({"w": torch.full((8,), v)}, workers=[1], timeout=10)
seen, held = r0.weights["w"].clone(), r0.version
for x in (r0, r1, s):
    x.close()
if held == 2 and not torch.equal(seen, torch.full((8,), 2.0)):
    bug(f"receiver 0 holds version 2 but its weights read {seen.tolist()[:2]}...: a send to receiver 1 wrote the "
        "slot it views after its catch-up ack (ZC-2)")
if held != 2:
    bug(f"receiver 0 reports version {held}, not 2")
fine("after a catch-up ack the zero-copy receiver's new slot is held")
