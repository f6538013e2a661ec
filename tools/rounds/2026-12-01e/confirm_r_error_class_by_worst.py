"""Two live receivers; receiver 0's target tensor is replaced by one of another shape (its next apply answers
Ack(error), ACK-7) and receiver 1 (a wire peer) closes its channel when the Receive comes. The send's error
names both, with causes error and died, and must be both a ReceiverError and a ReceiverDiedError (SEND-7)."""
import os

import torch
from _confirm import bug, connect_inproc, fine, in_thread, module
from _wirepeer import Peer

ws = module()
s = ws.Sender({"w": torch.zeros(4)}, 2)
target = {"w": torch.zeros(4)}
r0 = ws.Receiver(s.handle(0), target)
p1 = Peer(s.handle(1), timeout=15)


def peer1():
    init = p1.read()
    p1.send(p1.ready_msg(init))
    msg = p1.read()
    assert msg["type"] == "Receive", msg
    p1.close()


out, t = in_thread(peer1)
connect_inproc(s, [r0], timeout=10)
target["w"] = torch.zeros(5)  # receiver 0's next apply fails (ACK-7)
try:
    s.send(timeout=10)
    bug("the send returned")
except ws.WeightSyncError as e:
    causes = getattr(e, "causes", {})
    kinds = [c.__name__ for c in (ws.ReceiverError, ws.ReceiverDiedError) if isinstance(e, c)]
    if causes == {0: "error", 1: "died"} and len(kinds) != 2:
        bug(f"an error with causes {causes} is {type(e).__name__}, an instance of {kinds} only")
    if causes != {0: "error", 1: "died"}:
        print(f"setup did not give both causes: {causes!r} ({e})")
        os._exit(3)
s.close()
r0.close()
fine("an error with causes error and died is both a ReceiverError and a ReceiverDiedError")
