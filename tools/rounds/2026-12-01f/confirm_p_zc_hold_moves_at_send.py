"""A zero-copy pull receiver (0) beside a copying push receiver (1). A send to both publishes version 1; receiver
0 has not polled, so it still views version 0 in its slot. A send of version 2 to receiver 1 alone must not write
that slot (ZC-2): between two polls, receiver 0's weights stay version 0 (CONS-1)."""
import torch
from _confirm import bug, connect_inproc, fine, module

ws = module()
s = ws.Sender({"w": torch.zeros(8)}, 2)
r0 = ws.Receiver(s.handle(0), mode="pull", zero_copy=True)
r1 = ws.Receiver(s.handle(1))
connect_inproc(s, [r0, r1], timeout=20)
f1 = s.send_async({"w": torch.ones(8)}, timeout=10)
if s.send({"w": torch.full((8,), 2.0)}, workers=[1], timeout=10) != 2:
    bug("the send of version 2 to receiver 1 did not return 2")
seen, held = r0.weights["w"].clone(), r0.version
got = r0.poll(10)
f1.wait(10)
after = r0.weights["w"].clone()
for x in (r0, r1, s):
    x.close()
if held == 0 and not torch.equal(seen, torch.zeros(8)):
    bug(f"receiver 0 still holds version 0 (it has not polled) but its weights read {seen.tolist()[:2]}...: the "
        "send to receiver 1 wrote the slot it views (ZC-2)")
if got != 1 or not torch.equal(after, torch.ones(8)):
    bug(f"receiver 0's poll applied {got} and reads {after.tolist()[:2]}..., not version 1")
fine("the zero-copy receiver's slot stays untouched until it acks a newer version")
