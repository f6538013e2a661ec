"""Sender(max_slots=2): receiver 0 a push worker, receiver 1 a pull worker that does not poll. Version 1 goes to
both (slot S1; receiver 1 leaves it pending), then receiver 1's worker goes away (close(): its channel ends, the
sender sees it gone). Sends to receiver 0 alone must go on: version 2 goes to S0 and version 3 to S1, which
nobody reads any more (SLOT-2: a gone receiver holds nothing and has nothing pending)."""
import torch
from _confirm import bug, connect_inproc, fine, module

ws = module()
s = ws.Sender({"w": torch.zeros(8)}, 2, max_slots=2)
r0, r1 = ws.Receiver(s.handle(0)), ws.Receiver(s.handle(1), mode="pull")
connect_inproc(s, [r0, r1], timeout=20)
f1 = s.send_async({"w": torch.ones(8)}, timeout=5)
r1.close()  # the pull worker dies with version 1 pending
try:
    f1.wait(10)
    raise SystemExit("version 1 completed although receiver 1 never answered: no verdict")
except ws.ReceiverDiedError:
    pass
err, got = None, []
try:
    for v in (2, 3):
        got.append(s.send({"w": torch.full((8,), float(v))}, workers=[0], timeout=3))
except ws.SyncTimeoutError as e:
    err = e
r0.close()
s.close()
if err is not None:
    bug(f"after versions {got}, a send to receiver 0 raised SyncTimeoutError naming {err.workers} "
        f"({str(err)[:90]}): the slot of gone receiver 1's unanswered version stays pinned (SLOT-2)")
fine(f"sends to receiver 0 published {got}")
