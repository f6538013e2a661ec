"""max_slots=2; a zero-copy pull receiver (0) that stopped polling and a copying push receiver (1). After a send
to both, receiver 0 holds slot S0 (version 0) and has version 1 pending in S1, the latest: no slot is free. The
trainer drops receiver 0 (API-9), which frees the slots it pinned: a send to receiver 1 must go through."""
import torch
from _confirm import bug, connect_inproc, fine, module

ws = module()
s = ws.Sender({"w": torch.zeros(8)}, 2, max_slots=2)
r0 = ws.Receiver(s.handle(0), mode="pull", zero_copy=True)
r1 = ws.Receiver(s.handle(1))
connect_inproc(s, [r0, r1], timeout=20)
f1 = s.send_async({"w": torch.ones(8)}, timeout=10)
s.drop(0, timeout=5)
try:
    f1.wait(5)
    bug("version 1 completed although receiver 0 was dropped before acking it")
except ws.ReceiverDiedError as e:
    if e.workers != [0]:
        bug(f"the dropped receiver's version failed naming {e.workers}")
try:
    v = s.send({"w": torch.full((8,), 2.0)}, workers=[1], timeout=3)
except ws.SyncTimeoutError as e:
    bug(f"after drop(0) the send to receiver 1 found no free slot: SyncTimeoutError naming {e.workers} "
        f"(.version {e.version}); the dropped receiver still pins its slot (API-9)")
got = r1.version
for x in (r0, r1, s):
    x.close()
if v != 2 or got != 2:
    bug(f"the send returned {v}; receiver 1 holds {got}")
fine("drop() frees the slots the dropped zero-copy receiver held")
