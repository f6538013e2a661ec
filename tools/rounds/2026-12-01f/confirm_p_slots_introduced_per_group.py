"""A copying pull receiver (0) that polls rarely and a copying push receiver (1), default max_slots (4). Sends to
both publish versions 1 and 2 (pending at 0 in S1 and S0); a send of version 3 to receiver 0 alone finds both
pinned and allocates S2, introduced to receiver 0. Receiver 0 polls. Then versions 4, 5 go to both (S0, S1, pending
at 0) and version 6 to both goes into S2 (or version 5, as receiver 1's acks fall), which receiver 1 was never
given: its Receive must introduce S2 (SLOT-1), and every version completes."""
import torch
from _confirm import bug, connect_inproc, fine, module

ws = module()
s = ws.Sender({"w": torch.zeros(8)}, 2)
r0 = ws.Receiver(s.handle(0), mode="pull")
r1 = ws.Receiver(s.handle(1))
connect_inproc(s, [r0, r1], timeout=20)


def w(v):
    return {"w": torch.full((8,), float(v))}


try:
    fs = [s.send_async(w(1), timeout=10), s.send_async(w(2), timeout=10),
          s.send_async(w(3), workers=[0], timeout=10)]
    if r0.poll(10) != 3:
        bug("receiver 0 did not apply version 3")
    fs += [s.send_async(w(v), timeout=10) for v in (4, 5, 6)]
    if r0.poll(10) != 6:
        bug("receiver 0 did not apply version 6")
    for f in fs:
        f.wait(10)
except ws.WeightSyncError as e:
    bug(f"{type(e).__name__} (.version {getattr(e, 'version', '?')}) naming {getattr(e, 'workers', '?')} "
        f"{getattr(e, 'causes', '')}; receiver 1 stopped: {r1.stopped}, its failure: {r1.failure!r:.160}")
got = (r0.version, r1.version, r1.stopped, r1.weights["w"][0].item())
for x in (r0, r1, s):
    x.close()
if got != (6, 6, False, 6.0):
    bug(f"(receiver 0 version, receiver 1 version, receiver 1 stopped, its weight) = {got}, not (6, 6, False, 6.0)")
fine("a slot allocated in a subset send is introduced to the other receivers when first named to them")
